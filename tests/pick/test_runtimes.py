"""`tfbuild pick` and the C/C++ runtimes: a wheel whose receipt's floor (the GLIBC_ and GLIBCXX_
symbol versions auditwheel found in it) is above the machine's glibc or libstdc++ would not load.

This machine's glibc and libstdc++ are read in the tests (never written down): the floors are made
one minor version above or equal to them.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from tests import receipts
from tests.conftest import cpuinfo_fixture, one_error_line, run_cli
from tests.pick.conftest import DIST, WHEELS, make_wheel
from tfbuild.core import serial
from tfbuild.core.errors import UsageError
from tfbuild.detect.system import glibc_version
from tfbuild.pick.listing import load_wheels
from tfbuild.pick.machine import Host, describe_host, libstdcxx_here, newest_glibcxx
from tfbuild.pick.rank import PickResult, pick
from tfbuild.pick.report import host_summary, pick_report
from tfbuild.wheel.receipt import WheelFloor

LINUX = WHEELS["v3"]  # x86_64_v3, linux_x86_64: no glibc in its platform tag


def one_above(version: str) -> str:
    """``2.36`` -> ``2.37``, ``3.4.30`` -> ``3.4.31``: the last part one higher."""
    *head, last = version.split(".")
    return ".".join([*head, str(int(last) + 1)])


def floored(
    directory: Path,
    filename: str = LINUX,
    *,
    glibc: str | None = None,
    libstdcxx: str | None = None,
) -> Path:
    """A stand-in wheel whose receipt records a floor (as the build writes it after auditwheel)."""
    directory.mkdir(parents=True, exist_ok=True)
    wheel = make_wheel(directory, filename)
    floor = WheelFloor(
        glibc=glibc,
        libstdcxx=libstdcxx,
        libgcc="3.0",
        policy=None,
        too_new=(f"GLIBC_{glibc}",) if glibc else (),
        tool="auditwheel 6.8.2",
    )
    label = filename.split("-")[1].partition("+")[2] or None
    receipts.write_receipt(wheel, target="x86_64_v3", label=label, floor=floor)
    return directory


def haswell(*, glibc: str | None = None, libstdcxx: str | None = None) -> Host:
    return describe_host(
        cpuinfo=cpuinfo_fixture("haswell"), python="3.11", glibc=glibc, libstdcxx=libstdcxx
    )


def only(result: PickResult) -> tuple[str, str, str]:
    (assessment,) = result.wheels
    return assessment.status, assessment.stage, assessment.reason


def this_x86_64_glibc() -> str:
    detected = glibc_version()
    if platform.machine() != "x86_64" or detected is None:
        pytest.skip("needs an x86-64 glibc host")
    return detected


# --- glibc, stated for a --cpuinfo machine ---------------------------------------------------------


def test_a_floor_above_the_stated_glibc_is_refused(tmp_path: Path) -> None:
    source = load_wheels(str(floored(tmp_path, glibc="2.39")))
    refused = pick(source, haswell(glibc="2.28"))
    assert refused.chosen is None
    assert only(refused) == (
        "refused",
        "glibc",
        "needs glibc 2.39 or newer (its receipt: GLIBC_2.39 symbols), but this machine has "
        "glibc 2.28 (--glibc)",
    )
    assert "2.39" in refused.no_choice().line()
    # The same wheel on a machine with glibc 2.39 (or newer) runs.
    for enough in ("2.39", "2.40"):
        chosen = pick(source, haswell(glibc=enough)).chosen
        assert chosen is not None and chosen.wheel.filename == LINUX


def test_without_glibc_a_cpuinfo_machine_leaves_it_unchecked_and_says_so(tmp_path: Path) -> None:
    host = haswell()
    assert (host.glibc, host.glibc_checked) == (None, False)
    assert "--glibc X.Y" in host.glibc_source
    data = serial.to_data(host_summary(host))
    assert (data["glibc"], data["glibc_checked"]) == (None, False)
    assert data["glibc_source"] == host.glibc_source
    result = pick(load_wheels(str(floored(tmp_path, glibc="2.39"))), host)
    assert result.chosen is not None


def test_the_stricter_of_tag_and_floor_decides(tmp_path: Path) -> None:
    # Tagged manylinux_2_17, but its receipt says GLIBC_2.39 symbols: the floor decides.
    tagged_low = f"{DIST}-2.21.0+x86_64v3-cp311-cp311-manylinux_2_17_x86_64.whl"
    low = load_wheels(str(floored(tmp_path / "low", tagged_low, glibc="2.39")))
    assert only(pick(low, haswell(glibc="2.28")))[2] == (
        "needs glibc 2.39 or newer (its receipt: GLIBC_2.39 symbols), but this machine has "
        "glibc 2.28 (--glibc)"
    )
    assert only(pick(low, haswell(glibc="2.17")))[2].startswith("needs glibc 2.39 or newer")
    # Tagged manylinux_2_35 with a floor of 2.17: the tag decides.
    tagged_high = f"{DIST}-2.21.0+x86_64v3-cp311-cp311-manylinux_2_35_x86_64.whl"
    high = load_wheels(str(floored(tmp_path / "high", tagged_high, glibc="2.17")))
    assert only(pick(high, haswell(glibc="2.28"))) == (
        "refused",
        "glibc",
        "needs glibc 2.35 or newer (manylinux_2_35_x86_64), but this machine has glibc 2.28 "
        "(--glibc)",
    )
    # Both met: it runs.
    assert pick(high, haswell(glibc="2.35")).chosen is not None


def test_a_receipt_without_a_floor_still_works(tmp_path: Path) -> None:
    # Receipts written before the floor existed: "floor": null, or no key at all.
    for name in ("null", "absent"):
        (tmp_path / name).mkdir()
    wheel = make_wheel(tmp_path / "null", LINUX)
    receipts.write_receipt(wheel, target="x86_64_v3", label="x86_64v3")
    bare = make_wheel(tmp_path / "absent", LINUX)
    data = receipts.make_receipt(bare, target="x86_64_v3", label="x86_64v3")
    del data["floor"]
    receipts.write_receipt(bare, data)
    for directory in (tmp_path / "null", tmp_path / "absent"):
        result = pick(load_wheels(str(directory)), haswell(glibc="2.17", libstdcxx="3.4.19"))
        assert result.warnings == ()
        assert result.chosen is not None and result.chosen.wheel.receipt is not None
        assert result.chosen.wheel.receipt.floor is None
        assert serial.to_data(pick_report(result))["chosen"]["receipt"]["floor"] is None


@pytest.mark.parametrize("text", ["abc", "2", "2.28.1", "2.x", ""])
def test_a_bad_glibc_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match=r"is not a glibc version"):
        haswell(glibc=text)


# --- glibc on this machine -------------------------------------------------------------------------


def test_this_machines_glibc_decides(tmp_path: Path) -> None:
    detected = this_x86_64_glibc()
    above, equal = one_above(detected), detected
    here = describe_host(python="3.11", driver_cuda="none")
    assert (here.glibc, here.glibc_checked, here.glibc_source) == (detected, True, "this machine")
    refused = pick(load_wheels(str(floored(tmp_path / "above", glibc=above))), here)
    assert only(refused) == (
        "refused",
        "glibc",
        f"needs glibc {above} or newer (its receipt: GLIBC_{above} symbols), but this machine "
        f"has glibc {detected}",
    )
    runs = pick(load_wheels(str(floored(tmp_path / "equal", glibc=equal))), here)
    assert runs.chosen is not None


def test_glibc_on_this_machine_overrides_the_detected_one(tmp_path: Path) -> None:
    detected = this_x86_64_glibc()
    here = describe_host(python="3.11", driver_cuda="none", glibc="2.28")
    assert (here.glibc, here.glibc_checked) == ("2.28", True)
    assert here.glibc_source == f"--glibc (this machine's own C library: glibc {detected})"
    result = pick(load_wheels(str(floored(tmp_path, glibc="2.29"))), here)
    assert only(result)[2].endswith("but this machine has glibc 2.28 (--glibc)")


# --- libstdc++ -------------------------------------------------------------------------------------


def test_this_machines_libstdcxx_is_read_from_its_version_definitions() -> None:
    version, source = libstdcxx_here()
    if version is None:
        pytest.skip(f"no libstdc++ here: {source}")
    assert version.startswith("3.4.")
    library = Path(source.split(" (")[0])
    assert library.name.startswith("libstdc++.so")
    assert newest_glibcxx(library) == version
    # The interpreter defines no GLIBCXX_ versions.
    assert newest_glibcxx(Path(sys.executable).resolve()) is None


def test_a_libstdcxx_floor_above_this_machines_is_refused(tmp_path: Path) -> None:
    version, source = libstdcxx_here()
    if version is None or platform.machine() != "x86_64":
        pytest.skip(f"needs an x86-64 host with libstdc++: {source}")
    above = one_above(version)
    here = describe_host(python="3.11", driver_cuda="none")
    assert (here.libstdcxx, here.libstdcxx_source) == (version, source)
    assert serial.to_data(host_summary(here))["libstdcxx_checked"] is True
    refused = pick(load_wheels(str(floored(tmp_path / "above", libstdcxx=above))), here)
    assert only(refused) == (
        "refused",
        "glibc",
        f"needs libstdc++ with GLIBCXX_{above} (its receipt), but this machine's libstdc++ "
        f"provides only GLIBCXX_{version}",
    )
    runs = pick(load_wheels(str(floored(tmp_path / "equal", libstdcxx=version))), here)
    assert runs.chosen is not None


def test_libstdcxx_for_a_cpuinfo_machine(tmp_path: Path) -> None:
    source = load_wheels(str(floored(tmp_path, glibc="2.17", libstdcxx="3.4.32")))
    unstated = haswell()
    assert unstated.libstdcxx is None
    assert serial.to_data(host_summary(unstated))["libstdcxx_checked"] is False
    assert "--libstdcxx X.Y.Z" in unstated.libstdcxx_source
    assert pick(source, unstated).chosen is not None
    old = haswell(glibc="2.28", libstdcxx="3.4.25")
    assert only(pick(source, old)) == (
        "refused",
        "glibc",
        "needs libstdc++ with GLIBCXX_3.4.32 (its receipt), but this machine's libstdc++ provides "
        "only GLIBCXX_3.4.25 (--libstdcxx)",
    )
    assert pick(source, haswell(libstdcxx="GLIBCXX_3.4.32")).chosen is not None
    with pytest.raises(UsageError, match=r"--libstdcxx '13.x' is not a GLIBCXX version"):
        haswell(libstdcxx="13.x")


# --- through the CLI --------------------------------------------------------------------------------


def test_cli_glibc_refuses_and_chooses(tmp_path: Path) -> None:
    directory = floored(tmp_path, glibc="2.39")
    cpuinfo = str(cpuinfo_fixture("haswell"))
    old = run_cli(
        "pick", str(directory), "--cpuinfo", cpuinfo, "--python", "3.11", "--glibc", "2.28",
        "--json",
    )  # fmt: skip
    assert old.returncode == 4, old.stderr
    data = old.json()
    assert (data["host"]["glibc"], data["host"]["glibc_source"]) == ("2.28", "--glibc")
    assert data["host"]["glibc_checked"] is True
    (wheel,) = data["wheels"]
    assert (wheel["status"], wheel["stage"]) == ("refused", "glibc")
    assert "needs glibc 2.39 or newer" in wheel["reason"]
    assert wheel["receipt"]["floor"]["glibc"] == "2.39"
    assert "needs glibc 2.39 or newer" in one_error_line(old, report=True)
    new = run_cli(
        "pick", str(directory), "--cpuinfo", cpuinfo, "--python", "3.11", "--glibc", "2.39",
    )  # fmt: skip
    assert new.returncode == 0, new.stderr
    assert f"chosen: {LINUX}" in new.stdout
    unstated = run_cli("pick", str(directory), "--cpuinfo", cpuinfo, "--python", "3.11", "--json")
    assert unstated.returncode == 0, unstated.stderr
    host = unstated.json()["host"]
    assert (host["glibc"], host["glibc_checked"], host["libstdcxx"]) == (None, False, None)
    assert host["glibc_source"].startswith("not checked: ")
    assert host["libstdcxx_source"].startswith("not checked: ")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--glibc", "abc", "--glibc 'abc' is not a glibc version"),
        ("--libstdcxx", "new", "--libstdcxx 'new' is not a GLIBCXX version"),
    ],
)
def test_cli_bad_runtime_versions_exit_2(
    standin_dir: Path, option: str, value: str, message: str
) -> None:
    result = run_cli("pick", str(standin_dir), option, value)
    assert result.returncode == 2
    assert one_error_line(result).startswith(f"tfbuild: error: {message}. ")
