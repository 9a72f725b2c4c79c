"""Where the wheels come from: a directory of ``*.whl`` (receipts beside them) or an HTML index page.

An index page is a PEP 503 style page of ``<a href="NAME.whl#sha256=HEX">`` links (what ``tfbuild
index`` writes), read over http(s) or from a local file (``dist/index.html``, or a ``file://`` URL).
Its links are resolved against the page's own address: a local page's relative links name files
beside it, whatever the current directory, and their receipts are read from beside those files.

:func:`load_wheels` is the edge that reads a directory or a page; everything it
returns (:class:`WheelSource`, :class:`WheelFile`, :class:`~tfbuild.wheel.receipt.Receipt`) is plain data.
An unusable receipt (another schema, another wheel's, a plan edited since the build, one served by
a redirect to an origin the page may not link to) is a warning, and the wheel is judged without it.
A wheel whose sha256 is not the one its receipt records (a local file's, computed; a link's
``#sha256=``) is not the wheel that build wrote: :attr:`WheelFile.mismatch` says so, and it is refused.
An overlay (``tfbuild_overlay-*.whl``) has a receipt of its own schema (``tfbuild.overlay/1``, decoded
by :func:`~tfbuild.wheel.overlay_receipt.decode_overlay_receipt` into :attr:`WheelFile.overlay`),
looked for beside it on a page too even when the page does not link it: it is judged by it.
Every local file (a page, a receipt) is read by :func:`tfbuild.core.files.read_input`: regular files only,
bounded while reading.
"""

from __future__ import annotations

import html.parser
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from tfbuild.core.errors import EnvironmentProblem, InputError, UsageError
from tfbuild.core.files import read_input, sha256_file, wheel_files
from tfbuild.pick.fetch import FetchLimits, PickDeadline, fetch, fetch_all
from tfbuild.wheel.labels import NATIVE, parse_label, spelt_label
from tfbuild.wheel.overlay_receipt import OverlayReceipt, decode_overlay_receipt, is_overlay_wheel
from tfbuild.wheel.receipt import InvalidReceipt, Receipt, decode_receipt, receipt_path

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(text: str) -> bool:
    """Does ``text`` start with a URL scheme (``https://``)? Anything else is a local path."""
    return bool(_SCHEME.match(text))


# --- receipts and wheels ---------------------------------------------------------------------------


#: A receipt of either kind: a build's (tfbuild.receipt/2) or an overlay's (tfbuild.overlay/1).
AnyReceipt = Receipt | OverlayReceipt


def parse_any_receipt(raw: bytes, *, charset: str = "utf-8", wheel: str) -> AnyReceipt:
    """The receipt of ``wheel`` by its kind: an overlay's for an overlay, a build's otherwise; a
    ValueError (:class:`InvalidReceipt`, bad JSON or text) says why it is not a usable one."""
    overlay = is_overlay_wheel(Path(wheel))
    decode: Callable[..., AnyReceipt] = decode_overlay_receipt if overlay else decode_receipt
    try:
        receipt = decode(raw, source="it", charset=charset)
    except InputError as exc:  # bounded, typed decoding: one clause for the warning
        raise InvalidReceipt(exc.why or exc.what) from None
    if receipt.wheel.name != wheel:
        kind = "overlay" if overlay else "wheel"
        raise InvalidReceipt(f"it describes {receipt.wheel.name!r}, not this {kind}")
    if isinstance(receipt, Receipt) and not receipt.plan_intact():
        raise InvalidReceipt("its plan no longer matches its plan_sha256")
    if isinstance(receipt, Receipt) and receipt.inputs_intact() is False:
        raise InvalidReceipt("its inputs no longer match its inputs_sha256")
    return receipt


@dataclass(frozen=True, kw_only=True)
class WheelFile:
    """One wheel found: its file name, where it is, its checksum and receipt when known."""

    filename: str
    location: str  # a local path, or an absolute URL without its fragment
    sha256: str | None = None  # from the index link's #sha256= fragment
    from_index: bool = False  # linked from an index page (whose link should carry its sha256)
    receipt: Receipt | None = None
    receipt_source: str | None = None  # the receipt's path or URL
    # Why the wheel is not the file its receipt describes (its sha256: a local file's computed, a
    # link's #sha256=), or None; such a wheel is refused (pick.compat's "integrity" stage).
    mismatch: str | None = None
    overlay: OverlayReceipt | None = None  # an overlay's receipt (then ``receipt`` is None)

    @property
    def is_overlay(self) -> bool:
        """An overlay (``tfbuild overlay``), by its name: it goes on an installed TensorFlow."""
        return is_overlay_wheel(Path(self.filename))

    @property
    def install_spec(self) -> str:
        """What pip is given: the path, or (with a sha256, which pip then checks) the URL, a local
        file's ``file:`` URL, with ``#sha256=HEX``."""
        if not self.sha256:
            return self.location
        url = self.location if is_url(self.location) else Path(self.location).absolute().as_uri()
        return f"{url}#sha256={self.sha256}"


@dataclass(frozen=True, kw_only=True)
class WheelSource:
    """The wheels of a directory or index page, and what was odd about them."""

    source: str
    kind: Literal["directory", "file", "index"]
    wheels: tuple[WheelFile, ...]
    warnings: tuple[str, ...] = ()


# --- which links are followed -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Origin:
    """An origin links may point to: a host, and when stated its scheme and port."""

    host: str
    scheme: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> Origin:
        """``--allow-origin``: ``HOST``, ``HOST:PORT`` or ``http(s)://HOST[:PORT]``."""
        spec = text.strip()
        url = spec if "://" in spec else f"//{spec}"
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            parts, port = None, None
            why = str(exc)
        else:
            why = "give a host name, HOST:PORT or an http(s) origin, without a path"
        if (
            parts is None
            or not parts.hostname
            or parts.scheme not in ("", "http", "https")
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
            or parts.username
        ):
            raise UsageError(
                f"--allow-origin {text!r} is not an origin",
                why=why,
                fix="Give e.g. --allow-origin cdn.example.org or --allow-origin "
                "https://cdn.example.org:8443.",
            )
        return cls(host=parts.hostname.lower(), scheme=parts.scheme or None, port=port)

    def admits(self, url: str) -> bool:
        scheme, host, port = origin_of(url)
        return host == self.host and self.scheme in (None, scheme) and self.port in (None, port)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an http(s) URL, default ports filled in (None: an invalid port)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


@dataclass(frozen=True, kw_only=True)
class LinkPolicy:
    """Which of a page's links pick follows: http(s) to the page's own origin (as asked for and as
    served, after redirects) or an allowed one; from a local page, files inside its directory.

    Every other link (``file:`` from the network, ``javascript:``, ``data:``, ``ftp:``, another
    host) is skipped with a warning and never read."""

    origins: tuple[tuple[str, str, int | None], ...] = ()
    allowed: tuple[Origin, ...] = ()
    directory: Path | None = None  # a local page's own directory, resolved

    def refusal(self, url: str) -> str | None:
        """Why ``url`` is not followed, or None when it is."""
        scheme = urlsplit(url).scheme.lower()
        if scheme == "file" and self.directory is not None:
            return self._local_refusal(url)
        if scheme not in ("http", "https"):
            where = "files beside the page or " if self.directory is not None else ""
            return (
                f"a {scheme or 'schemeless'}: link ({_short(url)}) is not followed; pick follows "
                f"{where}http(s) links only"
            )
        if origin_of(url) in self.origins or any(o.admits(url) for o in self.allowed):
            return None
        host = urlsplit(url).netloc
        page = "a local page's" if self.directory is not None else "another origin's"
        return (
            f"{page} link ({_short(url)}) is not followed; pass --allow-origin {host} to follow "
            f"links to {host}"
        )

    def _local_refusal(self, url: str) -> str | None:
        assert self.directory is not None
        path = _file_path(url)
        try:
            real = path.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            return f"the page links to {path}, which cannot be resolved ({exc})"
        if real == self.directory or not real.is_relative_to(self.directory):
            leads = f", which leads to {real}," if real != path else ""
            return (
                f"the page links to {path}{leads} outside its own directory {self.directory}; a "
                "local page may link only to files inside its directory"
            )
        return None


def _short(url: str, width: int = 120) -> str:
    return url if len(url) <= width else url[: width - 3] + "..."


# --- index pages -----------------------------------------------------------------------------------


class _TooMany(Exception):
    pass


#: Parsing a page is fed this much at a time, the deadline checked in between.
_PARSE_CHUNK = 16 * 1024
#: HTML events (tags, comments, declarations) a page may have per link it may have: a page of
#: tfbuild index has about thirty a wheel (its table row). Each costs html.parser ~30 us.
_EVENTS_PER_LINK = 30
#: The longest unfinished tag or comment the parser may hold: html.parser scans it again on every
#: piece fed, so an endless one would cost time quadratic in its length.
_MAX_PENDING = 64 * 1024


class _Anchors(html.parser.HTMLParser):
    """The ``<a href>`` and ``<base href>`` of a page, counted: at most ``max_links`` links and
    ``max_links * _EVENTS_PER_LINK`` events, else :class:`_TooMany`."""

    def __init__(self, max_links: int) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.base: str | None = None
        self.max_links = max_links
        self.events = 0

    def _event(self, *_args: object, **_kwargs: object) -> None:
        self.events += 1
        if self.events > self.max_links * _EVENTS_PER_LINK:
            raise _TooMany(f"more than {self.max_links * _EVENTS_PER_LINK} tags")

    # Every other event is only counted.
    handle_endtag = handle_comment = handle_decl = handle_pi = unknown_decl = _event

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._event()
        href = dict(attrs).get("href")
        if not href:
            return
        if tag == "base" and self.base is None:
            self.base = href.strip()
        elif tag == "a":
            if len(self.hrefs) >= self.max_links:
                raise _TooMany(f"more than {self.max_links} links")
            self.hrefs.append(href.strip())


@dataclass(frozen=True, kw_only=True)
class IndexLinks:
    """The wheel and receipt links of a page, resolved against its URL."""

    wheels: tuple[tuple[str, str, str | None], ...]  # (file name, URL without fragment, sha256)
    receipts: tuple[tuple[str, str], ...]  # (file name, URL)


def parse_index(
    text: str,
    page_url: str,
    *,
    max_links: int = FetchLimits().max_links,
    deadline: PickDeadline | None = None,
) -> IndexLinks:
    """Every ``.whl`` (and ``.json``) link of an HTML page; relative links resolved, hashes kept.

    A page with more than ``max_links`` links (or twenty times as many tags) is refused (exit 3):
    pick reads one project's page. The page is fed in pieces, ``deadline`` checked in between, and
    the parser is never closed: ``HTMLParser.close()`` takes time quadratic in the length of an
    unclosed tag at the end (64 kB: 100 s on Python 3.11), and what follows the last whole tag
    holds no link."""
    parser = _Anchors(max_links)
    try:
        for start in range(0, len(text), _PARSE_CHUNK):
            if deadline is not None:
                deadline.check(f"reading the links of {page_url} was not finished")
            parser.feed(text[start : start + _PARSE_CHUNK])
            if len(parser.rawdata) > _MAX_PENDING:  # what it holds back, waiting for its end
                raise _TooMany(f"a tag or comment longer than {_MAX_PENDING // 1024} KiB")
    except _TooMany as exc:
        raise InputError(
            f"cannot use {page_url}",
            why=f"the page has {exc}",  # more than N links, N tags, or an endless tag
            fix="Give the page of one project's wheels (e.g. .../simple/tensorflow/, or the page "
            "tfbuild index writes).",
        ) from None
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


def _fetch_receipt(
    job: tuple[str, str], policy: LinkPolicy, limits: FetchLimits, deadline: PickDeadline
) -> tuple[AnyReceipt | None, str | None]:
    """(the receipt, or None and the warning why not) of wheel ``job[0]`` at URL ``job[1]``.

    A redirect is followed only where ``policy`` follows a link (the page's origin or an allowed
    one): a receipt decides what a wheel is judged to be, so it comes from where its wheel may."""
    wheel, url = job
    try:
        body, final, charset = fetch(
            url, limit=limits.max_receipt_bytes, deadline=deadline, redirect=policy.refusal
        )
        if refused := policy.refusal(final):  # fetch checked each redirect; the end, once more
            return None, f"receipt of {wheel} not used: {url} led to {_short(final)}: {refused}"
        return parse_any_receipt(body, charset=charset, wheel=wheel), None
    except (EnvironmentProblem, InputError, UsageError) as exc:
        if isinstance(exc, EnvironmentProblem) and deadline.expired():
            raise  # the whole pick is out of time
        return None, f"receipt of {wheel} not used: {exc.line()}"
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"receipt {url} not used: {exc}"


_FIX = "Put the receipt tfbuild wheel wrote beside the wheel, or remove what is in its place."


def _read_receipt_file(path: Path, wheel: str, warnings: list[str]) -> AnyReceipt | None:
    """The receipt at ``path``; None when there is none, or (with a warning saying why) when it
    cannot be used. Read by :func:`read_input`: a receipt that is a FIFO or a device (or a link to
    one) is refused with one line, exit 3, never waited on or read without end."""
    try:
        mode = path.stat().st_mode  # follows a link; never blocks
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.append(f"receipt {path} not used: {exc.strerror or exc}")
        return None
    if stat.S_ISDIR(mode):
        return None  # a directory of that name is no receipt
    try:
        raw = read_input(
            path, limit=FetchLimits().max_receipt_bytes, what=f"the receipt {path}", fix=_FIX
        )
    except FileNotFoundError:
        return None
    except InputError as exc:
        if not stat.S_ISREG(mode):
            raise  # a FIFO, a device, a socket: not a file at all
        warnings.append(f"receipt {path} not used: {exc.why}")  # too large, unreadable
        return None
    try:
        return parse_any_receipt(raw, wheel=wheel)
    except (ValueError, UnicodeDecodeError) as exc:
        warnings.append(f"receipt {path} not used: {exc}")
    return None


def _mismatch(receipt: AnyReceipt | None, sha256: str | None, *, said: str) -> str | None:
    """Why a wheel whose sha256 is ``sha256`` (as ``said`` puts it) is not the wheel ``receipt``
    describes; None when it is, or when there is nothing to compare."""
    if receipt is None or sha256 is None or sha256 == receipt.wheel.sha256:
        return None
    return (
        f"{said} {sha256}, but its receipt records {receipt.wheel.sha256}: it is not the wheel "
        "that build wrote (damaged or replaced)"
    )


def _file_mismatch(path: Path, receipt: AnyReceipt | None) -> str | None:
    """A local wheel against its receipt: the size first (no read), then the sha256."""
    if receipt is None:
        return None
    try:
        size = path.stat().st_size
        if size != receipt.wheel.size:
            return (
                f"it is {size} bytes, but its receipt records {receipt.wheel.size}: it is not "
                "the wheel that build wrote (damaged or replaced)"
            )
        return _mismatch(receipt, sha256_file(path), said="its sha256 is")
    except OSError as exc:
        raise InputError(
            f"cannot read {path}", why=exc.strerror or str(exc), fix="Make it readable."
        ) from None


def _valid(name: str, warnings: list[str]) -> bool:
    try:
        parse_wheel_filename(name)
    except InvalidWheelFilename as exc:
        warnings.append(f"{name} skipped: not a valid wheel file name ({exc})")
        return False
    return True


def _wheel_file(
    found: AnyReceipt | None,
    source: str,
    *,
    filename: str,
    location: str,
    mismatch: str | None,
    sha256: str | None = None,
    from_index: bool = False,
) -> WheelFile:
    """A wheel with the receipt ``found`` at ``source`` (or none) in the field of its kind."""
    return WheelFile(
        filename=filename,
        location=location,
        sha256=sha256,
        from_index=from_index,
        receipt=found if isinstance(found, Receipt) else None,
        receipt_source=source if found else None,
        mismatch=mismatch,
        overlay=found if isinstance(found, OverlayReceipt) else None,
    )


def _local_wheel(wheel: Path, warnings: list[str]) -> WheelFile:
    beside = receipt_path(wheel)
    found = _read_receipt_file(beside, wheel.name, warnings)
    return _wheel_file(
        found,
        str(beside),
        filename=wheel.name,
        location=str(wheel),
        mismatch=_file_mismatch(wheel, found),
    )


_NO_WHEELS_FIX = (
    "Name a directory of .whl files (e.g. dist/), one .whl file, or an index page that links to "
    "them (a file such as dist/index.html, or an http(s) URL)."
)


def _load_directory(
    path: Path, policy: LinkPolicy, limits: FetchLimits, deadline: PickDeadline
) -> WheelSource:
    what = f"cannot use {path}"
    try:
        if not path.exists():
            raise InputError(what, why="no such file or directory", fix=_NO_WHEELS_FIX)
        if path.is_file():
            if path.suffix != ".whl":
                return _load_local_page(path, str(path), policy, limits, deadline)
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
    return WheelSource(source=str(path), kind=kind, wheels=wheels, warnings=_capped(warnings))


def _file_path(url: str) -> Path:
    """The local path of a ``file:`` URL (percent-escapes decoded)."""
    from urllib.request import url2pathname  # only here: urllib.request is slow to import

    return Path(url2pathname(urlsplit(url).path))


def _load_local_page(
    path: Path, source: str, policy: LinkPolicy, limits: FetchLimits, deadline: PickDeadline
) -> WheelSource:
    """A local index page (``dist/index.html``): its links resolved against the file's own place,
    followed only to files inside its directory (or to an ``--allow-origin`` host)."""
    what = f"cannot read {source}"
    try:
        body = read_input(path, limit=limits.max_page_bytes, what=source, fix=_NO_WHEELS_FIX)
        real = path.resolve()
        page_url = real.as_uri()
    except PermissionError:
        raise InputError(what, why="permission denied", fix="Make it readable.") from None
    except OSError as exc:
        raise InputError(what, why=exc.strerror or str(exc), fix=_NO_WHEELS_FIX) from None
    links = parse_index(
        body.decode("utf-8", errors="replace"), page_url, max_links=limits.max_links
    )
    if not links.wheels:
        raise InputError(
            f"no wheels in {source}",
            why="it is neither a directory nor a .whl file, and it links to no .whl files as an "
            "index page would",
            fix=_NO_WHEELS_FIX,
        )
    local = LinkPolicy(allowed=policy.allowed, directory=real.parent)
    return _from_links(links, source, local, limits, deadline)


def _load_index(
    url: str, policy: LinkPolicy, limits: FetchLimits, deadline: PickDeadline
) -> WheelSource:
    scheme = urlsplit(url).scheme.lower()
    if scheme == "file":
        return _load_local_page(_file_path(url), url, policy, limits, deadline)
    if scheme not in ("http", "https"):
        raise UsageError(
            f"cannot read {url}",
            why=f"{scheme}:// is not supported",
            fix="Give a directory, an index page file, or an http(s) URL of an index page.",
        )
    body, final, charset = fetch(url, limit=limits.max_page_bytes, deadline=deadline)
    links = parse_index(
        body.decode(charset, errors="replace"), final, max_links=limits.max_links, deadline=deadline
    )
    if not links.wheels:
        raise InputError(
            f"no wheels at {url}",
            why="the page links to no .whl files",
            fix="Give the index page of the project (e.g. .../simple/tensorflow/) or a page "
            "written by tfbuild index.",
        )
    origins = tuple(dict.fromkeys((origin_of(url), origin_of(final))))
    remote = LinkPolicy(origins=origins, allowed=policy.allowed)
    return _from_links(links, url, remote, limits, deadline)


def _linked_local_wheel(
    name: str,
    location: str,
    sha256: str | None,
    receipt_url: str | None,
    policy: LinkPolicy,
    warnings: list[str],
) -> WheelFile | None:
    """A wheel a local page links to (``file:`` after resolving): the file, its receipt beside it
    (or the one the page links to), both inside the page's directory."""
    path = _file_path(location)
    if not path.is_file():
        warnings.append(f"{name} skipped: the page links to {path}, which is not there")
        return None
    if receipt_url is None or urlsplit(receipt_url).scheme != "file":
        receipt_url = receipt_path(path).as_uri()
    receipt_file = _file_path(receipt_url)
    found = None
    refused = policy.refusal(receipt_url) if receipt_file.exists() else None
    if refused:
        warnings.append(f"receipt of {name} not used: {refused}")
    else:
        found = _read_receipt_file(receipt_file, name, warnings)
    mismatch = _file_mismatch(path, found) or _mismatch(
        found, sha256, said="the page links it with sha256"
    )
    return _wheel_file(
        found,
        str(receipt_file),
        filename=name,
        location=str(path),
        sha256=sha256,
        from_index=True,
        mismatch=mismatch,
    )


def _from_links(
    links: IndexLinks, source: str, policy: LinkPolicy, limits: FetchLimits, deadline: PickDeadline
) -> WheelSource:
    """The wheels a page links to, by ``policy``: local files for a local page's ``file:`` links,
    URLs otherwise; the receipts of remote wheels fetched concurrently under the deadline."""
    warnings: list[str] = []
    receipts: dict[str, str] = {}
    for name, url in links.receipts:
        refused = policy.refusal(url)
        if refused:
            warnings.append(f"receipt {name} skipped: {refused}")
        else:
            receipts.setdefault(name, url)
    found: list[WheelFile] = []
    remote: list[tuple[str, str, str | None, str | None]] = []
    for name, location, sha256 in links.wheels:
        refused = policy.refusal(location)
        if refused:
            warnings.append(f"{name} skipped: {refused}")
            continue
        if not _valid(name, warnings):
            continue
        receipt_url = receipts.get(f"{name[: -len('.whl')]}.json")
        if urlsplit(location).scheme.lower() == "file":
            local = _linked_local_wheel(name, location, sha256, receipt_url, policy, warnings)
            if local is not None:
                found.append(local)
            continue
        if receipt_url is None and (
            parse_label(spelt_label(name)).target == NATIVE or is_overlay_wheel(Path(name))
        ):
            # Whether a native build or an overlay runs depends on its receipt: look beside it
            # even unlinked.
            receipt_url = location[: -len(".whl")] + ".json"
        remote.append((name, location, sha256, receipt_url))
    jobs = [(name, url) for name, _loc, _sha, url in remote if url is not None]
    if len(jobs) > limits.max_receipts:
        warnings.append(
            f"receipts of {len(jobs) - limits.max_receipts} wheel(s) not read: pick reads at most "
            f"{limits.max_receipts} receipts of a page; those wheels are judged by their names"
        )
        jobs = jobs[: limits.max_receipts]
    results = fetch_all(
        jobs,
        lambda job: _fetch_receipt(job, policy, limits, deadline),
        workers=limits.workers,
        deadline=deadline,
    )
    fetched = dict(zip(jobs, results, strict=True))
    for name, location, sha256, receipt_url in remote:
        read, warning = fetched.get((name, receipt_url or ""), (None, None))
        if warning:
            warnings.append(warning)
        found.append(
            _wheel_file(
                read,
                receipt_url or "",
                filename=name,
                location=location,
                sha256=sha256,
                from_index=True,
                mismatch=_mismatch(read, sha256, said="the page links it with sha256"),
            )
        )
    if not found:
        raise InputError(f"no wheels at {source}", why=warnings[0], fix=_NO_WHEELS_FIX)
    order = {name: i for i, (name, _url, _sha) in enumerate(links.wheels)}
    wheels = tuple(sorted(found, key=lambda w: order[w.filename]))
    return WheelSource(source=source, kind="index", wheels=wheels, warnings=_capped(warnings))


#: At most this many warnings are kept; the rest are counted.
MAX_WARNINGS = 20


def _capped(warnings: list[str]) -> tuple[str, ...]:
    if len(warnings) <= MAX_WARNINGS:
        return tuple(warnings)
    more = len(warnings) - MAX_WARNINGS
    return (*warnings[:MAX_WARNINGS], f"... and {more} more warning(s) like these")


def load_wheels(
    source: str, *, limits: FetchLimits | None = None, allow_origins: Sequence[str] = ()
) -> WheelSource:
    """The wheels of a directory (or one .whl file), or of an index page: a local file or an
    http(s) (or ``file://``) URL, read within ``limits`` (one deadline for all of it).

    ``allow_origins`` (``--allow-origin``) are hosts a page's links may point to besides its own."""
    limits = limits or FetchLimits()
    policy = LinkPolicy(allowed=tuple(Origin.parse(text) for text in allow_origins))
    deadline = PickDeadline(limits.timeout)
    if is_url(source):
        return _load_index(source, policy, limits, deadline)
    return _load_directory(Path(source), policy, limits, deadline)
