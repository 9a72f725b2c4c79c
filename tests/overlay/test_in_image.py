"""A real overlay compiled in its toolchain image (the command's default): the recipe's clang from
Debian trixie against Debian bullseye's C library, on the real engine, against the real stock wheel,
loaded by real TensorFlow on this host; verify rebuilds it in the image (the receipt's, or one made
again with the receipt's package versions) and gets the same bytes.

Each image is built once per input hash (the first time here: about 40 s on 2 cores), then reused;
an overlay build in it then takes about 35 s, and each verify as long again."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import parse_wheel_filename

from tests.conftest import ERROR_PREFIX, run_cli
from tests.docker.conftest import engine, new_base_image, old_base_image
from tests.overlays import place_overlay
from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.overlay.build import build_overlay, verify_overlay
from tfbuild.overlay.compile import FRAMEWORK
from tfbuild.overlay.image import (
    SYSROOT_SUITE,
    ImageSpec,
    choose,
    render_dockerfile,
    with_base_images,
)
from tfbuild.wheel.floor import inspect_wheel
from tfbuild.wheel.overlay_receipt import decode_overlay_receipt, read_overlay_receipt
from tfbuild.wheel.receipt import receipt_path

from .conftest import BuiltOverlay, request_for, unpack
from .test_build import REGISTERED, overlay_lines, run_tf

__all__ = ["engine", "new_base_image", "old_base_image"]  # the real-engine fixtures


@pytest.fixture(scope="module")
def in_image(
    engine: Any,
    new_base_image: str,
    old_base_image: str,
    stock_python: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[BuiltOverlay]:
    out = tmp_path_factory.mktemp("in-image")
    request = dataclasses.replace(request_for(None, out / "dist", stock_python), in_image=True)
    result = build_overlay(request)
    yield BuiltOverlay(python=stock_python, site=str(unpack(result.wheel, out)), result=result)


pytestmark = pytest.mark.docker


def test_the_receipt_says_it_was_compiled_in_the_image_with_the_recipes_clang(
    in_image: BuiltOverlay, engine: Any
) -> None:
    result = in_image.result
    receipt = read_overlay_receipt(receipt_path(result.wheel), wheel=result.wheel)
    assert receipt == result.receipt
    image = receipt.image
    assert image is not None
    assert (image.compiler, image.suite, image.sysroot_suite, image.glibc) == (
        "clang-18",
        "trixie",
        "bullseye",
        "2.31",
    )
    assert image.id == engine.image_id(image.tag)
    # the recipe's clang 18.1.8, as Debian packages it
    assert image.packages["clang-18"].startswith("1:18.1.8-")
    assert "clang version 18.1.8" in receipt.compiler_version
    assert receipt.compiler == "clang++-18"
    assert image.sysroot_packages["libc6-dev"].startswith("2.31-")
    assert any(name.startswith("libstdc++-") for name in image.sysroot_packages)


def test_its_tag_is_the_floor_of_the_sysroot_not_of_this_host(in_image: BuiltOverlay) -> None:
    wheel = in_image.result.wheel
    floor = inspect_wheel(wheel, exclude=(FRAMEWORK,))
    # bullseye's glibc 2.31 and GCC 10's libstdc++, where the host build (Debian 12) gets 2_35
    assert floor.policy == "manylinux_2_31_x86_64", floor
    _, _, _, tags = parse_wheel_filename(wheel.name)
    assert {t.platform for t in tags} == {"manylinux_2_31_x86_64"}


def test_it_loads_in_the_real_stock_tensorflow_of_this_host(in_image: BuiltOverlay) -> None:
    on = run_tf(in_image.python, in_image.site, REGISTERED)
    assert overlay_lines(on.stderr) == []
    assert on.stdout.split()[0] == "1"  # the overlay's kernel, above stock's
    assert float(on.stdout.split()[1]) == pytest.approx(2.718281828, rel=1e-6)


def test_verify_rebuilds_it_in_the_same_image_and_gets_the_same_bytes(
    in_image: BuiltOverlay,
) -> None:
    said: list[str] = []
    again = verify_overlay(in_image.result.wheel, progress=said.append)
    assert again.receipt.wheel.sha256 == in_image.result.receipt.wheel.sha256
    assert again.receipt.image == in_image.result.receipt.image
    assert any("the receipt's, reused" in line for line in said), said


def test_a_receipt_read_before_the_image_existed_means_the_host_and_a_planted_image_is_refused(
    in_image: BuiltOverlay,
) -> None:
    text = receipt_path(in_image.result.wheel).read_text()
    data = json.loads(text)
    del data["image"]  # a tfbuild.overlay/1 receipt of a host build, written before
    assert decode_overlay_receipt(json.dumps(data).encode(), source="old").image is None
    for field, value in (
        ("tag", "tfbuild/overlay-toolchain:0123; rm -rf /"),
        ("id", "sha256:nothex"),
        ("compiler", "gcc-12"),
        ("suite", "trixie\nRUN curl evil"),
    ):
        data = json.loads(text)
        data["image"][field] = value
        with pytest.raises(InputError, match=f"image\\.{field}"):
            decode_overlay_receipt(json.dumps(data).encode(), source="planted")
    data = json.loads(text)
    data["image"]["sysroot_packages"]["libc6-dev"] = "2.31 && curl evil"
    with pytest.raises(InputError, match=r"image\.sysroot_packages"):
        decode_overlay_receipt(json.dumps(data).encode(), source="planted")


def test_a_rebuild_pins_every_package_the_receipt_records(
    in_image: BuiltOverlay, engine: Any
) -> None:
    image = in_image.result.receipt.image
    assert image is not None
    spec = with_base_images(engine, choose("clang-18.1.8"), "--compiler g++")
    pinned = dataclasses.replace(spec, pins=image.packages, sysroot_pins=image.sysroot_packages)
    text = render_dockerfile(pinned)
    for name, version in (*image.packages.items(), *image.sysroot_packages.items()):
        assert f"{name}={version}" in text
    assert render_dockerfile(spec) != text  # another tag: never taken for the unpinned image


def test_missing_base_images_are_one_line_saying_how_to_make_them_or_build_on_the_host(
    engine: Any,
) -> None:
    spec = ImageSpec(
        compiler="clang-18",
        suite="nosuchsuite",
        base_id="",
        sysroot_suite=SYSROOT_SUITE,
        sysroot_base_id="",
        glibc="2.31",
    )
    with pytest.raises(EnvironmentProblem) as caught:
        with_base_images(engine, spec, "--compiler clang++-16")
    line = caught.value.line()
    assert "tfbuild/base:nosuchsuite is missing" in line
    assert "sudo tfbuild base --suite nosuchsuite" in line
    assert "--compiler clang++-16" in line
    assert caught.value.exit_code == 5


def test_verify_without_the_receipts_image_builds_one_pinned_and_gets_the_same_bytes(
    in_image: BuiltOverlay, tmp_path: Path
) -> None:
    image = in_image.result.receipt.image
    assert image is not None
    # The receipt's image is not on the engine (another id under its tag): verify builds one with
    # every recorded package at the receipt's version (cached by its own hash after the first).
    wheel = place_overlay(
        in_image, tmp_path, image=dataclasses.replace(image, id="sha256:" + "0" * 64)
    )
    again = verify_overlay(wheel)
    assert again.receipt.wheel.sha256 == in_image.result.receipt.wheel.sha256
    assert again.receipt.image is not None and again.receipt.image.tag != image.tag
    assert again.receipt.image.packages == image.packages
    assert again.receipt.image.sysroot_packages == image.sysroot_packages


def test_verify_without_the_receipts_image_builds_one_pinned_and_names_a_version_gone(
    in_image: BuiltOverlay, tmp_path: Path
) -> None:
    image = in_image.result.receipt.image
    assert image is not None
    # The receipt's image is not on the engine (another id under its tag): verify builds one with
    # every recorded package at the receipt's version; the mirror no longer has this libc6-dev.
    gone = dataclasses.replace(
        image,
        id="sha256:" + "0" * 64,
        sysroot_packages={**image.sysroot_packages, "libc6-dev": "2.31-0+tfbuild.gone"},
    )
    wheel = place_overlay(in_image, tmp_path, image=gone)
    said: list[str] = []
    with pytest.raises(EnvironmentProblem) as caught:
        verify_overlay(wheel, progress=said.append)
    assert "libc6-dev 2.31-0+tfbuild.gone can no longer be had" in caught.value.line()
    assert caught.value.exit_code == 5
    assert any("is not on this engine" in line for line in said), said


def test_without_an_engine_the_command_says_so_in_one_line_and_how_to_build_on_the_host() -> None:
    ran = run_cli("overlay", "--tf", "2.21", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert ran.returncode == 5, ran.stderr
    errors = [line for line in ran.stderr.splitlines() if line.startswith(ERROR_PREFIX)]
    assert len(errors) == 1, ran.stderr
    assert "cannot reach the Docker engine" in errors[0]
    assert "Or build on this host: --compiler " in errors[0]
