"""`tfbuild pick` of overlays: a real overlay (tests/overlays.py) and copies of it whose receipts,
decoded and encoded again, say another target or another TensorFlow.

An overlay is chosen apart from the wheels, for the TensorFlow the interpreter has: it qualifies
only where the CPU has every instruction set its loader checks for and the interpreter has exactly
the TensorFlow build it goes on. The recorded machines' expectations were worked out by hand from
their dumps and archspec's targets; this machine's are read from its /proc/cpuinfo, never assumed.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path

import pytest
from archspec.cpu import TARGETS

from tests.conftest import cpuinfo_fixture, one_error_line, run_cli
from tests.http_server import served
from tests.overlays import (
    BuiltOverlay,
    compiled_for,
    foreign_target,
    overlay_name,
    place_overlay,
    venv_seeing_stock,
)
from tests.pick.conftest import DIST, make_wheel
from tfbuild.cli.wheel_display import print_pick
from tfbuild.core import serial
from tfbuild.core.errors import UnsupportedError
from tfbuild.detect.cpu import NOT_INSTRUCTION_SETS
from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.overlay.compile import LOADER
from tfbuild.pick.compat import Assessment
from tfbuild.pick.listing import load_wheels
from tfbuild.pick.machine import (
    Host,
    InstalledTensorFlow,
    describe_host,
    tensorflow_of,
    with_tensorflow,
)
from tfbuild.pick.rank import PickOptions, pick
from tfbuild.wheel.index import write_index
from tfbuild.wheel.overlay_receipt import read_overlay_receipt
from tfbuild.wheel.receipt import receipt_path

STANDIN_V3 = f"{DIST}-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.whl"
STANDIN_V4 = f"{DIST}-2.21.0+x86_64v4-cp311-cp311-linux_x86_64.whl"
STANDIN_ANY = f"{DIST}-2.21.0+x86_64-cp311-cp311-linux_x86_64.whl"  # runs on any x86-64


def features(target: str, *more: str) -> tuple[str, ...]:
    """What an overlay's loader checks for ``target``: archspec's instruction sets (its names, the
    loader's), and ``more`` that the plan's flags turned on."""
    return tuple(sorted((TARGETS[target].features - NOT_INSTRUCTION_SETS.keys()) | set(more)))


def for_target(built: BuiltOverlay, directory: Path, target: str, *more: str) -> Path:
    """The real overlay as one built for ``target``: its name and receipt say so."""
    return place_overlay(
        built,
        directory,
        name=overlay_name(built, target=target),
        target=target,
        cflags=(f"-march={target.replace('_', '-')}",),
        features=features(target, *more),
        left_out=(),
    )


def as_built(built: BuiltOverlay) -> InstalledTensorFlow:
    """The stock TensorFlow as the real overlay's receipt recorded it (what the probe reports of
    the stock interpreter: test_pick_asks_the_interpreter... checks that)."""
    receipt = built.result.receipt
    return InstalledTensorFlow(
        python=built.python,
        distribution="tensorflow-cpu",
        version=receipt.tensorflow,
        framework_size=receipt.framework_size,
    )


def on(machine: str, tensorflow: InstalledTensorFlow | None, source: str = "") -> Host:
    host = describe_host(cpuinfo=cpuinfo_fixture(machine), python="3.11")
    return dataclasses.replace(
        host, tensorflow=tensorflow, tensorflow_source=source or "import tensorflow in (test)"
    )


def statuses(assessments: Sequence[Assessment]) -> dict[str, tuple[str, str, str]]:
    """file name -> (status, stage, reason)."""
    return {v.wheel.filename: (v.status, v.stage, v.reason) for v in assessments}


# --- recorded machines ----------------------------------------------------------------------------


@pytest.fixture
def levels(built_overlay: BuiltOverlay, tmp_path: Path) -> Path:
    """Overlays for x86_64_v2, v3 and v4 beside two stand-in wheels (v3, v4)."""
    directory = tmp_path / "levels"
    for target in ("x86_64_v2", "x86_64_v3", "x86_64_v4"):
        for_target(built_overlay, directory, target)
    for name in (STANDIN_V3, STANDIN_V4):
        make_wheel(directory, name)
    return directory


def test_the_best_overlay_is_chosen_apart_from_the_wheels(
    levels: Path, built_overlay: BuiltOverlay, capsys: pytest.CaptureFixture[str]
) -> None:
    """Haswell (AVX2, no AVX-512): the v3 wheel is the choice, and the v3 overlay the choice for
    the TensorFlow installed; the v4 overlay's loader would not load it."""
    v2, v3, v4 = (overlay_name(built_overlay, target=f"x86_64_v{n}") for n in (2, 3, 4))
    haswell = on("haswell", as_built(built_overlay))
    # The loader and archspec say sse3 where the kernel's flags say pni: the same instruction set.
    assert "sse3" in features("x86_64_v3") and "sse3" not in haswell.cpu.flags
    assert "pni" in haswell.cpu.flags
    result = pick(load_wheels(str(levels)), haswell)
    assert result.chosen is not None and result.chosen.wheel.filename == STANDIN_V3
    assert [v.wheel.filename for v in result.wheels] == [STANDIN_V3, STANDIN_V4]
    assert result.overlay is not None and result.overlay.wheel.filename == v3
    assert [(v.wheel.filename, v.rank) for v in result.overlays] == [(v3, 1), (v2, 2), (v4, None)]
    status, stage, reason = statuses(result.overlays)[v4]
    assert (status, stage) == ("refused", "cpu")
    assert reason.startswith(
        "its loader would not load it here (stock kernels would run): x86_64_v4 requires features "
        "the CPU lacks: avx512bw"
    )
    assert result.overlay.reason == (
        "x86_64_v3 runs here: it is an ancestor of the detected haswell; the CPU has every "
        "instruction set its loader checks for; goes on the tensorflow-cpu 2.21.0 of "
        f"{built_overlay.python}, the build it was compiled against"
    )
    assert result.overlay_why[1:] == (
        "the most specific CPU target that runs here: x86_64_v3 (over x86_64_v2)",
    )
    assert result.to_install is result.chosen  # --install: the wheel, as before overlays
    print_pick(result)
    shown = capsys.readouterr().out
    assert f"chosen: {STANDIN_V3}" in shown
    assert f"overlay: {v3}" in shown
    assert "TensorFlow: tensorflow-cpu 2.21.0 (import tensorflow in (test))" in shown
    assert "--overlay chooses among overlays alone" in shown
    # "overlays in PATH", or the heading and the path whole on its own line when it is long
    assert "overlays in" in shown and str(levels) in shown.replace("\n  ", " ")
    # --overlay: the wheels are left out, and the overlay is what --install installs.
    only = pick(load_wheels(str(levels)), haswell, PickOptions(overlay=True))
    assert only.chosen is None and only.overlay is not None
    assert only.to_install is only.overlay and only.overlay.wheel.filename == v3
    assert {v.filtered for v in only.wheels} == {"not an overlay (--overlay)"}


def test_an_overlay_whose_loader_checks_more_than_its_target_is_refused(
    built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    """As the plan builds for this host: x86_64_v4 plus the AVX-VNNI its CPU has. A Zen 4 runs
    x86_64_v4 but has no AVX-VNNI, so the loader would not load the kernels there."""
    assert "avx_vnni" not in read_cpuinfo(cpuinfo_fixture("zen4")).flags
    for_target(built_overlay, tmp_path, "x86_64_v4", "avx_vnni")
    result = pick(load_wheels(str(tmp_path)), on("zen4", as_built(built_overlay)))
    assert result.overlay is None
    ((status, stage, reason),) = statuses(result.overlays).values()
    assert (status, stage) == ("refused", "cpu")
    assert reason == (
        "its loader would not load it here (stock kernels would run): it checks the CPU for "
        "avx_vnni, which this CPU lacks (from its receipt)"
    )


# --- virtual machines that hide system instructions ----------------------------------------------


def as_compiled(built: BuiltOverlay, directory: Path, target: str, march: str) -> Path:
    """The real overlay as one built for ``target``: its receipt's flags, features and left-out
    instruction sets are what the overlay's build compiles ``-march=MARCH`` with here."""
    compiled = compiled_for(march, directory / "scratch")
    return place_overlay(
        built,
        directory / "overlays",
        name=overlay_name(built, target=target),
        target=target,
        cflags=compiled.cflags,
        features=compiled.features,
        left_out=compiled.left_out,
    )


def test_a_zen4_overlay_is_chosen_on_a_zen5_vm_that_hides_system_instructions(
    built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    """The Zen 5 VM hides pku and rdseed (and flush_l1d), so a zen4 wheel is refused there
    (tests/pick/test_isa.py); the zen4 overlay's kernels are compiled without them, its loader
    does not check them, and pick chooses it, saying which it lacks and why that is fine."""
    wheel = as_compiled(built_overlay, tmp_path, "zen4", "znver4")
    receipt = read_overlay_receipt(receipt_path(wheel), wheel=wheel)
    assert {"pku", "rdseed"} <= {o.instruction_set for o in receipt.left_out}
    assert {"-mno-pku", "-mno-rdseed"} <= set(receipt.cflags)
    assert {"pku", "rdseed"}.isdisjoint(receipt.features)
    assert {"avx512f", "avx512_bf16", "avx512_vnni", "vaes"} <= set(receipt.features)
    vm = on("epyc-zen5-vm", as_built(built_overlay))
    assert {"pku", "rdseed", "flush_l1d"}.isdisjoint(vm.cpu.flags) and vm.target == "x86_64_v4"
    result = pick(load_wheels(str(wheel.parent)), vm)
    assert result.overlay is not None and result.overlay.wheel.filename == wheel.name
    assert result.overlay.reason.startswith(
        "zen4 runs here: the CPU has every instruction set it needs; it lacks only flush_l1d (a "
        "cache-flush command the kernel writes to a model-specific register), pku (memory "
        "protection keys (RDPKRU, WRPKRU); left out: -mno-pku), rdseed (hardware random seeds; "
        "left out: -mno-rdseed), which its kernels do not contain; the CPU has every instruction "
        "set its loader checks for; "
    )


def test_a_sapphirerapids_overlay_loads_on_its_vm_and_is_refused_without_amx(
    built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    """The Sapphire Rapids VM (tests/fixtures/cpuinfo/README.md) hides pku and waitpkg, so archspec
    calls it an icelake; the sapphirerapids overlay is chosen there. A Cascade Lake lacks AMX and
    newer AVX-512 sets, and the refusal names only those, not the system instructions it lacks
    too (movdiri, serialize, waitpkg...)."""
    wheel = as_compiled(built_overlay, tmp_path, "sapphirerapids", "sapphirerapids")
    receipt = read_overlay_receipt(receipt_path(wheel), wheel=wheel)
    assert {"amx_tile", "amx_int8", "amx_bf16"} <= set(receipt.features)
    assert {"waitpkg", "serialize", "movdiri"} <= {o.instruction_set for o in receipt.left_out}
    spr = on("xeon-sapphirerapids-vm", as_built(built_overlay))
    assert {"pku", "waitpkg"}.isdisjoint(spr.cpu.flags) and spr.target == "icelake"
    chosen = pick(load_wheels(str(wheel.parent)), spr).overlay
    assert chosen is not None and chosen.wheel.filename == wheel.name
    assert chosen.reason.startswith(
        "sapphirerapids runs here: the CPU has every instruction set it needs; it lacks only "
        "waitpkg (user-mode waits (UMWAIT, TPAUSE); left out: -mno-waitpkg), which its kernels "
        "do not contain; "
    )
    cascadelake = on("cascadelake", as_built(built_overlay))
    refused = pick(load_wheels(str(wheel.parent)), cascadelake)
    assert refused.overlay is None
    ((status, stage, reason),) = statuses(refused.overlays).values()
    assert (status, stage) == ("refused", "cpu")
    assert {"movdiri", "serialize", "waitpkg"}.isdisjoint(cascadelake.cpu.flags)
    assert reason == (
        "its loader would not load it here (stock kernels would run): sapphirerapids requires "
        "features the CPU lacks: amx_bf16, amx_int8, amx_tile, avx512_bf16, avx512_bitalg, "
        "avx512_vbmi2, avx512_vpopcntdq, avx512ifma, avx512vbmi, gfni, sha_ni, vaes, vpclmulqdq"
    )


@pytest.mark.parametrize(
    ("changes", "release", "said"),
    [
        ({"tensorflow": "2.20.0"}, "2.20.0", "goes on tensorflow-cpu 2.20.0, but {python} has "),
        ({"distribution": "tensorflow"}, "2.21.0", "goes on tensorflow 2.21.0, but {python} has "),
        (
            {"framework_size": -1},  # the real size + 1, below
            "2.21.0",
            "goes on the tensorflow-cpu 2.21.0 it was compiled against, but the tensorflow-cpu "
            "2.21.0 of {python} is another build (libtensorflow_framework.so.2: {size} bytes, not "
            "{other}); its loader would not load it here (stock kernels would run)",
        ),
    ],
)
def test_an_overlay_for_another_tensorflow_is_refused(
    built_overlay: BuiltOverlay, tmp_path: Path, changes: dict[str, object], release: str, said: str
) -> None:
    size = built_overlay.result.receipt.framework_size
    if changes.get("framework_size") == -1:
        changes = {"framework_size": size + 1}
    name = overlay_name(built_overlay, release=release, target="x86_64_v3")
    place_overlay(
        built_overlay, tmp_path, name=name, target="x86_64_v3", features=features("x86_64_v3"),
        **changes,
    )  # fmt: skip
    result = pick(load_wheels(str(tmp_path)), on("haswell", as_built(built_overlay)))
    ((status, stage, reason),) = statuses(result.overlays).values()
    assert (status, stage) == ("refused", "tensorflow")
    assert reason.startswith(said.format(python=built_overlay.python, size=size, other=size + 1))
    if "framework_size" not in changes:
        assert reason.endswith("has tensorflow-cpu 2.21.0")
    assert result.to_install is None
    error = result.no_choice()
    assert isinstance(error, UnsupportedError)
    assert error.line().startswith(f"no overlay in {tmp_path} runs on haswell (")


def test_without_a_tensorflow_to_go_on_every_overlay_says_why(
    built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    for_target(built_overlay, tmp_path, "x86_64_v3")
    source = load_wheels(str(tmp_path))
    need = "goes on tensorflow-cpu 2.21.0, but "
    # An interpreter without TensorFlow, asked for real: tfbuild's own (its venv has none).
    if find_spec("tensorflow") is not None:
        pytest.skip("this interpreter has TensorFlow")
    found, why = tensorflow_of(sys.executable)
    assert (found, why) == (None, f"{sys.executable} has no TensorFlow installed")
    reason = pick(source, on("haswell", None, why)).overlays[0].reason
    assert reason == f"{need}{sys.executable} has no TensorFlow installed"
    # A --cpuinfo machine, or a --python version, names no interpreter to ask.
    dump = describe_host(cpuinfo=cpuinfo_fixture("haswell"), python="3.11")
    unknown = with_tensorflow(dump, interpreter=None, python="3.11")
    assert unknown.tensorflow is None
    assert pick(source, unknown).overlays[0].reason == (
        f"{need}the TensorFlow of a --cpuinfo machine is not known; name an interpreter with the "
        "same TensorFlow with --python PATH"
    )
    here = with_tensorflow(describe_host(python="3.11"), interpreter=None, python="3.11")
    assert here.tensorflow_source.startswith("--python 3.11 names a version, not an interpreter")


def test_an_overlay_without_a_usable_receipt_is_refused(
    built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    wheel = for_target(built_overlay, tmp_path, "x86_64_v3")
    receipt = receipt_path(wheel)
    receipt.write_text(receipt.read_text().replace('"cflags": [', '"cflags": ["; rm -rf /", ', 1))
    result = pick(load_wheels(str(tmp_path)), on("haswell", as_built(built_overlay)))
    assert result.warnings == (
        f"receipt {receipt} not used: its cflags is not what tfbuild writes there",
    )
    no_receipt = (
        "refused",
        "tensorflow",
        "no usable receipt beside it says which TensorFlow build it goes on (an overlay is judged "
        "by its receipt; tfbuild overlay writes it)",
    )
    assert statuses(result.overlays)[wheel.name] == no_receipt
    receipt.unlink()
    result = pick(load_wheels(str(tmp_path)), on("haswell", as_built(built_overlay)))
    assert statuses(result.overlays)[wheel.name] == no_receipt


def test_an_index_page_leads_to_the_overlays_receipt(
    built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    """tfbuild index links the wheels only: pick reads an overlay's receipt from beside it, on a
    local page and over HTTP."""
    dist = tmp_path / "dist"
    wheel = for_target(built_overlay, dist, "x86_64_v3")
    write_index(dist)
    expected = load_wheels(str(dist)).wheels[0].overlay
    assert expected is not None and expected.target == "x86_64_v3"
    local = load_wheels(str(dist / "index.html")).wheels[0]
    assert (local.overlay, local.from_index) == (expected, True)
    with served(dist) as url:
        remote = load_wheels(f"{url}/index.html").wheels[0]
    assert (remote.overlay, remote.receipt_source) == (expected, f"{url}/{wheel.stem}.json")
    result = pick(load_wheels(str(dist / "index.html")), on("haswell", as_built(built_overlay)))
    assert result.overlay is not None and result.overlay.wheel.filename == wheel.name


# --- this machine, the real interpreter ---------------------------------------------------------------


def test_pick_asks_the_interpreter_then_installs_the_overlay_that_loads_here(
    built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    """The real overlay (this host's target) beside one for a target this CPU cannot run, and a
    wheel that runs anywhere. The interpreter sees the stock TensorFlow (a venv whose .pth adds the
    stock environment's site-packages): pick imports it there to judge the overlays, and with
    --overlay --install pip installs the overlay (not the wheel) offline, its requirement met by
    the TensorFlow it was judged on."""
    dist = tmp_path / "dist"
    real = place_overlay(built_overlay, dist)
    foreign, missing = foreign_target()
    for_target(built_overlay, dist, foreign)
    make_wheel(dist, STANDIN_ANY)
    python, site = venv_seeing_stock(built_overlay.python, tmp_path)
    args = ("--overlay", "--install", "--python", str(python), "--pip-arg=--no-index")
    result = run_cli("pick", str(dist), *args, "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    stock = dataclasses.replace(as_built(built_overlay), python=str(python))
    assert data["host"]["tensorflow"] == serial.to_data(stock)
    assert data["host"]["tensorflow_source"] == f"import tensorflow in {python}"
    assert data["chosen"] is None  # --overlay: the wheel is left out
    assert [(w["filename"], w["status"]) for w in data["wheels"]] == [(STANDIN_ANY, "filtered")]
    assert data["overlay"]["filename"] == real.name
    assert data["overlay"]["overlay"]["distribution"] == "tensorflow-cpu"
    assert data["overlay"]["overlay"]["features"] == list(built_overlay.result.receipt.features)
    assert data["overlay_why"][0].endswith(
        f"goes on the tensorflow-cpu 2.21.0 of {python}, the build it was compiled against"
    )
    refused = data["overlays"][1]
    assert (refused["filename"], refused["status"], refused["stage"]) == (
        overlay_name(built_overlay, target=foreign),
        "refused",
        "cpu",
    )
    vendor, here = TARGETS[foreign].vendor, read_cpuinfo(Path("/proc/cpuinfo")).vendor
    if vendor not in (here, "generic"):  # refused as a wheel of another vendor's target is
        assert refused["reason"] == (
            f"not for this CPU: {foreign} targets vendor {vendor}, but the CPU vendor is {here}"
        )
    else:
        assert refused["reason"].startswith("its loader would not load it here")
        assert set(refused["reason"].replace(",", " ").split()) & missing
    # What pip installed: the overlay, into that interpreter's site-packages.
    assert (data["install"]["wheel"], data["install"]["returncode"]) == (real.name, 0)
    assert (site / "tensorflow-plugins" / LOADER).is_file()
    version = "from importlib.metadata import version; print(version('tfbuild-overlay'))"
    shown = subprocess.run([str(python), "-c", version], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == real.name.split("-")[1]
    assert not list(site.glob(f"{DIST}*"))
    # Nothing to go on: without the stock environment no overlay runs, and nothing is installed.
    (site / "stock.pth").unlink()
    refused_run = run_cli("pick", str(dist), *args)
    one_error_line(
        refused_run, UnsupportedError.exit_code, f"no overlay in {dist} runs",
        f"goes on tensorflow-cpu 2.21.0, but {python} has no TensorFlow installed",
        among_others=True,
    )  # fmt: skip
    assert "installed tfbuild_overlay" not in refused_run.stdout
    assert "no wheel runs here" not in refused_run.stdout  # none was asked for
    assert "no overlay runs here on the TensorFlow installed" in refused_run.stdout
    assert refused_run.stderr.rstrip().endswith(
        "An overlay goes on an installed TensorFlow: name that interpreter with --python PATH."
    )
    # Without --python, pick asks tfbuild's own interpreter, and says that is what it did.
    if find_spec("tensorflow") is None:
        own = run_cli("pick", str(dist), "--overlay")
        line = one_error_line(
            own, UnsupportedError.exit_code, f"{sys.executable} has no TensorFlow installed",
            among_others=True,
        )  # fmt: skip
        assert line.endswith(
            "pick asked tfbuild's own interpreter, which is not the one you run TensorFlow "
            "with; name that interpreter with --python PATH."
        )
