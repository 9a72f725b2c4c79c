"""A directory of wheels as a page pip reads: ``index.html`` (PEP 503 anchors) and ``SHA256SUMS``.

``tfbuild index DIR`` lists every ``*.whl`` in DIR. Each wheel gets one anchor,
``<a href="NAME#sha256=HEX">NAME</a>``, which is what ``pip --find-links DIR/index.html`` and
``tfbuild pick`` read (pip checks the fragment's hash before it installs), inside a table for people:
TensorFlow version, Python tag, CPU target, variant, CUDA, size and sha256. What a wheel was built for
comes from its receipt (``<stem>.json`` beside it, written by ``tfbuild wheel``) when there is one,
else from the local version label of its file name (:mod:`tfbuild.labels`).

Every sha256 is computed from the wheel itself. Where a receipt exists, it must be a readable
:class:`~tfbuild.receipt.Receipt` whose ``wheel.sha256`` (and name and size) agree and whose plan still
hashes to its ``plan_sha256``, or nothing is written: a corrupted, swapped or edited artifact is never
published.
The output is deterministic (sorted by name, no timestamps), and both files are written whole under a
temp name and renamed. :func:`collect` and :func:`render_html` are pure apart from reading the
directory; :func:`write_index` is the one step that writes.
"""

from __future__ import annotations

import html
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from tfbuild.errors import InputError, UsageError
from tfbuild.files import sha256_file, wheel_files, write_text
from tfbuild.labels import parse_label, spelt_label, spelt_version
from tfbuild.receipt import Receipt, WheelFloor, read_receipt, receipt_path

SCHEMA = "tfbuild.index/1"
INDEX_NAME = "index.html"
SUMS_NAME = "SHA256SUMS"
DEFAULT_TITLE = "TensorFlow wheels built by tfbuild"


@dataclass(frozen=True, kw_only=True)
class IndexEntry:
    """One wheel of the page: its file, its checksum and what it was built for."""

    name: str  # the file name
    distribution: str  # normalised project name: tensorflow-cpu
    version: str  # the full version, local label included: 2.21.0+x86_64v4
    tensorflow: str  # the public version: 2.21.0
    python: tuple[str, ...]  # interpreter tags: ("cp311",)
    tags: tuple[str, ...]  # every compatibility tag: ("cp311-cp311-linux_x86_64",)
    label: str  # the local version label, "" when none
    target: str | None
    variant: str
    cuda: str | None
    standin: bool
    size: int
    sha256: str
    receipt: str | None  # the receipt's file name, when there is one
    described_by: Literal["receipt", "label"]
    floor: WheelFloor | None = None  # from the receipt: the glibc/libstdc++ it needs, its policy

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "tensorflow": self.tensorflow,
            "python": list(self.python),
            "tags": list(self.tags),
            "label": self.label,
            "target": self.target,
            "variant": self.variant,
            "cuda": self.cuda,
            "standin": self.standin,
            "size": self.size,
            "sha256": self.sha256,
            "receipt": self.receipt,
            "described_by": self.described_by,
            "floor": self.floor.to_json() if self.floor else None,
        }

    @property
    def runs_on(self) -> str:
        """The oldest system it loads on, for people: "glibc 2.27, libstdc++ 3.4.22"."""
        if self.floor is None:
            return "not inspected"
        return self.floor.needs or "any glibc"


@dataclass(frozen=True, kw_only=True)
class IndexResult:
    """What ``tfbuild index`` wrote."""

    directory: Path
    index: Path
    sums: Path
    title: str
    entries: tuple[IndexEntry, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "directory": str(self.directory),
            "index": str(self.index),
            "sha256sums": str(self.sums),
            "title": self.title,
            "wheels": [e.to_json() for e in self.entries],
        }


# --- reading the directory -------------------------------------------------------------------------


def _checked_receipt(path: Path, wheel: Path, sha256: str, size: int) -> Receipt:
    """The receipt must describe exactly this file (same name, sha256 and size), and its plan must
    be the one the build recorded."""
    receipt = read_receipt(path)
    recorded = receipt.wheel
    fix = (
        f"Do not publish {wheel.name}: rebuild it (or fetch it again) so that the wheel and its "
        "receipt come from the same build."
    )
    if recorded.name != wheel.name:
        raise InputError(
            f"{wheel} does not match its receipt",
            why=f"{path.name} describes {recorded.name!r}",
            fix=fix,
        )
    if recorded.sha256.lower() != sha256:
        raise InputError(
            f"{wheel} does not match its receipt: sha256 {sha256}",
            why=f"{path.name} records sha256 {recorded.sha256}, so the wheel was changed or "
            "corrupted after it was built",
            fix=fix,
        )
    if recorded.size != size:
        raise InputError(
            f"{wheel} does not match its receipt: {size} bytes",
            why=f"{path.name} records {recorded.size} bytes",
            fix=fix,
        )
    if not receipt.plan_intact():
        raise InputError(
            f"{path} was edited after {wheel.name} was built",
            why="its plan no longer matches its plan_sha256",
            fix=fix,
        )
    return receipt


def _entry(wheel: Path) -> IndexEntry:
    try:
        name, version, _build, tags = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as exc:
        raise InputError(
            f"{wheel} is not a wheel file name",
            why=str(exc),
            fix="Wheels are named NAME-VERSION-PYTHON-ABI-PLATFORM.whl (PEP 427); rename or "
            "remove it.",
        ) from None
    try:
        size = wheel.stat().st_size
        sha256 = sha256_file(wheel)
    except OSError as exc:
        raise InputError(f"cannot read {wheel}", why=exc.strerror or str(exc)) from None
    label_text = spelt_label(wheel.name) or ""
    from_label = parse_label(label_text or None)
    target, cuda = from_label.target, from_label.cuda
    variant: str = from_label.variant
    standin = False
    floor: WheelFloor | None = None
    beside = receipt_path(wheel)
    receipt_name: str | None = None
    described_by: Literal["receipt", "label"] = "label"
    if beside.is_file():
        receipt = _checked_receipt(beside, wheel, sha256, size)
        receipt_name = beside.name
        described_by = "receipt"
        standin = receipt.standin
        floor = receipt.floor
        target, variant = receipt.target, receipt.variant
        if receipt.label:
            cuda = parse_label(receipt.label).cuda or cuda
        cuda = receipt.cuda or cuda  # the exact release the plan used
    if variant != "cuda":
        cuda = None
    return IndexEntry(
        name=wheel.name,
        distribution=str(name),
        version=spelt_version(wheel.name),
        tensorflow=version.public,
        python=tuple(sorted({t.interpreter for t in tags})),
        tags=tuple(sorted(str(t) for t in tags)),
        label=label_text,
        target=target,
        variant=variant,
        cuda=cuda,
        standin=standin,
        size=size,
        sha256=sha256,
        receipt=receipt_name,
        described_by=described_by,
        floor=floor,
    )


def wheels_in(directory: Path) -> list[Path]:
    """:func:`wheel_files` of ``directory``, which must be one."""
    if not directory.is_dir():
        raise InputError(
            f"{directory} is not a directory",
            fix="Name the directory the wheels are in, e.g. tfbuild index dist.",
        )
    return wheel_files(directory)


def collect(directory: Path) -> tuple[IndexEntry, ...]:
    """Every wheel in ``directory``, checked against its receipt; an error if there are none."""
    wheels = wheels_in(directory)
    if not wheels:
        raise InputError(
            f"no wheels in {directory}",
            why="an index of nothing would publish an empty page",
            fix="Build one with tfbuild wheel --dist DIR, or name the directory that holds the "
            ".whl files.",
        )
    return tuple(_entry(p) for p in wheels)


# --- the two files -----------------------------------------------------------------------------------


def render_sums(entries: tuple[IndexEntry, ...]) -> str:
    """``sha256sum`` format: HEX, two spaces, file name; ``sha256sum -c SHA256SUMS`` checks it."""
    return "".join(f"{e.sha256}  {e.name}\n" for e in entries)


def _href(entry: IndexEntry, base_url: str | None = None) -> str:
    if base_url:
        # Where the wheels live elsewhere (a release's download URLs): absolute, fully encoded.
        return f"{base_url}{urllib.parse.quote(entry.name, safe='')}#sha256={entry.sha256}"
    # Wheel names keep their spelling ("+" included); anything unusual is percent-encoded.
    return f"{urllib.parse.quote(entry.name, safe='+')}#sha256={entry.sha256}"


def check_base_url(base_url: str) -> str:
    """An http(s) URL ending in "/", where the wheels will be downloaded from."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise UsageError(
            f"--base-url {base_url!r} is not an http(s) URL of a directory",
            fix="Pass e.g. https://github.com/OWNER/REPO/releases/download/TAG/",
        )
    return base_url if base_url.endswith("/") else base_url + "/"


def _size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


_STYLE = """\
body { font-family: system-ui, sans-serif; margin: 2rem; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
td.num { text-align: right; white-space: nowrap; }
code { font-size: 0.85em; word-break: break-all; }
.standin { color: #b00; font-weight: bold; }"""

_COLUMNS = (
    "wheel",
    "TensorFlow version",
    "Python tag",
    "CPU target",
    "variant",
    "CUDA",
    "runs on",
    "size",
    "sha256",
)


def render_html(entries: tuple[IndexEntry, ...], *, title: str, base_url: str | None = None) -> str:
    """The page: one PEP 503 anchor per wheel (its only links), in a table; everything escaped."""

    def esc(text: str) -> str:
        return html.escape(text, quote=True)

    rows = []
    for e in entries:
        standin = ' <strong class="standin">STAND-IN</strong>' if e.standin else ""
        cells = (
            f'<a href="{esc(_href(e, base_url))}">{esc(e.name)}</a>{standin}',
            esc(e.tensorflow),
            esc(".".join(e.python)),
            esc(e.target or "unknown"),
            esc(e.variant),
            esc(e.cuda or "-"),
            esc(e.runs_on),
            f"{esc(_size(e.size))}",
            f"<code>{esc(e.sha256)}</code>",
        )
        tds = "".join(
            f'<td class="num" data-bytes="{e.size}">{c}</td>' if i == 7 else f"<td>{c}</td>"
            for i, c in enumerate(cells)
        )
        rows.append(f"<tr>{tds}</tr>")
    standins = sum(e.standin for e in entries)
    note = (
        f'<p class="standin">STAND-IN: {standins} of these {len(entries)} wheels '
        "are tfbuild's canary, not TensorFlow.</p>\n"
        if standins
        else ""
    )
    head = "".join(f"<th>{esc(c)}</th>" for c in _COLUMNS)
    count = f"{len(entries)} wheel{'s' if len(entries) != 1 else ''}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n'
        "<head>\n"
        '<meta charset="utf-8">\n'
        '<meta name="pypi:repository-version" content="1.0">\n'
        f"<title>{esc(title)}</title>\n"
        f"<style>\n{_STYLE}\n</style>\n"
        "</head>\n"
        "<body>\n"
        f"<h1>{esc(title)}</h1>\n"
        f"<p>{count}. Each link carries the wheel's sha256, which pip checks before it "
        "installs: <code>pip install --find-links URL/index.html 'NAME==VERSION'</code>. "
        f"The same checksums are in <code>{SUMS_NAME}</code> "
        f"(<code>sha256sum -c {SUMS_NAME}</code>).</p>\n"
        f"{note}"
        "<table>\n"
        f"<thead><tr>{head}</tr></thead>\n"
        "<tbody>\n" + "\n".join(rows) + "\n</tbody>\n"
        "</table>\n"
        "</body>\n"
        "</html>\n"
    )


def write_index(
    directory: Path, *, title: str | None = None, base_url: str | None = None
) -> IndexResult:
    """Check every wheel in ``directory``, then write ``index.html`` and ``SHA256SUMS`` there.

    With ``base_url`` the page links each wheel at ``base_url + name`` instead of beside the page:
    for wheels published elsewhere, such as a GitHub release's download URLs.
    """
    base = check_base_url(base_url) if base_url else None
    entries = collect(directory)
    page_title = title if title and title.strip() else DEFAULT_TITLE
    index = directory / INDEX_NAME
    sums = directory / SUMS_NAME
    try:
        write_text(sums, render_sums(entries))
        write_text(index, render_html(entries, title=page_title, base_url=base))
    except OSError as exc:
        raise InputError(
            f"cannot write the index in {directory}", why=exc.strerror or str(exc)
        ) from None
    return IndexResult(
        directory=directory, index=index, sums=sums, title=page_title, entries=entries
    )
