"""The built wheel made final (floor, label, normalisation, manylinux tag); its receipt made."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from tfbuild import __version__
from tfbuild.build.container import Attempt, BuildJob, source_epoch
from tfbuild.build.log import BuildLog
from tfbuild.build.source_tree import Source
from tfbuild.core import serial
from tfbuild.core.errors import TfbuildError
from tfbuild.core.variants import Variant
from tfbuild.plan import BuildPlan
from tfbuild.recipes.tfversions import parse_version
from tfbuild.recipes.tools import load_tools
from tfbuild.wheel.floor import inspect_wheel
from tfbuild.wheel.receipt import (
    BuildAttempt,
    BuildHost,
    Inputs,
    Receipt,
    WheelFloor,
    WheelRecord,
    canonical_sha256,
)
from tfbuild.wheel.wheelfile import normalise, relabel, retag

#: NVIDIA's libraries a CUDA wheel loads at run time from NVIDIA's own wheels (nvidia-cudnn-cu12 and
#: the like, which TensorFlow's [and-cuda] extra installs) or the driver: no manylinux policy lists
#: them, and tfbuild never grafts them into the wheel, so the floor is taken without them.
CUDA_LIBRARIES = (
    "libcuda.so.*",
    "libcudart.so.*",
    "libcublas*.so.*",
    "libcudnn*.so.*",
    "libcufft.so.*",
    "libcusolver.so.*",
    "libcusparse.so.*",
    "libcurand.so.*",
    "libnccl.so.*",
    "libnvrtc*.so.*",
    "libnvJitLink.so.*",
)


def finish_wheel(
    raw: Path, plan: BuildPlan, source: Source, log: BuildLog
) -> tuple[Path, WheelFloor | None, tuple[str, ...]]:
    """The built wheel made final: its floor found, then the label, the normalisation and the
    manylinux tag put on it, each a raw copy of the members (one pass where a label is given)."""
    floor = _inspect(raw, log, exclude=CUDA_LIBRARIES if plan.variant == Variant.cuda else ())
    missed = missed_floor(plan.floor_goal, floor)
    warnings = (missed,) if missed is not None else ()
    if missed is not None:
        log.note(f"WARNING: {raw.name}: {missed}")
    platform = floor.policy if floor is not None else None
    epoch = source_epoch(source) if plan.reproducible else None
    built, final = raw, raw.parent / "final"
    if plan.label:
        built = relabel(raw, plan.label, final, epoch=epoch, platform=platform)
        log.note(f"label: +{plan.label} -> {built.name}")
    else:
        if platform is not None:
            built = retag(built, platform, final)
        if epoch is not None:
            built = normalise(built, final, epoch=epoch)
    if epoch is not None:
        log.note(f"normalised: sorted members, times of SOURCE_DATE_EPOCH={epoch}")
    if built != raw:
        raw.unlink()
    return built, floor, warnings


def missed_floor(goal: str | None, floor: WheelFloor | None) -> str | None:
    """Why the wheel misses the recipe's glibc floor, in a sentence; None when it meets it."""
    if goal is None or floor is None:
        return None
    if floor.policy is None:
        return (
            f"it should load on glibc {goal} (its recipe's floor), but it satisfies no manylinux "
            f"policy: it needs {', '.join(floor.too_new) or 'what no policy allows'}"
        )
    if floor.glibc is not None and parse_version(floor.glibc) > parse_version(goal):
        libstdcxx = f" and libstdc++ {floor.libstdcxx}" if floor.libstdcxx else ""
        return (
            f"it should load on glibc {goal} (its recipe's floor, the stock wheel's), but it "
            f"needs glibc {floor.glibc}{libstdcxx}: most older clusters cannot load it; build with the "
            "release's portable toolchain or an older base image (docs/toolchain-facts.md)"
        )
    return None


def _inspect(wheel: Path, log: BuildLog, *, exclude: tuple[str, ...] = ()) -> WheelFloor | None:
    """The wheel's floor (auditwheel). A failure to inspect must not lose an hours-long build: the
    wheel is published untagged (linux_*), without a floor, and the log says so loudly."""
    try:
        floor = inspect_wheel(wheel, exclude=exclude)
    except TfbuildError as exc:
        log.note(f"WARNING: the wheel's glibc floor is unknown ({exc.line()}); it keeps its tag")
        return None
    if floor.policy is None:
        log.note(
            "WARNING: the wheel satisfies no manylinux policy, so it stays linux_*: it needs "
            + (", ".join(floor.too_new) or "what no policy allows")
            + f" (glibc {floor.glibc}); it will not load on older systems"
        )
    else:
        needs = floor.needs or "no versioned glibc symbol"
        log.note(f"floor: {needs} -> {floor.policy} ({floor.tool})")
    return floor


def make_receipt(
    job: BuildJob,
    *,
    plan: BuildPlan,
    wheel: Path,
    sha256: str,
    toolchain: tuple[str, str | None],
    exec_image: str | None = None,
    packages: dict[str, str],
    attempts: list[Attempt],
    floor: WheelFloor | None,
    host: BuildHost,
    timings: dict[str, float],
    log: BuildLog,
) -> Receipt:
    plan_json = serial.to_data(plan)
    processes = log.processes
    # bazel, the compiler and python as the build printed them; bazelisk as the image pins it.
    tools = dict(log.tools)
    if not plan.canary:
        tools["bazelisk"] = load_tools()["bazelisk"].version
    inputs = Inputs(
        tfbuild=__version__,
        recipe=plan.recipe,
        recipe_sha256=job.recipe_sha256,
        source=job.source.record(),
        base_image=plan.base_image.reference,
        base_image_id=plan.base_image.image_id,
        toolchain_image=toolchain[0],
        toolchain_image_id=toolchain[1],
        packages=packages,
        tools=tools,
        snapshot=plan.snapshot.time if plan.snapshot else None,
        exec_image=exec_image,
    )
    return Receipt(
        build_id=job.build_id,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        standin=plan.canary,
        wheel=WheelRecord(name=wheel.name, sha256=sha256, size=wheel.stat().st_size),
        target=plan.target,
        variant=str(plan.variant),
        label=plan.label,
        cflags=plan.cflags,
        plan=plan_json,
        plan_sha256=canonical_sha256(plan_json),
        inputs=inputs,
        inputs_sha256=inputs.sha256,
        host=host,
        floor=floor,
        timings={k: round(v, 3) for k, v in timings.items()},
        attempts=tuple(BuildAttempt(**serial.to_data(a)) for a in attempts),
        runtime_env_file=wheel.with_suffix(".env").name,
        log=str(log.path),
        processes=processes,
        remote_cache_hits=processes.get("remote cache hit", 0)
        if any(o.startswith("--remote_cache=") for o in plan.build_options)
        else None,
    )
