"""The build plan: options + recipe + host facts -> one frozen, fully resolved BuildPlan.

Everything here is a pure function. Every choice is recorded with the reason for it, so
``tfbuild plan`` can print *why* as well as *what*. The renderer turns a plan into files without
making any decision of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tfbuild import tfversions
from tfbuild.compilers import CompilerFlags, Coverage, flags_for, parse_compiler
from tfbuild.detect import cpu, features
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.errors import EnvironmentProblem, UnsupportedError, UsageError
from tfbuild.labels import local_label
from tfbuild.recipes import Recipe

Variant = Literal["cpu", "mkl", "cuda"]
MklThreading = Literal["threadpool", "openmp"]

MIB = 1024**2
GIB = 1024**3

#: bazelisk, installed as `bazel` in the toolchain image; it fetches the recipe's bazel version.
#: v1.25.0 checksums as pinned by two independent public build scripts (release assets).
BAZELISK_VERSION = "v1.25.0"
BAZELISK_SHA256 = {
    "amd64": "fd8fdff418a1758887520fa42da7e6ae39aefc788cf5e7f7bb8db6934d279fc4",
    "arm64": "4c8d966e40ac2c4efcc7f1a5a5cceef2c0a2f16b957e791fa7a867cce31e8fcb",
}

#: Paths inside the build container (the cache volume, the source and the output mounts).
CACHE_ROOT = "/cache"
SOURCE_DIR = "/src"
OUTPUT_DIR = "/out"

#: Memory a compile job may take: clang on TensorFlow's largest translation units peaks near 2.5 GB;
#: CUDA units (clang in CUDA mode, or nvcc) need more.
JOB_MIB = {"cpu": 2560, "mkl": 2560, "cuda": 4096}
#: Free disk a build needs where caches and output live (bazel output base, caches, the wheel).
DISK_NEEDED_GIB = {"cpu": 40, "mkl": 40, "cuda": 70}

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

_URL = re.compile(r"^(grpcs?|https?)://[A-Za-z0-9.-]+(:\d+)?(/[A-Za-z0-9._~%/+=-]*)?$")
_CAPABILITY = re.compile(r"^(?:(sm|compute)_)?(\d+)\.?(\d)?$")
_VOLUME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True, kw_only=True)
class PlanOptions:
    """What the user asked for (CLI options), already typed."""

    tf: str
    variant: Variant = "cpu"
    mkl_threading: MklThreading = "threadpool"
    target: str | None = None  # a portable archspec target; None = the machine described
    native: bool = False  # literal -march=native (only for a build on the machine itself)
    python: str | None = None
    jobs: int | None = None
    local_ram_mb: int | None = None
    jvm_heap_mb: int | None = None
    cache_volume: str = "tfbuild-cache"
    disk_cache: bool = True
    remote_cache: str | None = None
    remote_executor: str | None = None
    cuda_capabilities: tuple[str, ...] = ()
    cuda_version: str | None = None
    cudnn_version: str | None = None
    skip_disk_check: bool = False
    release_version: bool = True  # 2.20+: ML_WHEEL_TYPE=release (no .dev0+selfbuilt suffix)
    base_image: str | None = None  # a key of base_images instead of the recipe's (--base-image)
    standin: bool = False  # the canary: `bazel` is the stand-in script of the source tree
    label: bool = True  # put the target in the wheel's PEP 440 local version label (+x86_64v4)


@dataclass(frozen=True, kw_only=True)
class HostFacts:
    """What planning needs from detection (the build host, and the machine the wheel is for)."""

    machine: CpuInfo  # the machine the wheel is for
    machine_is_build_host: bool
    build_cpus: int
    build_memory_bytes: int | None
    build_disk_path: str | None
    build_disk_free_bytes: int | None
    python: str  # the build host's Python X.Y
    driver_version: str | None = None
    driver_cuda: str | None = None  # the newest CUDA the driver supports
    gpu_capabilities: tuple[str, ...] = ()  # "8.9", from the GPUs


@dataclass(frozen=True, kw_only=True)
class Reason:
    what: str
    value: str
    why: str

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "value": self.value, "why": self.why}


@dataclass(frozen=True, kw_only=True)
class BaseImage:
    name: str
    reference: str  # image@sha256:digest
    distro: str
    suite: str
    python: str  # the distribution's python3 (X.Y)
    tcmalloc_package: str
    packaged_compilers: tuple[str, ...] = ()  # "clang-16", "gcc-12": what apt installs as is
    cuda: str | None = None  # NVIDIA images: the CUDA toolkit inside
    cudnn: str | None = None  # NVIDIA images: the cuDNN major inside (None: none)
    image_id: str | None = None  # a local image (tfbuild base): its id, as the reference is a tag

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "reference": self.reference,
            "image_id": self.image_id,
            "distro": self.distro,
            "suite": self.suite,
            "python": self.python,
            "tcmalloc_package": self.tcmalloc_package,
            "packaged_compilers": list(self.packaged_compilers),
            "cuda": self.cuda,
            "cudnn": self.cudnn,
        }


@dataclass(frozen=True, kw_only=True)
class CudaPlan:
    hermetic: bool
    cuda: str
    cudnn: str
    capabilities: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "hermetic": self.hermetic,
            "cuda": self.cuda,
            "cudnn": self.cudnn,
            "capabilities": list(self.capabilities),
        }


@dataclass(frozen=True, kw_only=True)
class Resources:
    jobs: int
    local_ram_mb: int
    jvm_heap_mb: int
    disk_needed_gib: int
    disk_free_gib: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "local_ram_mb": self.local_ram_mb,
            "jvm_heap_mb": self.jvm_heap_mb,
            "disk_needed_gib": self.disk_needed_gib,
            "disk_free_gib": self.disk_free_gib,
        }


@dataclass(frozen=True, kw_only=True)
class BuildPlan:
    """A complete, exact, reviewable build: the renderer's only input."""

    tensorflow: str
    recipe: str
    source: dict[str, str | None]
    architecture: str  # of the machine the wheel is for (x86_64, aarch64)
    variant: Variant
    python: str
    compiler: str
    compiler_path: str  # inside the toolchain image
    compiler_packages: tuple[str, ...]
    llvm_apt_suite: str | None  # "llvm-toolchain-jammy-17" when clang comes from apt.llvm.org
    extra_packages: tuple[str, ...]  # e.g. cuDNN for CUDA images that lack it
    target: str  # archspec name, "native", or the portable target
    target_kind: Literal["machine", "portable", "native"]
    cflags: tuple[str, ...]
    coverage: tuple[dict[str, Any], ...]
    base_image: BaseImage
    bazel: str
    bazel_configs: tuple[str, ...]  # --config=X on the command line
    rc_lines: tuple[str, ...]  # the rendered .tf_configure.bazelrc, line by line
    build_options: tuple[str, ...]  # per-build options (resources, caches)
    startup_options: tuple[str, ...]
    build_target: str
    wheel_flow: str
    wheel_name: str
    cache_volume: str
    runtime_env: tuple[tuple[str, str], ...]
    resources: Resources
    cuda: CudaPlan | None
    reasons: tuple[Reason, ...]
    warnings: tuple[str, ...] = field(default=())
    standin: bool = False  # the canary stand-in source, not TensorFlow
    label: str | None = None  # the wheel's local version label ("x86_64v4.cu125"); None: unlabelled

    def runtime_env_value(self, name: str) -> str:
        return dict(self.runtime_env).get(name, "")

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "tfbuild.plan/1",
            "tensorflow": self.tensorflow,
            "recipe": self.recipe,
            "source": dict(self.source),
            "architecture": self.architecture,
            "variant": self.variant,
            "python": self.python,
            "compiler": self.compiler,
            "compiler_path": self.compiler_path,
            "compiler_packages": list(self.compiler_packages),
            "llvm_apt_suite": self.llvm_apt_suite,
            "extra_packages": list(self.extra_packages),
            "target": self.target,
            "target_kind": self.target_kind,
            "cflags": list(self.cflags),
            "coverage": list(self.coverage),
            "base_image": self.base_image.to_json(),
            "bazel": self.bazel,
            "bazel_configs": list(self.bazel_configs),
            "rc_lines": list(self.rc_lines),
            "build_options": list(self.build_options),
            "startup_options": list(self.startup_options),
            "build_target": self.build_target,
            "wheel_flow": self.wheel_flow,
            "wheel_name": self.wheel_name,
            "cache_volume": self.cache_volume,
            "runtime_env": dict(self.runtime_env),
            "resources": self.resources.to_json(),
            "cuda": self.cuda.to_json() if self.cuda else None,
            "reasons": [r.to_json() for r in self.reasons],
            "warnings": list(self.warnings),
            "standin": self.standin,
            "label": self.label,
        }


# --- the pieces -------------------------------------------------------------------------------------


def _choose_python(options: PlanOptions, recipe: Recipe, host: HostFacts) -> tuple[str, str]:
    allowed = ", ".join(recipe.python)
    if options.python is not None:
        if options.python not in recipe.python:
            raise UnsupportedError(
                f"TensorFlow {recipe.short} cannot be built for Python {options.python}",
                why=f"{recipe.where('python')} allows {allowed}",
                fix=f"Pick one of {allowed} with --python.",
            )
        return options.python, "asked for with --python"
    if host.python in recipe.python:
        return host.python, "this host's Python, so the wheel installs where tfbuild runs"
    newest = recipe.python[-1]
    return newest, (
        f"this host's Python {host.python} is outside {recipe.where('python')} ({allowed}); "
        "the newest supported one"
    )


def _compiler_path(family: str, major: str) -> tuple[str, tuple[str, ...]]:
    if family == "clang":
        return f"/usr/lib/llvm-{major}/bin/clang", (f"clang-{major}", f"lld-{major}")
    return f"/usr/bin/gcc-{major}", (f"gcc-{major}", f"g++-{major}")


def _compiler_source(family: str, major: str, base: BaseImage) -> str | None:
    """None when the base image's distribution packages the compiler; else the apt.llvm.org suite."""
    if f"{family}-{major}" in base.packaged_compilers:
        return None
    if family != "clang":
        raise UnsupportedError(
            f"{base.name} does not package {family}-{major}",
            why=f"it packages {', '.join(base.packaged_compilers) or 'no listed compiler'}",
            fix="Choose a base image that packages it (base-images.yaml).",
        )
    return f"llvm-toolchain-{base.suite}-{major}"


def _toolchain(
    options: PlanOptions, recipe: Recipe, base: BaseImage
) -> tuple[str, tuple[str, ...], str | None, tuple[str, ...], list[Reason]]:
    """The compiler's path, packages and source, plus packages the variant needs (cuDNN)."""
    reasons: list[Reason] = []
    family, _, compiler_version = recipe.compiler.partition("-")
    major = compiler_version.split(".")[0]
    compiler_path, compiler_packages = _compiler_path(family, major)
    llvm_apt = _compiler_source(family, major, base)
    source = f"from {llvm_apt} (apt.llvm.org)" if llvm_apt else f"packaged by {base.suite}"
    reasons.append(
        Reason(
            what="compiler",
            value=recipe.compiler,
            why=f"TensorFlow {recipe.short}'s tested compiler, {source}; flags are spelled for "
            "it, not for this host's compiler",
        )
    )
    extra_packages: tuple[str, ...] = ()
    if options.variant == "cuda" and recipe.cuda and not recipe.cuda.hermetic and not base.cudnn:
        cudnn_series = ".".join(recipe.cuda.cudnn.split(".")[:2])
        cudnn_major = cudnn_series.split(".")[0]
        extra_packages = (
            f"libcudnn{cudnn_major}={cudnn_series}.*",
            f"libcudnn{cudnn_major}-dev={cudnn_series}.*",
        )
        reasons.append(
            Reason(
                what="cuDNN install",
                value=" ".join(extra_packages),
                why=f"{base.name} has no cuDNN; NVIDIA's apt repository in that image has it",
            )
        )

    return compiler_path, compiler_packages, llvm_apt, extra_packages, reasons


def _target_flags(
    options: PlanOptions, recipe: Recipe, host: HostFacts
) -> tuple[str, Literal["machine", "portable", "native"], CompilerFlags | None, list[Reason]]:
    compiler = parse_compiler(recipe.compiler)
    if options.native:
        if not host.machine_is_build_host or options.target:
            raise UsageError(
                "--native builds for the machine that runs the build",
                why="-march=native would describe the build host, not the machine the wheel is for",
                fix="Drop --native: tfbuild spells the target machine's flags explicitly "
                "(from --cpuinfo or --target), which is what a build for another machine needs.",
            )
        return (
            "native",
            "native",
            None,
            [Reason(what="target", value="-march=native", why="asked for with --native")],
        )
    if options.target:
        target = cpu.lookup_target(options.target)
        guaranteed = features.present(target.features) if target.family.name == "x86_64" else ()
        flags = flags_for(target, compiler, machine_features=guaranteed)
        reason = (
            "a portable target: only what every CPU of that level has, never this host's extras"
        )
        return (
            str(target.name),
            "portable",
            flags,
            [Reason(what="target", value=str(target.name), why=reason)],
        )
    target = cpu.identify(host.machine)
    have = cpu.guard_features(host.machine)
    flags = flags_for(target, compiler, machine_features=have)
    who = "this host" if host.machine_is_build_host else host.machine.source
    return (
        str(target.name),
        "machine",
        flags,
        [
            Reason(
                what="target",
                value=str(target.name),
                why=f"the microarchitecture of {who} (archspec), with every TensorFlow guard "
                "feature it has enabled",
            )
        ],
    )


def _coverage(
    kind: str, flags: CompilerFlags | None, host: HostFacts
) -> tuple[dict[str, Any], ...]:
    """Which guard features the flags turn on, each with the flag that does."""
    if kind == "native":
        # -march=native turns on what the build host has: recorded, so that tfbuild pick can tell
        # which machines the wheel runs on.
        return tuple(
            Coverage(feature=f, flag="-march=native").to_json()
            for f in cpu.guard_features(host.machine)
        )
    return tuple(c.to_json() for c in flags.coverage) if flags else ()


def _resources(options: PlanOptions, host: HostFacts) -> tuple[Resources, list[Reason]]:
    variant = options.variant
    memory_mib = (host.build_memory_bytes or 8 * GIB) // MIB
    memory_note = "" if host.build_memory_bytes else " (memory unknown: assumed 8 GiB)"
    heap_cap = 6144 if variant == "cuda" else 4096
    jvm = options.jvm_heap_mb or max(1024, min(heap_cap, memory_mib // 10))
    local_ram = options.local_ram_mb or max(1024, memory_mib - jvm - 1024)
    per_job = JOB_MIB[variant]
    by_memory = max(1, local_ram // per_job)
    jobs = options.jobs or max(1, min(host.build_cpus, by_memory))
    reasons = [
        Reason(
            what="jobs",
            value=str(jobs),
            why="asked for with --jobs"
            if options.jobs
            else f"min({host.build_cpus} cpus, {local_ram} MiB / {per_job} MiB per compile job)"
            + memory_note,
        ),
        Reason(
            what="local_ram_resources",
            value=f"{local_ram} MiB",
            why="asked for"
            if options.local_ram_mb
            else f"{memory_mib} MiB memory less the bazel server heap and 1 GiB for the system",
        ),
        Reason(
            what="bazel server heap",
            value=f"{jvm} MiB",
            why="asked for"
            if options.jvm_heap_mb
            else f"a tenth of memory, between 1 GiB and {heap_cap // 1024} GiB",
        ),
    ]
    needed = DISK_NEEDED_GIB[variant]
    free = (
        round(host.build_disk_free_bytes / GIB, 1)
        if host.build_disk_free_bytes is not None
        else None
    )
    if free is not None and free < needed and not options.skip_disk_check:
        raise EnvironmentProblem(
            f"not enough free disk for a {variant} build at {host.build_disk_path}",
            why=f"{free} GiB free, about {needed} GiB needed for bazel's output, caches and the wheel",
            fix="Free some space, point TFBUILD_CACHE_DIR at a larger disk, or pass "
            "--skip-disk-check.",
        )
    return (
        Resources(
            jobs=jobs,
            local_ram_mb=local_ram,
            jvm_heap_mb=jvm,
            disk_needed_gib=needed,
            disk_free_gib=free,
        ),
        reasons,
    )


def _capability(text: str) -> tuple[int, int]:
    found = _CAPABILITY.match(text.strip())
    if not found:
        raise UsageError(
            f"--cuda-capabilities value {text!r} is not a compute capability",
            fix="Use 8.9, sm_89 or compute_90.",
        )
    digits = found.group(2) + (found.group(3) or "")
    return int(digits[:-1]), int(digits[-1])


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


def _cuda_plan(
    options: PlanOptions, recipe: Recipe, host: HostFacts
) -> tuple[CudaPlan, list[Reason]]:
    from tfbuild.detect.nvidia import min_driver_for_cuda

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


def _quoted(value: str) -> str:
    return '"' + value + '"'


def _variant(
    options: PlanOptions, recipe: Recipe, host: HostFacts, family: str
) -> tuple[list[str], list[tuple[str, str]], CudaPlan | None, list[Reason]]:
    """The bazel configs, runtime environment and CUDA plan of the variant (cpu, mkl, cuda)."""
    version = recipe.version
    reasons: list[Reason] = []
    configs: list[str] = ["opt"]
    runtime: list[tuple[str, str]] = []
    cuda_plan: CudaPlan | None = None
    if options.variant == "mkl":
        config = "mkl_threadpool" if options.mkl_threading == "threadpool" else "mkl"
        configs.append(config)
        if options.mkl_threading == "threadpool":
            why = (
                "oneDNN forced on (ENABLE_MKL) with TensorFlow's own Eigen thread pool, like the "
                "stock wheel's threading: no OpenMP runtime to tune, so no slowdown from untuned "
                "OMP/KMP settings (easyblocks#2577, tensorflow#36874)"
            )
        else:
            why = (
                "oneDNN with OpenMP (--mkl-threading openmp); needs the OMP/KMP runtime settings "
                "in the runtime env file or it runs slower than stock"
            )
            cores = host.machine.physical_cores or host.build_cpus
            sockets = host.machine.sockets or 1
            runtime.extend(
                [
                    ("OMP_NUM_THREADS", str(cores)),
                    ("KMP_BLOCKTIME", "1"),
                    ("KMP_AFFINITY", "granularity=fine,compact,1,0"),
                    ("TF_NUM_INTRAOP_THREADS", str(cores)),
                    ("TF_NUM_INTEROP_THREADS", str(sockets)),
                ]
            )
        reasons.append(Reason(what="bazel config", value=config, why=why))
    elif options.variant == "cuda":
        cuda_plan, cuda_reasons = _cuda_plan(options, recipe, host)
        reasons.extend(cuda_reasons)
        configs.append("cuda_clang" if family == "clang" else "cuda")
        if tfversions.cuda_wheel_config(version):
            configs.append("cuda_wheel")
    for name in configs:
        if name != "opt" and name not in recipe.configs:
            raise UnsupportedError(
                f"TensorFlow {recipe.short} has no bazel config '{name}'",
                why=f"{recipe.where('configs')} lists {', '.join(recipe.configs)}",
                fix="Fix the recipe's configs list, or choose another variant.",
            )
    return configs, runtime, cuda_plan, reasons


def _rc_lines(
    *,
    options: PlanOptions,
    recipe: Recipe,
    family: str,
    compiler_path: str,
    cflags: tuple[str, ...],
    python: str,
    cuda_plan: CudaPlan | None,
) -> tuple[list[str], str, str]:
    """What TensorFlow's ./configure would have written (.tf_configure.bazelrc), plus the wheel."""
    rc: list[str] = [
        f"build --action_env PYTHON_BIN_PATH={_quoted('/usr/bin/python3')}",
        f"build --python_path={_quoted('/usr/bin/python3')}",
    ]
    if family == "clang":
        rc += [
            f"build --action_env CLANG_COMPILER_PATH={_quoted(compiler_path)}",
            f"build --repo_env=CC={compiler_path}",
            f"build --repo_env=BAZEL_COMPILER={compiler_path}",
        ]
    else:
        rc += [
            f"build --action_env CC={_quoted(compiler_path)}",
            f"build --repo_env=CC={compiler_path}",
        ]
    for flag in (*cflags, *recipe.copts):
        rc.append(f"build:opt --copt={flag}")
    # Host tools (protoc, code generators) run on the build machine during the build: they get the
    # warning flags but never the target's -march, which the build machine may not have.
    for flag in recipe.copts:
        rc.append(f"build:opt --host_copt={flag}")
    for define in recipe.defines:
        rc.append(f"build --define={define}")
    if recipe.hermetic_python:
        for env in tfversions.PYTHON_VERSION_ENVS:
            rc.append(f"build --repo_env={env}={_quoted(python)}")
    if cuda_plan is not None:
        caps = ",".join(cuda_plan.capabilities)
        if cuda_plan.hermetic:
            rc += [
                f"build:cuda --repo_env HERMETIC_CUDA_VERSION={_quoted(cuda_plan.cuda)}",
                f"build:cuda --repo_env HERMETIC_CUDNN_VERSION={_quoted(cuda_plan.cudnn)}",
                f"build:cuda --repo_env HERMETIC_CUDA_COMPUTE_CAPABILITIES={_quoted(caps)}",
            ]
        else:
            rc += [
                f"build --action_env TF_CUDA_VERSION={_quoted(cuda_plan.cuda)}",
                f"build --action_env TF_CUDNN_VERSION={_quoted(cuda_plan.cudnn.split('.')[0])}",
                f"build --action_env TF_CUDA_PATHS={_quoted('/usr/local/cuda,/usr')}",
                f"build --action_env TF_CUDA_COMPUTE_CAPABILITIES={_quoted(caps)}",
            ]
        if family == "clang":
            rc.append(f"build --action_env CLANG_CUDA_COMPILER_PATH={_quoted(compiler_path)}")
    wheel_name = {"cuda": "tensorflow"}.get(options.variant, "tensorflow_cpu")
    if recipe.wheel_flow == "wheel":
        rc.append(f"build --repo_env=WHEEL_NAME={wheel_name}")
        build_target = "//tensorflow/tools/pip_package:wheel"
    else:
        build_target = "//tensorflow/tools/pip_package:build_pip_package"
    if recipe.pywrap_rules:
        rc.append("build --repo_env=USE_PYWRAP_RULES=1")
        if options.release_version:
            rc.append("build --repo_env=ML_WHEEL_TYPE=release")

    return rc, build_target, wheel_name


def _bazel_options(
    options: PlanOptions, resources: Resources
) -> tuple[tuple[str, ...], list[str], list[Reason]]:
    """bazel's startup options and the per-build options (resources and caches)."""
    reasons: list[Reason] = []
    startup = (
        f"--output_user_root={CACHE_ROOT}/output",
        f"--host_jvm_args=-Xmx{resources.jvm_heap_mb}m",
    )
    build_options = [
        f"--jobs={resources.jobs}",
        f"--local_ram_resources={resources.local_ram_mb}",
        f"--repository_cache={CACHE_ROOT}/repository",
    ]
    if options.disk_cache:
        build_options.append(f"--disk_cache={CACHE_ROOT}/disk")
    if options.remote_cache:
        build_options.append(f"--remote_cache={options.remote_cache}")
        reasons.append(
            Reason(
                what="remote cache", value=options.remote_cache, why="asked for; shared by a team"
            )
        )
    if options.remote_executor:
        build_options.append(f"--remote_executor={options.remote_executor}")

    return startup, build_options, reasons


def _label(
    options: PlanOptions, target: str, cuda_plan: CudaPlan | None
) -> tuple[str | None, list[Reason]]:
    if not options.label:
        return None, [Reason(what="label", value="none", why="asked for with --no-label")]
    label = local_label(target, options.variant, cuda_plan.cuda if cuda_plan else None)
    why = (
        "the wheel's PEP 440 local version label: what it was built for, so that wheels for "
        "several targets can sit side by side and tfbuild pick can choose"
    )
    return label, [Reason(what="label", value=f"+{label}", why=why)]


def with_jobs(plan: BuildPlan, jobs: int, *, why: str) -> BuildPlan:
    """The same plan with bazel's ``--jobs`` changed (a retry after the compiler was OOM-killed)."""
    return replace(
        plan,
        build_options=tuple(
            f"--jobs={jobs}" if option.startswith("--jobs=") else option
            for option in plan.build_options
        ),
        resources=replace(plan.resources, jobs=jobs),
        reasons=(*plan.reasons, Reason(what="jobs", value=str(jobs), why=why)),
    )


# --- the plan ---------------------------------------------------------------------------------------


def make_plan(
    options: PlanOptions,
    recipe: Recipe,
    host: HostFacts,
    *,
    base_images: dict[str, BaseImage],
) -> BuildPlan:
    """Resolve every choice of a build, with its reason."""
    reasons: list[Reason] = [
        Reason(what="recipe", value=recipe.path, why=f"TensorFlow {recipe.tensorflow}")
    ]
    warnings: list[str] = []
    for label, value in (
        ("remote cache", options.remote_cache),
        ("remote executor", options.remote_executor),
    ):
        if value is not None and not _URL.match(value):
            raise UsageError(
                f"--{label.replace(' ', '-')} {value!r} is not a plain URL",
                why="it must be grpc://, grpcs://, http:// or https:// with no spaces, quotes or "
                "shell characters",
                fix="Pass e.g. grpcs://cache.example.org:443.",
            )
    if not _VOLUME.match(options.cache_volume):
        raise UsageError(
            f"--cache-volume {options.cache_volume!r} is not a Docker volume name",
            fix="Use letters, digits, '_', '.' or '-'.",
        )

    python, python_why = _choose_python(options, recipe, host)
    reasons.append(Reason(what="python", value=python, why=python_why))

    if recipe.base_image not in base_images:
        raise UnsupportedError(
            f"unknown base image {recipe.base_image!r} in {recipe.where('base_image')}",
            why=f"base-images.yaml has {', '.join(sorted(base_images))}",
            fix="Add the image to base-images.yaml or use one of those.",
        )
    image_key = options.base_image or recipe.base_image
    if options.base_image and options.base_image not in base_images:
        raise UnsupportedError(
            f"unknown base image {options.base_image!r}",
            why=f"known: {', '.join(sorted(base_images))}",
            fix="Name an entry of base-images.yaml, or a local image made by tfbuild base.",
        )
    if (
        options.base_image is None
        and options.variant == "cuda"
        and recipe.cuda
        and not recipe.cuda.hermetic
    ):
        image_key = recipe.cuda.base_image or image_key
        if image_key not in base_images:
            raise UnsupportedError(
                f"unknown base image {image_key!r} in {recipe.where('cuda')}",
                why=f"base-images.yaml has {', '.join(sorted(base_images))}",
                fix="Add the image to base-images.yaml.",
            )
    base = base_images[image_key]
    reasons.append(
        Reason(
            what="base image",
            value=base.reference,
            why="asked for with --base-image"
            + (f" (local image {base.image_id}, made by tfbuild base)" if base.image_id else "")
            if options.base_image
            else "pinned by digest in base-images.yaml; it ships the recipe's compiler",
        )
    )

    family = recipe.compiler.partition("-")[0]
    compiler_path, compiler_packages, llvm_apt, extra_packages, compiler_reasons = _toolchain(
        options, recipe, base
    )
    reasons.extend(compiler_reasons)

    target, kind, flags, target_reasons = _target_flags(options, recipe, host)
    reasons.extend(target_reasons)
    cflags = ("-march=native",) if kind == "native" else (flags.flags if flags else ())
    coverage = _coverage(kind, flags, host)
    if flags is not None:
        warnings.extend(flags.warnings)
        if flags.uncovered:
            warnings.append(
                f"{recipe.compiler} cannot enable {', '.join(flags.uncovered)}: the wheel will "
                "still name them at import"
            )

    if not recipe.hermetic_python and python != base.python:
        # Before 2.14 bazel builds with the image's own Python: the wheel is for that version.
        if options.python is not None:
            raise UnsupportedError(
                f"TensorFlow {recipe.short} cannot be built for Python {python} here",
                why=f"it builds with the toolchain image's Python ({base.python} on {base.name}); "
                "hermetic Python arrived in 2.14",
                fix=f"Use --python {base.python}, or TensorFlow 2.14 or newer.",
            )
        python = base.python
        reasons.append(
            Reason(
                what="python",
                value=python,
                why=f"TensorFlow {recipe.short} builds with the image's Python (no hermetic "
                "Python before 2.14)",
            )
        )

    resources, resource_reasons = _resources(options, host)
    reasons.extend(resource_reasons)

    configs, runtime, cuda_plan, variant_reasons = _variant(options, recipe, host, family)
    reasons.extend(variant_reasons)

    multiarch = (
        "aarch64-linux-gnu" if host.machine.architecture == "aarch64" else "x86_64-linux-gnu"
    )
    tcmalloc = f"/usr/lib/{multiarch}/libtcmalloc.so.4"
    runtime.insert(0, ("LD_PRELOAD", tcmalloc))
    reasons.append(
        Reason(
            what="TCMalloc",
            value=f"{base.tcmalloc_package}, LD_PRELOAD={tcmalloc}",
            why="TensorFlow has no TCMalloc build option; preloading gperftools' TCMalloc at run "
            "time is the established practice, can be switched off per process, and keeps "
            "TensorFlow's shared objects as upstream links them",
        )
    )

    rc, build_target, wheel_name = _rc_lines(
        options=options,
        recipe=recipe,
        family=family,
        compiler_path=compiler_path,
        cflags=cflags,
        python=python,
        cuda_plan=cuda_plan,
    )

    startup, build_options, cache_reasons = _bazel_options(options, resources)
    reasons.extend(cache_reasons)

    wheel_label, label_reasons = _label(options, target, cuda_plan)
    reasons.extend(label_reasons)

    return BuildPlan(
        tensorflow=recipe.tensorflow,
        recipe=recipe.path,
        source={
            "git": recipe.git,
            "tag": recipe.tag,
            "commit": recipe.commit,
            "tarball": recipe.tarball,
            "sha256": recipe.sha256,
        },
        architecture=host.machine.architecture,
        variant=options.variant,
        python=python,
        compiler=recipe.compiler,
        compiler_path=compiler_path,
        compiler_packages=compiler_packages,
        llvm_apt_suite=llvm_apt,
        extra_packages=extra_packages,
        target=target,
        target_kind=kind,
        cflags=cflags,
        coverage=coverage,
        base_image=base,
        bazel=recipe.bazel,
        bazel_configs=tuple(configs),
        rc_lines=tuple(rc),
        build_options=tuple(build_options),
        startup_options=startup,
        build_target=build_target,
        wheel_flow=recipe.wheel_flow,
        wheel_name=wheel_name,
        cache_volume=options.cache_volume,
        runtime_env=tuple(runtime),
        resources=resources,
        cuda=cuda_plan,
        reasons=tuple(reasons),
        warnings=tuple(dict.fromkeys(warnings)),
        standin=options.standin,
        label=wheel_label,
    )
