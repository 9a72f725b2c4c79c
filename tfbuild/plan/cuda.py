"""CUDA: the toolkit and cuDNN versions a build uses, fitted to the driver, and the GPUs it targets."""

from __future__ import annotations

import re

from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.detect.host import HostFacts
from tfbuild.detect.nvidia import min_driver_for_cuda
from tfbuild.plan.model import CudaPlan, Reason
from tfbuild.plan.options import PlanOptions
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

#: A compute capability as written: "8.9" (major.minor), or "89", "sm_89", "compute_90", "sm_120"
#: (major digits then one minor digit). The minor is one digit in every capability NVIDIA has named.
_CAPABILITY = re.compile(r"([0-9]{1,2})\.([0-9])|(?:sm_|compute_)?([0-9]{1,2})([0-9])")


def _capability(text: str) -> tuple[int, int]:
    found = _CAPABILITY.fullmatch(text.strip())
    major, minor = (
        (int(found.group(1) or found.group(3)), int(found.group(2) or found.group(4)))
        if found
        else (0, 0)
    )
    if major < 1:  # not the pattern, or 0.x: NVIDIA's capabilities start at 1.0
        raise UsageError(
            f"--cuda-capabilities value {text!r} is not a compute capability",
            why="one is a major and a one-digit minor version, from 1.0 up",
            fix="Use 8.9, sm_89 or compute_90.",
        )
    return major, minor


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
        caps = [_capability(c) for c in options.cuda_capabilities]
        cap_why = "asked for with --cuda-capabilities"
    elif host.gpu_capabilities:
        caps = [_capability(c) for c in host.gpu_capabilities]
        cap_why = "this machine's GPUs, plus PTX of the newest for GPUs to come"
    else:
        caps = []
        cap_why = f"no GPU seen: TensorFlow {recipe.short}'s default list"
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
    if host.driver_cuda and row.hermetic and not options.cuda_version:
        driver_max = tfversions.parse_version(host.driver_cuda)
        fitting = [
            v
            for v in row.cuda_versions
            if tfversions.minor(tfversions.parse_version(v)) <= driver_max
        ]
        if version not in fitting and fitting:
            version = max(fitting, key=tfversions.parse_version)
            why = (
                f"the newest CUDA this release knows that driver {host.driver_version} runs "
                f"(it supports up to {host.driver_cuda})"
            )
    if host.driver_cuda:
        driver_max = tfversions.parse_version(host.driver_cuda)
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
