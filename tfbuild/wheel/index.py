"""A directory of wheels as a page pip reads: ``index.html`` (PEP 503 anchors) and ``SHA256SUMS``.

``tfbuild index DIR`` lists every ``*.whl`` in DIR. Each wheel gets one anchor,
``<a href="NAME#sha256=HEX">NAME</a>``, which is what ``pip --find-links DIR/index.html`` and
``tfbuild pick`` read (pip checks the fragment's hash before it installs), inside a table for people:
TensorFlow version, Python tag, CPU target, variant, CUDA, size and sha256. What a wheel was built for
comes from its receipt (``<stem>.json`` beside it, written by ``tfbuild wheel``) when there is one,
else from the local version label of its file name (:mod:`tfbuild.wheel.labels`).

An overlay (``tfbuild_overlay-*.whl``, written by ``tfbuild overlay``) is listed like a wheel and
marked OVERLAY: its "runs on" is the stock TensorFlow it goes on (``tensorflow-cpu 2.21.0``), and
``--json`` gives ``overlay`` (:class:`OverlayOn`; null for other wheels). It is described by its
receipt (``tfbuild.overlay/1``, :func:`~tfbuild.wheel.overlay_receipt.read_overlay_receipt`) only:
without one nothing says which TensorFlow build it goes on or what its loader checks, so an overlay
without its receipt is refused like a wheel that does not match its receipt.

Every sha256 is computed from the wheel itself. Where a receipt exists, it must be a readable
:class:`~tfbuild.wheel.receipt.Receipt` whose ``wheel.sha256`` (and name and size) agree and whose plan still
hashes to its ``plan_sha256``, or nothing is written: a corrupted, swapped or edited artifact is never
published. The output is deterministic (sorted by name, no timestamps); the two files are written as
one set (:func:`tfbuild.core.files.write_files`), so a failure leaves the previous pair as it was.

The directory is input, possibly hostile: a name with any character a wheel's name cannot hold, a
link, anything but a regular file, or a file that is not a zip archive with a ``.dist-info/WHEEL``
is refused (one line, the name escaped), never published or echoed raw. A ``--base-url`` that
carries a user name or password is refused: the page is public.
"""

from __future__ import annotations

import errno
import html
import os
import re
import stat
import urllib.parse
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from tfbuild.core import serial
from tfbuild.core.errors import InputError, UsageError
from tfbuild.core.files import DIST_LOCK, locked, sha256_file, shown, write_files
from tfbuild.wheel.labels import is_standin_name, parse_label, spelt_label, spelt_version
from tfbuild.wheel.overlay_receipt import OverlayReceipt, is_overlay_wheel, read_overlay_receipt
from tfbuild.wheel.receipt import Receipt, WheelFloor, read_receipt, receipt_path

SCHEMA = "tfbuild.index/1"
INDEX_NAME = "index.html"
SUMS_NAME = "SHA256SUMS"
DEFAULT_TITLE = "TensorFlow wheels built by tfbuild"


@dataclass(frozen=True, kw_only=True)
class OverlayOn:
    """What an overlay goes on and what its loader checks, from its receipt."""

    distribution: str  # the stock TensorFlow it is installed beside, normalised: tensorflow-cpu
    release: str  # that TensorFlow's exact release: 2.21.0
    framework_size: int  # the size of its libtensorflow_framework.so.2, which the loader checks
    features: tuple[str, ...]  # the instruction sets the loader checks for (/proc/cpuinfo names)
    kernels: int  # how many kernels it registers above stock's
    #: The instruction sets the machine it was built on lacked: its check runs where it is
    #: installed (tfbuild overlay --check; pick --install runs it). Empty: checked at build time.
    pending: tuple[str, ...] = ()

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.release}"


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
    overlay: OverlayOn | None = None  # an overlay's: the TensorFlow it goes on (None: a wheel)

    @property
    def runs_on(self) -> str:
        """The oldest system it loads on, for people: "glibc 2.27, libstdc++ 3.4.22"; for an overlay,
        the TensorFlow it goes on: "tensorflow-cpu 2.21.0 (that build)"."""
        if self.overlay is not None:
            return f"{self.overlay.distribution} {self.overlay.release} (that build)"
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

    # hand-written: the JSON's names (sha256sums, wheels) are not the fields' (sums, entries)
    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "directory": str(self.directory),
            "index": str(self.index),
            "sha256sums": str(self.sums),
            "title": self.title,
            "wheels": serial.to_data(self.entries),
        }


# --- reading the directory -------------------------------------------------------------------------


def _same_file(
    found: Receipt | OverlayReceipt, path: Path, wheel: Path, sha256: str, size: int
) -> None:
    """The receipt at ``path`` must describe exactly this file (the same name, sha256 and size) and,
    a build's, be as its build wrote it (its plan and inputs still hash to what it recorded)."""
    recorded = found.wheel
    fix = (
        f"Do not publish {wheel.name}: rebuild it (or fetch it again) so that the wheel and its "
        "receipt come from the same build."
    )
    changed = f"{path.name} records sha256 {recorded.sha256}, so the wheel was changed or corrupted"
    for differs, what, why in (
        (recorded.name != wheel.name, "", f"{path.name} describes {recorded.name!r}"),
        (recorded.sha256.lower() != sha256, f": sha256 {sha256}", f"{changed} after it was built"),
        (recorded.size != size, f": {size} bytes", f"{path.name} records {recorded.size} bytes"),
    ):
        if differs:
            raise InputError(f"{wheel} does not match its receipt{what}", why=why, fix=fix)
    if not isinstance(found, Receipt):
        return
    for edited, why in (
        (not found.plan_intact(), "its plan no longer matches its plan_sha256"),
        (found.inputs_intact() is False, "its inputs no longer match its inputs_sha256"),
    ):
        if edited:
            raise InputError(f"{path} was edited after {wheel.name} was built", why=why, fix=fix)


#: The characters a wheel's file name can hold. Each component is escaped to letters, digits, "_"
#: and "." (PEP 427, "Escaping and Unicode": runs of other characters become "_"; the binary
#: distribution format spec at packaging.python.org keeps that rule), the version adds "+" (a PEP 440
#: local label, as tfbuild's own), and "-" separates the components. An epoch's "!" is left out:
#: no TensorFlow release has one, and a "!" in a shell or URL is one more thing to quote.
WHEEL_NAME = re.compile(r"[A-Za-z0-9_.+-]+\.whl")
#: The member every wheel has: NAME-VERSION.dist-info/WHEEL, at the top of the archive.
_WHEEL_MEMBER = re.compile(r"[^/]+\.dist-info/WHEEL")


def _check_name(wheel: Path) -> None:
    """Only the characters a wheel's name can hold: nothing that breaks a SHA256SUMS line, a
    terminal or a page."""
    if WHEEL_NAME.fullmatch(wheel.name):
        return
    odd = sorted({c for c in wheel.name if not WHEEL_NAME.fullmatch(f"{c}.whl")})
    held = " ".join("space" if c == " " else shown(c) for c in odd)
    raise InputError(
        f"{shown(str(wheel))} is not a wheel file name",
        why=f"it holds {held}, and a wheel's name has only letters, digits and _ . + - (PEP 427)",
        fix="Rename or remove it.",
    )


def _check_wheel(wheel: Path, mode: int, size: int) -> None:
    """A regular file in the directory itself (a link could name any file and change later): a zip
    archive with a NAME-VERSION.dist-info/WHEEL member (only its directory is read)."""
    if stat.S_ISLNK(mode):
        raise InputError(
            f"{wheel} is a symbolic link",
            why="a link can point out of the directory, and the page would publish what it names",
            fix="Copy the wheel itself into the directory.",
        )
    if not stat.S_ISREG(mode):
        why = "it is not a regular file"
    elif size == 0:
        why = "it is empty (0 bytes)"
    else:
        try:
            with zipfile.ZipFile(wheel) as archive:
                members = archive.namelist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
            why = f"it is not a zip archive ({exc})"
        else:
            if any(_WHEEL_MEMBER.fullmatch(m) for m in members):
                return
            why = "it has no NAME-VERSION.dist-info/WHEEL member"
    raise InputError(
        f"{wheel} is not a wheel",
        why=why,
        fix="Publish only wheels that tfbuild wheel (or pip wheel) wrote; remove or rebuild it.",
    )


def _entry(wheel: Path) -> IndexEntry:
    _check_name(wheel)
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
        status = wheel.lstat()
        size = status.st_size
        _check_wheel(wheel, status.st_mode, size)
        sha256 = sha256_file(wheel)
    except OSError as exc:
        raise InputError(f"cannot read {wheel}", why=exc.strerror or str(exc)) from None
    label_text = spelt_label(wheel.name) or ""
    from_label = parse_label(label_text or None)
    target, cuda = from_label.target, from_label.cuda
    variant: str = from_label.variant
    standin = is_standin_name(wheel.name)  # the canary's, by its name or label, receipt or not
    floor: WheelFloor | None = None
    beside = receipt_path(wheel)
    receipt_name: str | None = None
    overlay: OverlayOn | None = None
    if is_overlay_wheel(wheel):  # described by its receipt only, which must be there
        found = read_overlay_receipt(beside, wheel=wheel)
        _same_file(found, beside, wheel, sha256, size)
        receipt_name, target = beside.name, found.target
        overlay = OverlayOn(
            distribution=found.stock_name,
            release=found.tensorflow,
            framework_size=found.framework_size,
            features=found.features,
            kernels=len(found.kernels),
            pending=found.pending,
        )
    elif os.path.lexists(beside):  # a FIFO or a device there is refused by the reader, not skipped
        receipt = read_receipt(beside)
        _same_file(receipt, beside, wheel, sha256, size)
        receipt_name = beside.name
        standin = standin or receipt.standin
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
        described_by="receipt" if receipt_name else "label",
        floor=floor,
        overlay=overlay,
    )


def collect(directory: Path) -> tuple[IndexEntry, ...]:
    """Every wheel in ``directory``, checked against its receipt; an error if there are none. Every
    entry named ``*.whl`` is one, sorted by name, but directories and hidden (temp) files: links and
    other non-files are refused by name."""
    fix = "Name the directory the wheels are in, e.g. tfbuild index dist."
    if not directory.is_dir():
        raise InputError(f"{shown(str(directory))} is not a directory", fix=fix)
    try:
        entries = list(directory.iterdir())
    except OSError as exc:
        raise InputError(
            f"cannot read {shown(str(directory))}", why=exc.strerror or str(exc), fix=fix
        ) from None
    wheels = [
        p
        for p in sorted(entries, key=lambda p: p.name)
        if p.name.endswith(".whl")
        and not p.name.startswith(".")
        and not (p.is_dir() and not p.is_symlink())
    ]
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
    fix = "Pass e.g. https://github.com/OWNER/REPO/releases/download/TAG/"
    if not base_url.isascii() or not base_url.isprintable() or " " in base_url:
        raise UsageError(
            f"--base-url '{shown(base_url)}' is not an http(s) URL of a directory",
            why="it holds a space, a control or a non-ASCII character",
            fix="Percent-encode them. " + fix,
        )
    parts = urllib.parse.urlsplit(base_url)
    if parts.username is not None or parts.password is not None:
        hidden = parts._replace(netloc=f"***@{parts.netloc.rpartition('@')[2]}").geturl()
        raise UsageError(
            f"--base-url {hidden} carries a user name or password",
            why="every link of the public page would show it",
            fix="Pass the URL without credentials; the page is for anyone to read.",
        )
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise UsageError(f"--base-url {base_url!r} is not an http(s) URL of a directory", fix=fix)
    return base_url if base_url.endswith("/") else base_url + "/"


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    power = min(3, (size.bit_length() - 1) // 10)  # 1024**power <= size, GiB at most
    return f"{size / 1024**power:.1f} {('KiB', 'MiB', 'GiB')[power - 1]}"


_STYLE = """\
body { font-family: system-ui, sans-serif; margin: 2rem; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
td.num { text-align: right; white-space: nowrap; }
code { font-size: 0.85em; word-break: break-all; }
.standin { color: #b00; font-weight: bold; }
.overlay { color: #05a; font-weight: bold; }"""

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
    esc = html.escape
    rows = []
    for e in entries:
        standin = ' <strong class="standin">STAND-IN</strong>' if e.standin else ""
        if e.overlay is not None:
            standin += ' <strong class="overlay">OVERLAY</strong>'
            if e.overlay.pending:
                standin += ' <em class="pending">check pending</em>'
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
    overlays = sum(e.overlay is not None for e in entries)
    if overlays:
        note += (
            f'<p class="overlay">OVERLAY: {overlays} of these {len(entries)} wheels are overlays, '
            "not TensorFlow: TensorFlow's element-wise CPU kernels compiled for the target, "
            "installed beside the exact stock TensorFlow named under <em>runs on</em> "
            "(pip install it next to that one; tfbuild pick chooses one for the TensorFlow you "
            "have). One marked <em>check pending</em> was built on a machine without its "
            "target's instruction sets: its kernels load only after tfbuild overlay --check "
            "(or tfbuild pick --install, which runs it) has passed on a machine with them.</p>\n"
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


@contextmanager
def _dist_locked(directory: Path) -> Iterator[None]:
    """Hold ``directory``'s dist/ lock, the one ``tfbuild wheel`` publishes under, so that every
    wheel is read with its own receipt, never one of a set half-published. Exclusive, as the index
    is written there too. Without it where this user cannot create a file (a read-only directory):
    the index cannot be written there either, and writing it says so."""
    with ExitStack() as stack:
        if directory.is_dir():  # else collect() says what it is
            try:
                stack.enter_context(locked(directory / DIST_LOCK))
            except OSError as exc:
                if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                    raise
        yield


def write_index(
    directory: Path, *, title: str | None = None, base_url: str | None = None
) -> IndexResult:
    """Check every wheel in ``directory``, then write ``index.html`` and ``SHA256SUMS`` there.

    With ``base_url`` the page links each wheel at ``base_url + name`` instead of beside the page:
    for wheels published elsewhere, such as a GitHub release's download URLs.
    """
    base = check_base_url(base_url) if base_url else None
    page_title = title if title and title.strip() else DEFAULT_TITLE
    index = directory / INDEX_NAME
    sums = directory / SUMS_NAME
    try:
        with _dist_locked(directory):  # never a set read half-published
            entries = collect(directory)
            html_text = render_html(entries, title=page_title, base_url=base)
            write_files(
                directory,
                {SUMS_NAME: (render_sums(entries), 0o644), INDEX_NAME: (html_text, 0o644)},
            )
    except OSError as exc:
        where = shown(exc.filename) if isinstance(exc.filename, str) else str(directory)
        raise InputError(
            f"cannot write the index in {shown(str(directory))}",
            why=f"{where}: {exc.strerror or exc}; nothing was written",
            fix=f"Let tfbuild write {INDEX_NAME} and {SUMS_NAME} there (neither may be a directory).",
        ) from None
    return IndexResult(
        directory=directory, index=index, sums=sums, title=page_title, entries=entries
    )
