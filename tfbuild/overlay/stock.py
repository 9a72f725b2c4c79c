"""The TensorFlow an overlay is built against: its facts, read in its own interpreter and decoded.

What ``tfbuild/scripts/stock_tf.py`` prints comes from an installed package, so it is untrusted input: it is
decoded strictly into :class:`StockTensorFlow` (every field typed, no unknown key), and the paths it
names are checked to be the package's own before anything is compiled against them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core import commands
from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.core.files import sha256_file
from tfbuild.measure.envs import clean_env
from tfbuild.overlay.ops import CASTS, OPS, StockKernel

SCRIPT = commands.script("stock_tf.py")
_VERSION = re.compile(r"\d+\.\d+\.\d+")
_DISTRIBUTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}")


@dataclass(frozen=True, kw_only=True)
class RegisteredKernel:
    constraints: dict[str, tuple[str, ...]]
    priority: int
    label: str


@dataclass(frozen=True, kw_only=True)
class StockTensorFlow:
    """An installed TensorFlow, as its own interpreter reports it."""

    version: str  # "2.21.0"
    git_version: str
    distribution: str  # "tensorflow-cpu"
    package: str  # the tensorflow package directory
    include: str  # its headers (tf.sysconfig.get_include())
    compile_flags: tuple[str, ...]
    link_flags: tuple[str, ...]
    framework: str  # libtensorflow_framework.so.2
    framework_size: int
    kernels: dict[str, tuple[RegisteredKernel, ...]]

    def registry(self) -> dict[str, tuple[StockKernel, ...]]:
        """The registry in :func:`tfbuild.overlay.ops.plan_kernels`'s terms."""
        return {
            op: tuple((dict(k.constraints), k.priority, k.label) for k in found)
            for op, found in self.kernels.items()
        }

    def framework_sha256(self) -> str:
        return sha256_file(Path(self.framework))


FIX = (
    "Pass an interpreter whose TensorFlow imports (python -c 'import tensorflow'), or let "
    "tfbuild install the stock wheel (no --python)."
)


def _refuse(python: str, why: str) -> EnvironmentProblem:
    return EnvironmentProblem(f"cannot read the TensorFlow of {python}", why=why, fix=FIX)


def read_stock(python: str, *, env: Mapping[str, str] | None = None) -> StockTensorFlow:
    """Run :data:`SCRIPT` in ``python`` and decode what it says."""
    ops = sorted({op.name for op in OPS} | ({"Cast"} if CASTS else set()))
    call = commands.Call(
        argv=commands.in_python(python, SCRIPT, *ops, user_site=True),
        what=f"cannot read the TensorFlow of {python}",
        fix=FIX,
        env=clean_env() if env is None else env,
        timeout=300,
    )
    facts = commands.ask(call, StockTensorFlow)
    return _checked(facts, python)


def _checked(facts: StockTensorFlow, python: str) -> StockTensorFlow:
    if not _VERSION.fullmatch(facts.version):
        raise _refuse(python, f"its version {facts.version!r} is not a release (X.Y.Z)")
    if not _DISTRIBUTION.fullmatch(facts.distribution):
        raise _refuse(python, "no installed distribution owns its tensorflow package")
    package = Path(facts.package).resolve()
    for what, path in (
        ("headers", facts.include),
        ("framework library", facts.framework),
    ):
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(package) or not resolved.exists():
            raise InputError(
                f"the TensorFlow of {python} names {what} outside its package: {path}",
                why="an overlay compiles against the package's own files only",
                fix="Reinstall TensorFlow in that environment.",
            )
    if Path(facts.framework).stat().st_size != facts.framework_size:
        raise _refuse(python, "its framework library changed while it was read")
    return facts
