"""``tfbuild plan`` as a user reads it, through the real command line: the decisions first, one
line each, in about 30 lines of an 80-column terminal; ``--why`` says every reason in full."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import ROOT, CliResult, cpuinfo_fixture, run_cli

NARROW = {"COLUMNS": "80"}

# Plans of several shapes: each flow and route, CUDA, a portable target, another machine's dump,
# reproducibility off with OpenMP's runtime env, the canary.
SHAPES = {
    "mkl": ("--mkl",),
    "cuda": ("--cuda",),
    "tf-2.13-sysroot": ("--tf", "2.13"),
    "portable": ("--target", "x86_64_v3"),
    "openmp-not-reproducible": ("--mkl", "--mkl-threading", "openmp", "--no-reproducible"),
    "canary": ("--canary",),
}


def _plan(*args: str, env: dict[str, str] | None = None) -> CliResult:
    result = run_cli("plan", "--skip-disk-check", *args, env=env)
    assert result.returncode == 0, result.stderr
    return result


def _without_warnings(lines: list[str]) -> list[str]:
    """The lines of a plan but its warnings (``warning: ...`` and the lines wrapped under it, two
    spaces in; a decision's wrapped value is indented under its value column, further in)."""
    return [
        line for line in lines if not line.startswith("warning:") and not re.match(r"  \S", line)
    ]


def _squeezed(text: str) -> str:
    """Text without any white space: the same words however a terminal width wrapped them."""
    return "".join(text.split())


def _bazel_command(plan: dict[str, Any]) -> str:
    """The bazel command ``--why`` shows (after its label, ``bazel VERSION``): the plan's build
    options after those made from its resources, which the plan holds once."""
    configs = " ".join(f"--config={c}" for c in plan["bazel_configs"])
    resources = plan["resources"]
    made = f"--jobs={resources['jobs']} --local_ram_resources={resources['local_ram_mb']}"
    return f"build {configs} {made} {' '.join(plan['build_options'])} {plan['build_target']}"


#: The rows whose value is a command line, kept whole on one line (beside the label, or below it).
COMMAND_ROWS = ("compiler flags", "runtime env", "bazel ")


def _too_wide(text: str, width: int = 80) -> list[str]:
    """Lines wider than ``width`` that should have been broken: not a command line (whole, by
    design), and more than one word in the value (a digest or a path runs over whole)."""
    lines = text.splitlines()
    return [
        line
        for before, line in zip(["", *lines], lines, strict=False)
        if len(line) > width
        and not line.startswith(COMMAND_ROWS)
        and not (before.startswith(COMMAND_ROWS) and before.strip() == before.split("  ")[0])
        and len(re.split(r"\s{2,}", line.strip())[-1].split()) > 1
    ]


def _reprs(text: str) -> list[str]:
    return [
        line
        for line in text.splitlines()
        for bad in ("{'", "['", "('", "None", "True", "False")
        if bad in line
    ]


@pytest.fixture(params=sorted(SHAPES), scope="module")
def shape(request: pytest.FixtureRequest) -> tuple[str, ...]:
    return SHAPES[request.param]


def test_the_default_is_the_decisions_in_about_30_lines_at_80_columns(
    shape: tuple[str, ...],
) -> None:
    plan = _plan(*shape, "--json").json()
    shown = _plan(*shape, env=NARROW).stdout
    lines = shown.splitlines()
    decisions = _without_warnings(lines)
    assert len(decisions) <= 32, shown  # the warnings come on top: as many as this host calls for
    assert len(lines) - len(decisions) <= 4 * (len(plan["warnings"]) + 2), shown  # each in brief
    assert _too_wide(shown) == [], shown
    # Never a digest, a path or a command broken: each is whole on one line.
    assert any(line.endswith(f"  {plan['base_image']['reference']}") for line in lines), shown
    flags = " ".join(plan["cflags"])
    assert f"  {flags}" in lines or any(
        line.startswith("compiler flags ") and line.endswith(f"  {flags}") for line in lines
    ), shown
    assert lines[0].startswith(f"TensorFlow {plan['tensorflow']} {plan['variant']} wheel")
    # One line per decision, its label first.
    labels = {line.split("  ")[0] for line in lines[1:] if line[:1].strip()}
    assert {"recipe", "python", "base image", "what compiles", "target", "jobs", "label"} <= labels
    assert {"compiler flags", "bazel", "cache volume"} <= labels
    assert lines[-1] == "every choice with its reason: the same command with --why"
    assert not _reprs(shown)
    # Warnings are still said by default, whole.
    for warning in plan["warnings"]:
        assert _squeezed(f"warning: {warning}") in _squeezed(shown)


def test_a_short_reason_is_shown_whole_or_not_at_all(shape: tuple[str, ...]) -> None:
    plan = _plan(*shape, "--json").json()
    for env in (NARROW, {"COLUMNS": "200"}):
        lines = _plan(*shape, env=env).stdout.splitlines()
        for reason in plan["reasons"]:
            rows = [line for line in lines if line.startswith(f"{reason['what']}  ")]
            if not rows or f"  {reason['value']}" not in rows[0]:
                continue  # folded into another row, or a value that wraps
            rest = rows[0].split(f"  {reason['value']}", 1)[1]
            allowed = {"", f" ({reason['why']})"}
            if reason["what"] == "glibc floor":
                allowed.add(" (and newer, checked after the build)")
            assert rest in allowed, (env, rows[0])


def test_the_default_says_more_reasons_when_there_is_room() -> None:
    narrow = _plan("--mkl", env=NARROW).stdout
    wide = _plan("--mkl", env={"COLUMNS": "200"}).stdout
    assert len(wide.splitlines()) < len(narrow.splitlines())
    assert wide.count(" (") > narrow.count(" (")


def test_why_says_every_reason_and_every_detail_in_full(shape: tuple[str, ...]) -> None:
    plan = _plan(*shape, "--json").json()
    for env in (NARROW, {"COLUMNS": "200"}):
        shown = _plan(*shape, "--why", env=env).stdout
        if env is NARROW:
            assert _too_wide(shown) == [], shown
        # The bazel command, whole on one line, to be copied.
        assert any(line.endswith(_bazel_command(plan)) for line in shown.splitlines()), shown
        assert not _reprs(shown)
        everything = _squeezed(shown)
        said = [
            *(text for r in plan["reasons"] for text in (r["what"], r["value"], r["why"])),
            plan["toolchain"],
            " ".join(plan["cflags"]),
            *(f"--config={c}" for c in plan["bazel_configs"]),
            " ".join(plan["build_options"]),
            plan["build_target"],
            *(f"{k}={v}" for k, v in plan["runtime_env"].items()),
            *(f"{c['feature']} ({c['flag']})" for c in plan["coverage"] if c["flag"]),
            *(f"warning: {w}" for w in plan["warnings"]),
        ]
        if plan["floor_goal"]:
            said.append(f"glibc {plan['floor_goal']} and newer")
        missing = [text for text in said if _squeezed(text) not in everything]
        assert not missing, (env, missing)
        assert "--why" not in shown  # no hint to ask for what is shown


def test_another_machines_plan_reads_the_same() -> None:
    dump = str(cpuinfo_fixture("haswell"))
    shown = _plan("--cpuinfo", dump, env=NARROW).stdout
    assert len(shown.splitlines()) <= 32
    assert re.search(r"^target +haswell", shown, re.MULTILINE), shown
    assert "target haswell (machine)" in shown.splitlines()[0]


def _labels(text: str) -> list[str]:
    return [
        line.split("  ")[0]
        for line in text.splitlines()[1:]
        if line[:1].strip() and not line.startswith(("warning:", "every choice"))
    ]


def test_the_readme_example_is_todays_output() -> None:
    """The README's example (a 2-core x86_64_v4 host) has the rows, in the order, that
    ``tfbuild plan --tf 2.21 --mkl`` prints here; the values are this host's."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("$ tfbuild plan --tf 2.21 --mkl\n") + len(
        "$ tfbuild plan --tf 2.21 --mkl\n"
    )
    example = readme[start : readme.index("```", start)]
    shown = _plan("--tf", "2.21", "--mkl", env=NARROW).stdout
    assert _labels(example) == _labels(shown)
    assert example.splitlines()[-1] == shown.splitlines()[-1]
    assert _too_wide(example) == [], example


def test_a_feature_the_flags_do_not_cover_is_named_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dataclasses import replace

    from tests.plan.test_plan import plan
    from tfbuild.cli.display import print_plan

    planned = plan()
    first, *rest = planned.coverage
    uncovered = replace(first, flag=None, note="clang-16 has no -mavxvnniint8")
    print_plan(replace(planned, coverage=(uncovered, *rest)))
    shown = " ".join(capsys.readouterr().out.split())
    total = len(planned.coverage)
    assert f"CPU features {total - 1} of {total}; {first.feature} NOT COVERED: " in shown
    assert "clang-16 has no -mavxvnniint8" in shown
