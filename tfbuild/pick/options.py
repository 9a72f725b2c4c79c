"""What ``tfbuild pick`` takes, declared once (:mod:`tfbuild.core.options`); light, so that the
command line loads it, not the pick."""

from __future__ import annotations

from dataclasses import MISSING, dataclass
from pathlib import Path

from tfbuild.core.defaults import PICK_TIMEOUT_S
from tfbuild.core.options import CPUINFO, TF, declared, option
from tfbuild.core.pythons import PYTHON, PythonChoice, parse_python
from tfbuild.core.variants import Variant


@dataclass(frozen=True, kw_only=True)
class PickRequest:
    """What ``tfbuild pick`` was asked: its options, declared once."""

    source: str = declared(
        MISSING,
        argument=True,
        metavar="DIR_OR_INDEX_URL",
        help="A directory of wheels (e.g. dist), one .whl, or an index page that links to "
        "them: a file (e.g. dist/index.html, written by tfbuild index) or an http(s) URL.",
    )
    cpuinfo: Path | None = option(CPUINFO, default=None)
    python: PythonChoice | None = option(
        PYTHON.but(
            help="The Python to pick for: an interpreter (its version is matched, its TensorFlow "
            "asked for overlays, --install installs into it) or a version (default: tfbuild's "
            "own).",
            convert=parse_python,
        ),
        default=None,
    )
    driver_cuda: str | None = declared(
        None,
        "--driver-cuda",
        metavar="X.Y|none",
        help="The newest CUDA the GPU driver supports (default: from nvidia-smi; none with "
        "--cpuinfo).",
    )
    glibc: str | None = declared(
        None,
        "--glibc",
        metavar="X.Y",
        help="The machine's glibc (default: this machine's; not checked with --cpuinfo).",
    )
    libstdcxx: str | None = declared(
        None,
        "--libstdcxx",
        metavar="X.Y.Z",
        help="The newest GLIBCXX_ version of the machine's libstdc++, e.g. 3.4.25 (default: "
        "this machine's; not checked with --cpuinfo).",
    )
    tf: str | None = option(TF.but(help="Only this TensorFlow release, e.g. 2.20."), default=None)
    variant: Variant | None = declared(
        None, "--variant", case_sensitive=False, help="Only this kind of build."
    )
    install: bool = declared(
        False, "--install", help="pip install the chosen wheel into the --python interpreter."
    )
    pip_arg: tuple[str, ...] = declared(
        (),
        "--pip-arg",
        metavar="ARG",
        help="Pass ARG to pip install (repeat), e.g. --pip-arg=--no-deps.",
    )
    timeout: float = declared(
        PICK_TIMEOUT_S,
        "--timeout",
        metavar="SECONDS",
        help="One deadline for reading the index page and its receipts.",
    )
    allow_origin: tuple[str, ...] = declared(
        (),
        "--allow-origin",
        metavar="HOST",
        help="Also follow an index page's links to HOST (HOST:PORT, https://HOST) (repeat); "
        "by default only links to the page's own origin.",
    )
    allow_unhashed: bool = declared(
        False,
        "--allow-unhashed",
        help="--install a wheel whose index link carries no #sha256= (pip cannot check it).",
    )
    overlay: bool = declared(
        False,
        "--overlay",
        help="Only overlays (tfbuild overlay) for the TensorFlow the interpreter has: "
        "--install then installs one beside it instead of a wheel.",
    )
