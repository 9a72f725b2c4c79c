"""CUDA: the toolkit and cuDNN versions a build uses, fitted to the driver, and the GPUs it targets."""

from __future__ import annotations

from tfbuild.core.errors import UnsupportedError
from tfbuild.core.variants import Variant
from tfbuild.detect.host import HostFacts
from tfbuild.detect.nvidia import min_driver_for_cuda
from tfbuild.plan.model import CudaPlan, Reason
from tfbuild.plan.options import PlanOptions, parse_capability
from tfbuild.recipes import tfversions
from tfbuild.recipes.recipe import Recipe

#: The newest GPU architecture each CUDA release can compile for (CUDA release notes).
#: A GPU above the chosen toolkit's limit only runs PTX JIT-compiled for an older architecture,
#: or nothing at all.
MAX_CAPABILITY = {
    (11, 8): (9, 0),
    (12, 0): (9, 0),
    (12, 8): (12, 0),
    (12, 9): (12, 1),
    (13, 0): (12, 1),
}

#: The GPU generation of each compute capability from which it starts (NVIDIA's CUDA GPUs table):
#: 7.2 is Volta (Xavier), 8.6 and 8.7 Ampere, 10.x to 12.x Blackwell.
GENERATIONS = (
    ((1, 0), "Tesla"),
    ((2, 0), "Fermi"),
    ((3, 0), "Kepler"),
    ((5, 0), "Maxwell"),
    ((6, 0), "Pascal"),
    ((7, 0), "Volta"),
    ((7, 5), "Turing"),
    ((8, 0), "Ampere"),
    ((8, 9), "Ada Lovelace"),
    ((9, 0), "Hopper"),
    ((10, 0), "Blackwell"),
)


def generation(capability: tuple[int, int]) -> str:
    """The GPU generation of a compute capability: (8, 9) -> "Ada Lovelace"."""
    return [name for start, name in GENERATIONS if start <= capability][-1]


def _max_capability(cuda: str) -> tuple[int, int]:
    version = tfversions.minor(tfversions.parse_version(cuda))
    known = [v for v in MAX_CAPABILITY if v <= version]
    return MAX_CAPABILITY[max(known)] if known else (8, 6)


def _capabilities(
    options: PlanOptions, host: HostFacts, version: str, recipe: Recipe
) -> tuple[tuple[str, ...], Reason]:
    """Compute capabilities: SASS for each GPU, PTX of the newest (forward compatibility)."""
    assert recipe.cuda is not None
    limit = _max_capability(version)
    if options.cuda_capabilities:
        caps = [parse_capability(c) for c in options.cuda_capabilities]
        cap_why = "asked for with --cuda-capabilities"
    elif host.gpu_capabilities:
        caps = [parse_capability(c) for c in host.gpu_capabilities]
        cap_why = "this machine's GPUs, plus PTX of the newest for GPUs to come"
    else:
        caps = []
        cap_why = f"{_no_gpu(options, host)}: TensorFlow {recipe.short}'s own default list"
    too_new = [c for c in caps if c > limit]
    if too_new:
        shown = ", ".join(f"{a}.{b}" for a, b in too_new)
        raise UnsupportedError(
            f"CUDA {version} cannot compile for compute capability {shown}",
            why=f"CUDA {version} knows GPUs up to {limit[0]}.{limit[1]}",
            fix="Use a newer CUDA (--cuda-version) with a release that has one, or build PTX "
            "for an older capability with --cuda-capabilities.",
        )
    if caps:
        unique = sorted(set(caps))
        names = [f"sm_{a}{b}" for a, b in unique]
        top = unique[-1]
        names.append(f"compute_{top[0]}{top[1]}")  # PTX: forward compatibility with newer GPUs
        capabilities = tuple(names)
    else:
        capabilities = recipe.cuda.capabilities
    return capabilities, Reason(
        what="compute capabilities", value=",".join(capabilities), why=cap_why
    )


def plan_cuda(
    options: PlanOptions, recipe: Recipe, host: HostFacts
) -> tuple[CudaPlan, list[Reason]]:
    """The CUDA and cuDNN versions (fitted to the driver) and the compute capabilities."""
    if recipe.cuda is None:
        raise UnsupportedError(
            f"TensorFlow {recipe.short} has no CUDA row in {recipe.path}",
            why="its recipe does not describe a CUDA build",
            fix="Build the CPU variant (--mkl), or use a version with a CUDA row "
            "('tfbuild recipes' lists them).",
        )
    row = recipe.cuda
    reasons: list[Reason] = []
    if options.cuda_version:
        if options.cuda_version not in row.cuda_versions:
            raise UnsupportedError(
                f"CUDA {options.cuda_version} is not available to TensorFlow {recipe.short}",
                why=f"{recipe.where('cuda')} lists {', '.join(row.cuda_versions)}",
                fix="Pick one of those with --cuda-version.",
            )
        version, why = options.cuda_version, "asked for with --cuda-version"
    else:
        version, why = row.cuda, f"the default of TensorFlow {recipe.short}"
    if host.driver_cuda:
        driver_max = tfversions.parse_version(host.driver_cuda)
        fitting = [
            v
            for v in row.cuda_versions
            if tfversions.minor(tfversions.parse_version(v)) <= driver_max
        ]
        if row.hermetic and not options.cuda_version and version not in fitting and fitting:
            version = max(fitting, key=tfversions.parse_version)
            why = (
                f"the newest CUDA this release knows that driver {host.driver_version} runs "
                f"(it supports up to {host.driver_cuda})"
            )
        if tfversions.minor(tfversions.parse_version(version)) > driver_max:
            need = min_driver_for_cuda(".".join(version.split(".")[:2])) or "a newer one"
            raise UnsupportedError(
                f"NVIDIA driver {host.driver_version} is too old for CUDA {version}",
                why=f"it supports CUDA up to {host.driver_cuda}",
                fix=f"Upgrade the driver to {need} or newer, or pick an older --cuda-version "
                f"({', '.join(row.cuda_versions)}).",
            )
    elif host.machine_is_build_host:
        why += "; no NVIDIA driver here, so the wheel's runtime machine must have one for it"
    reasons.append(Reason(what="CUDA", value=version, why=why))
    cudnn = options.cudnn_version or row.cudnn
    if cudnn not in row.cudnn_versions:
        raise UnsupportedError(
            f"cuDNN {cudnn} is not available to TensorFlow {recipe.short}",
            why=f"{recipe.where('cuda')} lists {', '.join(row.cudnn_versions)}",
            fix="Pick one of those with --cudnn-version.",
        )
    reasons.append(
        Reason(
            what="cuDNN",
            value=cudnn,
            why="asked for" if options.cudnn_version else f"the default of {recipe.short}",
        )
    )
    capabilities, cap_reason = _capabilities(options, host, version, recipe)
    reasons.append(cap_reason)
    return (
        CudaPlan(hermetic=row.hermetic, cuda=version, cudnn=cudnn, capabilities=capabilities),
        reasons,
    )


def _no_gpu(options: PlanOptions, host: HostFacts) -> str:
    """Why no GPU decided the capabilities: none here, none whose capability shows, or a machine
    described by its CPU alone."""
    if not host.machine_is_build_host:  # a --cpuinfo dump, or the CI matrix's nominal runner
        whose = f"the machine of {options.cpuinfo}" if options.cpuinfo else "the machine it is for"
        return f"the GPUs of {whose} are unknown"
    if host.driver_version is None:
        return "no NVIDIA GPU or driver on this machine"
    return f"no GPU with a known compute capability here (NVIDIA driver {host.driver_version})"


def _named(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def describe_capabilities(capabilities: tuple[str, ...]) -> str:
    """What a list of capabilities runs on, in GPU generations: ``sm_60, sm_70, sm_80 and sm_89
    (Pascal to Ada Lovelace) and PTX compute_90 (Hopper and newer compile it on first load)``."""
    native = [c for c in capabilities if not c.startswith("compute_")]
    ptx = [c for c in capabilities if c.startswith("compute_")]
    parts = []
    if native:
        caps = [parse_capability(c) for c in native]
        low, high = generation(min(caps)), generation(max(caps))
        span = low if low == high else f"{low} to {high}"
        parts.append(f"{_named(native)} ({span})")
    if ptx:
        top = max(parse_capability(c) for c in ptx)
        which = (
            "newer GPUs"
            if top in {parse_capability(c) for c in native}
            else f"{generation(top)} and newer"
        )
        parts.append(f"PTX {_named(ptx)} ({which} compile it on first load)")
    return " and ".join(parts)


def gpu_lead(
    options: PlanOptions, recipe: Recipe, host: HostFacts, capabilities: tuple[str, ...]
) -> str | None:
    """What a CUDA plan says before its decisions when no GPU chose its compute capabilities: that
    none was seen, what it builds for instead and why, and how to build for the GPUs it will run
    on. None when the capabilities were asked for, or are this machine's GPUs'."""
    if options.variant != Variant.cuda or options.cuda_capabilities or host.gpu_capabilities:
        return None
    return (
        f"{_no_gpu(options, host)}, so the wheel is built for TensorFlow {recipe.short}'s default "
        f"GPU list instead: {describe_capabilities(capabilities)}. For the GPUs it will run on "
        "alone: --cuda-capabilities, e.g. 8.9."
    )
