"""Fresh virtual environments for the wheels under test, reused when the same wheel comes again.

A wheel is identified by the sha256 of its file (a requirement such as ``tensorflow-cpu==2.21.0`` by
its text) and the interpreter's version. The environment is built under a temporary name and renamed
into place only once the install succeeded, so an interrupted install never leaves a half-made
environment that a later run would trust.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core import cache, commands
from tfbuild.core.errors import EnvironmentProblem, InputError, UsageError
from tfbuild.core.files import kind_of, sha256_file, write_text
from tfbuild.core.pythons import packages_of, query_interpreter

# Matched whole (re.fullmatch: with re.match, '$' also matches before a final newline).
_REQUIREMENT = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?([=<>!~]=?[A-Za-z0-9.*+!-]+)?"
)

_WHEEL_FIX = "Pass the path of a .whl file, or a requirement such as tensorflow-cpu==2.21.0."


@dataclass(frozen=True, kw_only=True)
class WheelSpec:
    """What to test: a wheel file, a requirement from the package index, or the current interpreter."""

    kind: str  # "file", "requirement" or "installed"
    value: str  # the path, the requirement text, or the interpreter

    @property
    def label(self) -> str:
        return Path(self.value).name if self.kind == "file" else self.value

    @staticmethod
    def parse(text: str) -> WheelSpec:
        if text.endswith(".whl") or "/" in text:
            path = Path(text)
            if not path.is_file():
                raise InputError(
                    f"cannot test wheel {text}",
                    why=_not_a_file(path),
                    fix=_WHEEL_FIX,
                )
            if path.suffix != ".whl":
                raise _not_a_wheel(path)
            return WheelSpec(kind="file", value=str(path.resolve()))
        if not _REQUIREMENT.fullmatch(text):
            raise UsageError(
                f"{text!r} is neither a wheel file nor a requirement",
                fix="Pass a .whl path or a requirement such as tensorflow-cpu==2.21.0.",
            )
        return WheelSpec(kind="requirement", value=text)


def stock_spec(version: str | None, architecture: str) -> str:
    """The package index's stock wheel of the same release (local labels and dev parts dropped)."""
    package = "tensorflow-cpu" if architecture == "x86_64" else "tensorflow"
    if not version:
        return package
    release = re.match(r"\d+\.\d+\.\d+", version)
    return f"{package}=={release.group(0)}" if release else package


def _not_a_wheel(path: Path) -> InputError:
    """A file that is not a wheel: a receipt beside one (``NAME.json``) is named as such, with the
    wheel it describes when that is there."""
    wheel = path.with_suffix(".whl")
    if path.suffix == ".json":
        why = "it is a receipt (JSON), which describes a wheel; a wheel is a .whl file"
    else:
        why = "a wheel is a .whl file"
    fix = f"Pass the wheel beside it: {wheel}" if wheel.is_file() else _WHEEL_FIX
    return InputError(f"{path.name} is not a wheel", why=why, fix=fix)


def _not_a_file(path: Path) -> str:
    """Why ``path`` is not a wheel file, in words: missing, a dangling link, or what it is instead
    (a directory, a character device such as /dev/null, a FIFO...)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "it is a symbolic link to nothing" if path.is_symlink() else "it does not exist"
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    except ValueError:  # "embedded null byte": no file has such a name
        return "its name holds a NUL character, which no file name can"
    kind = kind_of(mode)
    return f"it is {kind}, not a wheel file" if kind.startswith("a ") else f"it is {kind}"


@dataclass(frozen=True, kw_only=True)
class TestEnv:
    """An interpreter with the wheel under test installed."""

    python: str
    spec: WheelSpec
    reused: bool
    location: str | None  # the environment's directory (None for --installed)


def env_key(spec: WheelSpec, python: str) -> str:
    identity = sha256_file(Path(spec.value)) if spec.kind == "file" else spec.value
    version = query_interpreter(python).version
    return hashlib.sha256(f"{identity}\n{version}".encode()).hexdigest()[:16] + f"-py{version}"


def ensure_env(
    spec: WheelSpec, *, python: str = sys.executable, root: Path | None = None
) -> TestEnv:
    """A virtual environment with ``spec`` installed, made once and reused afterwards; this process
    holds it (:func:`tfbuild.core.cache.hold`) until it exits, so ``tfbuild cache --prune`` leaves
    it. An overlay's wheel gets a small environment on top of its stock TensorFlow's (a ``.pth``
    file adds that one's packages), so that every overlay of a release shares one TensorFlow."""
    if spec.kind == "installed":
        return TestEnv(python=spec.value, spec=spec, reused=True, location=None)
    base = root or cache.cache_root() / cache.ENVIRONMENTS
    stock = _stock_of_overlay(spec)
    under = ensure_env(stock, python=python, root=root) if stock is not None else None
    final = base / env_key(spec, python)
    if final.is_dir():
        cache.hold(final)
        if _ready(final):
            _used(final, spec)
            return TestEnv(
                python=str(final / "bin/python"), spec=spec, reused=True, location=str(final)
            )
    base.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=base))
    cache.hold(staging)  # ours while it is made: tfbuild cache leaves it
    try:
        if under is None:
            _venv(python, staging)
            _install(staging, spec, spec.value)
            (staging / cache.ENV_MARKER).write_text(spec.value + "\n")
        else:
            _install_on(staging, python, spec, under)
        # The venv's scripts name their own directory; the interpreter link does not, so a rename
        # keeps `bin/python` working (the only entry point tfbuild uses).
        if final.exists():
            shutil.rmtree(final)
        staging.replace(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    cache.hold(final)
    return TestEnv(python=str(final / "bin/python"), spec=spec, reused=False, location=str(final))


def _used(env: Path, spec: WheelSpec) -> None:
    """Say in the environment's marker that it was used now, for ``spec``: the same bytes at
    another path (a rebuilt wheel) share it, and ``tfbuild cache`` judges it by the path last used."""
    marker = env / cache.ENV_MARKER
    lines = marker.read_text().splitlines()
    if lines and lines[0] != spec.value:
        write_text(marker, "\n".join([spec.value, *lines[1:]]) + "\n")
    else:
        os.utime(marker)  # when it was last used, for tfbuild cache


def _ready(env: Path) -> bool:
    """A finished environment whose stock environment beneath (an overlay's) is still there."""
    try:
        lines = (env / cache.ENV_MARKER).read_text().splitlines()
    except OSError:
        return False
    beneath = [line.removeprefix(_ON) for line in lines[1:] if line.startswith(_ON)]
    return all((Path(b) / cache.ENV_MARKER).is_file() for b in beneath)


#: How an overlay's environment's marker names the stock environment beneath it.
_ON = "on "


def _venv(python: str, staging: Path, *options: str) -> None:
    commands.run(
        commands.Command(
            argv=(python, "-m", "venv", *options, str(staging)),
            what=f"cannot make a virtual environment with {python}",
            fix="Check that this Python has its venv module (Debian: python3-venv).",
            timeout=300,
        )
    )


def _install(staging: Path, spec: WheelSpec, *args: str) -> None:
    """``pip install ARGS`` with the new environment's interpreter; one line when pip fails."""
    pip = [str(staging / "bin/python"), "-m", "pip", "install", "--quiet"]
    commands.run(
        commands.Command(
            argv=(*pip, "--disable-pip-version-check", *args),
            what=f"cannot install {spec.label} into a fresh environment",
            fix="Check the wheel matches this Python and platform, and that the package "
            "index is reachable for its dependencies.",
            timeout=3600,
        )
    )


def _install_on(staging: Path, python: str, spec: WheelSpec, under: TestEnv) -> None:
    """The overlay ``spec`` alone in a new environment whose ``.pth`` adds the packages of
    ``under`` (its stock TensorFlow's environment, and pip with them)."""
    _venv(python, staging, "--without-pip")
    purelib = Path(packages_of(str(staging / "bin/python"), env=clean_env()).purelib)
    stock = packages_of(under.python, env=clean_env()).purelib
    (purelib / "tfbuild-stock.pth").write_text(stock + "\n")
    _install(staging, spec, "--no-deps", "--no-index", spec.value)
    (staging / cache.ENV_MARKER).write_text(f"{spec.value}\n{_ON}{under.location}\n")


def _stock_of_overlay(spec: WheelSpec) -> WheelSpec | None:
    """The stock TensorFlow an overlay's wheel requires (its one ``Requires-Dist``, an exact
    release of tensorflow-cpu or tensorflow); None for any other wheel."""
    path = Path(spec.value)
    if spec.kind != "file" or not path.name.startswith("tfbuild_overlay-"):
        return None
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        with zipfile.ZipFile(path) as archive:
            (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
            metadata = archive.read(name).decode()
        (line,) = [x for x in metadata.splitlines() if x.startswith("Requires-Dist: ")]
        wanted = Requirement(line.removeprefix("Requires-Dist: "))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, InvalidRequirement):
        return None  # installed as any wheel is: pip says what is wrong
    pins = [pin.version for pin in wanted.specifier if pin.operator == "=="]
    name = canonicalize_name(wanted.name)  # "tensorflow_cpu", as the overlay spells it
    if name not in ("tensorflow-cpu", "tensorflow") or len(wanted.specifier) != 1 or not pins:
        return None
    return WheelSpec(kind="requirement", value=f"{name}=={pins[0]}")


def clean_env() -> dict[str, str]:
    """The environment a probe or benchmark runs with: the user's, minus what hides TF's messages."""
    env = dict(os.environ)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # any value >= 1 hides the INFO-level guard message
    env.pop("PYTHONPATH", None)
    return env


def tensorflow_dir(python: str) -> Path | None:
    """Where the interpreter's tensorflow package lives (found, not imported)."""
    try:
        found = packages_of(python, env=clean_env()).tensorflow
    except EnvironmentProblem:
        return None
    return Path(found) if found else None


def installed_version(python: str, distribution: str) -> str | None:
    """The version of ``distribution`` installed for ``python`` (found by its metadata, nothing
    imported), None when it is not there or cannot be told."""
    try:
        return packages_of(python, distribution, env=clean_env()).version(distribution)
    except EnvironmentProblem:
        return None
