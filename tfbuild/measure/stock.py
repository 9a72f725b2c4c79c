"""The TensorFlow an interpreter imports: its facts, read in that interpreter and decoded.

``tfbuild/scripts/stock_tf.py`` imports it (any overlay off) and prints its release, the
distribution that installed it, its files and flags, and the kernels registered for the ops asked:
``pick`` reads what an overlay would go on, ``overlay`` what it builds against. What it prints
comes from an installed package, so it is untrusted input: decoded strictly into
:class:`StockTensorFlow` (every field typed, no unknown key), its release and distribution held to
their grammar, and for a build (:func:`for_overlay`) the paths it names checked to be the package's
own before anything is compiled against them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core import commands
from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.core.files import sha256_file
from tfbuild.measure.envs import clean_env

SCRIPT = commands.script("stock_tf.py")
#: A release an overlay is built for (X.Y.Z), and one an interpreter may have (2.21.0rc1 too).
_RELEASE = re.compile(r"\d+\.\d+\.\d+")
_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.+_-]{0,40}")
#: A distribution's name (PEP 508).
_DISTRIBUTION = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,78}[A-Za-z0-9])?")
#: A kernel as the registry lists it: its type constraints, its priority, its label.
StockKernel = tuple[Mapping[str, Sequence[str]], int, str]


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
    framework_size: int | None  # None: the package has none
    kernels: dict[str, tuple[RegisteredKernel, ...]]

    def registry(self) -> dict[str, tuple[StockKernel, ...]]:
        """The registry as :func:`tfbuild.overlay.ops.plan_kernels` takes it."""
        return {
            op: tuple((dict(k.constraints), k.priority, k.label) for k in found)
            for op, found in self.kernels.items()
        }

    @property
    def framework_bytes(self) -> int:
        """The framework library's size, which a build reads once :func:`for_overlay` held it to
        the file's."""
        if self.framework_size is None:
            raise ValueError(
                f"TensorFlow {self.version} in {self.package} has no framework library"
            )
        return self.framework_size

    def framework_sha256(self) -> str:
        return sha256_file(Path(self.framework))


FIX = (
    "Pass an interpreter whose TensorFlow imports (python -c 'import tensorflow'), or let "
    "tfbuild install the stock wheel (no --python)."
)


def _refuse(python: str, why: str) -> EnvironmentProblem:
    return EnvironmentProblem(f"cannot read the TensorFlow of {python}", why=why, fix=FIX)


def read_stock(
    python: str, ops: Sequence[str] = (), *, env: Mapping[str, str] | None = None
) -> StockTensorFlow:
    """Run :data:`SCRIPT` in ``python`` (``env``, default :func:`clean_env`; its PYTHONPATH first
    on the path) and decode what it says of its TensorFlow and of the kernels of ``ops``."""
    env = clean_env() if env is None else env
    call = commands.Command(
        argv=commands.in_python(
            python, SCRIPT, *ops, paths=commands.python_path(env), user_site=True
        ),
        what=f"cannot read the TensorFlow of {python}",
        fix=FIX,
        env=env,
        timeout=300,
    )
    facts = commands.ask(call, StockTensorFlow)
    if not _VERSION.fullmatch(facts.version) or not _DISTRIBUTION.fullmatch(facts.distribution):
        raise _refuse(
            python,
            "no installed distribution owns its tensorflow package, or it names a version that "
            "is not a release",
        )
    return facts


def for_overlay(facts: StockTensorFlow, python: str) -> StockTensorFlow:
    """``facts`` when an overlay can be built against them: a release, and the headers and the
    framework library the package's own."""
    if not _RELEASE.fullmatch(facts.version):
        raise _refuse(python, f"its version {facts.version!r} is not a release (X.Y.Z)")
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
