"""The toolchain: which Python the wheel is for, and the compiler (path, packages, where from)."""

from __future__ import annotations

from dataclasses import dataclass

from tfbuild.detect.host import HostFacts
from tfbuild.errors import UnsupportedError
from tfbuild.plan.model import PlanOptions, Reason
from tfbuild.recipes import BaseImage, Recipe
from tfbuild.variants import Variant


@dataclass(frozen=True, kw_only=True)
class Toolchain:
    """The recipe's compiler inside the toolchain image, and what else the image must install."""

    family: str  # "clang" or "gcc"
    compiler_path: str
    compiler_packages: tuple[str, ...]
    llvm_apt_suite: str | None  # "llvm-toolchain-jammy-17" when clang comes from apt.llvm.org
    extra_packages: tuple[str, ...]  # e.g. cuDNN for CUDA images that lack it
    reasons: tuple[Reason, ...]


def choose_python(options: PlanOptions, recipe: Recipe, host: HostFacts) -> Reason:
    """The Python the wheel is for: asked for, else this host's when the release supports it."""
    allowed = ", ".join(recipe.python)
    if options.python is not None:
        if options.python not in recipe.python:
            raise UnsupportedError(
                f"TensorFlow {recipe.short} cannot be built for Python {options.python}",
                why=f"{recipe.where('python')} allows {allowed}",
                fix=f"Pick one of {allowed} with --python.",
            )
        return Reason(what="python", value=options.python, why="asked for with --python")
    if host.python in recipe.python:
        return Reason(
            what="python",
            value=host.python,
            why="this host's Python, so the wheel installs where tfbuild runs",
        )
    newest = recipe.python[-1]
    return Reason(
        what="python",
        value=newest,
        why=f"this host's Python {host.python} is outside {recipe.where('python')} ({allowed}); "
        "the newest supported one",
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


def choose_toolchain(options: PlanOptions, recipe: Recipe, base: BaseImage) -> Toolchain:
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
    if (
        options.variant == Variant.cuda
        and recipe.cuda
        and not recipe.cuda.hermetic
        and not base.cudnn
    ):
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

    return Toolchain(
        family=family,
        compiler_path=compiler_path,
        compiler_packages=compiler_packages,
        llvm_apt_suite=llvm_apt,
        extra_packages=extra_packages,
        reasons=tuple(reasons),
    )
