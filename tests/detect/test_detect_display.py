"""``tfbuild detect`` at 80 columns, as a user reads it: a wrapped sentence goes on indented under
its start instead of at column 0, counts are words, not Python's "(s)"; a question (``--why-not``,
``--target``) gets its answer first, and alone."""

from __future__ import annotations

import re

from tests.conftest import cpuinfo_fixture, run_cli


def test_wrapped_sentences_stay_indented_under_their_start() -> None:
    # The dump by its name, from its directory: the answer's first line holds the path given, so an
    # absolute one would move where the lines wrap with where the checkout is.
    dump = cpuinfo_fixture("haswell")
    result = run_cli(
        "detect", "--cpuinfo", dump.name, "--target", "zen4", "--why-not", "skylake_avx512",
        env={"COLUMNS": "80"}, cwd=dump.parent,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    report = run_cli("detect", "--cpuinfo", str(dump), "--target", "zen4", "--json").json()
    (fit,) = report["target"]["runs_on"]
    assert not fit["runs"]
    start = next(i for i, line in enumerate(lines) if line.startswith("  does not run: "))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        block.append(line)
    assert len(block) > 1  # the reason is longer than a line at 80 columns: it wrapped, indented
    assert " ".join(" ".join(block).split()) == f"does not run: {fit['reason']}"
    why_not = next(i for i, line in enumerate(lines) if line.startswith("why not skylake_avx512"))
    assert lines[why_not + 1].startswith("  ") and lines[why_not + 1].strip()
    # Every line fits, but the flags: one command line, left whole to be copied.
    assert all(len(line) <= 80 for line in lines if not line.startswith(("flags", "Target"))), lines
    whole = run_cli("detect", "--cpuinfo", str(dump), env={"COLUMNS": "80"})
    assert whole.returncode == 0, whole.stderr
    assert "(s)" not in result.stdout + whole.stdout
    assert re.search(r"\b\d+ sockets?\b", whole.stdout)


def test_why_not_answers_first_and_alone() -> None:
    """A question gets its answer on the first line, and nothing of the report it did not ask
    for; --json still has the whole report with the answer in it. The dump is named from its
    directory: an absolute path as long as the line would put the answer below it."""
    where = cpuinfo_fixture("haswell").parent
    dump = cpuinfo_fixture("haswell").name
    result = run_cli("detect", "--cpuinfo", dump, "--why-not", "skylake_avx512", cwd=where)
    assert result.returncode == 0, result.stderr
    (fit,) = run_cli(
        "detect", "--cpuinfo", dump, "--why-not", "skylake_avx512", "--json", cwd=where
    ).json()["why_not"]
    assert not fit["runs"]
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"why not skylake_avx512 on {dump}? does not fit: "), lines
    assert " ".join(" ".join(lines).split()) == " ".join(
        f"why not skylake_avx512 on {dump}? does not fit: {fit['reason']}".split()
    )
    assert "TensorFlow CPU features" not in result.stdout and "flags (" not in result.stdout


def test_why_not_on_this_machine_answers_first() -> None:
    """The live machine (no --cpuinfo): the answer is the first line, and the report's tables, the
    host's resources and GPUs are not printed. Which target fits here depends on the host, so
    the answer is read from --json, not written into the test."""
    result = run_cli("detect", "--why-not", "zen4")
    assert result.returncode == 0, result.stderr
    report = run_cli("detect", "--why-not", "zen4", "--json").json()
    (fit,) = report["why_not"]
    first = result.stdout.splitlines()[0]
    mark = "fits" if fit["runs"] else "does not fit"
    assert first.startswith(f"why not zen4? {mark}: "), result.stdout
    assert report["system"] is not None  # the JSON report is whole
    for part in ("This machine", "This host", "CUDA", "TensorFlow this host can build"):
        assert part not in result.stdout, result.stdout


def test_target_answers_alone() -> None:
    dump = str(cpuinfo_fixture("haswell"))
    result = run_cli("detect", "--cpuinfo", dump, "--target", "x86_64_v3", "--compiler", "gcc-12")
    assert result.returncode == 0, result.stderr
    target = run_cli(
        "detect", "--cpuinfo", dump, "--target", "x86_64_v3", "--compiler", "gcc-12", "--json"
    ).json()["target"]
    lines = result.stdout.splitlines()
    assert lines[0] == f"Target x86_64_v3 (gcc-12): {target['compiler_flags']['flags']}"
    (fit,) = target["runs_on"]
    assert fit["runs"] and lines[1] == f"  runs: {fit['reason']}", lines
    assert len(lines) == 2, lines
