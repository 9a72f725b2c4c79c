"""An overlay's check where it is installed: ``tfbuild overlay --check``.

An overlay built on a machine without its target's instruction sets cannot run its own kernels, so
its special-value check (:mod:`.check`) waits: the build records the sets it lacked (the receipt's
and the manifest's ``pending``), and ships a file :data:`CHECK_FILE` beside the kernels that says
so. Its loader registers nothing until that file's first line is ``passed <the kernels' sha256>``,
which only :func:`check_installed` writes, once the check has passed on this CPU in the TensorFlow
the overlay is installed into. Until then ``import tensorflow`` runs stock kernels and the loader's
one line says what to run.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core.errors import InputError, UnsupportedError, UsageError
from tfbuild.core.files import read_input, sha256_file, write_text
from tfbuild.core.pythons import packages_of
from tfbuild.detect.cpu import host_cpuinfo, instruction_sets
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.overlay.compile import KERNELS, LOADER
from tfbuild.overlay.package import MANIFEST, PLUGINS
from tfbuild.wheel.overlay_receipt import KernelCheck, OverlayManifest, decode_overlay_manifest
from tfbuild.wheel.wheelfile import record_hash

#: The file beside the kernels that records their check here (loader.c reads its first line).
CHECK_FILE = "CHECK"
#: What the command that runs the check is, as every message names it.
COMMAND = "tfbuild overlay --check --python PYTHON"

Progress = Callable[[str], None]


def pending_record(pending: tuple[str, ...]) -> bytes:
    """The CHECK file an overlay whose check waits ships with."""
    return (
        f"pending: built on a CPU without {' '.join(pending)}; '{COMMAND}' on a machine with "
        "them runs the special-value check and, once it passes, writes 'passed' here\n"
    ).encode()


def find_installed(python: str, env: Mapping[str, str]) -> Path:
    """The site-packages directory of the one overlay installed for ``python``."""
    # the directories TensorFlow scans are the ones this interpreter has in ``env``
    found = packages_of(python, env=env, fix="Name a Python interpreter with --python.").overlays
    if not found:
        raise UsageError(
            f"no tfbuild overlay is installed for {python}",
            why=f"none of its package directories holds {PLUGINS}/{LOADER}",
            fix="Name the Python the overlay is installed for with --python (the one you run "
            "TensorFlow with), or pip install the overlay's wheel with it.",
        )
    if len(found) > 1:
        raise UsageError(
            f"{len(found)} tfbuild overlays are installed for {python}",
            why=f"in {' and '.join(found)}; TensorFlow would load each",
            fix="pip uninstall tfbuild-overlay until one is left.",
        )
    return Path(found[0])


@dataclass(frozen=True, kw_only=True)
class InstalledCheck:
    """What ``tfbuild overlay --check`` found and did."""

    site: Path
    manifest: OverlayManifest
    checks: tuple[KernelCheck, ...]
    record: Path | None  # the CHECK file it wrote; None: its check was not pending (at build time)


def check_installed(
    python: str,
    *,
    env: Mapping[str, str] | None = None,
    cpu: CpuInfo | None = None,
    progress: Progress | None = None,
) -> InstalledCheck:
    """Run the special-value check of the overlay installed for ``python`` on this CPU and, when it
    was pending and passes, record it where the overlay's loader reads it. Nothing is written
    when it fails (BuildFailed) or cannot run here."""
    from tfbuild.overlay.check import verify_kernels

    say = progress or (lambda _m: None)
    # the user's own (PYTHONPATH included: where TensorFlow finds the overlay when they run it)
    env = dict(os.environ) if env is None else env
    site = find_installed(python, env)
    own = site / PLUGINS / "tfbuild_overlay"
    fix = "Reinstall the overlay's wheel (pip install --force-reinstall WHEEL)."
    raw = read_input(own / MANIFEST, limit=1 << 20, what="the overlay's manifest", fix=fix)
    manifest = decode_overlay_manifest(raw, source=str(own / MANIFEST))
    what = f"the overlay for {manifest.target} (TensorFlow {manifest.tensorflow}) in {site}"
    cpu = cpu or host_cpuinfo()
    missing = [f for f in manifest.features if f not in instruction_sets(cpu)]
    if missing:
        raise UnsupportedError(
            f"cannot check {what} on this CPU",
            why=f"its kernels use {' '.join(missing)}, which this CPU lacks",
            fix=f"Run '{COMMAND}' on a machine of its target ({manifest.target}).",
        )
    if manifest.token and sha256_file(own / KERNELS) != manifest.token:
        raise InputError(
            f"the kernels of {what} are not the ones its manifest names",
            why=f"the sha256 of {own / KERNELS} differs from the manifest's token",
            fix=fix,
        )
    say(f"checking the {len(manifest.kernels)} kernels of {what} against stock on special values")
    checks = verify_kernels(python, env, None, manifest.kernels)
    if not manifest.pending:
        return InstalledCheck(site=site, manifest=manifest, checks=checks, record=None)
    record = own / CHECK_FILE
    write_text(
        record,
        f"passed {manifest.token}\n"
        f"{len(checks)} kernels checked against stock TensorFlow {manifest.tensorflow} on special "
        f"values, on {cpu.brand or cpu.source}\n",
    )
    _update_record(site, record)
    return InstalledCheck(site=site, manifest=manifest, checks=checks, record=record)


def _update_record(site: Path, changed: Path) -> None:
    """The overlay's RECORD (pip's list of its files, with their hashes) given ``changed``'s new
    hash and size, so that pip's checks find the installed overlay as it now is. An overlay
    unpacked without its metadata (a test's site directory) has none to update."""
    name = changed.relative_to(site).as_posix()
    for record in sorted(site.glob("tfbuild_overlay-*.dist-info/RECORD")):
        rows = list(csv.reader(io.StringIO(record.read_text(encoding="utf-8"))))
        if not any(row and row[0] == name for row in rows):
            continue
        data = changed.read_bytes()
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(
            [name, record_hash(data), str(len(data))] if row[0] == name else row for row in rows
        )
        write_text(record, out.getvalue())
