"""A complete dump is read, with or without its final newline; a cut one is refused; a corrupt field
is one line and exit 3, never a traceback. All from the real recorded dumps."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import cpuinfo_fixture, cpuinfo_fixtures, one_error_line, run_cli
from tfbuild.core.errors import InputError
from tfbuild.detect import cpu
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


def test_an_arm_dump_cut_inside_its_features_is_refused(tmp_path: Path) -> None:
    # Linux writes 'CPU revision' last in every Arm processor block, after the implementer and part
    # this parser reads: a dump ending at its Features line has lost them, so it is refused.
    text = cpuinfo_fixture("neoverse_n1").read_text()
    line_end = text.index("\n", text.index("\nFeatures") + 1)
    dump = tmp_path / "cut.cpuinfo"
    for cut in (line_end - 3, line_end):  # mid-word, and at the end of the line but its newline
        dump.write_text(text[:cut])
        one_error_line(
            run_cli("detect", "--cpuinfo", str(dump)),
            3,
            "truncated",
            "stops before its 'CPU revision' line",
        )


# --- one processor block whose last line is its flags line, without a final newline ----------------

CASCADELAKE = cpuinfo_fixture("cascadelake")  # archspec's own test data, as archspec ships it


def _flags_line(text: str) -> tuple[int, list[str]]:
    """Where the flags line's value starts, and its tokens."""
    start = text.index(":", text.index("\nflags")) + 1
    return start, text[start:].split("\n", 1)[0].split()


def _cut_inside(text: str, flag: str, prefix: str) -> str:
    """``text`` cut inside the flags line's ``flag``, just after its first letters ``prefix``."""
    assert flag.startswith(prefix)
    start, tokens = _flags_line(text)
    assert flag in tokens
    at = text.index(f" {flag}", start) + 1
    if at + len(flag) < len(text):
        assert text[at + len(flag)] == " "  # the whole word, not the start of a longer one
    return text[: at + len(prefix)]


def test_archspecs_one_block_dump_is_read_whole_without_a_warning() -> None:
    text = CASCADELAKE.read_text()
    # What makes it the case of issue 21 item 21: one block, flags last, no final newline.
    assert text.count("processor") == 1
    assert text.splitlines()[-1].startswith("flags") and not text.endswith("\n")
    result = run_cli("detect", "--cpuinfo", str(CASCADELAKE), "--json")
    assert result.returncode == 0, result.stderr
    report = result.json()
    (machine,) = report["machines"]
    assert machine["microarchitecture"] == "cascadelake"
    # Its last token starts no longer flag a decision reads: it is kept, and nothing is said.
    assert machine["cpu"]["flags"] == sorted(set(_flags_line(text)[1]))
    assert "arch_capabilities" in machine["cpu"]["flags"]
    assert (report["warnings"], machine["cpu"]["warnings"]) == ([], [])
    human = run_cli("detect", "--cpuinfo", str(CASCADELAKE))
    assert human.returncode == 0, human.stderr
    assert "cascadelake" in human.stdout
    assert "warning" not in (human.stdout + human.stderr).lower()


@pytest.mark.parametrize(
    ("prefix", "longer"),
    [
        ("avx512", "avx512f"),
        ("sse4", "sse4_1"),
        ("xsaveo", "xsaveopt"),
        ("avx51", "avx512f"),
        ("3dnow", "3dnowprefetch"),  # a read flag (AMD's 3DNow!) that this Intel CPU lacks
    ],
)
def test_a_flags_line_cut_inside_a_word_drops_that_word_and_says_so(
    prefix: str, longer: str, tmp_path: Path
) -> None:
    full = parse_cpuinfo(CASCADELAKE.read_text(), source="full")
    dump = tmp_path / "cut.cpuinfo"
    dump.write_text(_cut_inside(CASCADELAKE.read_text(), longer, prefix))
    result = run_cli("detect", "--cpuinfo", str(dump), "--json")
    assert result.returncode == 0, result.stderr
    report = result.json()
    (machine,) = report["machines"]
    flags = set(machine["cpu"]["flags"])
    assert flags < full.flags
    assert longer not in flags
    (warning,) = machine["cpu"]["warnings"]
    assert warning in report["warnings"]  # beside any about the target (no named one may fit)
    assert f"--cpuinfo {dump} ends without a final newline inside its flags line" in warning
    assert f"its last token '{prefix}' may be cut from a longer flag (" in warning
    assert longer in warning.split("(", 1)[1]
    assert warning.endswith("add the final newline if the line is complete")
    assert prefix not in flags
    # Fewer flags only ever name an older target, one the whole machine runs.
    target = cpu.identify(full)
    assert machine["microarchitecture"] in {target.name, *(a.name for a in target.ancestors)}
    human = run_cli("detect", "--cpuinfo", str(dump))
    assert human.returncode == 0, human.stderr
    assert f"its last token '{prefix}' may be cut" in " ".join(human.stdout.split())


@pytest.mark.parametrize(
    ("flag", "prefix"),
    [
        ("avx2", "avx2"),  # a whole flag: the line may have gone on, but what is there is true
        ("avx2", "avx"),  # the start of avx2, and a flag the line names earlier anyway
        ("arch_capabilities", "arch_capab"),  # the start of a flag no read flag starts with
    ],
)
def test_a_flags_line_cut_elsewhere_is_read_with_what_it_says(
    flag: str, prefix: str, tmp_path: Path
) -> None:
    text = _cut_inside(CASCADELAKE.read_text(), flag, prefix)
    dump = tmp_path / "cut.cpuinfo"
    dump.write_text(text)
    result = run_cli("detect", "--cpuinfo", str(dump), "--json")
    assert result.returncode == 0, result.stderr
    (machine,) = result.json()["machines"]
    assert machine["cpu"]["warnings"] == []
    assert machine["cpu"]["flags"] == sorted(set(_flags_line(text)[1]))


@pytest.mark.parametrize("field", ["model name", "cpu MHz", "siblings", "cpu cores", "flags"])
@pytest.mark.parametrize("command", [("detect",), ("plan", "--skip-disk-check", "--canary")])
def test_a_one_block_dump_cut_before_its_flags_is_refused(
    field: str, command: tuple[str, ...], tmp_path: Path
) -> None:
    """A cut inside any other field loses a value (``cpu MHz : 24`` for 2400) and every flag."""
    text = CASCADELAKE.read_text()
    start = text.index(":", text.index(f"\n{field}")) + 1
    dump = tmp_path / "cut.cpuinfo"
    for cut in (start + 3, start):  # inside the value, and before it
        dump.write_text(text[:cut])
        one_error_line(run_cli(*command, "--cpuinfo", str(dump)), 3, "truncated", "'flags'")


def test_a_flags_line_cut_before_lm_is_refused(tmp_path: Path) -> None:
    """'lm' (long mode) is what tells x86-64 from 32-bit x86: a cut before it would make this
    64-bit machine a 32-bit one, a wrong answer rather than a safer one."""
    dump = tmp_path / "cut.cpuinfo"
    dump.write_text(_cut_inside(CASCADELAKE.read_text(), "rdtscp", "rdtscp"))  # the one before lm
    one_error_line(
        run_cli("detect", "--cpuinfo", str(dump)), 3, "truncated", "before any 'lm' flag"
    )
    dump.write_text(_cut_inside(CASCADELAKE.read_text(), "lm", "lm"))
    (machine,) = run_cli("detect", "--cpuinfo", str(dump), "--json").json()["machines"]
    assert (machine["cpu"]["architecture"], machine["cpu"]["warnings"]) == ("x86_64", [])


def test_plan_shows_the_dropped_flag_and_plans_without_it(tmp_path: Path) -> None:
    dump = tmp_path / "cut.cpuinfo"
    dump.write_text(_cut_inside(CASCADELAKE.read_text(), "avx512f", "avx512"))
    result = run_cli("plan", "--skip-disk-check", "--canary", "--cpuinfo", str(dump), "--json")
    assert result.returncode == 0, result.stderr
    plan = result.json()
    assert any("its last token 'avx512' may be cut" in w for w in plan["warnings"])
    whole = run_cli(
        "plan", "--skip-disk-check", "--canary", "--cpuinfo", str(CASCADELAKE), "--json"
    )
    assert whole.returncode == 0, whole.stderr
    assert whole.json()["target"] == "cascadelake"
    assert not any("may be cut" in w for w in whole.json()["warnings"])
    # Without avx512f the plan targets an older CPU, one without AVX-512, that the machine runs.
    assert "avx512f" not in cpu.lookup_target(plan["target"]).features
    assert plan["target"] in {a.name for a in cpu.lookup_target("cascadelake").ancestors}
    human = run_cli("plan", "--skip-disk-check", "--canary", "--cpuinfo", str(dump))
    assert human.returncode == 0, human.stderr
    assert "its last token 'avx512' may be cut" in " ".join((human.stdout + human.stderr).split())


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
