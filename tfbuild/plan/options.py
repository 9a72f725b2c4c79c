"""One build request, declared once: each plan option is a field of :class:`PlanOptions` with its
command-line declaration (:mod:`tfbuild.core.options`), checked when the request is made. The field
is named after its option (``--canary`` is ``canary``); ``--mkl``/``--cuda`` are the two flags of
one field, ``variant``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path

from tfbuild.core.defaults import CACHE_VOLUME, DOCTOR_TIMES
from tfbuild.core.errors import UsageError
from tfbuild.core.options import CPUINFO, RECIPES_DIR, TARGET, TF, declaration, declared, option
from tfbuild.core.pythons import PYTHON, VERSION, python_version
from tfbuild.core.variants import MklThreading, Variant

#: A CUDA or cuDNN version as the recipes list them: X.Y or X.Y.Z (12.5.1, 8.6).
_VERSION = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){1,2}")
#: A compute capability as written: "8.9" (major.minor), or "89", "sm_89", "compute_90", "sm_120"
#: (major digits then one minor digit). The minor is one digit in every capability NVIDIA has named.
_CAPABILITY = re.compile(r"([0-9]{1,2})\.([0-9])|(?:sm_|compute_)?([0-9]{1,2})([0-9])")
#: The bounds of the resource options, each said here once, as its field's declaration's min (and
#: max): typer checks them on the command line, PlanOptions checks the declarations' bounds when a
#: request is made without it (the matrix, the tests), and tfbuild.plan.resources names them where
#: it suggests a value. Above them, the planner holds --jvm-heap and --local-ram-resources to this
#: machine's memory (exit 4).
MIN_JOBS = 1
#: The most --jobs bazel takes: its own option refuses more ("Values must be between 1 and 5000";
#: MAX_JOBS in bazelbuild/bazel src/main/java/com/google/devtools/build/lib/buildtool/
#: BuildRequestOptions.java, commit 00f8974146e77a96499be1ecc53a554dad299e83). Not a multiple of
#: this host's CPUs: with --remote-executor many more jobs than local cores are the point.
MAX_JOBS = 5000
#: The smallest memory budget (--local-ram-resources, MB) and bazel server heap (--jvm-heap, MB).
MIN_LOCAL_RAM_MB = 512
MIN_JVM_HEAP_MB = 256


def _capabilities(text: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in (text or "").split(",") if c.strip())


def parse_capability(text: str) -> tuple[int, int]:
    """A compute capability as (major, minor): ``8.9``, ``89``, ``sm_89`` or ``compute_90``; any
    other text is a UsageError naming ``--cuda-capabilities``."""
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
            fix="Use 8.9, sm_89 or compute_90 (nvidia-smi --query-gpu=compute_cap --format=csv "
            "prints a GPU's).",
        )
    return major, minor


@dataclass(frozen=True, kw_only=True)
class PlanOptions:
    """The plan options of one build (one field per option, in ``--help`` order), checked when made."""

    tf: str | None = option(TF, default=None)
    variant: Variant = declared(
        Variant.cpu,
        choices=(
            ("--mkl", Variant.mkl, "The oneDNN CPU build (docs/plan.md says how it threads)."),
            ("--cuda", Variant.cuda, "The CUDA build."),
        ),
    )
    mkl_threading: MklThreading = declared(
        MklThreading.threadpool,
        "--mkl-threading",
        help="oneDNN threading: TensorFlow's thread pool (mkl_threadpool) or OpenMP (mkl).",
    )
    #: A portable archspec target; None: the machine described (this host or --cpuinfo).
    target: str | None = option(TARGET, default=None)
    cpuinfo: Path | None = option(CPUINFO, default=None)
    native: bool = declared(
        False, "--native", help="Literal -march=native (a build on the machine itself)."
    )
    #: X.Y; the command line also takes an interpreter, whose version it asks.
    python: str | None = option(
        PYTHON.but(
            help="The Python the wheel is for: 3.12, or an interpreter (its version) "
            "(default: the recipe's newest).",
            convert=python_version,
        ),
        default=None,
    )
    jobs: int | None = declared(None, "--jobs", min=MIN_JOBS, max=MAX_JOBS, help="bazel --jobs.")
    local_ram_resources: int | None = declared(
        None,
        "--local-ram-resources",
        metavar="MB",
        min=MIN_LOCAL_RAM_MB,
        help="bazel's memory budget.",
    )
    jvm_heap: int | None = declared(
        None, "--jvm-heap", metavar="MB", min=MIN_JVM_HEAP_MB, help="bazel server heap."
    )
    cache_volume: str = declared(
        CACHE_VOLUME, "--cache-volume", metavar="NAME", help="Docker volume for bazel caches."
    )
    disk_cache: bool = declared(
        True, "--disk-cache/--no-disk-cache", help="bazel's local disk cache."
    )
    remote_cache: str | None = declared(
        None, "--remote-cache", metavar="URL", help="A shared bazel cache."
    )
    remote_executor: str | None = declared(
        None,
        "--remote-executor",
        metavar="URL",
        help="A bazel remote executor (Remote Execution API); needs --push-toolchain, so that "
        "its workers run every action in the toolchain image.",
    )
    remote_instance: str | None = declared(
        None,
        "--remote-instance",
        metavar="NAME",
        help="The remote cache's or executor's instance name (bazel --remote_instance_name).",
        show_default=False,
    )
    remote_cache_read_only: bool = declared(
        False,
        "--remote-cache-read-only",
        help="Take hits from --remote-cache, upload nothing (e.g. for pull requests).",
    )
    remote_timeout: int | None = declared(
        None,
        "--remote-timeout",
        metavar="SECONDS",
        min=5,
        max=3600,
        help="How long bazel waits for each call to --remote-cache before trying once more, then "
        "failing the build (default 60; a shorter wait can cut a slow transfer of a large blob).",
    )
    push_toolchain: str | None = declared(
        None,
        "--push-toolchain",
        metavar="REGISTRY",
        help="Push the toolchain image to REGISTRY (host[:port][/path]) and have the remote "
        "executor run every action in it, by digest.",
        show_default=False,
    )
    cuda_capabilities: tuple[str, ...] = declared(
        (),
        "--cuda-capabilities",
        metavar="LIST",
        help="e.g. 8.9,9.0 (default: this host's GPUs).",
        cli_type=str | None,
        convert=_capabilities,
    )
    cuda_version: str | None = declared(
        None, "--cuda-version", metavar="X.Y.Z", help="Hermetic CUDA version."
    )
    cudnn_version: str | None = declared(
        None, "--cudnn-version", metavar="X.Y.Z", help="cuDNN version."
    )
    skip_disk_check: bool = declared(
        False,
        "--skip-disk-check",
        help="Build even when free disk looks too small (tfbuild wheel checks it before it "
        "builds; plan only warns).",
    )
    label: bool = declared(
        True,
        "--label/--no-label",
        help="Put the target in the wheel's version: 2.21.0+x86_64v4 (read by tfbuild pick).",
    )
    base_image: str | None = declared(
        None,
        "--base-image",
        metavar="NAME",
        help="A base-images.yaml entry, or a local image made by tfbuild base "
        "(e.g. tfbuild/base:jammy) where no registry can be reached.",
        show_default=False,
    )
    portable: bool = declared(
        True,
        "--portable/--no-portable",
        help="Reach the recipe's glibc floor (the stock wheel's) by TensorFlow's own route: "
        "its hermetic toolchain (2.21) or its old-glibc sysroot. --no-portable: the image's "
        "compiler and glibc, for systems as new as the image.",
    )
    sysroot_from: str | None = declared(
        None,
        "--sysroot-from",
        metavar="IMAGE",
        help="Link against this image's C library and libstdc++ (a base-images.yaml entry or "
        "a tfbuild base image): the wheel loads on that system and newer.",
        show_default=False,
    )
    canary: bool = declared(
        False,
        "--canary",
        help="tfbuild's STAND-IN source (a miniature, not TensorFlow) through the same "
        f"pipeline: what tfbuild doctor builds, twice (doctor: {DOCTOR_TIMES}).",
    )
    reproducible: bool = declared(
        True,
        "--reproducible/--no-reproducible",
        help="The determinism measures: SOURCE_DATE_EPOCH, TZ, locale, path maps and a "
        "normalised wheel, so that a rebuild gives the same bytes.",
    )
    recipes_dir: tuple[Path, ...] = option(RECIPES_DIR, default=())

    def __post_init__(self) -> None:
        # Callers (tests, the matrix) may pass the plain text; the request holds the enum members.
        object.__setattr__(self, "variant", Variant(self.variant))
        try:
            object.__setattr__(self, "mkl_threading", MklThreading(self.mkl_threading))
        except ValueError:
            raise UsageError(
                f"--mkl-threading {self.mkl_threading!r}", fix="Use threadpool or openmp."
            ) from None
        object.__setattr__(self, "recipes_dir", tuple(self.recipes_dir))
        object.__setattr__(self, "cuda_capabilities", tuple(self.cuda_capabilities))
        if self.python is not None and not VERSION.fullmatch(self.python):
            raise UsageError(
                f"--python {self.python!r} is not a Python version",
                fix="Write it as X.Y, e.g. --python 3.12.",
            )
        self._check_bounds()
        if self.target and self.cpuinfo:
            raise UsageError(
                "--target and --cpuinfo together",
                why="a build is for a named portable target or for one machine, not both",
                fix="Drop one of them.",
            )
        self._check_cuda()

    def _check_bounds(self) -> None:
        """Each option within the bounds its declaration gives the command line (the resources':
        MIN_JOBS ...), in the words the command line says a bound in (tfbuild.cli.usage): typer
        checks them first there, this for a request made without it (the matrix, the tests)."""
        for item in fields(self):
            found = declaration(item)
            value = getattr(self, item.name)
            if found is None or not isinstance(value, int):
                continue
            least, most, flag = found.min, found.max, found.flags[0]
            if least is not None and value < least:
                what, why = f"{flag} {value} is below its minimum", f"it must be at least {least}"
            elif most is not None and value > most:
                what, why = f"{flag} {value} is above its maximum", f"it must be at most {most}"
            else:
                continue
            given = f"between {least} and {most}" if most is not None else f"{least} or more"
            raise UsageError(
                what,
                why=why,
                fix=f"Pass {flag} {given}, or leave it out for this machine's cores and memory "
                "to decide.",
            )

    def _check_cuda(self) -> None:
        """The CUDA options are well formed, and given with --cuda: checked here, when the
        request is made, so that a bad value is one line before anything of the machine is read."""
        for capability in self.cuda_capabilities:
            parse_capability(capability)
        versions = (
            ("--cuda-version", self.cuda_version, "12.5.1"),
            ("--cudnn-version", self.cudnn_version, "9.3.0"),
        )
        for flag, value, example in versions:
            if value is not None and not _VERSION.fullmatch(value):
                raise UsageError(
                    f"{flag} {value!r} is not a version",
                    why="it is X.Y.Z or X.Y, as the recipe lists them",
                    fix=f"Pass e.g. {flag} {example} ('tfbuild recipes show VERSION' lists a "
                    "release's), or leave it out.",
                )
        given = ["--cuda-capabilities"] if self.cuda_capabilities else []
        given += [flag for flag, value, _ in versions if value]
        if given and self.variant != Variant.cuda:
            raise UsageError(
                f"{' and '.join(given)} without --cuda",
                why=f"{'they apply' if len(given) > 1 else 'it applies'} to a CUDA build only",
                fix="Add --cuda, or drop " + " and ".join(given) + ".",
            )
