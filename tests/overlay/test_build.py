"""A real overlay, built against the real stock wheel and loaded by real TensorFlow."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename

from tests.overlays import foreign_target
from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.overlay.build import build_overlay, verify_overlay
from tfbuild.overlay.check import check_ops
from tfbuild.overlay.compile import FRAMEWORK
from tfbuild.wheel.floor import inspect_wheel
from tfbuild.wheel.overlay_receipt import decode_overlay_receipt, read_overlay_receipt
from tfbuild.wheel.receipt import receipt_path

from .conftest import BuiltOverlay, request_for, unpack

REGISTERED = (
    "import os, tensorflow as tf; from tensorflow.python.framework import kernels as k; "
    "print(max(x.priority for x in k.get_registered_kernels_for_op('Exp').kernel "
    "if x.device_type == 'CPU')); print(float(tf.exp(tf.constant(1.0))))"
)


def run_tf(python: str, site: str, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": site, "TF_CPP_MIN_LOG_LEVEL": "3", **env}
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, timeout=300, env=environ, check=True
    )


def overlay_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("tfbuild overlay")]


def test_loaded_its_kernels_sit_above_stock_and_off_means_stock(
    built_overlay: BuiltOverlay,
) -> None:
    on = run_tf(built_overlay.python, built_overlay.site, REGISTERED)
    assert overlay_lines(on.stderr) == []
    assert on.stdout.split()[0] == "1"
    assert float(on.stdout.split()[1]) == pytest.approx(2.718281828, rel=1e-6)
    off = run_tf(built_overlay.python, built_overlay.site, REGISTERED, TFBUILD_OVERLAY="off")
    assert off.stdout.split()[0] == "0"


def test_tfbuild_overlay_is_off_in_the_words_people_use_and_says_what_it_does_not_know(
    built_overlay: BuiltOverlay,
) -> None:
    """off, 0, false, no in any case turn it off, silently; on, 1, true, yes leave it on; any
    other value is one line at import, and the overlay stays on."""
    python, site = built_overlay.python, built_overlay.site
    for value in ("OFF", "0", "False", "no"):
        off = run_tf(python, site, REGISTERED, TFBUILD_OVERLAY=value)
        assert (off.stdout.split()[0], overlay_lines(off.stderr)) == ("0", []), value
    on = run_tf(python, site, REGISTERED, TFBUILD_OVERLAY="Yes")
    assert (on.stdout.split()[0], overlay_lines(on.stderr)) == ("1", [])
    # status: on, and one line either way (not loaded: the loader's reason, as always)
    status = run_tf(python, site, REGISTERED, TFBUILD_OVERLAY="status")
    assert status.stdout.split()[0] == "1"
    receipt = built_overlay.result.receipt
    assert overlay_lines(status.stderr) == [
        f"tfbuild overlay ({receipt.target}, TensorFlow {receipt.tensorflow}): loaded, "
        f"{len(receipt.kernels)} kernels above TensorFlow's own (TFBUILD_OVERLAY=off turns it off)"
    ]
    unknown = run_tf(python, site, REGISTERED, TFBUILD_OVERLAY="disabled")
    assert unknown.stdout.split()[0] == "1"
    (line,) = overlay_lines(unknown.stderr)
    assert line.endswith(
        ": TFBUILD_OVERLAY=disabled is neither on nor off, taken as on (off, 0, false or no turn "
        "it off)"
    )


def test_the_receipt_says_what_the_wheel_holds(built_overlay: BuiltOverlay) -> None:
    result = built_overlay.result
    receipt = read_overlay_receipt(receipt_path(result.wheel), wheel=result.wheel)
    assert receipt == result.receipt
    assert "Exp:float32" in receipt.kernels and "avx2" in receipt.features
    data = json.loads(receipt_path(result.wheel).read_text())
    data["cflags"] = [*data["cflags"], "-march=native; rm -rf /"]
    with pytest.raises(InputError, match="cflags"):
        decode_overlay_receipt(json.dumps(data).encode(), source="planted")
    data = json.loads(receipt_path(result.wheel).read_text())
    data["wheel"]["name"] = result.wheel.name.rsplit("-", 1)[0] + "-any.whl"  # not a tag it gets
    with pytest.raises(InputError, match=r"wheel\.name"):
        decode_overlay_receipt(json.dumps(data).encode(), source="planted")
    data = json.loads(receipt_path(result.wheel).read_text())
    data["extra"] = 1
    with pytest.raises(InputError, match="extra"):
        decode_overlay_receipt(json.dumps(data).encode(), source="planted")
    # What the kernels were compiled without: each by the flag its cflags carry, never checked.
    assert {o.flag for o in receipt.left_out} <= set(receipt.cflags)
    assert {o.instruction_set for o in receipt.left_out}.isdisjoint(receipt.features)
    planted = {"instruction_set": "rdseed", "flag": "-mno-rdseed", "why": "planted", "system": True}
    for spoiled, in_cflags in (
        (planted, False),  # a flag the compile did not have
        ({**planted, "flag": "-march=native"}, True),  # a flag that turns nothing off
        ({**planted, "why": "two\nlines"}, True),
    ):
        data = json.loads(receipt_path(result.wheel).read_text())
        data["cflags"] = [f for f in data["cflags"] if f != "-mno-rdseed"]
        data["cflags"] += [spoiled["flag"]] if in_cflags else []
        data["left_out"] = [spoiled]
        with pytest.raises(InputError, match="left_out"):
            decode_overlay_receipt(json.dumps(data).encode(), source="planted")


def test_rebuilding_gives_the_same_bytes_and_verify_says_so(built_overlay: BuiltOverlay) -> None:
    again = verify_overlay(built_overlay.result.wheel)
    assert again.receipt.wheel.sha256 == built_overlay.result.receipt.wheel.sha256
    assert again.receipt.left_out == built_overlay.result.receipt.left_out
    assert again.receipt.cflags == built_overlay.result.receipt.cflags


def test_the_wheel_carries_the_manylinux_tag_auditwheel_finds_for_its_libraries(
    built_overlay: BuiltOverlay,
) -> None:
    wheel = built_overlay.result.wheel
    floor = inspect_wheel(wheel, exclude=(FRAMEWORK,))
    assert floor.policy is not None and floor.policy.startswith("manylinux_"), floor
    _, _, _, tags = parse_wheel_filename(wheel.name)
    assert {(t.interpreter, t.abi, t.platform) for t in tags} == {("py3", "none", floor.policy)}
    with zipfile.ZipFile(wheel) as archive:
        (info,) = [n for n in archive.namelist() if n.endswith(".dist-info/WHEEL")]
        assert f"Tag: py3-none-{floor.policy}" in archive.read(info).decode().splitlines()
    # stock TensorFlow's framework library is what keeps it out of every policy when counted
    assert inspect_wheel(wheel).too_new == (FRAMEWORK,)


def test_a_target_this_cpu_cannot_run_loads_nothing_and_says_why_once(
    built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    target, missing = foreign_target()
    result = build_overlay(request_for(target, tmp_path / "dist", built_overlay.python))
    site = unpack(result.wheel, tmp_path)
    ran = run_tf(built_overlay.python, str(site), REGISTERED)
    (line,) = overlay_lines(ran.stderr)
    assert "not loaded, stock kernels run: this CPU lacks" in line
    lacks, _, pending = line.split("lacks ")[1].partition("; ")
    assert set(lacks.split()) & missing
    # built here, where the CPU lacks them: its check is pending, and the line says so
    assert result.receipt.pending and set(result.receipt.pending) & missing
    assert pending == (
        "its special-value check is pending too (built on a CPU without "
        f"{' '.join(result.receipt.pending)}): it runs where the CPU has them, tfbuild overlay "
        "--check"
    )
    assert ran.stdout.split()[0] == "0"  # stock's Exp only
    assert float(ran.stdout.split()[1]) == pytest.approx(2.718281828, rel=1e-6)
    # The special-value check cannot run its kernels here, and says why in the loader's words.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TFBUILD_OVERLAY")}
    with pytest.raises(EnvironmentProblem) as failed:
        check_ops(built_overlay.python, env, str(site))
    assert failed.value.why == f"its loader said: {line}"


@pytest.mark.parametrize(
    ("release", "size", "said"),
    [
        ("2.20.0", None, "this TensorFlow is 2.21.0"),
        (None, 1, "this TensorFlow 2.21.0 is another build (libtensorflow_framework.so.2 is "),
    ],
)
def test_on_another_tensorflow_the_loader_says_how_to_get_an_overlay_for_it(
    built_overlay: BuiltOverlay, tmp_path: Path, release: str | None, size: int | None, said: str
) -> None:
    """The real overlay's kernels beside a loader compiled as for another release, or another build
    of the same release (as tensorflow-text's full tensorflow wheel over tensorflow-cpu's is): it
    registers nothing, and its one line says how to build an overlay for the TensorFlow there."""
    import shutil

    from tfbuild.overlay.compile import KERNELS, LOADER

    receipt = built_overlay.result.receipt
    site = tmp_path / "site-packages"
    shutil.copytree(built_overlay.site, site)
    plugins = site / "tensorflow-plugins"
    defines = [
        f'-DTFB_FEATURES="{",".join(receipt.features)}"',
        f'-DTFB_TARGET="{receipt.target}"',
        f'-DTFB_TENSORFLOW="{release or receipt.tensorflow}"',
        f"-DTFB_FRAMEWORK_SIZE={size or receipt.framework_size}LL",
        f'-DTFB_KERNELS="{KERNELS}"',
        f"-DTFB_KERNEL_COUNT={len(receipt.kernels)}",
        '-DTFB_PENDING=""',  # checked at build time
        f'-DTFB_TOKEN="{"0" * 64}"',
    ]
    assert (plugins / "tfbuild_overlay" / KERNELS).is_file()
    source = Path(__file__).parents[2] / "tfbuild" / "overlay" / "loader.c"
    subprocess.run(
        ["cc", "-x", "c", "-O2", "-fPIC", "-shared", *defines, str(source),
         "-o", str(plugins / LOADER), "-ldl"],
        check=True, capture_output=True,
    )  # fmt: skip
    ran = run_tf(built_overlay.python, str(site), REGISTERED)
    assert ran.stdout.split()[0] == "0"  # stock's Exp only
    (line,) = overlay_lines(ran.stderr)
    assert f"not loaded, stock kernels run: {said}" in line
    assert line.endswith(
        "; an overlay for it: tfbuild overlay --installed --python PYTHON (the Python you run)"
    )


def test_installed_builds_for_the_release_installed_and_refuses_another(
    built_overlay: BuiltOverlay,
) -> None:
    """--installed takes the interpreter's release (a patch release of the recipe's minor is the
    same overlay); a --tf of another minor release is one line, before anything is built."""
    from tests.conftest import one_error_line, run_cli
    from tfbuild.cli.overlay import installed_release
    from tfbuild.core.errors import UsageError

    python = built_overlay.python
    assert installed_release(python, None) == built_overlay.result.receipt.tensorflow == "2.21.0"
    assert installed_release(python, "2.21") == installed_release(python, "2.21.1") == "2.21.0"
    ran = run_cli("overlay", "--installed", "--python", python, "--tf", "2.20")
    line = one_error_line(ran, UsageError.exit_code)
    assert line == (
        f"tfbuild: error: --tf 2.20 asks for another release than the TensorFlow 2.21.0 of "
        f"{python}. Drop --tf (--installed builds for 2.21.0), or pass an interpreter with "
        "TensorFlow 2.20."
    )


def test_an_overlays_environment_is_small_and_shares_its_stock_tensorflow(
    built_overlay: BuiltOverlay,
) -> None:
    """smoke and tune install an overlay into an environment of its own: a few files on top of
    its stock TensorFlow's environment (a .pth file), not another copy of TensorFlow."""
    from tfbuild.core.cache import ENV_MARKER
    from tfbuild.measure.envs import WheelSpec, ensure_env

    stock = ensure_env(WheelSpec.parse("tensorflow-cpu==2.21.0"))
    made = ensure_env(WheelSpec(kind="file", value=str(built_overlay.result.wheel)))
    assert made.location is not None and stock.location is not None
    where = Path(made.location)
    size = sum(p.lstat().st_size for p in where.rglob("*") if p.is_file())
    assert size < 20_000_000, size  # the overlay's two libraries and a venv's scripts
    # the same bytes (a rebuild, another run's) share it: it names the path last used
    marker = (where / ENV_MARKER).read_text().splitlines()
    assert marker == [str(built_overlay.result.wheel), f"on {stock.location}"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run(
        [made.python, "-c", REGISTERED], capture_output=True, text=True, timeout=300, check=True,
        env={**env, "TFBUILD_OVERLAY": "status", "TF_CPP_MIN_LOG_LEVEL": "3"},
    )  # fmt: skip
    assert ran.stdout.split()[0] == "1"
    (line,) = overlay_lines(ran.stderr)
    assert "loaded, " in line
    again = ensure_env(WheelSpec(kind="file", value=str(built_overlay.result.wheel)))
    assert again.reused and again.location == made.location
