"""A complete dump is read, with or without its final newline; a cut one is refused; a corrupt field
is one line and exit 3, never a traceback. All from the real recorded dumps."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import cpuinfo_fixture, cpuinfo_fixtures, one_error_line, run_cli
from tfbuild.core.errors import InputError
from tfbuild.detect.cpuinfo import parse_cpuinfo


def multi_block(text: str, count: int) -> str:
    """The dump of a machine with ``count`` processors: its first processor block repeated, each
    with its own number, then whatever followed the blocks (POWER's and Arm's machine lines)."""
    blocks = text.split("\n\n")
    first, rest = blocks[0], [b for b in blocks[1:] if b.strip()]
    cpus = [re.sub(r"(?m)^(processor\s*:\s*)\d+", rf"\g<1>{n}", first) for n in range(count)]
    return "\n\n".join([*cpus, *rest]) + "\n\n"


@pytest.mark.parametrize("dump", cpuinfo_fixtures(), ids=lambda p: p.name)
@pytest.mark.parametrize("count", [1, 4])
def test_a_dump_without_its_final_newline_is_read_whole(dump: Path, count: int) -> None:
    text = multi_block(dump.read_text(), count) if count > 1 else dump.read_text()
    full = parse_cpuinfo(text, source="x")
    assert parse_cpuinfo(text.rstrip("\n"), source="x") == full


def test_the_cli_reads_a_dump_without_its_final_newline(tmp_path: Path) -> None:
    dump = tmp_path / "node.cpuinfo"
    dump.write_text(cpuinfo_fixture("zen5-vm").read_text().rstrip("\n"))  # a real 2-block dump
    result = run_cli("detect", "--cpuinfo", str(dump), "--json")
    assert result.returncode == 0, result.stderr
    assert result.json()["machines"][0]["microarchitecture"] == "x86_64_v4"


def _flags_last(text: str) -> str:
    """The dump of one processor block ending at its flags line (as some tools store excerpts)."""
    block = text.split("\n\n")[0]
    return block[: block.index("\n", block.index("\nflags") + 1)]


def test_a_multi_processor_dump_ending_at_its_flags_line_is_read() -> None:
    block = _flags_last(cpuinfo_fixture("haswell").read_text())
    text = multi_block(block, 2).rstrip("\n")  # the last line is the second processor's flags
    assert text.splitlines()[-1].startswith("flags")
    info = parse_cpuinfo(text, source="x")
    assert info.flags == parse_cpuinfo(block + "\n", source="x").flags
    assert info.processors_listed == 2


@pytest.mark.parametrize("cut", [1, 4, 9], ids=["mid-word", "mid-word-4", "at-a-space"])
def test_a_last_flags_line_cut_short_of_the_first_is_refused(cut: int, tmp_path: Path) -> None:
    text = multi_block(_flags_last(cpuinfo_fixture("haswell").read_text()), 2).rstrip("\n")
    cut_text = text[:-cut].rstrip(" ")
    assert cut_text.splitlines()[-1].startswith("flags")
    dump = tmp_path / "cut.cpuinfo"
    dump.write_text(cut_text)
    one_error_line(run_cli("detect", "--cpuinfo", str(dump)), 3, "truncated", "'flags'")


def test_a_missing_end_of_the_last_block_is_refused(tmp_path: Path) -> None:
    text = multi_block(cpuinfo_fixture("haswell").read_text(), 3)
    dump = tmp_path / "cut.cpuinfo"
    dump.write_text(text[: text.rindex("\ncpu cores") + 1])  # with its newline: a clean line cut
    one_error_line(
        run_cli("detect", "--cpuinfo", str(dump)),
        3,
        "truncated",
        "last processor block (processor 2) stops before its 'cpu cores' line",
    )


@pytest.mark.parametrize(
    ("machine", "key", "why"),
    [
        ("haswell", "flags", "it ends inside its 'flags' line"),
        # Linux writes 'CPU revision' last in every Arm processor block: its absence shows the cut.
        ("neoverse_n1", "Features", "stops before its 'CPU revision' line"),
    ],
)
def test_a_single_block_cut_inside_its_features_is_refused(
    machine: str, key: str, why: str, tmp_path: Path
) -> None:
    text = cpuinfo_fixture(machine).read_text()
    line_end = text.index("\n", text.index(f"\n{key}") + 1)
    dump = tmp_path / "cut.cpuinfo"
    for cut in (line_end - 3, line_end):  # mid-word, and at the end of the line but its newline
        dump.write_text(text[:cut])
        one_error_line(run_cli("detect", "--cpuinfo", str(dump)), 3, "truncated", why)
    if machine == "haswell":  # x86 reads nothing after the flags: with its newline, it is whole
        dump.write_text(text[: line_end + 1])
        assert run_cli("detect", "--cpuinfo", str(dump), "--json").returncode == 0


@pytest.mark.parametrize(
    ("machine", "pattern", "replacement", "fragment"),
    [
        ("haswell", r"cpu MHz\s*:.*", "cpu MHz\t\t: 1.2.3", "'cpu MHz' line says '1.2.3'"),
        ("haswell", r"cpu cores\s*:.*", "cpu cores\t: -5", "'cpu cores' line says '-5'"),
        ("haswell", r"cpu cores\s*:.*", "cpu cores\t: 0", "'cpu cores' line says '0'"),
        ("haswell", r"siblings\s*:.*", "siblings\t: 99999999999", "'siblings' line says"),
        ("neoverse_n1", r"CPU architecture\s*:.*", "CPU architecture:", "'CPU architecture'"),
    ],
)
def test_a_corrupt_field_is_one_line_and_exit_3(
    machine: str, pattern: str, replacement: str, fragment: str, tmp_path: Path
) -> None:
    text, count = re.subn(rf"(?m)^{pattern}$", replacement, cpuinfo_fixture(machine).read_text())
    assert count == 1
    dump = tmp_path / "bad.cpuinfo"
    dump.write_text(text)
    for command in (("detect",), ("plan", "--skip-disk-check", "--canary")):
        one_error_line(run_cli(*command, "--cpuinfo", str(dump)), 3, fragment)


def test_counts_become_the_plan_only_when_they_are_counts() -> None:
    # The Arm spelling of early arm64 kernels is read, not refused.
    text = cpuinfo_fixture("neoverse_n1").read_text()
    old = re.sub(r"(?m)^CPU architecture\s*:.*$", "CPU architecture: AArch64", text)
    assert parse_cpuinfo(old, source="x").architecture == "aarch64"
    with pytest.raises(InputError, match="not a processor count"):
        parse_cpuinfo(
            re.sub(
                r"(?m)^cpu cores\s*:.*$", "cpu cores\t: 1e3", cpuinfo_fixture("zen3").read_text()
            ),
            source="x",
        )
