"""The plan's data: the resolved build (BuildPlan); what was asked is in tfbuild.plan.options.

Frozen values only; the decisions that fill them live in the other modules of this package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from tfbuild.core.controls import char_name, control_in
from tfbuild.core.variants import Variant
from tfbuild.detect.compilers import Coverage
from tfbuild.recipes.images import BaseImage
from tfbuild.wheel.receipt import is_debian_package, is_debian_version

MIB = 1024**2
GIB = 1024**3

#: Paths inside the build container (the cache volume, the source and the output mounts).
CACHE_ROOT = "/cache"
SOURCE_DIR = "/src"
OUTPUT_DIR = "/out"
#: bazel's output base: one path in every build container (a volume per source tree mounted there),
#: so compile command lines, which name it in -ffile-prefix-map, are the same for every tree and
#: every machine, and a shared remote cache serves them all.
OUTPUT_BASE = "/output-base"

TargetKind = Literal["machine", "portable", "native"]
#: plan.json's schema: /2 moved facts about the moment (free disk) out to the receipt and added the
#: reproducibility measures, the snapshot and package pins; /3 says which toolchain really compiles
#: (the route: the image's compiler, TF's hermetic one, or the image's clang against a sysroot); /4
#: holds bazel's resources once, in ``resources``: ``build_options`` and ``startup_options`` no
#: longer hold the --jobs, --local_ram_resources and --host_jvm_args=-Xmx made from them
#: (plan.bazel.bazel_command makes them where the command is rendered or shown; a /2 or /3 plan's
#: are lifted into its resources when it is read, plan.decode).
PLAN_SCHEMA: Final = "tfbuild.plan/4"

Route = Literal["image", "hermetic", "sysroot"]


class RefusedField(ValueError):
    """A value of a plan read back (a receipt's) that tfbuild's planner never writes, such as a
    bazel option that runs a command: ``field`` names where, ``value`` what (cut to 80)."""

    def __init__(self, field: str, value: str, why: str) -> None:
        self.field = field
        self.value = value[:80]
        super().__init__(f"{field} holds {self.value!r}: {why}")


@dataclass(frozen=True, kw_only=True)
class Reason:
    what: str
    value: str
    why: str


@dataclass(frozen=True, kw_only=True)
class AptSnapshot:
    """The distribution snapshot the toolchain's packages come from (the recipe names its time)."""

    time: str  # 20261115T000000Z
    url: str  # the snapshot archive at that time
    sources: tuple[str, ...]  # the lines of /etc/apt/sources.list that point at it


@dataclass(frozen=True, kw_only=True)
class CudaPlan:
    hermetic: bool
    cuda: str
    cudnn: str
    capabilities: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Resources:
    """bazel's jobs, memory budget (MiB) and server heap (MiB), and the disk a build needs: the
    plan's only record of them (bazel's options are made from them, plan.bazel.bazel_command)."""

    jobs: int
    local_ram_mb: int
    jvm_heap_mb: int
    disk_needed_gib: int


@dataclass(frozen=True, kw_only=True)
class Sysroot:
    """The C library and libstdc++ the wheel links against, when they are not the toolchain image's.

    Hermetic (TF 2.21+): ``name`` is rules_ml_toolchain's SYSROOT_DIST, which bazel downloads.
    Otherwise ``name`` is the sysroot's path in the toolchain image (TF_SYSROOT), made in a stage of
    the image by ``builder``: ``devtoolset-9`` (TF's own builder.devtoolset script from the release's
    source, glibc 2.17) or ``image`` (the C library and libstdc++ of another distribution's image).
    """

    name: str
    glibc: str | None  # X.Y, when known
    builder: str | None = None  # None: downloaded by bazel (hermetic)
    image: BaseImage | None = None  # where the builder stage runs


@dataclass(frozen=True, kw_only=True)
class PlanSource:
    """Where the recipe takes TensorFlow's source from: its git repository, tag and commit, and the
    release tarball with its sha256 (the canary's derived recipe has none of them)."""

    git: str | None = None
    tag: str | None = None
    commit: str | None = None
    tarball: str | None = None
    sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class BuildPlan:
    """A complete, exact, reviewable build: the renderer's only input.

    Its JSON (``plan --json``, plan.json, a receipt's ``plan``) is its fields in this order, through
    :mod:`tfbuild.core.serial`; :meth:`from_json` reads one back and checks it.
    """

    schema: Literal["tfbuild.plan/4"] = PLAN_SCHEMA
    tensorflow: str
    recipe: str
    source: PlanSource
    architecture: str  # of the machine the wheel is for (x86_64, aarch64)
    variant: Variant
    python: str
    compiler: str  # what compiles the C++ ("clang-18.1.8"); route says whose it is
    compiler_path: str | None  # inside the toolchain image; None: bazel downloads it (hermetic)
    compiler_packages: tuple[str, ...]
    llvm_apt_suite: str | None  # "llvm-toolchain-jammy-17" when clang comes from apt.llvm.org
    extra_packages: tuple[str, ...]  # e.g. cuDNN for CUDA images that lack it
    target: str  # archspec name, "native", or the portable target
    target_kind: TargetKind
    cflags: tuple[str, ...]
    coverage: tuple[Coverage, ...]
    base_image: BaseImage
    bazel: str
    bazel_configs: tuple[str, ...]  # --config=X on the command line
    rc_lines: tuple[str, ...]  # the rendered .tf_configure.bazelrc, line by line
    #: bazel's per-build options (caches, remote) and startup options (the output root), without
    #: those made from ``resources`` (plan.bazel.bazel_command adds them).
    build_options: tuple[str, ...]
    startup_options: tuple[str, ...]
    build_target: str
    wheel_flow: str
    wheel_name: str
    cache_volume: str
    runtime_env: dict[str, str]  # name -> value, in runtime.env's order
    resources: Resources
    cuda: CudaPlan | None
    reasons: tuple[Reason, ...]
    warnings: tuple[str, ...] = field(default=())
    canary: bool = False  # --canary: the STAND-IN source, not TensorFlow
    label: str | None = None  # the wheel's local version label ("x86_64v4.cu125"); None: unlabelled
    #: The determinism measures: build.sh exports these (and SOURCE_DATE_EPOCH from the source),
    #: maps the output base out of compiled paths, and the finished wheel is normalised.
    reproducible: bool = True
    build_env: dict[str, str] = field(default_factory=dict)
    snapshot: AptSnapshot | None = None
    #: Exact versions of the toolchain's packages (name -> version): set for a rebuild from a receipt.
    package_versions: dict[str, str] = field(default_factory=dict)
    #: The oldest glibc (X.Y) the wheel should load on (the recipe's floor); the build checks it.
    floor_goal: str | None = None
    #: Whose compiler compiles: the toolchain image's ("image"), TensorFlow's hermetic toolchain
    #: ("hermetic", downloaded by bazel), or the image's clang against ``sysroot`` ("sysroot").
    route: Route = "image"
    sysroot: Sysroot | None = None
    #: What compiles the C++ and against what, in words (the plan, the log, the receipt): always
    #: made from the fields above (a value given or read is replaced), written for people.
    toolchain: str = ""
    #: The repository the toolchain image is pushed to for a remote executor's workers
    #: (--push-toolchain); the build passes it by digest as the actions' container-image.
    exec_image: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "toolchain", self._toolchain())

    def _toolchain(self) -> str:
        if self.route == "hermetic" and self.sysroot:
            return (
                f"{self.compiler} of TensorFlow's hermetic toolchain (rules_ml_toolchain, "
                f"downloaded by bazel), sysroot {self.sysroot.name}"
                + (f" (glibc {self.sysroot.glibc})" if self.sysroot.glibc else "")
            )
        where = f"{self.compiler} ({self.compiler_path}, in the toolchain image)"
        if self.route == "sysroot" and self.sysroot:
            glibc = f"glibc {self.sysroot.glibc}" if self.sysroot.glibc else "its glibc"
            return f"{where}, against the sysroot {self.sysroot.name} ({glibc})"
        return f"{where}, against the image's own glibc"


def check_package_versions(pins: tuple[tuple[Any, Any], ...]) -> None:
    """``pins`` (name, version), each a Debian package name and version (deb-version(7)): what
    apt is given as ``name=version``. Anything else, text that a shell or apt would read as more
    than a pin included, is a ValueError naming it."""
    for name, version in pins:
        if not is_debian_package(name):
            raise ValueError(f"package_versions: {str(name)[:60]!r} is not a Debian package name")
        if not is_debian_version(version):
            raise ValueError(
                f"package_versions: the version of {name} ({str(version)[:60]!r}) is not a Debian "
                "version ([epoch:]upstream[-revision])"
            )


def check_single_lines(data: Any) -> None:
    """A plan's text renders into line-based files (the Dockerfile, the rc file, runtime.env): no
    string in it holds a line break or another control character (``core.controls.CONTROL``),
    which would start a line of its own there or make a line read as something else. A ValueError
    names the first one."""
    stack: list[tuple[str, Any]] = [("plan", data)]
    while stack:
        where, value = stack.pop()
        char = control_in(value) if isinstance(value, str) else None
        if char is not None:
            raise ValueError(
                f"{where} holds a control character ({char_name(char)}): {value[:60]!r}"
            )
        if isinstance(value, dict):
            stack.extend((f"{where}.{key}", item) for key, item in value.items())
            stack.extend((f"{where} key", key) for key in value)
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
