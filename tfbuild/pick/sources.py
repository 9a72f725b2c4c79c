"""Where the wheels come from: a directory of ``*.whl`` (receipts beside them) or an HTML index page.

An index page is a PEP 503 style page of ``<a href="NAME.whl#sha256=HEX">`` links (what ``tfbuild
index`` writes), read over http(s) or from a local file (``dist/index.html``, or a ``file://`` URL).
Its links are resolved against the page's own address: a local page's relative links name files
beside it, whatever the current directory, and their receipts are read from beside those files.

:func:`load_wheels` is the edge that reads a directory or a page; everything it
returns (:class:`WheelSource`, :class:`WheelFile`, :class:`~tfbuild.receipt.Receipt`) is plain data.
An unusable receipt (another schema, another wheel's, a plan edited since the build) is a warning,
and the wheel is judged without it.
"""

from __future__ import annotations

import codecs
import html.parser
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from tfbuild.errors import EnvironmentProblem, InputError, UsageError
from tfbuild.files import wheel_files
from tfbuild.labels import NATIVE, parse_label, spelt_label
from tfbuild.receipt import InvalidReceipt, Receipt, receipt_path

#: Seconds an index page (or a receipt it links to) may take to arrive.
FETCH_TIMEOUT = 30.0
MAX_PAGE_BYTES = 32 * 1024 * 1024
MAX_RECEIPT_BYTES = 8 * 1024 * 1024

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(text: str) -> bool:
    """Does ``text`` start with a URL scheme (``https://``)? Anything else is a local path."""
    return bool(_SCHEME.match(text))


# --- receipts and wheels ---------------------------------------------------------------------------


def parse_receipt(raw: bytes, *, charset: str = "utf-8", wheel: str) -> Receipt:
    """A receipt's bytes read; a ValueError (:class:`InvalidReceipt`, bad JSON or text) says why
    it is not a usable receipt of ``wheel``."""
    receipt = Receipt.from_json(json.loads(raw.decode(charset)))
    if receipt.wheel.name != wheel:
        raise InvalidReceipt(f"it describes {receipt.wheel.name!r}, not this wheel")
    if not receipt.plan_intact():
        raise InvalidReceipt("its plan no longer matches its plan_sha256")
    return receipt


@dataclass(frozen=True, kw_only=True)
class WheelFile:
    """One wheel found: its file name, where it is, its checksum and receipt when known."""

    filename: str
    location: str  # a local path, or an absolute URL without its fragment
    sha256: str | None = None  # from the index link's #sha256= fragment
    receipt: Receipt | None = None
    receipt_source: str | None = None  # the receipt's path or URL

    @property
    def install_spec(self) -> str:
        """What pip is given: the path, or the URL with its sha256 (which pip then checks)."""
        if self.sha256 and is_url(self.location):
            return f"{self.location}#sha256={self.sha256}"
        return self.location

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "location": self.location,
            "sha256": self.sha256,
            "receipt": self.receipt_json(),
        }

    def receipt_json(self) -> dict[str, Any] | None:
        """What ``pick --json`` shows of the receipt: where it was read, what it was built for."""
        receipt = self.receipt
        if receipt is None:
            return None
        return {
            "source": self.receipt_source,
            "target": receipt.target,
            "variant": receipt.variant,
            "architecture": receipt.architecture,
            "cflags": list(receipt.cflags),
            "covered": list(receipt.covered),
            "floor": receipt.floor.to_json() if receipt.floor else None,
        }


@dataclass(frozen=True, kw_only=True)
class WheelSource:
    """The wheels of a directory or index page, and what was odd about them."""

    source: str
    kind: Literal["directory", "file", "index"]
    wheels: tuple[WheelFile, ...]
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"input": self.source, "kind": self.kind, "wheels": len(self.wheels)}


# --- index pages -----------------------------------------------------------------------------------


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if not href:
            return
        if tag == "base" and self.base is None:
            self.base = href.strip()
        elif tag == "a":
            self.hrefs.append(href.strip())


@dataclass(frozen=True, kw_only=True)
class IndexLinks:
    """The wheel and receipt links of a page, resolved against its URL."""

    wheels: tuple[tuple[str, str, str | None], ...]  # (file name, URL without fragment, sha256)
    receipts: tuple[tuple[str, str], ...]  # (file name, URL)


def parse_index(text: str, page_url: str) -> IndexLinks:
    """Every ``.whl`` (and ``.json``) link of an HTML page; relative links resolved, hashes kept."""
    parser = _Anchors()
    parser.feed(text)
    parser.close()
    base = urljoin(page_url, parser.base) if parser.base else page_url
    wheels: dict[str, tuple[str, str, str | None]] = {}
    receipts: dict[str, tuple[str, str]] = {}
    for href in parser.hrefs:
        url, fragment = urldefrag(urljoin(base, href))
        name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        if name.endswith(".whl") and url not in wheels:
            found = re.search(r"(?:^|&)sha256=([0-9A-Fa-f]{64})(?:&|$)", fragment)
            wheels[url] = (name, url, found.group(1).lower() if found else None)
        elif name.endswith(".json") and url not in receipts:
            receipts[url] = (name, url)
    return IndexLinks(wheels=tuple(wheels.values()), receipts=tuple(receipts.values()))


def fetch(url: str, *, limit: int, timeout: float = FETCH_TIMEOUT) -> tuple[bytes, str, str]:
    """GET ``url``: (body, final URL, charset). Proxies and ``SSL_CERT_FILE`` are honoured."""
    import http.client
    import ssl
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"User-Agent": "tfbuild-pick"})
    fix = "Check the address, the network and the proxy settings (HTTPS_PROXY); for a private CA, set SSL_CERT_FILE."
    try:
        context = ssl.create_default_context()
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            body = response.read(limit + 1)
            final = response.geturl()
            charset = response.headers.get_content_charset() or "utf-8"
    except urllib.error.HTTPError as exc:
        exc.close()
        raise InputError(
            f"cannot read {url}",
            why=f"the server answered {exc.code} {exc.reason}",
            fix="Check the URL: it should be an index page that links to .whl files.",
        ) from None
    except urllib.error.URLError as exc:
        raise EnvironmentProblem(f"cannot reach {url}", why=str(exc.reason), fix=fix) from None
    except TimeoutError:
        raise EnvironmentProblem(
            f"cannot reach {url}", why=f"no answer within {timeout:.0f} s", fix=fix
        ) from None
    except (http.client.HTTPException, OSError) as exc:
        raise EnvironmentProblem(
            f"cannot reach {url}", why=str(exc) or type(exc).__name__, fix=fix
        ) from None
    except ValueError as exc:  # a malformed URL ("http://")
        raise UsageError(f"cannot use {url!r}", why=str(exc), fix="Give an http(s) URL.") from None
    if len(body) > limit:
        raise InputError(f"cannot read {url}", why=f"it is larger than {limit // 2**20} MiB")
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"  # a charset Python does not know: read it as UTF-8
    return body, final, charset


def _fetch_receipt(url: str, wheel: str, warnings: list[str]) -> Receipt | None:
    try:
        body, _final, charset = fetch(url, limit=MAX_RECEIPT_BYTES)
        return parse_receipt(body, charset=charset, wheel=wheel)
    except (InputError, EnvironmentProblem, UsageError) as exc:
        warnings.append(f"receipt of {wheel} not used: {exc.line()}")
    except (ValueError, UnicodeDecodeError) as exc:
        warnings.append(f"receipt {url} not used: {exc}")
    return None


def _read_receipt_file(path: Path, wheel: str, warnings: list[str]) -> Receipt | None:
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            raw = handle.read(MAX_RECEIPT_BYTES + 1)
        if len(raw) > MAX_RECEIPT_BYTES:
            raise ValueError(f"it is larger than {MAX_RECEIPT_BYTES // 2**20} MiB")
        return parse_receipt(raw, wheel=wheel)
    except OSError as exc:
        warnings.append(f"receipt {path} not used: {exc.strerror or exc}")
    except (ValueError, UnicodeDecodeError) as exc:
        warnings.append(f"receipt {path} not used: {exc}")
    return None


def _valid(name: str, warnings: list[str]) -> bool:
    try:
        parse_wheel_filename(name)
    except InvalidWheelFilename as exc:
        warnings.append(f"{name} skipped: not a valid wheel file name ({exc})")
        return False
    return True


def _local_wheel(wheel: Path, warnings: list[str]) -> WheelFile:
    beside = receipt_path(wheel)
    receipt = _read_receipt_file(beside, wheel.name, warnings)
    return WheelFile(
        filename=wheel.name,
        location=str(wheel),
        receipt=receipt,
        receipt_source=str(beside) if receipt else None,
    )


_NO_WHEELS_FIX = (
    "Name a directory of .whl files (e.g. dist/), one .whl file, or an index page that links to "
    "them (a file such as dist/index.html, or an http(s) URL)."
)


def _load_directory(path: Path) -> WheelSource:
    what = f"cannot use {path}"
    try:
        if not path.exists():
            raise InputError(what, why="no such file or directory", fix=_NO_WHEELS_FIX)
        if path.is_file():
            if path.suffix != ".whl":
                return _load_local_page(path, str(path))
            files = [path]
        else:
            files = wheel_files(path)
    except PermissionError:
        raise InputError(what, why="permission denied", fix="Make it readable.") from None
    except OSError as exc:
        raise InputError(what, why=exc.strerror or str(exc), fix=_NO_WHEELS_FIX) from None
    if not files:
        raise InputError(
            f"no wheels in {path}", why="the directory holds no .whl files", fix=_NO_WHEELS_FIX
        )
    warnings: list[str] = []
    wheels = tuple(_local_wheel(f, warnings) for f in files if _valid(f.name, warnings))
    if not wheels:
        raise InputError(f"no wheels in {path}", why=warnings[0], fix=_NO_WHEELS_FIX)
    kind: Literal["directory", "file"] = "file" if path.is_file() else "directory"
    return WheelSource(source=str(path), kind=kind, wheels=wheels, warnings=tuple(warnings))


def _file_path(url: str) -> Path:
    """The local path of a ``file:`` URL (percent-escapes decoded)."""
    from urllib.request import url2pathname  # only here: urllib.request is slow to import

    return Path(url2pathname(urlsplit(url).path))


def _load_local_page(path: Path, source: str) -> WheelSource:
    """A local index page (``dist/index.html``): its links resolved against the file's own place."""
    what = f"cannot read {source}"
    try:
        with path.open("rb") as handle:
            body = handle.read(MAX_PAGE_BYTES + 1)
        page_url = path.resolve().as_uri()
    except PermissionError:
        raise InputError(what, why="permission denied", fix="Make it readable.") from None
    except OSError as exc:
        raise InputError(what, why=exc.strerror or str(exc), fix=_NO_WHEELS_FIX) from None
    if len(body) > MAX_PAGE_BYTES:
        raise InputError(
            what, why=f"it is larger than {MAX_PAGE_BYTES // 2**20} MiB", fix=_NO_WHEELS_FIX
        )
    links = parse_index(body.decode("utf-8", errors="replace"), page_url)
    if not links.wheels:
        raise InputError(
            f"no wheels in {source}",
            why="it is neither a directory nor a .whl file, and it links to no .whl files as an "
            "index page would",
            fix=_NO_WHEELS_FIX,
        )
    return _from_links(links, source, local_page=True)


def _load_index(url: str) -> WheelSource:
    scheme = urlsplit(url).scheme.lower()
    if scheme == "file":
        return _load_local_page(_file_path(url), url)
    if scheme not in ("http", "https"):
        raise UsageError(
            f"cannot read {url}",
            why=f"{scheme}:// is not supported",
            fix="Give a directory, an index page file, or an http(s) URL of an index page.",
        )
    body, final, charset = fetch(url, limit=MAX_PAGE_BYTES)
    links = parse_index(body.decode(charset, errors="replace"), final)
    if not links.wheels:
        raise InputError(
            f"no wheels at {url}",
            why="the page links to no .whl files",
            fix="Give the index page of the project (e.g. .../simple/tensorflow/) or a page "
            "written by tfbuild index.",
        )
    return _from_links(links, url, local_page=False)


def _linked_local_wheel(
    name: str, location: str, sha256: str | None, receipt_url: str | None, warnings: list[str]
) -> WheelFile | None:
    """A wheel a local page links to (``file:`` after resolving): the file, its receipt beside it
    (or the one the page links to)."""
    path = _file_path(location)
    if not path.is_file():
        warnings.append(f"{name} skipped: the page links to {path}, which is not there")
        return None
    receipt_file = (
        _file_path(receipt_url)
        if receipt_url and urlsplit(receipt_url).scheme == "file"
        else receipt_path(path)
    )
    receipt = _read_receipt_file(receipt_file, name, warnings)
    return WheelFile(
        filename=name,
        location=str(path),
        sha256=sha256,
        receipt=receipt,
        receipt_source=str(receipt_file) if receipt else None,
    )


def _linked_remote_wheel(
    name: str, location: str, sha256: str | None, receipt_url: str | None, warnings: list[str]
) -> WheelFile:
    """A wheel at an http(s) URL; its receipt fetched when linked, or when the wheel is native."""
    if receipt_url is None and parse_label(spelt_label(name)).target == NATIVE:
        # Whether a native build runs depends on its receipt: look beside it even unlinked.
        receipt_url = location[: -len(".whl")] + ".json"
    receipt = _fetch_receipt(receipt_url, name, warnings) if receipt_url else None
    return WheelFile(
        filename=name,
        location=location,
        sha256=sha256,
        receipt=receipt,
        receipt_source=receipt_url if receipt else None,
    )


def _from_links(links: IndexLinks, source: str, *, local_page: bool) -> WheelSource:
    """The wheels a page links to: local files for a local page's ``file:`` links, URLs otherwise.

    A page read over the network may not name files on this machine: such links are skipped."""
    receipts = dict(links.receipts)
    warnings: list[str] = []
    wheels: list[WheelFile] = []
    for name, location, sha256 in links.wheels:
        if not _valid(name, warnings):
            continue
        receipt_url = receipts.get(f"{name[: -len('.whl')]}.json")
        scheme = urlsplit(location).scheme.lower()
        if scheme == "file" and local_page:
            found = _linked_local_wheel(name, location, sha256, receipt_url, warnings)
            if found is not None:
                wheels.append(found)
        elif scheme in ("http", "https"):
            wheels.append(_linked_remote_wheel(name, location, sha256, receipt_url, warnings))
        else:
            warnings.append(f"{name} skipped: a {scheme}: link ({location}) cannot be fetched")
    if not wheels:
        raise InputError(f"no wheels at {source}", why=warnings[0], fix=_NO_WHEELS_FIX)
    return WheelSource(source=source, kind="index", wheels=tuple(wheels), warnings=tuple(warnings))


def load_wheels(source: str) -> WheelSource:
    """The wheels of a directory (or one .whl file), or of an index page: a local file or an
    http(s) (or ``file://``) URL."""
    return _load_index(source) if is_url(source) else _load_directory(Path(source))
