"""What really compiles each release, against which C library, and the floor that gives: pinned
against TensorFlow's own files (docs/toolchain-facts.md) for every recipe and variant."""

from __future__ import annotations

import re

import pytest

from tests.plan.test_plan import IMAGES, MODEL, host, plan, recipe_221, without_toolchain
from tfbuild.core import serial
from tfbuild.core.errors import InputError, UnsupportedError
from tfbuild.plan import BuildPlan, PlanOptions, make_plan
from tfbuild.plan.decode import decode_plan
from tfbuild.plan.render import render_files, toolchain_packages
from tfbuild.recipes.images import BaseImage, load_base_images
from tfbuild.recipes.recipe import load_recipes, parse_recipe

HERMETIC_RC = [
    "build --@rules_ml_toolchain//common:enable_hermetic_cc=True",
    "build --repo_env=USE_HERMETIC_CC_TOOLCHAIN=1",
    "build --repo_env=LLVM_VERSION=18",
    "build --repo_env=SYSROOT_DIST=linux_glibc_2_27",
]
#: TensorFlow's .bazelrc release_cpu_linux (@0071ad1): its crosstool and the /dt9 sysroot.
RELEASE_ROUTE = [
    "build --crosstool_top=@local_config_cuda//crosstool:toolchain",
    'build --repo_env=TF_SYSROOT="/dt9"',
]
#: rules_ml_toolchain's own opt-out (its .bazelrc clang_local at TF 2.21's pin d8cb9c2).
CLANG_LOCAL = [
    "build --noincompatible_enable_cc_toolchain_resolution",
    "build --@rules_ml_toolchain//common:enable_hermetic_cc=False",
    "build --repo_env=USE_HERMETIC_CC_TOOLCHAIN=0",
]
SHIPPED_IMAGES = load_base_images()


def shipped(version: str, variant: str = "cpu", **options: object) -> BuildPlan:
    return make_plan(
        PlanOptions(variant=variant, **options),  # type: ignore[arg-type]
        load_recipes().get(version),
        host(),
        base_images=SHIPPED_IMAGES,
    )


def toolchain_lines(p: BuildPlan) -> list[str]:
    return [
        line
        for line in p.rc_lines
        if re.search(r"hermetic|TOOLCHAIN|LLVM_VERSION|SYSROOT|crosstool|resolution", line)
    ]


@pytest.mark.parametrize("variant", ["cpu", "mkl", "cuda"])
def test_221_compiles_with_tensorflows_hermetic_clang_and_installs_none(variant: str) -> None:
    p = shipped("2.21", variant)
    assert (p.route, p.compiler, p.compiler_path) == ("hermetic", "clang-18.1.8", None)
    assert p.sysroot is not None and (p.sysroot.name, p.sysroot.glibc) == (
        "linux_glibc_2_27",
        "2.27",
    )
    assert p.floor_goal == "2.27"  # the stock wheel's manylinux_2_27
    assert toolchain_lines(p) == HERMETIC_RC
    # No compiler of the image is named, since none is used: not CC, not CUDA's clang.
    assert not [
        line for line in p.rc_lines if re.search(r"\bCC=|COMPILER_PATH|BAZEL_COMPILER", line)
    ]
    assert not [name for name in toolchain_packages(p) if name.startswith(("clang", "lld", "gcc"))]
    files = render_files(p)
    assert "apt.llvm.org" not in files["Dockerfile"] and " AS sysroot" not in files["Dockerfile"]
    assert "hermetic toolchain" in files["build.sh"] and "rules_ml_toolchain" in p.toolchain
    # Bazel's copts still reach the hermetic compiler (no no_legacy_features at d8cb9c2).
    assert any(line.startswith("build:opt --copt=-march=") for line in p.rc_lines)


def test_221_without_the_portable_route_opts_out_as_tensorflow_spells_it() -> None:
    p = shipped("2.21", "mkl", portable=False)
    assert (p.route, p.compiler_path, p.sysroot, p.floor_goal) == (
        "image",
        "/usr/lib/llvm-18/bin/clang",
        None,
        None,
    )
    assert toolchain_lines(p) == CLANG_LOCAL
    assert "build --repo_env=CC=/usr/lib/llvm-18/bin/clang" in p.rc_lines
    assert {"clang-18", "lld-18"} <= set(toolchain_packages(p))
    assert "glibc 2.39" in next(r.why for r in p.reasons if r.what == "toolchain")


@pytest.mark.parametrize("minor", range(13, 21))
@pytest.mark.parametrize("variant", ["cpu", "mkl", "cuda"])
def test_213_to_220_take_tensorflows_release_route_to_glibc_217(minor: int, variant: str) -> None:
    p = shipped(f"2.{minor}", variant)
    assert p.route == "sysroot" and p.floor_goal == "2.17"
    assert p.sysroot is not None and p.sysroot.name == "/dt9" and p.sysroot.glibc == "2.17"
    assert p.sysroot.builder == "devtoolset-9"
    # ml_build's own base image, pinned by the digest TensorFlow's Dockerfile pins.
    assert p.sysroot.image is not None and p.sysroot.image.reference.endswith(
        "@sha256:58b87898e82351c6cf9cf5b9f3c20257bb9e2dcf33af051e12ce532d7f94e3fe"
    )
    # Bazel 7 (2.20) resolves C++ toolchains by platform: off, or --crosstool_top is ignored.
    resolution = ["build --noincompatible_enable_cc_toolchain_resolution"] if minor == 20 else []
    assert toolchain_lines(p) == [*resolution, *RELEASE_ROUTE]
    assert p.compiler_path is not None and p.compiler_path.startswith("/usr/lib/llvm-")
    assert f'build --action_env CLANG_CUDA_COMPILER_PATH="{p.compiler_path}"' in p.rc_lines
    dockerfile = render_files(p)["Dockerfile"]
    assert dockerfile.count("\nFROM ") + dockerfile.startswith("FROM ") == 2
    source = load_recipes().get(f"2.{minor}")
    assert f"echo '{source.sha256}  /tmp/tensorflow.tar.gz' | sha256sum -c -" in dockerfile
    assert "/build_devtoolset.sh devtoolset-9 /dt9" in dockerfile
    assert dockerfile.index(" AS sysroot") < dockerfile.index("COPY --from=sysroot /dt9 /dt9")
    # build_devtoolset.sh links the image's kernel headers into /dt9.
    assert "linux-libc-dev" in toolchain_packages(p)


def test_every_recipe_names_a_route_that_reaches_its_floor() -> None:
    for recipe in load_recipes().recipes:
        p = shipped(recipe.short)
        assert p.floor_goal == recipe.floor, recipe.short
        assert p.sysroot is not None and p.sysroot.glibc is not None
        assert p.sysroot.glibc <= recipe.floor, recipe.short  # X.Y of one major: text order holds
        why = next(r.why for r in p.reasons if r.what == "toolchain")
        assert recipe.toolchain is not None and why == recipe.toolchain.why


def test_sysroot_from_an_older_image_links_against_its_c_library() -> None:
    p = shipped("2.19", "mkl", sysroot_from="debian-12")
    assert p.route == "sysroot" and p.sysroot is not None
    assert (p.sysroot.name, p.sysroot.builder, p.sysroot.glibc, p.floor_goal) == (
        "/sysroot",
        "image",
        "2.36",
        "2.36",
    )
    assert 'build --repo_env=TF_SYSROOT="/sysroot"' in p.rc_lines
    dockerfile = render_files(p)["Dockerfile"]
    assert "FROM docker.io/library/debian:12@sha256:" in dockerfile.split(" AS sysroot")[0]
    assert "COPY --from=sysroot /sysroot /sysroot" in dockerfile
    assert "devtoolset" not in dockerfile


def test_sysroot_from_is_refused_where_tensorflow_compiles_hermetically() -> None:
    with pytest.raises(
        UnsupportedError, match=r"--sysroot-from does not apply to TensorFlow 2\.21"
    ):
        shipped("2.21", sysroot_from="debian-12")
    # With --no-portable the image's clang compiles, so a sysroot can be given to it.
    p = shipped("2.21", portable=False, sysroot_from="debian-12")
    assert p.route == "sysroot" and toolchain_lines(p) == [
        *CLANG_LOCAL,
        "build --crosstool_top=@local_config_cuda//crosstool:toolchain",
        'build --repo_env=TF_SYSROOT="/sysroot"',
    ]
    with pytest.raises(UnsupportedError, match="unknown --sysroot-from image 'debian-9'"):
        shipped("2.19", sysroot_from="debian-9")


def test_gcc_cannot_compile_against_a_sysroot() -> None:
    gcc = parse_recipe(
        without_toolchain(MODEL).replace("compiler: clang-18.1.8", "compiler: gcc-13"),
        path="r.yaml",
    )
    gcc_images = {
        **IMAGES,
        "ubuntu-24.04": BaseImage(
            **{**vars(IMAGES["ubuntu-24.04"]), "packaged_compilers": ("gcc-13",)}
        ),
    }
    with pytest.raises(UnsupportedError, match="gcc-13 cannot compile against a sysroot"):
        make_plan(PlanOptions(sysroot_from="debian-12"), gcc, host(), base_images=gcc_images)


def test_a_recipe_without_a_route_builds_with_the_image_and_keeps_its_floor_goal() -> None:
    p = plan(
        PlanOptions(variant="mkl"), recipe=parse_recipe(without_toolchain(MODEL), path="r.yaml")
    )
    assert (p.route, p.sysroot, p.floor_goal) == ("image", None, "2.27")
    assert "names no route" in next(r.why for r in p.reasons if r.what == "toolchain")
    assert p.compiler_path == "/usr/lib/llvm-18/bin/clang"


def test_the_plan_round_trips_and_an_older_plan_reads_as_the_images_compiler() -> None:
    for p in (plan(), shipped("2.16", "cuda"), shipped("2.19", sysroot_from="debian-12")):
        assert decode_plan(serial.to_data(p)) == p
    older = recipe_221()
    data = serial.to_data(plan(PlanOptions(portable=False), recipe=older))
    data["schema"] = "tfbuild.plan/2"
    for key in ("route", "sysroot", "toolchain"):
        del data[key]
    again = decode_plan(data)
    assert (again.route, again.sysroot) == ("image", None)


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ("tensorflow: 2.21.0", "tensorflow: 2.20.0", "has no hermetic C++ toolchain"),
        ('  llvm: "18"\n', "", "names its llvm"),
        ('  llvm: "18"', '  llvm: "17"', "compiler must be clang-17.x"),
        ("  route: hermetic", "  route: sideways", "'toolchain.route' is 'sideways'"),
        ("  sysroot: linux_glibc_2_27", "  sysroot: /dt9", "SYSROOT_DIST name"),
        ("  sysroot: linux_glibc_2_27", '  sysroot: "/dt9; rm -rf /"', "expected a SYSROOT_DIST"),
        ("  route: hermetic", "  route: sysroot", "names its sysroot's absolute path"),
        ("  route: hermetic\n", "  route: hermetic\n  builder: devtoolset-7\n", "devtoolset-9"),
        (
            "  rules_ml_toolchain: d8cb9c2c168cd64000eaa6eda0781a9615a26ffe\n",
            "",
            "names the rules_ml_toolchain commit the release pins",
        ),
        (
            "  rules_ml_toolchain: d8cb9c2c168cd64000eaa6eda0781a9615a26ffe",
            "  rules_ml_toolchain: d8cb9c2",
            "rules_ml_toolchain",
        ),
    ],
)
def test_the_recipe_route_is_checked(old: str, new: str, fragment: str) -> None:
    text = MODEL.replace(old, new)
    assert text != MODEL
    with pytest.raises(InputError) as caught:
        parse_recipe(text, path="recipes/x.yaml")
    assert fragment in caught.value.line()


def test_a_sysroot_route_with_gcc_or_without_a_checksum_is_refused() -> None:
    route = """toolchain:
  route: sysroot
  sysroot: /dt9
  builder: devtoolset-9
  builder_image: ubuntu-22.04
  why: TensorFlow's release route
"""
    sysroot = re.sub(r"^toolchain:\n(?:  .*\n)+", route, MODEL, flags=re.M)
    toolchain = parse_recipe(sysroot, path="r.yaml").toolchain
    assert toolchain is not None
    assert (toolchain.route, toolchain.sysroot, toolchain.llvm) == ("sysroot", "/dt9", None)
    assert (toolchain.builder, toolchain.builder_image) == ("devtoolset-9", "ubuntu-22.04")
    assert toolchain.why == "TensorFlow's release route"
    with pytest.raises(InputError, match="compiles with clang through TF's crosstool"):
        parse_recipe(sysroot.replace("compiler: clang-18.1.8", "compiler: gcc-13"), path="r.yaml")
    unverified = re.sub(r"  sha256: [0-9a-f]{64}", "  sha256: null", sysroot)
    with pytest.raises(InputError, match=r"needs source\.sha256"):
        parse_recipe(unverified, path="r.yaml")
