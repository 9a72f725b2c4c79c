"""Reading /proc/cpuinfo dumps: every recorded machine named right, every bad file refused clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import (
    NO_FILE_KINDS,
    cpuinfo_fixture,
    cpuinfo_fixtures,
    plant_no_file,
    run_cli,
    run_cli_process,
)
from tfbuild.core.errors import InputError
from tfbuild.detect.cpuinfo import parse_cpuinfo, read_cpuinfo

# The README of the dumps: the Zen 5 VM hides flush_l1d, pku and rdseed, so archspec (and tfbuild)
# name it by its generic level; the Sapphire Rapids VM hides pku and waitpkg, so it is an icelake.
EXPECTED_OVERRIDES = {
    "linux-debian12-epyc-zen5-vm": "x86_64_v4",
    "linux-debian12-xeon-sapphirerapids-vm": "icelake",
}


def _expected(path: Path) -> str:
    return EXPECTED_OVERRIDES.get(path.name, path.name.split("-")[-1])


def _architecture(name: str) -> str:
    if "neoverse" in name:
        return "aarch64"
    if "power" in name:
        return "ppc64"
    return "x86_64"


@pytest.mark.parametrize("dump", cpuinfo_fixtures(), ids=lambda p: p.name)
def test_every_recorded_machine_is_named_right_by_the_cli(dump: Path) -> None:
    result = run_cli("detect", "--cpuinfo", str(dump), "--json")
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["live"] is False
    (machine,) = report["machines"]
    assert machine["microarchitecture"] == _expected(dump)
    assert machine["cpu"]["architecture"] == _architecture(dump.name)
    # A dump describes another machine: this host's memory and GPUs must not be reported beside it.
    assert report["system"] is None
    assert report["cuda"] is None


def test_the_fixture_folder_holds_all_three_architectures() -> None:
    arches = {read_cpuinfo(p).architecture for p in cpuinfo_fixtures()}
    assert arches == {"x86_64", "aarch64", "ppc64"}


def test_x86_dump_fields() -> None:
    info = read_cpuinfo(cpuinfo_fixture("haswell"))
    assert info.vendor == "GenuineIntel"
    assert info.brand == "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz"
    assert (info.family, info.model) == (6, 63)
    assert "avx2" in info.flags
    assert "fma" in info.flags
    assert info.physical_cores == 12
    assert info.cache_size_kib == 30720


def test_full_dump_counts_every_processor() -> None:
    info = read_cpuinfo(cpuinfo_fixture("zen5-vm"))
    assert info.processors_listed == 2
    assert info.logical_cpus == 2
    assert info.physical_cores == 2
    assert info.sockets == 1


def test_arm_dump_uses_archspec_vendor_names() -> None:
    info = read_cpuinfo(cpuinfo_fixture("neoverse_v2"))
    assert info.architecture == "aarch64"
    assert info.vendor == "ARM"
    assert info.cpu_part == "0xd4f"
    assert "sve2" in info.flags


def test_power_dump_generation_and_unknown_byte_order() -> None:
    info = read_cpuinfo(cpuinfo_fixture("power9"))
    assert info.generation == 9
    assert info.byte_order_known is False


# --- bad input: one line, a distinct exit code, no traceback ------------------------------------


def _assert_one_line_error(result, code: int, *fragments: str) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tfbuild: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_missing_file(tmp_path: Path) -> None:
    result = run_cli("detect", "--cpuinfo", str(tmp_path / "nope"), "--json")
    _assert_one_line_error(result, 3, "does not exist", "cat /proc/cpuinfo")
    assert result.stdout == ""


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    _assert_one_line_error(run_cli("detect", "--cpuinfo", str(empty)), 3, "empty")


def test_binary_file(tmp_path: Path) -> None:
    binary = tmp_path / "binary"
    binary.write_bytes(Path("/bin/true").read_bytes()[:4096])
    _assert_one_line_error(run_cli("detect", "--cpuinfo", str(binary)), 3, "binary")


def test_truncated_inside_the_flags_line(tmp_path: Path) -> None:
    text = cpuinfo_fixture("haswell").read_text()
    cut = text.index("flags") + 60
    truncated = tmp_path / "truncated"
    truncated.write_text(text[:cut])
    _assert_one_line_error(run_cli("detect", "--cpuinfo", str(truncated)), 3, "truncated")


def test_truncated_before_the_flags_line(tmp_path: Path) -> None:
    text = cpuinfo_fixture("haswell").read_text()
    truncated = tmp_path / "truncated"
    truncated.write_text(text[: text.index("flags")])
    _assert_one_line_error(run_cli("detect", "--cpuinfo", str(truncated)), 3, "no 'flags' line")


def test_not_a_cpuinfo_file(tmp_path: Path) -> None:
    other = tmp_path / "passwd"
    other.write_text("root:x:0:0:root:/root:/bin/bash\n")
    _assert_one_line_error(run_cli("detect", "--cpuinfo", str(other)), 3, "not a /proc/cpuinfo")


def test_a_directory(tmp_path: Path) -> None:
    _assert_one_line_error(run_cli("detect", "--cpuinfo", str(tmp_path)), 3, "directory")


def test_unknown_compiler() -> None:
    result = run_cli("detect", "--compiler", "gcx-12", "--json")
    _assert_one_line_error(result, 2, "'gcx' is not a compiler", "Did you mean 'gcc'?")


def test_malformed_compiler_version() -> None:
    _assert_one_line_error(run_cli("detect", "--compiler", "gcc-twelve"), 2, "NAME-VERSION")


def test_unknown_target_suggests_names() -> None:
    result = run_cli("detect", "--target", "x86-64-v3", "--json")
    _assert_one_line_error(result, 2, "unknown --target 'x86-64-v3'", "x86_64_v3")


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    # A process: the traceback and the exit code are the interpreter's, for what leaves main().
    result = run_cli_process("--debug", "detect", "--cpuinfo", str(tmp_path / "nope"))
    assert result.returncode == 1  # --debug lets the InputError through: Python exits 1
    assert "Traceback" in result.stderr
    assert "InputError" in result.stderr


def test_garbage_in_flags_is_refused() -> None:
    text = "processor : 0\nvendor_id : GenuineIntel\ncpu family : 6\nflags : fpu lm \x7f$(rm)\n"
    with pytest.raises(InputError, match="garbage"):
        parse_cpuinfo(text, source="x")


def test_errors_print_as_what_why_fix() -> None:
    error = InputError("cannot use x", why="it is\nempty", fix="Do y.")
    assert error.line() == "cannot use x: it is empty. Do y."
    assert InputError.exit_code == 3


def test_dump_from_standard_input() -> None:
    dump = cpuinfo_fixture("alderlake")
    proc = run_cli("detect", "--cpuinfo", "-", "--json", input=dump.read_bytes())
    assert proc.returncode == 0, proc.stderr
    (machine,) = json.loads(proc.stdout)["machines"]
    assert machine["microarchitecture"] == "alderlake"
    assert machine["cpu"]["source"] == "<stdin>"


@pytest.mark.parametrize("kind", NO_FILE_KINDS)
def test_a_fifo_or_a_link_to_dev_zero_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    """Issue 21, item 15: a FIFO with no writer hung `detect --cpuinfo`; /dev/zero has no end."""
    path = tmp_path / "node.cpuinfo"
    said = f"{path} is {plant_no_file(path, kind)}; tfbuild reads regular files only"
    result = run_cli("detect", "--cpuinfo", str(path), "--json", timeout=60)
    _assert_one_line_error(
        result, 3, f"--cpuinfo {path} is not a file: {said}", "cat /proc/cpuinfo"
    )
    assert result.stdout == ""


def test_standard_input_is_read_within_the_bound() -> None:
    too_large = b"x" * (16 * 2**20 + 1)
    proc = run_cli("detect", "--cpuinfo", "-", "--json", input=too_large)
    assert proc.returncode == 3
    assert proc.stderr.splitlines() == [
        "tfbuild: error: --cpuinfo - is too large: standard input is larger than 16 MiB. Save one "
        "on the machine with 'cat /proc/cpuinfo > node.cpuinfo' and pass that file."
    ]
