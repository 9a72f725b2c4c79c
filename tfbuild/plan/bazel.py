"""bazel: the variant's configs and runtime settings, the ./configure rc lines, bazel's options.

This is where decisions become bazel's spelling: ``--config`` names, ``.tf_configure.bazelrc``
lines, and the startup and per-build options (resources, caches).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tfbuild.core.defaults import STANDIN_WHEEL, TOOLCHAIN_REPOSITORY
from tfbuild.core.errors import UnsupportedError
from tfbuild.core.variants import MklThreading, Variant
from tfbuild.detect.host import HostFacts
from tfbuild.plan.cuda import plan_cuda
from tfbuild.plan.model import (
    CACHE_ROOT,
    BuildPlan,
    CudaPlan,
    Reason,
    RefusedField,
    Resources,
)
from tfbuild.plan.options import PlanOptions
from tfbuild.plan.toolchain import Toolchain
from tfbuild.recipes import tfversions
from tfbuild.recipes.recipe import Recipe


@dataclass(frozen=True, kw_only=True)
class VariantChoice:
    """What the variant (cpu, mkl, cuda) adds: bazel configs, runtime settings, the CUDA plan."""

    configs: tuple[str, ...]  # --config=X on the command line, "opt" first
    runtime_env: tuple[tuple[str, str], ...]
    cuda: CudaPlan | None
    reasons: tuple[Reason, ...]


def _quoted(value: str) -> str:
    return '"' + value + '"'


def choose_variant(
    options: PlanOptions, recipe: Recipe, host: HostFacts, family: str
) -> VariantChoice:
    """The bazel configs, runtime environment and CUDA plan of the variant (cpu, mkl, cuda)."""
    reasons: list[Reason] = []
    configs: list[str] = ["opt"]
    runtime: list[tuple[str, str]] = []
    cuda_plan: CudaPlan | None = None
    if options.variant == Variant.mkl:
        config = "mkl_threadpool" if options.mkl_threading == MklThreading.threadpool else "mkl"
        configs.append(config)
        if options.mkl_threading == MklThreading.threadpool:
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
            runtime = [
                ("OMP_NUM_THREADS", str(cores)),
                ("KMP_BLOCKTIME", "1"),
                ("KMP_AFFINITY", "granularity=fine,compact,1,0"),
                ("TF_NUM_INTRAOP_THREADS", str(cores)),
                ("TF_NUM_INTEROP_THREADS", str(sockets)),
            ]
        reasons.append(Reason(what="bazel config", value=config, why=why))
    elif options.variant == Variant.cuda:
        cuda_plan, cuda_reasons = plan_cuda(options, recipe, host)
        reasons.extend(cuda_reasons)
        configs.append("cuda_clang" if family == "clang" else "cuda")
        if tfversions.cuda_wheel_config(recipe.version):
            configs.append("cuda_wheel")
    for name in configs:
        if name != "opt" and name not in recipe.configs:
            raise UnsupportedError(
                f"TensorFlow {recipe.short} has no bazel config '{name}'",
                why=f"{recipe.where('configs')} lists {', '.join(recipe.configs)}",
                fix="Fix the recipe's configs list, or choose another variant.",
            )
    return VariantChoice(
        configs=tuple(configs), runtime_env=tuple(runtime), cuda=cuda_plan, reasons=tuple(reasons)
    )


def configure_rc(
    options: PlanOptions,
    recipe: Recipe,
    toolchain: Toolchain,
    *,
    cflags: tuple[str, ...],
    python: str,
    cuda_plan: CudaPlan | None,
) -> tuple[str, ...]:
    """What TensorFlow's ./configure would have written (.tf_configure.bazelrc), the wheel's name,
    and the lines that make the planned toolchain the one that compiles (``toolchain_rc``)."""
    family, compiler_path = toolchain.family, toolchain.compiler_path
    rc: list[str] = [
        f"build --action_env PYTHON_BIN_PATH={_quoted('/usr/bin/python3')}",
        f"build --python_path={_quoted('/usr/bin/python3')}",
        *toolchain_rc(recipe, toolchain),
    ]
    if compiler_path is None:
        pass  # the hermetic toolchain: no compiler of the image to name
    elif family == "clang":
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
    rc += [f"build:opt --copt={flag}" for flag in (*cflags, *recipe.copts)]
    # Host tools (protoc, code generators) run on the build machine during the build: they get the
    # warning flags but never the target's -march, which the build machine may not have.
    rc += [f"build:opt --host_copt={flag}" for flag in recipe.copts]
    rc += [f"build --define={define}" for define in recipe.defines]
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
        if family == "clang" and compiler_path is not None and toolchain.route != "sysroot":
            rc.append(f"build --action_env CLANG_CUDA_COMPILER_PATH={_quoted(compiler_path)}")
    if recipe.wheel_flow == "wheel":
        rc.append(f"build --repo_env=WHEEL_NAME={wheel_name(options)}")
    if recipe.pywrap_rules:
        rc.append("build --repo_env=USE_PYWRAP_RULES=1")
        # 2.20+: a release wheel (no .dev0+selfbuilt suffix in its version).
        rc.append("build --repo_env=ML_WHEEL_TYPE=release")
    return tuple(rc)


def wheel_name(options: PlanOptions) -> str:
    """The wheel bazel names: ``tensorflow`` for CUDA, else ``tensorflow_cpu``."""
    if options.canary:  # the stand-in is not TensorFlow: a wheel of its own, never tensorflow_cpu
        return STANDIN_WHEEL
    return {"cuda": "tensorflow"}.get(options.variant, "tensorflow_cpu")


#: TensorFlow's crosstool that takes TF_SYSROOT (cuda_configure.bzl's _tf_sysroot); its release
#: configs use it for CPU and GPU wheels alike (.bazelrc release_cpu_linux, release_gpu_linux).
SYSROOT_CROSSTOOL = "@local_config_cuda//crosstool:toolchain"
#: rules_ml_toolchain's switch at TF 2.21's pin (d8cb9c2, common/BUILD).
HERMETIC_CC_FLAG = "--@rules_ml_toolchain//common:enable_hermetic_cc"


#: How TensorFlow's own remote builds run (.bazelrc ``build:rbe_base``, tensorflow/tensorflow
#: commit 0071ad1d1f9e35ead7169c50dbe754ce5c27cae1): remote first, local where an action may not
#: run remotely; an hour for a remote call; only the top-level outputs (the wheel) downloaded.
#: Its ``--jobs=800`` is tfbuild.plan.resources.REMOTE_JOBS.
REMOTE_EXECUTION = (
    "--spawn_strategy=remote,worker,standalone,local",
    "--remote_timeout=3600",
    "--remote_download_toplevel",
)

#: A remote cache alone (no executor): each call waits up to REMOTE_CACHE_TIMEOUT_S, and a call
#: that fails without progress is tried REMOTE_CACHE_RETRIES more times. bazel's defaults
#: (--remote_timeout=60s, --remote_retries=5) let a cache that accepts connections and never
#: answers hold the build for 6 x 60 s plus backoff (the 365 s of issue 21; bazel 4.2.3 with
#: --remote_timeout=10 --remote_retries=1 gives up after 2 x 10 s, measured). The call's
#: deadline stays bazel's 60 s: a blob's transfer runs under it, and shorter deadlines made bazel
#: 5.3 hang on large blobs (bazelbuild/bazel#16587); a transfer that made progress resumes from its
#: offset without using up a retry (bazelbuild/bazel#5230, #7846). One retry bounds a dead cache to
#: about 2 x 60 s. Remote execution keeps TF's 3600 s: there a call waits for the action to run.
REMOTE_CACHE_TIMEOUT_S = 60
REMOTE_CACHE_RETRIES = 1


def remote_cache_options(seconds: int) -> tuple[str, ...]:
    """A remote cache's deadline per call (``--remote-timeout``; REMOTE_CACHE_TIMEOUT_S by default)
    and its retries."""
    return (f"--remote_timeout={seconds}", f"--remote_retries={REMOTE_CACHE_RETRIES}")


REMOTE_CACHE = remote_cache_options(REMOTE_CACHE_TIMEOUT_S)


def exec_repository(options: PlanOptions) -> str | None:
    """The repository --push-toolchain pushes the toolchain image to, else None."""
    return f"{options.push_toolchain}/{TOOLCHAIN_REPOSITORY}" if options.push_toolchain else None


def toolchain_rc(recipe: Recipe, toolchain: Toolchain) -> list[str]:
    """The rc lines that make the planned compiler the one that compiles (docs/toolchain-facts.md).

    hermetic: rules_ml_toolchain's own defaults at TF 2.21's pin, written out so that no future
    default flips them. sysroot: TF's release route (``release_cpu_linux``): its crosstool with
    ``TF_SYSROOT``; under bazel 7 only with platform-based C++ toolchain resolution off, since
    registered toolchains win over ``--crosstool_top`` there. image: the image's compiler, and
    where TF has a hermetic toolchain, the opt-out its own ``clang_local`` config spells.
    """
    route, sysroot, compiler_path = toolchain.route, toolchain.sysroot, toolchain.compiler_path
    if route == "hermetic":
        assert sysroot is not None and recipe.toolchain is not None
        return [
            f"build {HERMETIC_CC_FLAG}=True",
            "build --repo_env=USE_HERMETIC_CC_TOOLCHAIN=1",
            f"build --repo_env=LLVM_VERSION={recipe.toolchain.llvm}",
            f"build --repo_env=SYSROOT_DIST={sysroot.name}",
        ]
    lines: list[str] = []
    if tfversions.cc_toolchain_resolution(recipe.bazel):
        lines.append("build --noincompatible_enable_cc_toolchain_resolution")
    if tfversions.hermetic_cc(recipe.version):
        lines += [f"build {HERMETIC_CC_FLAG}=False", "build --repo_env=USE_HERMETIC_CC_TOOLCHAIN=0"]
    if route == "sysroot":
        assert sysroot is not None and compiler_path is not None
        lines += [
            f"build --crosstool_top={SYSROOT_CROSSTOOL}",
            f"build --repo_env=TF_SYSROOT={_quoted(sysroot.name)}",
            f"build --action_env CLANG_CUDA_COMPILER_PATH={_quoted(compiler_path)}",
        ]
    return lines


@dataclass(frozen=True, kw_only=True)
class BazelCommand:
    """bazel's startup and build options: a plan's as build.sh runs them and ``plan --why`` shows
    them (:func:`bazel_command`), or those the planner chooses besides (:func:`bazel_options`)."""

    startup: tuple[str, ...]
    build: tuple[str, ...]


def bazel_command(plan: BuildPlan) -> BazelCommand:
    """The options bazel runs ``plan`` with: its resources' (made here, never held in the plan,
    whose ``resources`` say each value once), the heap after the plan's startup options, jobs and
    memory before its build options (where plans before tfbuild.plan/4 held them, so a rebuild
    of one runs the same command)."""
    resources = plan.resources
    return BazelCommand(
        startup=(*plan.startup_options, f"--host_jvm_args=-Xmx{resources.jvm_heap_mb}m"),
        build=(
            f"--jobs={resources.jobs}",
            f"--local_ram_resources={resources.local_ram_mb}",
            *plan.build_options,
        ),
    )


def bazel_options(options: PlanOptions) -> tuple[BazelCommand, tuple[Reason, ...]]:
    """bazel's startup options and the per-build options (caches, remote), without the resources'
    (:func:`bazel_command` adds them, made from the plan's ``resources``), and the reasons for them."""
    reasons: list[Reason] = []
    startup = (f"--output_user_root={CACHE_ROOT}/output",)
    build_options = [f"--repository_cache={CACHE_ROOT}/repository"]
    if options.disk_cache:
        build_options.append(f"--disk_cache={CACHE_ROOT}/disk")
    if options.remote_cache:
        build_options.append(f"--remote_cache={options.remote_cache}")
        reasons.append(
            Reason(
                what="remote cache", value=options.remote_cache, why="asked for; shared by a team"
            )
        )
        if not options.remote_executor:  # remote execution has TensorFlow's own timeout
            seconds = options.remote_timeout or REMOTE_CACHE_TIMEOUT_S
            build_options += remote_cache_options(seconds)
            reasons.append(
                Reason(
                    what="remote cache timeout",
                    value=f"{seconds} s per call, {REMOTE_CACHE_RETRIES} retries",
                    why="a cache that accepts connections and never answers fails the build in "
                    f"about {(REMOTE_CACHE_RETRIES + 1) * seconds} s, not the "
                    "6 x 60 s of bazel's default 5 retries"
                    + (" (--remote-timeout)" if options.remote_timeout else ""),
                )
            )
    if options.remote_instance is not None:
        build_options.append(f"--remote_instance_name={options.remote_instance}")
    if options.remote_cache_read_only:
        build_options.append("--noremote_upload_local_results")
        reasons.append(
            Reason(
                what="remote cache uploads",
                value="none",
                why="asked for with --remote-cache-read-only: hits are taken, nothing is written",
            )
        )
    if options.remote_executor:
        build_options += [f"--remote_executor={options.remote_executor}", *REMOTE_EXECUTION]
        reasons.append(
            Reason(
                what="remote execution",
                value=options.remote_executor,
                why="asked for; actions run remotely as TensorFlow's own rbe_base config runs "
                "them (" + " ".join(REMOTE_EXECUTION) + "), each in the pushed toolchain image",
            )
        )
    repository = exec_repository(options)
    if repository is not None:
        reasons.append(
            Reason(
                what="remote actions' image",
                value=f"{repository}@sha256:<pushed>",
                why="the toolchain image this plan builds, pushed and passed by digest as the "
                "actions' container-image, so every worker runs the planned compiler",
            )
        )

    return BazelCommand(startup=startup, build=tuple(build_options)), tuple(reasons)


# --- What a plan read from a file may ask of bazel ----------------------------------------------
#
# A plan read back (a receipt's, plan.json) is untrusted: its options reach bazel, and bazel has
# options that run commands (--workspace_status_command, --run_under, --credential_helper), read
# other rc files (--bazelrc, import, try-import), or point the build elsewhere (--output_base,
# --override_repository, --repo_env/--action_env with other names). So a decoded plan may hold only
# what the functions above write: each option by name, with the grammar of its value, here and
# nowhere else. tests/plan/test_decoded_plans.py holds it to that: every plan make_plan makes
# decodes, and hostile ones do not.

_NUMBER = r"[1-9][0-9]{0,6}"
_VERSION = r"[0-9]+(?:\.[0-9]+){0,3}"
_CLANG = r"/usr/lib/llvm-[0-9]{1,3}/bin/clang"
_COMPILER_PATH = rf"(?:{_CLANG}|/usr/bin/gcc-[0-9]{{1,3}})"
_CAPABILITIES = r"(?:sm|compute)_[0-9]{2,3}[a-z]?(?:,(?:sm|compute)_[0-9]{2,3}[a-z]?)*"
#: A compiler flag of a target (archspec's -march/-mtune/-m feature) or a recipe's warning switch;
#: never one that hands options to another program (-Wl, -Wa, -Wp, -Xclang), loads a plugin or
#: moves where the compiler finds its programs (-B, -fplugin=, -specs=).
_COPT = r"-m[a-z0-9][a-z0-9_.+=-]*|-W(?:no-)?[a-z][a-z0-9-]*|-f(?:no-)?[a-z][a-z0-9-]*|-O[0-3s]"
#: A sysroot: a path in the toolchain image (/dt9, /sysroot) or rules_ml_toolchain's SYSROOT_DIST.
SYSROOT_NAME = r"/[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)*"
SYSROOT_DIST = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
#: The remote cache or executor, the instance name: the grammars make_plan checks the options to.
_URL = r"(?:grpcs?|https?)://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~%/+=-]*)?"
_INSTANCE = r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+){0,31}"


def _quoted_re(pattern: str) -> str:
    return f'"(?:{pattern})"'


#: The variables tfbuild passes to actions (--action_env) and repository rules (--repo_env): name ->
#: the grammar of the value written after ``=`` (None: the name alone, the value inherited).
ACTION_ENV: dict[str, str | None] = {
    "PYTHON_BIN_PATH": _quoted_re("/usr/bin/python3"),
    "CLANG_COMPILER_PATH": _quoted_re(_CLANG),
    "CLANG_CUDA_COMPILER_PATH": _quoted_re(_CLANG),
    "CC": _quoted_re(_COMPILER_PATH),
    "TF_CUDA_VERSION": _quoted_re(_VERSION),
    "TF_CUDNN_VERSION": _quoted_re(_VERSION),
    "TF_CUDA_PATHS": _quoted_re("/usr/local/cuda,/usr"),
    "TF_CUDA_COMPUTE_CAPABILITIES": _quoted_re(_CAPABILITIES),
    # the reproducibility measures (plan.reproducible.ACTION_ENV), inherited from build.sh
    "SOURCE_DATE_EPOCH": None,
    "TZ": None,
    "LC_ALL": None,
    "PYTHONHASHSEED": None,
}
REPO_ENV: dict[str, str | None] = {
    "CC": _COMPILER_PATH,
    "BAZEL_COMPILER": _CLANG,
    "USE_HERMETIC_CC_TOOLCHAIN": "[01]",
    "LLVM_VERSION": "[0-9]{1,3}",
    "SYSROOT_DIST": SYSROOT_DIST,
    "TF_SYSROOT": _quoted_re(SYSROOT_NAME),
    "HERMETIC_PYTHON_VERSION": _quoted_re(r"[0-9]\.[0-9]{1,2}"),
    "TF_PYTHON_VERSION": _quoted_re(r"[0-9]\.[0-9]{1,2}"),
    "HERMETIC_CUDA_VERSION": _quoted_re(_VERSION),
    "HERMETIC_CUDNN_VERSION": _quoted_re(_VERSION),
    "HERMETIC_CUDA_COMPUTE_CAPABILITIES": _quoted_re(_CAPABILITIES),
    "WHEEL_NAME": f"tensorflow|tensorflow_cpu|{STANDIN_WHEEL}",
    "USE_PYWRAP_RULES": "1",
    "ML_WHEEL_TYPE": "release",
}

#: bazel's options as tfbuild writes them: name -> the grammar of its value (None: a flag without
#: one; a dict: NAME=VALUE of these variables). Startup options, per-build options (the command
#: line) and the .tf_configure.bazelrc lines each have their own.
Grammar = str | dict[str, str | None] | None
STARTUP_OPTIONS: dict[str, Grammar] = {
    "--output_user_root": re.escape(f"{CACHE_ROOT}/output"),
}
BUILD_OPTIONS: dict[str, Grammar] = {
    "--repository_cache": re.escape(f"{CACHE_ROOT}/repository"),
    "--disk_cache": re.escape(f"{CACHE_ROOT}/disk"),
    "--remote_cache": _URL,
    "--remote_executor": _URL,
    "--remote_instance_name": _INSTANCE,
    "--remote_timeout": _NUMBER,
    "--remote_retries": "[0-9]{1,2}",
    "--noremote_upload_local_results": None,
    "--spawn_strategy": re.escape(REMOTE_EXECUTION[0].partition("=")[2]),
    "--remote_download_toplevel": None,
    "--action_env": ACTION_ENV,
}
#: The options :func:`bazel_command` makes from a plan's resources, never held in a plan's option lists: name -> the
#: field of ``Resources`` it is made from, and the grammar of its value (the number, its one
#: group). A plan before tfbuild.plan/4 held them in its lists as well (startup and build options
#: each their own): tfbuild.plan.decode lifts their values into ``resources``.
STARTUP_RESOURCES: dict[str, tuple[str, str]] = {
    "--host_jvm_args": ("jvm_heap_mb", rf"-Xmx({_NUMBER})m"),
}
BUILD_RESOURCES: dict[str, tuple[str, str]] = {
    "--jobs": ("jobs", f"({_NUMBER})"),
    "--local_ram_resources": ("local_ram_mb", f"({_NUMBER})"),
}
RC_OPTIONS: dict[str, Grammar] = {
    "--action_env": ACTION_ENV,
    "--repo_env": REPO_ENV,
    "--python_path": _quoted_re("/usr/bin/python3"),
    "--copt": _COPT,
    "--host_copt": _COPT,
    "--define": r"[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.-]+",
    "--crosstool_top": re.escape(SYSROOT_CROSSTOOL),
    "--noincompatible_enable_cc_toolchain_resolution": None,
    HERMETIC_CC_FLAG: "True|False",
}
#: The commands (and configs) an rc line applies to: ``build``, ``build:opt`` (the target's
#: flags), ``build:cuda`` (hermetic CUDA).
RC_COMMANDS = ("build", "build:opt", "build:cuda")
#: The --config names the planner gives bazel (choose_variant).
CONFIGS = ("opt", "mkl", "mkl_threadpool", "cuda", "cuda_clang", "cuda_wheel")
#: The wheel targets and flows of configure_rc.
WHEEL_TARGETS = {
    "wheel": "//tensorflow/tools/pip_package:wheel",
    "build_pip_package": "//tensorflow/tools/pip_package:build_pip_package",
}
WHEEL_NAMES = ("tensorflow", "tensorflow_cpu")
#: The canary's (a stand-in plan's only; its receipts before it had a name of its own say
#: tensorflow_cpu).
STANDIN_WHEEL_NAMES = (STANDIN_WHEEL, "tensorflow_cpu")

_OPTION = re.compile(r"(--[A-Za-z0-9_@/:.-]+)(?:([= ])(.*))?", re.DOTALL)


def _check_option(field: str, text: str, allowed: dict[str, Grammar], *, sep: str) -> None:
    found = _OPTION.fullmatch(text)
    if found is None:
        raise RefusedField(field, text, "not a bazel option as tfbuild writes one")
    name, given_sep, value = found.group(1), found.group(2), found.group(3)
    if name not in allowed:
        raise RefusedField(field, name, "tfbuild never gives bazel that option")
    grammar = allowed[name]
    if grammar is None:
        if given_sep is not None:
            raise RefusedField(field, text, f"{name} takes no value")
        return
    if given_sep is None or given_sep not in sep:
        raise RefusedField(field, text, f"{name} without its value")
    if isinstance(grammar, dict):
        variable, equals, rest = value.partition("=")
        if variable not in grammar:
            raise RefusedField(field, f"{name}={variable}", "tfbuild never sets that variable")
        grammar_of = grammar[variable]
        ok = (not equals) if grammar_of is None else bool(equals and re.fullmatch(grammar_of, rest))
    else:
        ok = re.fullmatch(grammar, value) is not None
    if not ok:
        raise RefusedField(field, text, f"not a value tfbuild writes for {name}")


def check_options(field: str, options: tuple[str, ...], allowed: dict[str, Grammar]) -> None:
    """Each is an option :func:`bazel_options` (or the reproducible measures) writes, of
    ``allowed`` (:data:`STARTUP_OPTIONS`, :data:`BUILD_OPTIONS`) with a value of its grammar;
    none of those made from the plan's resources."""
    for i, option in enumerate(options):
        found = _OPTION.fullmatch(option)
        if found is not None and found.group(1) in {*STARTUP_RESOURCES, *BUILD_RESOURCES}:
            why = f"tfbuild gives bazel {found.group(1)} only from the plan's resources"
            raise RefusedField(f"{field}[{i}]", option, why)
        _check_option(f"{field}[{i}]", option, allowed, sep="=")


def check_resources(resources: Resources) -> None:
    """Each resource is a number its option (:data:`STARTUP_RESOURCES`, :data:`BUILD_RESOURCES`)
    may hold on bazel's command line."""
    for field, _ in (*STARTUP_RESOURCES.values(), *BUILD_RESOURCES.values()):
        value = str(getattr(resources, field))
        if re.fullmatch(_NUMBER, value) is None:
            raise RefusedField(f"resources.{field}", value, "not a count bazel takes")


_RC_LINE = re.compile(r"([A-Za-z0-9_:-]+) (.*)", re.DOTALL)


def check_rc_lines(lines: tuple[str, ...]) -> None:
    """Each is ``build[:opt|:cuda] OPTION`` as :func:`configure_rc` writes it: one option, of
    :data:`RC_OPTIONS`; never ``import``, ``try-import``, another command or a second option."""
    for i, line in enumerate(lines):
        field = f"rc_lines[{i}]"
        found = _RC_LINE.fullmatch(line)
        if found is None or found.group(1) not in RC_COMMANDS:
            shown = found.group(1) if found else line
            raise RefusedField(field, shown, "tfbuild's rc file holds only build options")
        _check_option(field, found.group(2), RC_OPTIONS, sep="= ")


def check_configs(configs: tuple[str, ...]) -> None:
    for i, config in enumerate(configs):
        if config not in CONFIGS:
            raise RefusedField(f"bazel_configs[{i}]", config, "tfbuild never uses that config")
