"""`tfbuild pick`: which wheel of a directory or an index page runs best on a machine, and why.

The wheels come from a local directory (``*.whl``, with the receipt ``<stem>.json`` beside each one
when there is one) or from an HTML index page (PEP 503 anchors, ``<a href="NAME.whl#sha256=HEX">``,
which is what ``tfbuild index`` writes). The machine is this one, or a saved ``/proc/cpuinfo`` with
a stated Python and CUDA driver.

Each wheel passes five checks in order, and the first that fails is the wheel's refusal reason:

1. **platform**: its platform tag is for this architecture (``linux_x86_64``, ``manylinux*``, ``any``);
2. **python**: its Python tag fits the interpreter (``cp311``, ``abi3``, ``py3-none``);
3. **glibc**: a ``manylinux_X_Y`` wheel needs glibc X.Y on this machine (not checked for ``--cpuinfo``);
4. **cpu**: the CPU target of its local version label (:mod:`tfbuild.labels`) runs here, by
   archspec's rule (:func:`tfbuild.detect.cpu.why_not`), and every TensorFlow guard feature its
   receipt says the compiler turned on is present. ``native`` needs a receipt; no label at all is
   assumed portable (the stock wheel);
5. **cuda**: a CUDA build needs a driver that supports that CUDA release.

Among the wheels that run (and match ``--tf`` / ``--variant``) the ranking is: newest TensorFlow,
then a usable CUDA build over CPU builds, then the most specific CPU target (a target above its
ancestors; among unrelated ones, more features), then the plain build over oneDNN (``mkl``), then an
exact ``cpXY`` build over ``abi3`` over ``py3-none``.

The decision (:func:`evaluate`, :func:`pick`) is pure. The edges are :func:`load_wheels` (a directory
read or an HTTP fetch), :func:`describe_host` (cpuinfo, nvidia-smi, the interpreter) and
:func:`install` (pip). :func:`print_pick` is the human output; ``--json`` never imports rich.
"""

from __future__ import annotations

import codecs
import html.parser
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from tfbuild.detect import cpu
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.errors import EnvironmentProblem, InputError, UnsupportedError, UsageError
from tfbuild.files import wheel_files
from tfbuild.labels import NATIVE, WheelLabel, parse_label, spelt_label, spelt_version

if TYPE_CHECKING:
    from archspec.cpu import Microarchitecture

SCHEMA = "tfbuild.pick/1"
RECEIPT_SCHEMA = "tfbuild.receipt/1"
#: Seconds an index page (or a receipt it links to) may take to arrive.
FETCH_TIMEOUT = 30.0
MAX_PAGE_BYTES = 32 * 1024 * 1024
MAX_RECEIPT_BYTES = 8 * 1024 * 1024

Variant = Literal["cpu", "mkl", "cuda"]
VARIANTS: tuple[Variant, ...] = ("cpu", "mkl", "cuda")
Stage = Literal["platform", "python", "glibc", "cpu", "cuda", "ok"]
#: How far a wheel got: a refusal at a later stage is the nearer miss.
_STAGE_ORDER: dict[str, int] = {
    "platform": 0,
    "python": 1,
    "glibc": 2,
    "cpu": 3,
    "cuda": 4,
    "ok": 5,
}
UNLABELLED_REASON = "no CPU label: assumed portable (like the stock wheel)"

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_PY_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")
_CUDA_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")
_INTERPRETER = re.compile(r"^([a-z]+?)(\d)(\d*)$")
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(.+)$")
_MUSLLINUX = re.compile(r"^musllinux_(\d+)_(\d+)_(.+)$")
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_IMPLEMENTATIONS = {"cp": "CPython", "pp": "PyPy", "py": "Python"}


def is_url(text: str) -> bool:
    return bool(_URL.match(text))


# --- receipts and wheels ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Receipt:
    """What a wheel's receipt (``<stem>.json``, written by ``tfbuild wheel``) says it was built for."""

    source: str  # the receipt's path or URL
    target: str | None  # archspec name, "native", or None
    variant: str | None
    architecture: str | None  # the plan's architecture (x86_64, aarch64)
    cflags: tuple[str, ...]
    covered: tuple[str, ...]  # guard features a flag turned on: instructions the binary may use

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "variant": self.variant,
            "architecture": self.architecture,
            "cflags": list(self.cflags),
            "covered": list(self.covered),
        }


def parse_receipt(data: Any, *, source: str, wheel: str) -> Receipt:
    """Read a receipt's JSON; a ValueError says why it is not a usable receipt of ``wheel``."""
    if not isinstance(data, dict) or data.get("schema") != RECEIPT_SCHEMA:
        raise ValueError(f"it is not a {RECEIPT_SCHEMA} receipt")
    recorded = data.get("wheel")
    if isinstance(recorded, dict) and recorded.get("name") not in (None, wheel):
        raise ValueError(f"it describes {recorded.get('name')!r}, not this wheel")
    found = data.get("plan")
    plan: dict[str, Any] = found if isinstance(found, dict) else {}
    listed = plan.get("coverage")
    coverage: list[Any] = listed if isinstance(listed, list) else []
    covered = tuple(
        str(item["feature"])
        for item in coverage
        if isinstance(item, dict) and item.get("feature") and item.get("flag")
    )
    target = data.get("target", plan.get("target"))
    cflags = data.get("cflags", plan.get("cflags")) or []
    return Receipt(
        source=source,
        target=str(target) if target else None,
        variant=str(data["variant"]) if data.get("variant") else None,
        architecture=str(plan["architecture"]) if plan.get("architecture") else None,
        cflags=tuple(str(f) for f in cflags) if isinstance(cflags, list) else (),
        covered=covered,
    )


@dataclass(frozen=True, kw_only=True)
class WheelFile:
    """One wheel found: its file name, where it is, its checksum and receipt when known."""

    filename: str
    location: str  # a local path, or an absolute URL without its fragment
    sha256: str | None = None  # from the index link's #sha256= fragment
    receipt: Receipt | None = None

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
            "receipt": self.receipt.to_json() if self.receipt else None,
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
        return parse_receipt(json.loads(body.decode(charset)), source=url, wheel=wheel)
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
        return parse_receipt(json.loads(raw.decode("utf-8")), source=str(path), wheel=wheel)
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


_NO_WHEELS_FIX = "Name a directory of .whl files (e.g. dist/) or an index page that links to them."


def _load_directory(path: Path) -> WheelSource:
    what = f"cannot use {path}"
    try:
        if not path.exists():
            raise InputError(what, why="no such file or directory", fix=_NO_WHEELS_FIX)
        if path.is_file():
            if path.suffix != ".whl":
                raise InputError(
                    what, why="it is neither a directory nor a .whl file", fix=_NO_WHEELS_FIX
                )
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
    wheels = tuple(
        WheelFile(
            filename=f.name,
            location=str(f),
            receipt=_read_receipt_file(f.with_suffix(".json"), f.name, warnings),
        )
        for f in files
        if _valid(f.name, warnings)
    )
    if not wheels:
        raise InputError(f"no wheels in {path}", why=warnings[0], fix=_NO_WHEELS_FIX)
    kind: Literal["directory", "file"] = "file" if path.is_file() else "directory"
    return WheelSource(source=str(path), kind=kind, wheels=wheels, warnings=tuple(warnings))


def _load_index(url: str) -> WheelSource:
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise UsageError(
            f"cannot read {url}",
            why=f"{scheme}:// is not supported",
            fix="Give a directory or an http(s) URL of an index page.",
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
    receipts = dict(links.receipts)
    warnings: list[str] = []
    wheels: list[WheelFile] = []
    for name, location, sha256 in links.wheels:
        if not _valid(name, warnings):
            continue
        stem = name[: -len(".whl")]
        receipt_url = receipts.get(f"{stem}.json")
        if receipt_url is None and parse_label(spelt_label(name)).target == NATIVE:
            # Whether a native build runs depends on its receipt: look beside it even unlinked.
            receipt_url = location[: -len(".whl")] + ".json"
        receipt = _fetch_receipt(receipt_url, name, warnings) if receipt_url else None
        wheels.append(WheelFile(filename=name, location=location, sha256=sha256, receipt=receipt))
    if not wheels:
        raise InputError(f"no wheels at {url}", why=warnings[0], fix=_NO_WHEELS_FIX)
    return WheelSource(source=url, kind="index", wheels=tuple(wheels), warnings=tuple(warnings))


def load_wheels(source: str) -> WheelSource:
    """The wheels of a directory (or one .whl file) or of an http(s) index page."""
    return _load_index(source) if is_url(source) else _load_directory(Path(source))


# --- the host ----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Host:
    """The machine and interpreter a wheel must run on."""

    source: str  # "this machine" or the --cpuinfo file
    live: bool  # this machine: glibc is checked
    cpu: CpuInfo
    target: str  # archspec's name for the CPU
    guard: tuple[str, ...]  # TensorFlow's guard features the CPU has
    python: str  # "3.11"
    implementation: str  # "cp"
    python_source: str
    glibc: str | None  # this machine's glibc (None: not glibc, or not checked for --cpuinfo)
    driver_cuda: str | None  # the newest CUDA the NVIDIA driver supports; None: no GPU
    driver_source: str

    @property
    def python_text(self) -> str:
        return f"{_IMPLEMENTATIONS.get(self.implementation, self.implementation)} {self.python}"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "live": self.live,
            "architecture": self.cpu.architecture,
            "target": self.target,
            "tensorflow_features": list(self.guard),
            "python": self.python,
            "python_implementation": self.implementation,
            "python_source": self.python_source,
            "glibc": self.glibc,
            "driver_cuda": self.driver_cuda,
            "driver_cuda_source": self.driver_source,
        }


def parse_python(text: str) -> str:
    """``3.11`` (or ``3.11.7``) -> ``3.11``; anything else is a usage error."""
    found = _PY_VERSION.match(text.strip())
    if not found:
        raise UsageError(
            f"--python {text!r} is not a Python version", fix="Write it as X.Y, e.g. 3.11."
        )
    return f"{int(found.group(1))}.{int(found.group(2))}"


def parse_driver_cuda(text: str) -> str | None:
    """``12.4`` (or ``12.4.1``) -> ``12.4``; ``none`` -> None (no GPU)."""
    if text.strip().lower() == "none":
        return None
    found = _CUDA_VERSION.match(text.strip())
    if not found:
        raise UsageError(
            f"--driver-cuda {text!r} is not a CUDA version",
            fix="Write the newest CUDA the driver supports as X.Y (nvidia-smi prints it), or none.",
        )
    return f"{int(found.group(1))}.{int(found.group(2))}"


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _abi_prefix(name: str) -> str:
    return {"cpython": "cp", "pypy": "pp"}.get(name, name)


def query_python(executable: str) -> tuple[str, str]:
    """(implementation code, "X.Y") of another interpreter, asked in a subprocess."""
    code = "import sys; print(sys.implementation.name, sys.version_info[0], sys.version_info[1])"
    what = f"cannot use --pip-python {executable}"
    try:
        proc = subprocess.run(  # argv built here, no shell
            [executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(what, why=str(exc), fix="Give the path of a Python interpreter.") from None
    parts = proc.stdout.split()
    if proc.returncode != 0 or len(parts) != 3 or not all(p.isdigit() for p in parts[1:]):
        last = (proc.stderr.strip().splitlines() or ["it printed no version"])[-1]
        raise InputError(what, why=last, fix="Give the path of a Python interpreter.")
    return _abi_prefix(parts[0]), f"{parts[1]}.{parts[2]}"


def _driver_here() -> tuple[str | None, str]:
    from tfbuild.detect.nvidia import detect_nvidia

    report = detect_nvidia()
    if report.driver is None:
        return None, "no NVIDIA driver found"
    if report.driver.cuda_version is None:
        return None, f"NVIDIA driver {report.driver.version}"
    return (
        report.driver.cuda_version,
        f"NVIDIA driver {report.driver.version} ({report.driver.cuda_version_source})",
    )


def describe_host(
    *,
    cpuinfo: Path | None = None,
    python: str | None = None,
    pip_python: str | None = None,
    driver_cuda: str | None = None,
    driver: Callable[[], tuple[str | None, str]] = _driver_here,
) -> Host:
    """This machine, or a saved cpuinfo; the Python and CUDA driver stated or found."""
    from tfbuild.detect.cpuinfo import read_cpuinfo

    live = cpuinfo is None
    info = cpu.host_cpuinfo() if cpuinfo is None else read_cpuinfo(cpuinfo)
    if python is not None:
        implementation, version, python_source = "cp", parse_python(python), "--python"
    elif pip_python is not None:
        implementation, version = query_python(pip_python)
        python_source = f"--pip-python {pip_python}"
    else:
        implementation = _abi_prefix(sys.implementation.name)
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        python_source = f"this interpreter, {sys.executable}"
    if driver_cuda is not None:
        cuda = parse_driver_cuda(driver_cuda)
        cuda_source = "--driver-cuda"
    elif not live:
        cuda, cuda_source = (
            None,
            "no GPU assumed for a --cpuinfo machine; state its driver's CUDA with --driver-cuda X.Y",
        )
    else:
        cuda, cuda_source = driver()
    glibc: str | None = None
    if live:
        from tfbuild.detect.system import glibc_version

        glibc = glibc_version()
    return Host(
        source="this machine" if live else str(cpuinfo),
        live=live,
        cpu=info,
        target=str(cpu.identify(info).name),
        guard=cpu.guard_features(info),
        python=version,
        implementation=implementation,
        python_source=python_source,
        glibc=glibc,
        driver_cuda=cuda,
        driver_source=cuda_source,
    )


# --- one wheel ------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PickOptions:
    """What the user narrowed the choice to."""

    tf: str | None = None  # "2.20" or "2.20.1": wheels of that release
    variant: Variant | None = None

    @staticmethod
    def parse(*, tf: str | None, variant: str | None) -> PickOptions:
        chosen: Variant | None = None
        if variant is not None:
            for known in VARIANTS:
                if variant.strip().lower() == known:
                    chosen = known
            if chosen is None:
                raise UsageError(f"unknown --variant {variant!r}", fix="Use cpu, mkl or cuda.")
        if tf is not None:
            try:
                Version(tf)
            except InvalidVersion:
                raise UsageError(
                    f"--tf {tf!r} is not a version", fix="Write it like 2.20 or 2.20.1."
                ) from None
        return PickOptions(tf=tf, variant=chosen)

    def to_json(self) -> dict[str, Any]:
        return {"tf": self.tf, "variant": self.variant}


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """One wheel on one host: does it run, and why (not)."""

    wheel: WheelFile
    name: str  # the distribution, normalised
    version: str  # as the file spells it: 2.21.0+x86_64v4
    tensorflow: str  # the public version: 2.21.0
    tags: tuple[str, ...]
    label: WheelLabel
    target: str | None  # the CPU target decided on (the label's, else the receipt's)
    runs: bool
    stage: Stage  # the check that refused it ("ok" when it runs)
    reason: str
    python_rank: int = 0  # 3 exact cpXY, 2 abi3 (or cpXY-none), 1 py3-none; 0 when it does not fit
    filtered: str | None = None  # why --tf / --variant leaves it out
    rank: int | None = (
        None  # 1 for the chosen wheel, 2... for the others that run and are asked for
    )

    @property
    def variant(self) -> Variant:
        return self.label.variant

    @property
    def status(self) -> Literal["runs", "refused", "filtered"]:
        if not self.runs:
            return "refused"
        return "filtered" if self.filtered else "runs"

    def to_json(self) -> dict[str, Any]:
        return {
            **self.wheel.to_json(),
            "name": self.name,
            "version": self.version,
            "tensorflow": self.tensorflow,
            "tags": list(self.tags),
            "label": self.label.to_json() if self.label.text else None,
            "target": self.target,
            "variant": self.variant,
            "cuda": self.label.cuda,
            "status": self.status,
            "runs": self.runs,
            "stage": self.stage,
            "reason": self.reason,
            "filtered": self.filtered,
            "rank": self.rank,
        }


def _platform_arch_ok(arch: str, host: Host) -> bool:
    machine = host.cpu.architecture
    if arch == machine:
        return True
    # A POWER dump does not say its byte order; either wheel may fit.
    return machine == "ppc64" and not host.cpu.byte_order_known and arch in ("ppc64", "ppc64le")


def _platform_check(platform: str, host: Host) -> tuple[str | None, str | None]:
    """(architecture refusal, glibc refusal) for one platform tag; None where it passes."""
    if platform == "any":
        return None, None
    arch: str | None = None
    glibc: tuple[int, int] | None = None
    musl = False
    if platform.startswith("linux_"):
        arch = platform[len("linux_") :]
    elif found := _MANYLINUX.match(platform):
        glibc, arch = (int(found.group(1)), int(found.group(2))), found.group(3)
    elif found := _MUSLLINUX.match(platform):
        musl, arch = True, found.group(3)
    else:
        legacy, _, rest = platform.partition("_")
        if legacy in _LEGACY_MANYLINUX and rest:
            glibc, arch = _LEGACY_MANYLINUX[legacy], rest
    if arch is None:
        return f"built for another operating system ({platform})", None
    if not _platform_arch_ok(arch, host):
        return f"built for {arch} ({platform}), but the machine is {host.cpu.architecture}", None
    if not host.live:
        return None, None
    if musl and host.glibc:
        return None, f"built for musl libc ({platform}), but this machine runs glibc {host.glibc}"
    if glibc is not None:
        needed = f"{glibc[0]}.{glibc[1]}"
        if host.glibc is None:
            return (
                None,
                f"needs glibc {needed} or newer ({platform}), but this machine's C library is not glibc",
            )
        if _version_key(host.glibc)[:2] < glibc:
            return (
                None,
                f"needs glibc {needed} or newer ({platform}), but this machine has glibc {host.glibc}",
            )
    return None, None


def python_rank(tag: Tag, host: Host) -> int:
    """How well a tag's interpreter and ABI fit the host's Python: 3 exact, 2 abi3, 1 py3, 0 not."""
    found = _INTERPRETER.match(tag.interpreter)
    if not found:
        return 0
    kind, major, minor_text = found.group(1), int(found.group(2)), found.group(3)
    minor = int(minor_text) if minor_text else None
    host_major, host_minor = _version_key(host.python)
    if major != host_major:
        return 0
    if kind == "py" or minor is None:
        return 1 if tag.abi == "none" and (minor is None or minor <= host_minor) else 0
    if kind != host.implementation:
        return 0
    if tag.abi == "abi3":
        return 2 if minor <= host_minor else 0
    if minor != host_minor:
        return 0
    if tag.abi == "none":
        return 2
    return 3 if tag.abi.startswith(f"{kind}{major}{minor}") or tag.abi.startswith("pypy") else 0


def _describe_tag(tag: Tag) -> str:
    found = _INTERPRETER.match(tag.interpreter)
    if not found:
        return f"{tag.interpreter}-{tag.abi}"
    kind, major, minor = found.group(1), found.group(2), found.group(3)
    who = _IMPLEMENTATIONS.get(kind, kind)
    version = f"{major}.{minor}" if minor else major
    if tag.abi == "abi3":
        version += " or newer"
    return f"{tag.interpreter}-{tag.abi} ({who} {version})"


def _illegal(fit_reason: str, target: Microarchitecture, host: Host) -> str:
    if target.vendor in (host.cpu.vendor, "generic"):
        return f"would die with Illegal instruction: {fit_reason}"
    return f"not for this CPU: {fit_reason}"


def _cpu_check(
    label: WheelLabel, receipt: Receipt | None, host: Host
) -> tuple[bool, str, str | None]:
    """(runs, reason, the target decided on) for the CPU part of a wheel."""
    from archspec.cpu import TARGETS

    target = label.target
    source = "label"
    if target is None and receipt is not None and receipt.target:
        target, source = receipt.target, "receipt"
    if target is None:
        if label.other:
            shown = ".".join(label.other)
            return (
                False,
                f"its label segment {shown!r} names no CPU target tfbuild knows (no archspec "
                "microarchitecture), and no receipt says what it was built for",
                None,
            )
        return True, UNLABELLED_REASON, None
    guard = set(host.guard)
    if target == NATIVE:
        if receipt is None:
            return (
                False,
                "built with -march=native on some machine, and no receipt beside it says which "
                "instructions it uses",
                target,
            )
        if receipt.architecture and receipt.architecture != host.cpu.architecture:
            return (
                False,
                f"built with -march=native on an {receipt.architecture} machine, but this one is "
                f"{host.cpu.architecture}",
                target,
            )
        if not receipt.covered:
            return (
                False,
                "built with -march=native, and its receipt records no CPU features",
                target,
            )
        missing = [f for f in receipt.covered if f not in guard]
        if missing:
            return (
                False,
                "would die with Illegal instruction: built with -march=native on a CPU with "
                f"{', '.join(missing)}, which this CPU lacks (from its receipt)",
                target,
            )
        return (
            True,
            f"built with -march=native; every feature its receipt records is here "
            f"({', '.join(receipt.covered)})",
            target,
        )
    if target not in TARGETS:
        return (
            False,
            f"its receipt names the target {target!r}, which archspec does not know",
            target,
        )
    micro = TARGETS[target]
    fit = cpu.why_not(micro, host.cpu)
    if not fit.runs:
        return False, _illegal(fit.reason, micro, host), target
    reason = fit.reason + (" (target from its receipt)" if source == "receipt" else "")
    if receipt is not None:
        missing = [f for f in receipt.covered if f not in guard]
        if missing:
            return (
                False,
                f"would die with Illegal instruction: its receipt says the compiler turned on "
                f"{', '.join(missing)}, which this CPU lacks",
                target,
            )
        if receipt.covered:
            reason += "; every feature its receipt records is here"
    return True, reason, target


def _cuda_check(cuda: str, host: Host) -> tuple[bool, str]:
    if host.driver_cuda is None and host.driver_source.startswith("NVIDIA driver"):
        return (
            False,
            f"a CUDA {cuda} build, but the CUDA release the driver supports is unknown "
            f"({host.driver_source}); state it with --driver-cuda X.Y",
        )
    if host.driver_cuda is None:
        return False, f"a CUDA {cuda} build, but there is no GPU here ({host.driver_source})"
    if _version_key(host.driver_cuda)[:2] < _version_key(cuda)[:2]:
        from tfbuild.detect.nvidia import min_driver_for_cuda

        minimum = min_driver_for_cuda(cuda)
        need = f" (CUDA {cuda} needs driver {minimum} or newer)" if minimum else ""
        return (
            False,
            f"a CUDA {cuda} build, but the driver supports only CUDA {host.driver_cuda}{need}",
        )
    return True, f"a CUDA {cuda} build; the driver supports CUDA {host.driver_cuda}"


def evaluate(wheel: WheelFile, host: Host) -> Verdict:
    """Does this wheel run on the host? The first failed check is the reason."""
    name, version, _build, tagset = parse_wheel_filename(wheel.filename)
    tags = sorted(tagset, key=str)
    label = parse_label(spelt_label(wheel.filename) or version.local)

    def verdict(stage: Stage, reason: str, *, target: str | None = None, rank: int = 0) -> Verdict:
        return Verdict(
            wheel=wheel,
            name=str(name),
            version=spelt_version(wheel.filename),
            tensorflow=version.public,
            tags=tuple(str(t) for t in tags),
            label=label,
            target=target or label.target or (wheel.receipt.target if wheel.receipt else None),
            runs=stage == "ok",
            stage=stage,
            reason=reason,
            python_rank=rank,
        )

    checks = [(t, *_platform_check(t.platform, host)) for t in tags]
    arch_ok = [(t, glibc) for t, arch, glibc in checks if arch is None]
    if not arch_ok:
        return verdict("platform", checks[0][1] or "")
    fitting = [(t, glibc) for t, glibc in arch_ok if python_rank(t, host)]
    if not fitting:
        described = ", ".join(sorted({_describe_tag(t) for t, _ in arch_ok}))
        return verdict(
            "python",
            f"built for {described}, not the {host.python_text} here ({host.python_source})",
        )
    usable = [t for t, glibc in fitting if glibc is None]
    if not usable:
        return verdict("glibc", fitting[0][1] or "")
    rank = max(python_rank(t, host) for t in usable)
    runs, reason, target = _cpu_check(label, wheel.receipt, host)
    if not runs:
        return verdict("cpu", reason, target=target, rank=rank)
    if label.cuda:
        cuda_ok, cuda_reason = _cuda_check(label.cuda, host)
        if not cuda_ok:
            return verdict("cuda", cuda_reason, target=target, rank=rank)
        reason = f"{reason}; {cuda_reason}"
    return verdict("ok", reason, target=target, rank=rank)


# --- the choice -------------------------------------------------------------------------------------------


def _specificity(target: Microarchitecture) -> tuple[int, int]:
    # archspec's descendants carry all their ancestors' features, so more features (then more
    # ancestors, for equal sets such as nehalem and x86_64_v2) puts every target above its
    # ancestors and, among unrelated targets, the one with more features first.
    return len(target.features), len(target.ancestors)


def _target_specificity(verdict: Verdict, host: Host) -> tuple[int, int]:
    from archspec.cpu import TARGETS

    target = verdict.target
    if target is None:
        return (-1, -1)  # unlabelled: the least specific of all
    if target == NATIVE:
        receipt = verdict.wheel.receipt
        if receipt is not None and set(receipt.covered) == set(host.guard):
            # Built on a CPU with exactly this one's TensorFlow features: a machine like this one.
            return _specificity(cpu.identify(host.cpu))
        # A subset of this CPU's features: only known to run, so just above unlabelled.
        return (0, 0)
    return _specificity(TARGETS[target]) if target in TARGETS else (-1, -1)


def _rank_key(verdict: Verdict, host: Host) -> tuple[Any, ...]:
    return (
        Version(verdict.tensorflow),
        verdict.label.cuda is not None,
        _target_specificity(verdict, host),
        verdict.target != NATIVE,  # a named target over a native build of the same rank
        verdict.variant != "mkl",
        verdict.python_rank,
        verdict.wheel.receipt is not None,
    )


def _closeness(verdict: Verdict) -> int:
    """For refused wheels: the less a target asks, the nearer the miss (x86_64_v2 before zen4)."""
    from archspec.cpu import TARGETS

    if verdict.target in TARGETS:
        return -len(TARGETS[verdict.target].features)
    return -(10**6)


def _filter(verdict: Verdict, options: PickOptions) -> str | None:
    reasons = []
    if options.tf is not None:
        asked = Version(options.tf).release
        if Version(verdict.tensorflow).release[: len(asked)] != asked:
            reasons.append(f"not TensorFlow {options.tf} (--tf)")
    if options.variant is not None and verdict.variant != options.variant:
        reasons.append(f"not a {options.variant} build (--variant)")
    return "; ".join(reasons) or None


@dataclass(frozen=True, kw_only=True)
class PickResult:
    """The wheels of a source judged on one host, the best first, and the choice."""

    source: WheelSource
    host: Host
    options: PickOptions
    wheels: tuple[Verdict, ...]  # chosen first, then the others that run, then the refused
    chosen: Verdict | None
    why: tuple[str, ...]  # why the chosen wheel, one sentence each
    warnings: tuple[str, ...] = ()

    def no_choice(self) -> UnsupportedError:
        """The error for "nothing runs here": the host target and the nearest miss."""
        where = f"{self.host.target} ({self.host.source}, {self.host.python_text})"
        asked = [v for v in self.wheels if v.filtered is None]
        refused = [v for v in asked if not v.runs]
        if refused:
            best = refused[0]
            why = f"the nearest, {best.wheel.filename}: {best.reason}"
        else:
            runs = [v for v in self.wheels if v.runs]
            why = f"{len(runs)} wheel(s) run here, but {runs[0].filtered}" if runs else ""
        return UnsupportedError(
            f"no wheel in {self.source.source} runs on {where}",
            why=why,
            fix="Build one for this machine with tfbuild wheel; every wheel's reason is in the "
            "list (wheels[] in --json).",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "source": self.source.to_json(),
            "host": self.host.to_json(),
            "options": self.options.to_json(),
            "chosen": self.chosen.to_json() if self.chosen else None,
            "why": list(self.why),
            "wheels": [v.to_json() for v in self.wheels],
            "warnings": list(self.warnings),
        }


def _why(chosen: Verdict, others: Sequence[Verdict]) -> tuple[str, ...]:
    lines = [chosen.reason]
    if not others:
        return (*lines, "the only wheel that runs here and matches what was asked")
    newer = Version(chosen.tensorflow)
    if any(Version(v.tensorflow) < newer for v in others):
        lines.append(f"the newest TensorFlow that runs here: {chosen.tensorflow}")
    peers = [v for v in others if v.tensorflow == chosen.tensorflow]
    if chosen.label.cuda and any(v.label.cuda is None for v in peers):
        lines.append("a CUDA build the driver can run, preferred over CPU builds")
    peers = [v for v in peers if (v.label.cuda is None) == (chosen.label.cuda is None)]
    below = sorted({v.target or "unlabelled" for v in peers if v.target != chosen.target})
    if below:
        lines.append(
            f"the most specific CPU target that runs here: {chosen.target or 'unlabelled'} "
            f"(over {', '.join(below)})"
        )
    if chosen.variant == "cpu" and any(v.variant == "mkl" for v in peers):
        lines.append("the plain build over the oneDNN (mkl) one; --variant mkl asks for that")
    if chosen.python_rank == 3 and any(v.python_rank < 3 for v in peers):
        lines.append("built for exactly this Python (over abi3 / py3 wheels)")
    return tuple(lines)


def pick(source: WheelSource, host: Host, options: PickOptions | None = None) -> PickResult:
    """Judge every wheel on the host and choose the best one that runs (pure)."""
    options = options or PickOptions()
    verdicts = [evaluate(w, host) for w in source.wheels]
    verdicts = [replace(v, filtered=_filter(v, options)) for v in verdicts]
    eligible = sorted(
        (v for v in verdicts if v.runs and v.filtered is None),
        key=lambda v: (_rank_key(v, host), v.wheel.filename),
        reverse=True,
    )
    eligible = [replace(v, rank=i) for i, v in enumerate(eligible, start=1)]
    filtered = sorted(
        (v for v in verdicts if v.runs and v.filtered is not None),
        key=lambda v: (_rank_key(v, host), v.wheel.filename),
        reverse=True,
    )
    refused = sorted(
        (v for v in verdicts if not v.runs),
        key=lambda v: (
            v.filtered is None,
            _STAGE_ORDER[v.stage],
            Version(v.tensorflow),
            v.python_rank,
            _closeness(v),
            v.wheel.filename,
        ),
        reverse=True,
    )
    chosen = eligible[0] if eligible else None
    why = _why(chosen, eligible[1:]) if chosen else ()
    return PickResult(
        source=source,
        host=host,
        options=options,
        wheels=(*eligible, *filtered, *refused),
        chosen=chosen,
        why=why,
        warnings=source.warnings,
    )


# --- installing ----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class InstallResult:
    """What ``pip install`` did with the chosen wheel."""

    wheel: str
    python: str
    command: tuple[str, ...]
    returncode: int
    output: tuple[str, ...]  # pip's last 40 lines, when captured (--json)

    def error(self) -> EnvironmentProblem | None:
        """The error to raise when pip failed (its output travels in the details), else None."""
        if self.returncode == 0:
            return None
        last = next((line.strip() for line in reversed(self.output) if line.strip()), "")
        return EnvironmentProblem(
            f"pip could not install {self.wheel} into {self.python}",
            why=f"pip exited with status {self.returncode}" + (f": {last}" if last else ""),
            fix="Read pip's output above.",
            details=self.output,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "wheel": self.wheel,
            "python": self.python,
            "command": list(self.command),
            "returncode": self.returncode,
            "output": list(self.output),
        }


def install(
    verdict: Verdict, *, python: str, pip_args: Iterable[str] = (), capture: bool = False
) -> InstallResult:
    """``python -m pip install [pip_args] WHEEL``; check :meth:`InstallResult.error` after.

    With ``capture`` pip's output is kept (its last 40 lines, for --json); otherwise it goes to
    the terminal (standard error) as pip prints it.
    """
    argv = (python, "-m", "pip", "install", *pip_args, verdict.wheel.install_spec)
    try:
        proc = subprocess.run(  # argv built here, no shell
            argv,
            stdout=subprocess.PIPE if capture else sys.stderr,
            stderr=subprocess.STDOUT if capture else None,
            text=True,
            errors="replace",
            check=False,
        )
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot run {python} -m pip",
            why=exc.strerror or str(exc),
            fix="Give an interpreter with --pip-python PATH.",
        ) from None
    return InstallResult(
        wheel=verdict.wheel.filename,
        python=python,
        command=argv,
        returncode=proc.returncode,
        output=tuple((proc.stdout or "").splitlines()[-40:]),
    )


# --- for people -------------------------------------------------------------------------------------------


def print_pick(result: PickResult) -> None:
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False)
    host = result.host
    console.print(
        f"[bold]host[/bold]: {escape(host.target)} ({escape(host.source)}), "
        f"{escape(host.python_text)} ({escape(host.python_source)}), "
        f"CUDA driver: {escape(host.driver_cuda or 'none')} ({escape(host.driver_source)})",
        soft_wrap=True,
    )
    if result.chosen is not None:
        console.print(f"[bold green]chosen[/bold green]: {escape(result.chosen.wheel.filename)}")
        for line in result.why:
            console.print(f"  - {escape(line)}", soft_wrap=True)
    else:
        console.print("[bold red]no wheel runs here[/bold red]")
    table = Table(
        title=f"wheels in {escape(result.source.source)}", title_justify="left", box=box.SIMPLE_HEAD
    )
    table.add_column("#", justify="right")
    table.add_column("wheel", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("reason", overflow="fold")
    colors = {"runs": "green", "refused": "red", "filtered": "yellow"}
    for verdict in result.wheels:
        status = verdict.status
        reason = (
            verdict.reason if status != "filtered" else f"{verdict.filtered} ({verdict.reason})"
        )
        table.add_row(
            str(verdict.rank or ""),
            escape(verdict.wheel.filename),
            f"[{colors[status]}]{status}[/{colors[status]}]",
            escape(reason),
        )
    console.print(table)
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
