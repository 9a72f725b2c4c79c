"""What changed between TensorFlow releases that a build must get right: the version gates.

Recipes carry the facts of one release; this module holds the rules that hold *across* releases, so
that a recipe contradicting them is refused when it is loaded (a ``:wheel`` flow for 2.16, hermetic
CUDA for 2.17, Clang 15 for 2.18...). Sources: ../shared/reference/tensorflow-build-facts.md §0-§4
(TensorFlow's configure.py, .bazelrc, docs; Spack's conflict table).
"""

from __future__ import annotations

Version = tuple[int, ...]


def parse_version(text: str) -> Version:
    return tuple(int(p) for p in text.split("."))


def minor(version: Version) -> Version:
    return version[:2]


#: The lowest and highest Python of each release's row in TensorFlow's "tested build
#: configurations" table (Linux): tensorflow/docs site/en/install/source.md (HEAD 2026-03-11).
TESTED_PYTHON: dict[Version, tuple[str, str]] = {
    (2, 21): ("3.10", "3.13"),
    (2, 20): ("3.9", "3.13"),
    (2, 19): ("3.9", "3.12"),
    (2, 18): ("3.9", "3.12"),
    (2, 17): ("3.9", "3.12"),
    (2, 16): ("3.9", "3.12"),
    (2, 15): ("3.9", "3.11"),
    (2, 14): ("3.9", "3.11"),
    (2, 13): ("3.8", "3.11"),
}


def wheel_flow(version: Version) -> str:
    """``build_pip_package`` (a script bazel builds, then runs) up to 2.16; the ``:wheel`` target from
    2.17 (issue #63298: "Target 'build_pip_package' no longer existing?")."""
    return "build_pip_package" if minor(version) < (2, 17) else "wheel"


def hermetic_python(version: Version) -> bool:
    """rules_python picks the interpreter (``HERMETIC_PYTHON_VERSION``) since 2.14 (PR #61389)."""
    return minor(version) >= (2, 14)


def hermetic_cuda(version: Version) -> bool:
    """CUDA, cuDNN and NCCL are downloaded by bazel at build time since 2.18."""
    return minor(version) >= (2, 18)


def cuda_wheel_config(version: Version) -> bool:
    """``--config=cuda_wheel`` is required for a CUDA ``:wheel`` since 2.18."""
    return minor(version) >= (2, 18)


def pywrap_rules(version: Version) -> bool:
    """``--repo_env=USE_PYWRAP_RULES=1`` since 2.20."""
    return minor(version) >= (2, 20)


def hermetic_cc(version: Version) -> bool:
    """TensorFlow's rules_ml_toolchain compiles C++ with its own LLVM and sysroot by default from
    2.21 (its pin d8cb9c2 defaults enable_hermetic_cc to True; docs/toolchain-facts.md E5-E9)."""
    return minor(version) >= (2, 21)


def sysroot_glibc(dist: str) -> str | None:
    """The glibc of a rules_ml_toolchain SYSROOT_DIST (``linux_glibc_2_27`` -> ``2.27``)."""
    prefix = "linux_glibc_"
    if not dist.startswith(prefix):
        return None
    return dist.removeprefix(prefix).replace("_", ".")


def cc_toolchain_resolution(bazel: str) -> bool:
    """Bazel 7 resolves C++ toolchains by platform, so ``--crosstool_top`` alone no longer picks
    the compiler (Bazel 7.0.0 release notes; bazelbuild/bazel#7260)."""
    return int(bazel.split(".", maxsplit=1)[0]) >= 7


#: The repo_envs that select the hermetic Python. Both are set: TF_PYTHON_VERSION is the older name
#: (Spack still sets it), HERMETIC_PYTHON_VERSION the current one (ci/official/envs); the exact
#: release of the rename is not pinned, and a variable a release does not read is harmless.
PYTHON_VERSION_ENVS = ("HERMETIC_PYTHON_VERSION", "TF_PYTHON_VERSION")


def compiler_conflict(version: Version, family: str, major: int) -> str | None:
    """Why a compiler cannot build this release (Spack's conflict table, TF issues), or None."""
    v = minor(version)
    if family == "clang":
        if v >= (2, 18) and major <= 15:
            return "TensorFlow 2.18+ needs Clang 16 or newer (issue #76908)"
        if v <= (2, 14) and major >= 17:
            return "Clang 17+ breaks TensorFlow 2.14 and older (issue #62416)"
    if family == "gcc":
        if v >= (2, 17) and major <= 11:
            return "TensorFlow 2.17+ needs GCC 12 or newer (XNNPACK uses -mavx512fp16)"
        if v <= (2, 14) and major >= 13:
            return "GCC 13+ breaks TensorFlow 2.14 and older (issue #60577)"
    return None
