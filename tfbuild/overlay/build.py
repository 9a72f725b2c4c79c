"""``tfbuild overlay``: TensorFlow's own element-wise kernels compiled for a target, as a wheel that
installs beside the stock wheel, checked against it, with a receipt; and ``verify`` of one.

The steps, each its module's: where it compiles (the overlay's toolchain image, :mod:`.image`, with
the recipe's clang against an older C library; or the host's ``--compiler``), the stock TensorFlow
(:mod:`.stock`, an environment of the stock wheel made as smoke makes one, or the interpreter
``--python`` names), the kernels its registry allows (:mod:`.ops`), the compile (:mod:`.compile`, one
toolchain whichever the place), the wheel (:mod:`.package`), the numerical check of every kernel
against stock on special values (:mod:`.check`), then the wheel and its receipt published together in
the output directory under its lock, or nothing at all.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfbuild import __version__
from tfbuild.core import serial
from tfbuild.core.compilers import CompilerExecutable, compiler_at, find_compiler
from tfbuild.core.errors import EnvironmentProblem, InputError, NotReproducible, UsageError
from tfbuild.core.files import DIST_LOCK, locked, sha256_file, write_files
from tfbuild.detect.cpu import host_cpuinfo
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.measure.envs import WheelSpec, clean_env, ensure_env, stock_spec
from tfbuild.measure.stock import for_overlay, read_stock
from tfbuild.overlay.check import verify_kernels
from tfbuild.overlay.compile import (
    FRAMEWORK,
    KERNELS,
    LOADER,
    MACROS,
    SYSTEM_FLAGS,
    compile_overlay,
    host_toolchain,
    target_features,
    workarounds,
)
from tfbuild.overlay.ops import Registration, plan_kernels, registry_ops
from tfbuild.overlay.package import MANIFEST, PLUGINS, WheelName, members, write_wheel
from tfbuild.overlay.pending import CHECK_FILE, COMMAND, pending_record
from tfbuild.wheel.floor import inspect_wheel
from tfbuild.wheel.labels import cpu_label
from tfbuild.wheel.overlay_receipt import (
    KernelCheck,
    LeftOut,
    OverlayImage,
    OverlayManifest,
    OverlayReceipt,
    read_overlay_receipt,
)
from tfbuild.wheel.receipt import WheelRecord, receipt_path

if TYPE_CHECKING:
    from tfbuild.overlay.image import InImage
    from tfbuild.plan.model import BuildPlan

Progress = Callable[[str], None]
#: The platform tag of the wheel before auditwheel has read its libraries, and where no manylinux
#: policy allows them.
UNTAGGED = "linux_x86_64"


@dataclass(frozen=True, kw_only=True)
class OverlayRequest:
    tensorflow: str  # the release: "2.21.0"
    architecture: str
    target: str
    cflags: tuple[str, ...]
    compiler: str  # the recipe's compiler ("clang-18.1.8"): the image's, or the family on the host
    compiler_path: str | None = None  # --compiler: this one, on the host
    #: In the overlay's toolchain image with the recipe's compiler (the command's default; needs
    #: Docker and tfbuild base images), not on the host with its family found on PATH.
    in_image: bool = False
    image: OverlayImage | None = None  # verify: the receipt's image, reused or made again pinned
    stock: str | None = None  # --stock: a .whl or a requirement (default: the index's)
    python: str | None = None  # --installed --python: the TensorFlow of this interpreter instead
    venv_python: str | None = None  # --python: the interpreter the stock environment is made with
    out: Path = Path("dist")
    check: bool = True
    #: The instruction sets whose absence leaves the kernels' check pending (verify: the receipt's);
    #: None: those of the kernels' the CPU building them lacks.
    pending: tuple[str, ...] | None = None
    #: The CPU the build runs on (None: this machine's /proc/cpuinfo); a test names a recorded one.
    build_cpu: CpuInfo | None = None

    @classmethod
    def of_plan(
        cls, plan: BuildPlan, *, host_compiler: str | None = None, **rest: Any
    ) -> OverlayRequest:
        """The overlay a plan describes (its release, target, flags and compiler), with
        ``host_compiler`` (``--compiler``: on this host, the plan's target spelt for it) and
        ``rest`` (where it compiles, against which TensorFlow, where it goes) given or changed."""
        planned: dict[str, Any] = {
            "tensorflow": plan.tensorflow,
            "architecture": plan.architecture,
            "target": plan.target,
            "cflags": plan.cflags,
            "compiler": plan.compiler,
        }
        if host_compiler is not None:
            planned |= {
                "cflags": _flags_for(host_compiler, plan),
                "compiler_path": host_compiler,
                "in_image": False,
            }
        return cls(**{**planned, **rest})


def _flags_for(program: str, plan: BuildPlan) -> tuple[str, ...]:
    """The plan's target spelt for ``--compiler``'s family and version, as the planner spells it for
    the recipe's (archspec's flags, or the nearest target it knows plus -m options): clang 16 has no
    -march=arrowlake, which the recipe's clang 18 has. A compiler that is not there keeps the plan's
    flags (the build then says it is missing)."""
    from tfbuild.core.compilers import compiler_at, release_in
    from tfbuild.detect.compilers import Compiler, flags_for
    from tfbuild.detect.cpu import lookup_target

    found = compiler_at(program, why="--compiler")
    release = release_in(found.version) if found is not None else None
    if found is None or release is None or plan.target == "native":
        return plan.cflags
    wanted = [c.feature for c in plan.coverage if c.flag is not None]
    compiler = Compiler(name=found.family, version=release, spec=program)
    return tuple(flags_for(lookup_target(plan.target), compiler, machine_features=wanted).flags)


@dataclass(frozen=True, kw_only=True)
class OverlayResult:
    wheel: Path
    receipt: OverlayReceipt
    receipt_file: Path
    stock_python: str


def _stock_python(request: OverlayRequest, say: Progress) -> tuple[str, str]:
    """The interpreter whose TensorFlow is built against, and how the receipt names it."""
    if request.python is not None:
        return request.python, f"python:{request.python}"
    spec = WheelSpec.parse(request.stock or stock_spec(request.tensorflow, request.architecture))
    say(f"stock TensorFlow: {spec.label} (an environment made once, then reused)")
    env = ensure_env(spec, python=request.venv_python or sys.executable)
    return env.python, spec.value


#: Why the overlay needs a compiler on this host, said when there is none.
_ON_HOST = "the overlay's kernels are compiled on this host"


def beyond_here(target: str, cpu: CpuInfo | None = None) -> tuple[str, ...]:
    """The instruction sets of ``target`` that an overlay's loader checks and ``cpu`` (this
    machine's by default) lacks: archspec's features of the target, the system ones the kernels
    leave out aside. None for -march=native and the like (the kernels' own sets, once compiled,
    decide: :func:`_lacking`)."""
    from tfbuild.core.targets import targets

    known = targets().get(target)
    if known is None:
        return ()
    checked = set(MACROS.values()) - SYSTEM_FLAGS - {""}
    return _lacking(sorted(known.features & checked), cpu or host_cpuinfo())


def _lacking(features: Sequence[str], cpu: CpuInfo) -> tuple[str, ...]:
    """The instruction sets of ``features`` the CPU lacks, in their order."""
    from tfbuild.detect.cpu import instruction_sets

    have = instruction_sets(cpu)
    return tuple(f for f in features if f not in have)


def install_into(wheel: Path, site: Path) -> None:
    """The wheel's files unpacked under ``site`` (a directory named site-packages), as pip would;
    a member whose name would land outside it is refused (InputError)."""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if ".dist-info/" in info.filename:
                continue
            parts = Path(info.filename).parts
            if info.filename.startswith("/") or ".." in parts or not parts:
                raise InputError(
                    f"cannot install {wheel.name}",
                    why=f"its member {info.filename!r} would land outside site-packages",
                    fix="Pass a wheel tfbuild overlay made.",
                )
            target = site / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(info))
            target.chmod((info.external_attr >> 16) & 0o777 or 0o644)


def _where(
    request: OverlayRequest, say: Progress, stack: contextlib.ExitStack
) -> tuple[CompilerExecutable, InImage | None]:
    """The compiler, and the overlay's toolchain image it is in: None on the host (``--compiler``,
    or the library's default), else ``in_image``, the command's default (its engine open until
    ``stack`` closes)."""
    if request.compiler_path is not None:
        given = compiler_at(request.compiler_path, why="--compiler")
        if given is None:
            raise UsageError(
                f"--compiler {request.compiler_path}: no such compiler",
                why="it is not on PATH, or it does not run and say its version (--version)",
                fix="Name a C++ compiler on PATH (clang++-16, g++) or give its path.",
            )
        return given, None
    if not request.in_image:
        return find_compiler(request.compiler, needed_for=_ON_HOST), None
    from tfbuild.build.run import proxies_from
    from tfbuild.overlay.image import image_toolchain

    try:  # how to build on this host instead, said where the image cannot be had
        host = find_compiler(request.compiler or "clang", needed_for=_ON_HOST)
    except EnvironmentProblem:
        fallback = "--compiler CXX (a C++ compiler on PATH)"
    else:
        fallback = f"--compiler {Path(host.path).name}"
    found = stack.enter_context(
        image_toolchain(
            request.image.compiler if request.image else request.compiler,
            fallback=fallback,
            say=say,
            pinned=request.image,
            proxies=dict(proxies_from(os.environ)),
        )
    )
    return found.compiler, found


def build_overlay(request: OverlayRequest, *, progress: Progress | None = None) -> OverlayResult:
    say = progress or (lambda _m: None)
    started = time.monotonic()
    cpu = request.build_cpu or host_cpuinfo()
    lacked = beyond_here(request.target, cpu) if request.pending is None else ()
    if lacked:
        say(
            f"this CPU lacks {' '.join(lacked)} of {request.target}: its kernels are built, and "
            "their special-value check waits for a machine that has them (tfbuild overlay --check "
            "there, after pip install; pick --install runs it)"
        )
    with contextlib.ExitStack() as stack:
        # Where it compiles first: a missing engine or base image is said before the stock
        # environment is made (a download of hundreds of MB the first time).
        compiler, in_image = _where(request, say, stack)
        image = in_image.image if in_image else None
        python, stock_name = _stock_python(request, say)
        stock = for_overlay(read_stock(python, registry_ops()), python)
        if stock.version != request.tensorflow:
            raise UsageError(
                f"the TensorFlow of {python} is {stock.version}, not {request.tensorflow}",
                fix=f"Ask for --tf {stock.version}, or pass an interpreter with TensorFlow "
                f"{request.tensorflow}.",
            )
        registration = plan_kernels(stock.registry())
        label = cpu_label(request.target)
        version = f"{stock.version}+{label}"
        toolchain = (
            # the stock TensorFlow's package, read-only at its own path
            in_image.toolchain((str(Path(stock.package).resolve()),))
            if in_image
            else host_toolchain(compiler.path)
        )
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tfbuild-overlay-")))
        scratch = scratch.resolve()
        (scratch / "src").mkdir()
        left_out = workarounds(compiler, toolchain, request.cflags, cwd=scratch / "src")
        cflags = request.cflags + tuple(o.flag for o in left_out)
        features = target_features(toolchain, cflags, cwd=scratch / "src")
        pending = request.pending if request.pending is not None else _lacking(features, cpu)
        say(
            f"compiling {len(registration.names)} kernels of TensorFlow {stock.version} for "
            f"{request.target} ({' '.join(cflags)}) with {compiler.version} "
            + (
                f"in {image.tag}, against Debian {image.sysroot_suite}'s C library"
                if image
                else "on this host"
            )
        )
        _say_left_out(left_out, say)
        compiled = compile_overlay(
            toolchain=toolchain,
            stock=stock,
            registration=registration,
            target=request.target,
            cflags=cflags,
            features=features,
            scratch=scratch / "src",
            pending=pending,
        )
        manifest = OverlayManifest(
            tensorflow=stock.version,
            distribution=stock.distribution,
            git_version=stock.git_version,
            framework_size=stock.framework_bytes,
            target=request.target,
            cflags=cflags,
            features=features,
            compiler=compiler.version,
            kernels=registration.names,
            pending=pending,
            token=compiled.token,
        )
        files = {
            f"{PLUGINS}/{LOADER}": compiled.loader.read_bytes(),
            f"{PLUGINS}/tfbuild_overlay/{KERNELS}": compiled.kernels.read_bytes(),
            f"{PLUGINS}/tfbuild_overlay/{MANIFEST}": (
                json.dumps(serial.to_data(manifest), indent=1) + "\n"
            ).encode(),
        }
        if pending:
            files[f"{PLUGINS}/tfbuild_overlay/{CHECK_FILE}"] = pending_record(pending)
        executable = frozenset(p for p in files if p.endswith(".so"))

        def write(platform: str) -> Path:
            name = WheelName(version=version, platform=platform)
            content = members(
                name,
                files=files,
                requires=f"{stock.distribution}=={stock.version}",
                summary=f"TensorFlow {stock.version}'s element-wise CPU kernels compiled for "
                f"{request.target} (tfbuild overlay)",
            )
            path = scratch / name.filename
            write_wheel(path, content, executable=executable)
            return path

        untagged = write(UNTAGGED)
        platform = _platform(untagged, say)
        wheel = untagged if platform == UNTAGGED else write(platform)
        checks = _check(request, wheel, python, registration, pending, scratch, say)
        receipt = OverlayReceipt(
            created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            tfbuild=__version__,
            wheel=WheelRecord(
                name=wheel.name, sha256=sha256_file(wheel), size=wheel.stat().st_size
            ),
            tensorflow=stock.version,
            distribution=stock.distribution,
            git_version=stock.git_version,
            framework_size=stock.framework_bytes,
            framework_sha256=stock.framework_sha256(),
            stock=stock_name,
            target=request.target,
            cflags=cflags,
            features=features,
            left_out=left_out,
            compiler=compiler.path,
            compiler_version=compiler.version,
            image=image,
            kernels=registration.names,
            skipped=registration.skipped,
            checks=checks,
            seconds=round(time.monotonic() - started, 1),
            pending=pending,
        )
        out = request.out
        out.mkdir(parents=True, exist_ok=True)
        receipt_file = receipt_path(out / wheel.name)
        text = json.dumps(serial.to_data(receipt), indent=2) + "\n"
        with locked(out / DIST_LOCK, busy=f"another tfbuild writes to {out}", fix="Wait for it."):
            write_files(
                out,
                {receipt_file.name: (text.encode(), 0o644), wheel.name: (wheel, 0o644)},
                key_last=True,
            )
    return OverlayResult(
        wheel=out / wheel.name, receipt=receipt, receipt_file=receipt_file, stock_python=python
    )


def _check(
    request: OverlayRequest,
    wheel: Path,
    python: str,
    registration: Registration,
    pending: tuple[str, ...],
    scratch: Path,
    say: Progress,
) -> tuple[KernelCheck, ...]:
    """Every kernel against stock on special values, in the wheel unpacked in ``scratch``; none
    when the check waits for a machine with the ``pending`` instruction sets, or is not asked."""
    if not request.check:
        return ()
    if pending:
        say(
            f"special-value check: pending, this CPU lacks {' '.join(pending)}; on a machine "
            f"that has them, after pip install: {COMMAND}"
        )
        return ()
    site = scratch / "check" / "site-packages"
    install_into(wheel, site)
    say("checking every kernel against stock TensorFlow on special values")
    return verify_kernels(python, clean_env(), str(site), registration.names)


def _say_left_out(left_out: Sequence[LeftOut], say: Progress) -> None:
    """One line for the system instruction sets left out (what lets a virtual machine that hides
    them load the overlay), one for each other set with its reason."""
    system = [o.instruction_set for o in left_out if o.system]
    if system:
        say(
            f"left out of the kernels: {', '.join(system)}, system instructions no kernel "
            "contains (a virtual machine that hides them loads the overlay)"
        )
    for other in left_out:
        if not other.system:
            say(f"left out of the kernels: {other.instruction_set} ({other.flag}): {other.why}")


def _platform(wheel: Path, say: Progress) -> str:
    """The best manylinux tag auditwheel finds for the wheel (:mod:`tfbuild.wheel.floor`): the
    newest glibc, libstdc++ and libgcc symbol versions its two libraries need, which the C library
    and libstdc++ compiled against decide (the image's sysroot, or the host's). The stock TensorFlow's ``libtensorflow_framework.so.2``, which
    the kernels link against, comes with the stock wheel the overlay requires: auditwheel leaves it
    out (``exclude``) instead of calling it a library no policy allows."""
    floor = inspect_wheel(wheel, exclude=(FRAMEWORK,))
    if floor.policy is None:
        say(f"no manylinux policy allows it ({', '.join(floor.too_new)}): tagged {UNTAGGED}")
        return UNTAGGED
    say(f"tagged {floor.policy}: it needs {floor.needs or 'no versioned glibc symbol'}")
    return floor.policy


def verify_overlay(wheel: Path, *, progress: Progress | None = None) -> OverlayResult:
    """Rebuild the overlay from its receipt in a scratch directory and compare the wheels' bytes."""
    receipt = read_overlay_receipt(receipt_path(wheel), wheel=wheel)
    actual = sha256_file(wheel)
    if actual != receipt.wheel.sha256:
        raise NotReproducible(
            f"{wheel.name} is not the wheel its receipt describes",
            why=f"its sha256 is {actual}, the receipt says {receipt.wheel.sha256}",
            fix="Rebuild it with tfbuild overlay.",
        )
    python = receipt.stock[len("python:") :] if receipt.stock.startswith("python:") else None
    with tempfile.TemporaryDirectory(prefix="tfbuild-verify-") as out:
        request = OverlayRequest(
            tensorflow=receipt.tensorflow,
            architecture="x86_64",
            target=receipt.target,
            # the target's own flags: the build leaves the same sets out again, and says why
            cflags=tuple(f for f in receipt.cflags if f not in {o.flag for o in receipt.left_out}),
            compiler=receipt.image.compiler if receipt.image else "",
            compiler_path=None if receipt.image else receipt.compiler,
            in_image=receipt.image is not None,
            image=receipt.image,
            stock=None if python else receipt.stock,
            python=python,
            out=Path(out),
            check=False,
            pending=receipt.pending,  # the same loader, wherever verify runs
        )
        again = build_overlay(request, progress=progress)
        if receipt.image is not None and again.receipt.image is not None:
            changed_packages = _changed_packages(receipt.image, again.receipt.image)
            if changed_packages:
                raise NotReproducible(
                    f"cannot rebuild {wheel.name} with the same toolchain",
                    why=f"the toolchain image {again.receipt.image.tag} has "
                    f"{', '.join(changed_packages[:4])}",
                    fix="Verify where the receipt's toolchain image is (docker save TAG | docker "
                    "load), or where the package sources still offer those versions.",
                )
        if again.receipt.compiler_version != receipt.compiler_version:
            raise NotReproducible(
                f"cannot rebuild {wheel.name} with the same compiler",
                why=f"{receipt.compiler} is now {again.receipt.compiler_version}, it was "
                f"{receipt.compiler_version}",
                fix="Install that compiler version to verify.",
            )
        if again.receipt.wheel.sha256 != receipt.wheel.sha256:
            gone = sorted(set(receipt.kernels) - set(again.receipt.kernels))
            new = sorted(set(again.receipt.kernels) - set(receipt.kernels))
            changed = (
                f"; this tfbuild ({__version__}, the receipt's {receipt.tfbuild}) registers "
                f"other kernels: {len(gone)} fewer ({', '.join(gone[:4])}), {len(new)} more "
                f"({', '.join(new[:4])})"
                if gone or new
                else ""
            )
            raise NotReproducible(
                f"rebuilding {wheel.name} gave other bytes",
                why=f"sha256 {again.receipt.wheel.sha256}, not {receipt.wheel.sha256}{changed}",
                fix="Verify with the tfbuild that built it, or rebuild the overlay with this one.",
            )
        return again


def _changed_packages(was: OverlayImage, now: OverlayImage) -> list[str]:
    """Each recorded package of the image that differs: ``libc6-dev 2.31-13+deb11u15, the
    receipt's 2.31-13+deb11u14``."""
    changed = []
    for old, new in ((was.packages, now.packages), (was.sysroot_packages, now.sysroot_packages)):
        for name in sorted(old.keys() | new.keys()):
            if old.get(name) != new.get(name):
                changed.append(
                    f"{name} {new.get(name, '(none)')}, the receipt's {old.get(name, '(none)')}"
                )
    return changed
