"""The toolchain: which Python the wheel is for, and what really compiles the C++ against which C
library: the toolchain image's compiler, TensorFlow's hermetic toolchain (2.21+), or the image's
clang against an old-glibc sysroot (TF_SYSROOT). That choice sets the wheel's glibc floor
(docs/toolchain-facts.md has the evidence for each release)."""

from __future__ import annotations

from dataclasses import dataclass

from tfbuild.core.errors import UnsupportedError
from tfbuild.core.variants import Variant
from tfbuild.detect.host import HostFacts
from tfbuild.plan.model import Reason, Route, Sysroot
from tfbuild.plan.options import PlanOptions
from tfbuild.recipes import tfversions
from tfbuild.recipes.images import BaseImage
from tfbuild.recipes.recipe import Recipe

#: Where a sysroot made from another distribution's image lives in the toolchain image.
IMAGE_SYSROOT = "/sysroot"
#: The glibc of TensorFlow's devtoolset-9 sysroot (build_devtoolset.sh: "glibc 2.17 / libstdc++
#: 4.8", manylinux2014).
DEVTOOLSET_GLIBC = {"devtoolset-9": "2.17"}


@dataclass(frozen=True, kw_only=True)
class Toolchain:
    """What compiles, against what, and what the toolchain image must install for it."""

    family: str  # "clang" or "gcc"
    route: Route
    compiler_path: str | None  # None: TensorFlow's hermetic compiler, downloaded by bazel
    compiler_packages: tuple[str, ...]
    llvm_apt_suite: str | None  # "llvm-toolchain-jammy-17" when clang comes from apt.llvm.org
    extra_packages: tuple[str, ...]  # e.g. cuDNN for CUDA images that lack it
    sysroot: Sysroot | None
    floor_goal: str | None  # the oldest glibc (X.Y) the wheel should load on
    reasons: tuple[Reason, ...]


def recipe_image(
    base_images: dict[str, BaseImage],
    key: str,
    where: str,
    fix: str = "Add the image to base-images.yaml or use one of those.",
) -> BaseImage:
    """The base image ``key`` that the recipe names at ``where``: an entry of base-images.yaml."""
    if key not in base_images:
        raise UnsupportedError(
            f"unknown base image {key!r} in {where}",
            why=f"base-images.yaml has {', '.join(sorted(base_images))}",
            fix=fix,
        )
    return base_images[key]


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
        python, why = options.python, "asked for with --python"
    elif host.python in recipe.python:
        python, why = host.python, "this host's Python, so the wheel installs where tfbuild runs"
    else:
        python = recipe.python[-1]
        why = (
            f"this host's Python {host.python} is outside {recipe.where('python')} ({allowed}); "
            "the newest supported one"
        )
    return Reason(what="python", value=python, why=why)


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


def _route(
    options: PlanOptions, recipe: Recipe, base: BaseImage, base_images: dict[str, BaseImage]
) -> tuple[Route, Sysroot | None, str | None, Reason]:
    """Whose compiler compiles against which C library, the floor that gives, and why."""
    route = recipe.toolchain
    if options.sysroot_from is not None:
        if route is not None and route.route == "hermetic" and options.portable:
            raise UnsupportedError(
                f"--sysroot-from does not apply to TensorFlow {recipe.short}",
                why=f"it compiles with its own hermetic toolchain and sysroot {route.sysroot} "
                f"({recipe.where('toolchain')}), not with the image's compiler",
                fix="Drop --sysroot-from (the hermetic sysroot is the stock wheel's floor), or add "
                "--no-portable to compile with the image's clang instead.",
            )
        image = base_images.get(options.sysroot_from)
        if image is None:
            raise UnsupportedError(
                f"unknown --sysroot-from image {options.sysroot_from!r}",
                why=f"known: {', '.join(sorted(base_images))}",
                fix="Name an entry of base-images.yaml, or a local image made by tfbuild base.",
            )
        sysroot = Sysroot(name=IMAGE_SYSROOT, glibc=image.glibc, builder="image", image=image)
        why = (
            "asked for with --sysroot-from: the image's clang links against the C library and "
            f"libstdc++ of {image.distro} {image.suite}"
            + (f" (glibc {image.glibc})" if image.glibc else "")
            + ", through TF_SYSROOT as TensorFlow's release builds do, so the wheel loads there and "
            "on newer systems"
        )
        reason = Reason(what="toolchain", value=f"sysroot from {image.name}", why=why)
        return "sysroot", sysroot, image.glibc, reason
    if route is None or not options.portable:
        glibc = f"glibc {base.glibc}" if base.glibc else "its glibc"
        why = (
            "asked for with --no-portable: the wheel needs this image's C library and libstdc++ "
            f"({glibc}) or newer where it runs"
            if route is not None
            else f"{recipe.where('toolchain') if recipe.toolchain else recipe.path} names no "
            f"route to an older floor: the wheel needs {base.suite}'s {glibc} or newer"
        )
        goal = None if route is not None else recipe.floor
        return "image", None, goal, Reason(what="toolchain", value="the image's", why=why)
    if route.route == "hermetic":
        return (
            "hermetic",
            Sysroot(name=route.sysroot, glibc=tfversions.sysroot_glibc(route.sysroot)),
            recipe.floor,
            Reason(what="toolchain", value=f"hermetic, {route.sysroot}", why=route.why),
        )
    assert route.builder is not None and route.builder_image is not None  # the recipe gate
    sysroot = Sysroot(
        name=route.sysroot,
        glibc=DEVTOOLSET_GLIBC.get(route.builder),
        builder=route.builder,
        image=recipe_image(base_images, route.builder_image, recipe.where("toolchain")),
    )
    value = f"sysroot {route.sysroot} ({route.builder})"
    return "sysroot", sysroot, recipe.floor, Reason(what="toolchain", value=value, why=route.why)


def choose_toolchain(
    options: PlanOptions, recipe: Recipe, base: BaseImage, base_images: dict[str, BaseImage]
) -> Toolchain:
    """What compiles against which C library (the route), what the image installs for it (the
    compiler's packages and source, cuDNN where the variant needs it), and the floor it gives."""
    reasons: list[Reason] = []
    family, _, compiler_version = recipe.compiler.partition("-")
    major = compiler_version.split(".")[0]
    route, sysroot, floor_goal, route_reason = _route(options, recipe, base, base_images)
    if route == "sysroot" and family != "clang":
        raise UnsupportedError(
            f"{recipe.compiler} cannot compile against a sysroot here",
            why="TensorFlow's crosstool gives TF_SYSROOT to clang (GCC finds its own C++ headers "
            "beside itself, not in the sysroot)",
            fix="Use a recipe whose compiler is clang, or drop --sysroot-from.",
        )
    compiler_path: str | None
    compiler_packages: tuple[str, ...]
    if route == "hermetic":
        compiler_path, compiler_packages, llvm_apt = None, (), None
        compiler_why = (
            f"TensorFlow {recipe.short}'s hermetic LLVM, downloaded by bazel: the image installs "
            "no compiler, and the flags are spelled for this one"
        )
    else:
        compiler_path, compiler_packages = _compiler_path(family, major)
        llvm_apt = _compiler_source(family, major, base)
        source = f"from {llvm_apt} (apt.llvm.org)" if llvm_apt else f"packaged by {base.suite}"
        compiler_why = (
            f"TensorFlow {recipe.short}'s tested compiler, {source}; flags are spelled for it, "
            "not for this host's compiler"
        )
    reasons.append(Reason(what="compiler", value=recipe.compiler, why=compiler_why))
    reasons.append(route_reason)
    if floor_goal is not None:
        reasons.append(
            Reason(
                what="glibc floor",
                value=f"glibc {floor_goal}",
                why=(
                    f"{recipe.where('floor')}: no worse than TensorFlow {recipe.short}'s stock "
                    "wheel"
                    if options.sysroot_from is None
                    else "the sysroot's"
                )
                + "; the build checks its wheel with auditwheel and says so loudly when it misses",
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
        route=route,
        compiler_path=compiler_path,
        compiler_packages=compiler_packages,
        llvm_apt_suite=llvm_apt,
        extra_packages=extra_packages,
        sysroot=sysroot,
        floor_goal=floor_goal,
        reasons=tuple(reasons),
    )
