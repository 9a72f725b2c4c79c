"""Human-readable output (rich tables). Only the text modes import this; ``--json`` never does."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tfbuild.core import serial
from tfbuild.core.errors import printable
from tfbuild.core.files import human_size
from tfbuild.detect.report import DetectReport, MachineReport
from tfbuild.plan import BuildPlan
from tfbuild.recipes.recipe import RecipeSet

if TYPE_CHECKING:  # types of other commands' results: importing them would load docker and more
    from tfbuild.build.doctor import Check
    from tfbuild.build.preflight import PreflightReport
    from tfbuild.build.rebuild import VerifyResult
    from tfbuild.build.release_check import ReleaseCheck
    from tfbuild.build.run import WheelResult
    from tfbuild.pick import PickResult
    from tfbuild.plan.matrix import Matrix, Skipped
    from tfbuild.smoke.loads import LoadReport
    from tfbuild.smoke.report import SmokeReport

_GIB = 1024**3


# Text from inputs (a cpuinfo's model name, paths, file names, recipe fields, a wheel's METADATA,
# a build's log) is shown, never obeyed: every console here is a _SafeConsole, which removes what a
# terminal would act on (escape sequences, control characters) from every string it renders,
# markup templates included, and every input value goes into markup through safe(), so that "[/x]"
# or "[link=...]" in it prints as those characters instead of failing or becoming a link.


class _SafeConsole(Console):
    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(printable(text), **options)


def _console(**options: Any) -> Console:
    """The console of every printer here: terminal controls removed, no ``:emoji:`` codes."""
    options.setdefault("emoji", False)
    return _SafeConsole(**options)


#: rich's own tag pattern (rich.markup.RE_TAGS): backslashes, then "[" and a tag.
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def _literal(text: str) -> str:
    """Markup that rich renders as exactly ``text``. rich.markup.escape is not that: rich drops
    the backslash of a "\\[" that starts no tag, and a trailing backslash escapes the tag after it."""
    parts: list[str] = []
    position = 0
    for match in _TAG.finditer(text):
        # Outside tags rich turns "\\[" into "[": one more backslash before each "[" keeps them.
        parts.append(text[position : match.start()].replace("[", "\\["))
        slashes, tag = match.groups()
        parts.append(f"{slashes}{slashes}\\{tag}")  # n literal backslashes, then the tag as text
        position = match.end()
    rest = text[position:]
    stripped = rest.rstrip("\\")
    parts.append(stripped.replace("[", "\\["))
    if len(rest) > len(stripped):  # trailing backslashes: doubled before an empty tag, they show
        parts.append("\\" * 2 * (len(rest) - len(stripped)) + "[default][/default]")
    return "".join(parts)


def safe(value: object) -> str:
    """An input's text for a markup string: terminal controls removed, markup shown literally."""
    return _literal(printable(str(value)))


def _gib(value: int | None) -> str:
    return "unknown" if value is None else f"{value / _GIB:.1f} GiB"


def _cpu_table(machine: MachineReport, title: str) -> Table:
    info = machine.cpu
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("architecture", safe(info.architecture))
    table.add_row("vendor", safe(info.vendor))
    if info.brand:
        table.add_row("model", safe(info.brand))
    if info.family is not None:
        table.add_row("family/model/stepping", f"{info.family} / {info.model} / {info.stepping}")
    table.add_row("microarchitecture", f"{safe(machine.microarchitecture)} (archspec)")
    if machine.generic_level:
        table.add_row("generic level", safe(machine.generic_level))
    counts = [
        f"{info.logical_cpus} logical" if info.logical_cpus else "",
        f"{info.physical_cores} cores" if info.physical_cores else "",
        f"{info.sockets} socket{'s' if info.sockets > 1 else ''}" if info.sockets else "",
    ]
    if any(counts):
        table.add_row("processors", ", ".join(c for c in counts if c))
    return table


def _feature_table(machine: MachineReport) -> Table | None:
    if not machine.tensorflow_features.applicable:
        return None
    coverage = (
        {c.feature: c for c in machine.compiler_flags.coverage} if machine.compiler_flags else {}
    )
    compiler = machine.compiler_flags.compiler if machine.compiler_flags else None
    table = Table(
        title="TensorFlow CPU features (what cpu_feature_guard checks)", title_justify="left"
    )
    table.add_column("feature")
    table.add_column("CPU has it")
    table.add_column(f"enabled by ({safe(compiler.spec)})" if compiler else "enabled by")
    for name in (*machine.tensorflow_features.present, *machine.tensorflow_features.absent):
        has = name in machine.tensorflow_features.present
        cover = coverage.get(name)
        if not has:
            enabled = "[dim]-[/dim]"
        elif cover is None or cover.flag is None:
            enabled = f"[red]not covered[/red] {safe(cover.note or '') if cover else ''}"
        else:
            enabled = f"[green]{safe(cover.flag)}[/green]"
        table.add_row(safe(name), "[green]yes[/green]" if has else "[dim]no[/dim]", enabled)
    return table


def _system_rows(report: DetectReport) -> Table | None:
    system = report.system
    if system is None:
        return None
    table = Table(title="This host", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("os", safe(f"{system.os} (kernel {system.kernel}, {system.machine})"))
    table.add_row(
        "python",
        safe(
            f"{system.python.implementation} {system.python.version} ({system.python.executable})"
        ),
    )
    table.add_row("glibc", safe(system.glibc or "not glibc"))
    table.add_row("cpus usable", f"{system.usable_cpus} of {system.logical_cpus}")
    if system.caches:
        table.add_row(
            "caches",
            ", ".join(f"L{c.level} {c.type[0]} {c.size_kib} KiB" for c in system.caches),
        )
    memory = system.memory
    limit = f", cgroup limit {_gib(memory.cgroup_limit_bytes)}" if memory.cgroup_limit_bytes else ""
    table.add_row(
        "memory", f"{_gib(memory.total_bytes)} total, {_gib(memory.available_bytes)} free{limit}"
    )
    if system.disk:
        table.add_row(
            "disk",
            f"{_gib(system.disk.free_bytes)} free of {_gib(system.disk.total_bytes)} "
            f"at {safe(system.disk.path)}",
        )
    return table


def _gpu_lines(data: dict[str, Any] | None, nvidia: dict[str, Any] | None) -> list[str]:
    lines: list[str] = []
    if data is not None:
        toolkits = data.get("toolkits") or []
        if not toolkits:
            lines.append("CUDA toolkit: none found")
        for kit in toolkits:
            found_by = ", ".join(kit.get("found_by") or [])
            lines.append(
                f"CUDA toolkit {kit.get('version') or '?'} at {kit.get('root')} (found by {found_by})"
            )
        for key, label in (("cudnn", "cuDNN"), ("nccl", "NCCL"), ("tensorrt", "TensorRT")):
            entries = data.get(key) or []
            if not entries:
                lines.append(f"{label}: none found")
            for entry in entries:
                where = entry.get("header") or ", ".join(entry.get("libraries") or [])
                lines.append(f"{label} {entry.get('version') or '?'} ({where})")
    if nvidia is not None:
        driver = nvidia.get("driver")
        if driver is None:
            lines.append("NVIDIA driver: none")
        else:
            lines.append(
                f"NVIDIA driver {driver.get('version')} (supports CUDA up to "
                f"{driver.get('cuda_version') or '?'})"
            )
        for gpu in nvidia.get("gpus") or []:
            lines.append(
                f"GPU {gpu.get('index')}: {gpu.get('name')}, {gpu.get('memory_mib')} MiB, "
                f"compute capability {gpu.get('compute_capability') or 'unknown'}"
            )
    return lines


def _hanging(console: Console, head: str, text: str, *, indent: int = 2, style: str = "") -> None:
    """``head`` + ``text`` wrapped at the console's width at spaces, the lines after the first
    indented under it (a terminal's own wrap would start them at column 0); ``style`` is the
    markup of ``head`` ("yellow" for "warning:"). Words longer than a line are left whole."""
    width = max(console.width, 40)
    plain = printable(f"{head}{text}")
    lines = textwrap.wrap(
        plain, width, subsequent_indent=" " * indent, break_long_words=False, break_on_hyphens=False
    ) or [plain]
    first = safe(lines[0])
    if style and lines[0].lstrip().startswith(head.strip()):
        at = lines[0].index(head.strip())
        first = (
            f"{safe(lines[0][:at])}[{style}]{safe(head.strip())}[/{style}]"
            f"{safe(lines[0][at + len(head.strip()) :])}"
        )
    console.print(first, highlight=False, soft_wrap=True)
    for line in lines[1:]:
        console.print(safe(line), highlight=False, soft_wrap=True)


def print_detect(report: DetectReport) -> None:
    console = _console()
    for machine in report.machines:
        title = "This machine" if report.live else f"Machine from {machine.cpu.source}"
        console.print(_cpu_table(machine, safe(title)))
        features = _feature_table(machine)
        if features is not None:
            console.print(features)
        else:
            console.print(safe(machine.tensorflow_features.note or ""))
        if machine.compiler_flags:
            console.print(
                f"[bold]flags[/bold] ({safe(machine.compiler_flags.compiler.spec)}, "
                f"{safe(machine.microarchitecture)}): {safe(machine.compiler_flags.command_line)}",
                soft_wrap=True,
            )
        console.print()
    if report.common is not None:
        common = report.common
        console.print(
            f"[bold]Common target of all {len(report.machines)} machines:[/bold] "
            f"{safe(common.microarchitecture)}"
        )
        if common.tensorflow_features.applicable:
            console.print(
                f"TensorFlow features on all: {safe(' '.join(common.tensorflow_features.present))}"
            )
        if common.compiler_flags:
            console.print(
                f"[bold]flags[/bold] ({safe(common.compiler_flags.compiler.spec)}): "
                f"{safe(common.compiler_flags.command_line)}",
                soft_wrap=True,
            )
        console.print()
    if report.target is not None:
        target = report.target
        console.print(
            f"[bold]Target {safe(target.name)}[/bold] ({safe(target.compiler_flags.compiler.spec)}): "
            f"{safe(target.compiler_flags.command_line)}",
            soft_wrap=True,
        )
        for fit in target.runs_on:
            mark, style = ("runs", "green") if fit.runs else ("does not run", "red")
            _hanging(console, f"  {mark}:", f" {fit.reason}", indent=4, style=style)
        console.print()
    for fit in report.why_not:
        mark, style = ("fits", "green") if fit.runs else ("does not fit", "red")
        where = "" if report.live else f" on {fit.machine}"
        _hanging(console, f"why not {fit.target + where}? {mark}:", f" {fit.reason}", style=style)
    system = _system_rows(report)
    if system is not None:
        console.print(system)
    gpu = _gpu_lines(
        serial.to_data(report.cuda) if report.cuda else None,
        serial.to_data(report.nvidia) if report.nvidia else None,
    )
    for line in gpu:
        _hanging(console, "", line)
    if report.tensorflow is not None:
        usable = [t.version for t in report.tensorflow if t.python_ok and t.cpu_ok]
        _hanging(
            console,
            "TensorFlow this host can build and run (recipes): ",
            ", ".join(usable) or "none",
        )
        for t in report.tensorflow:
            if t.note:
                _hanging(console, f"  {t.version}: ", t.note, indent=4)
    for warning in report.warnings:  # escaped (in _hanging): archspec's say "[supported ...]"
        _hanging(console, "warning:", f" {warning}", style="yellow")


def print_recipes(recipes: RecipeSet) -> None:
    table = Table(
        title="TensorFlow recipes", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for column in ("TF", "Python", "compiler", "bazel", "wheel", "CUDA/cuDNN", "read"):
        table.add_column(column, no_wrap=True)
    for r in recipes.recipes:
        cuda = "-" if r.cuda is None else f"{r.cuda.cuda}/{r.cuda.cudnn}"
        if r.cuda is not None and r.cuda.hermetic:
            cuda += " (h)"
        table.add_row(
            safe(r.tensorflow),
            safe(f"{r.python[0]}-{r.python[-1]}"),
            safe(r.compiler),
            safe(r.bazel),
            ":wheel" if r.wheel_flow == "wheel" else "script",
            safe(cuda),
            f"{r.verified.counts()['read']}/{len(r.verified.parts)}" if r.verified else "-",
        )
    console = _console()
    console.print(table)
    console.print(
        "wheel: ':wheel' target (2.17+) or the build_pip_package script; (h) hermetic: bazel "
        "downloads CUDA/cuDNN at build time; read: parts of the recipe read in the release's own "
        "files, of those its verified record names (tfbuild recipes show VERSION says how each "
        "was checked, and when; tfbuild recipes verify VERSION checks the release)",
        highlight=False,
    )
    user = [r.path for r in recipes.recipes if not r.path.startswith("recipes/")]
    for path in user:
        console.print(f"from a user directory: {safe(path)}", highlight=False)


def print_matrix(matrix: Matrix, *, explain: bool) -> None:
    table = Table(title="CI build matrix", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("job (tf-python-target-variant)", "wheel label", "CUDA"):
        table.add_column(column, no_wrap=True)
    for job in matrix.jobs:
        table.add_row(safe(job.name), safe(f"+{job.label}"), safe(job.cuda or "-"))
    console = _console(highlight=False, soft_wrap=True)
    console.print(table)
    if matrix.skipped and not explain:
        left = len(matrix.skipped)
        console.print(f"{left} combination{'s' if left > 1 else ''} left out: --explain says why")


def print_skipped(skipped: Sequence[Skipped]) -> None:
    """Why each combination was left out, on stderr (stdout may be the matrix JSON)."""
    console = _console(stderr=True, highlight=False, soft_wrap=True)
    for entry in skipped:
        console.print(f"left out {safe(entry.name)}: {safe(entry.reason)}")


#: The determinism measures, each a reason of its own in --why: one line by default.
_MEASURES = ("SOURCE_DATE_EPOCH", "build environment", "path prefix map", "wheel normalisation")


def _plan_rows(plan: BuildPlan) -> list[tuple[str, str, tuple[str, ...]]]:
    """The decisions of a plan, one (what, value, reasons) each, in the planner's order, the
    first reason that fits on the line shown: the compiler and its toolchain as one row (what
    compiles), the determinism measures as one, then the flags, bazel and the cache in short."""
    rows: list[tuple[str, str, tuple[str, ...]]] = []
    measures = [r.what for r in plan.reasons if r.what in _MEASURES]
    for reason in plan.reasons:
        if reason.what in _MEASURES:
            if reason.what == measures[0]:  # the row of all of them, where the first one was
                rows.append(("reproducible", "on: " + ", ".join(measures), ()))
        elif reason.what == "compiler":
            rows.append(("what compiles", plan.toolchain, ()))
        elif reason.what == "toolchain":
            continue  # said by "what compiles"
        elif reason.what == "glibc floor" and plan.floor_goal:
            later = "and newer, checked after the build"
            rows.append((reason.what, reason.value, (reason.why, later)))
        else:
            rows.append((reason.what, reason.value, (reason.why,)))
    whats = [what for what, _, _ in rows]
    if "what compiles" not in whats:
        rows.append(("what compiles", plan.toolchain, ()))
    if plan.floor_goal and "glibc floor" not in whats:
        rows.append(
            ("loads on", f"glibc {plan.floor_goal} and newer", ("checked after the build",))
        )
    rows.append(("compiler flags", " ".join(plan.cflags), ()))
    if plan.coverage:
        missing = [c for c in plan.coverage if not c.flag]
        if missing:
            covered = "; ".join(f"{c.feature} NOT COVERED: {c.note or 'no flag'}" for c in missing)
            value = f"{len(plan.coverage) - len(missing)} of {len(plan.coverage)}; {covered}"
        else:
            value = f"all {len(plan.coverage)} TensorFlow guard features of the target enabled"
        rows.append(("CPU features", value, ()))
    configs = " ".join(f"--config={c}" for c in plan.bazel_configs)
    rows.append(("bazel", f"{plan.bazel} {configs}".strip(), (plan.build_target,)))
    rows.append(("cache volume", plan.cache_volume, ("bazel's disk and repository caches",)))
    shown = [value for _, value, _ in rows]
    env = [
        f"{k}={v}" for k, v in plan.runtime_env.items() if not any(f"{k}={v}" in v2 for v2 in shown)
    ]
    if env:  # what no row above says already (the TCMalloc row names its LD_PRELOAD)
        rows.append(("runtime env", " ".join(env), ()))
    return rows


def _print_rows(
    console: Console, rows: Sequence[tuple[str, str, tuple[str, ...]]], *, why: bool
) -> None:
    """Rows of a plan: the label, its value wrapped in the value column (a word longer than the
    column, a digest, folded, never cut); then the first reason that fits on the value's line, or
    with ``why`` every reason in full below its value."""
    label = max(len(what) for what, _, _ in rows)
    room = max(console.width - label - 2, 20)  # the value column: after the label and a gap
    indent = " " * (label + 2)
    for what, value, reasons in rows:
        shown = printable(value)
        lines = textwrap.wrap(shown, room, break_on_hyphens=False) or [""]
        fits = [r for r in reasons if len(shown) + len(printable(r)) + 3 <= room]
        tail = f" [dim]({safe(fits[0])})[/dim]" if fits and not why else ""  # never cut
        console.print(
            f"[bold]{safe(what)}[/bold]{' ' * (label + 2 - len(what))}{safe(lines[0])}{tail}"
        )
        for line in lines[1:]:
            console.print(f"{indent}{safe(line)}")
        for reason in reasons if why else ():
            for line in textwrap.wrap(printable(reason), room, break_on_hyphens=False):
                console.print(f"{indent}[dim]{safe(line)}[/dim]")


def print_plan(plan: BuildPlan, *, why: bool = False) -> None:
    """``tfbuild plan``: the decisions first, one line each, with a short reason where it fits on
    the line (never cut). ``why``: every choice with its reason in full below it, then what
    compiles, the flags and the CPU features each covers, the whole bazel command, the runtime
    environment."""
    console = _console(highlight=False, soft_wrap=True)  # soft: the lines are wrapped here
    console.print(
        f"[bold]TensorFlow {safe(plan.tensorflow)}[/bold] {safe(plan.variant)} wheel for Python "
        f"{safe(plan.python)}, target {safe(plan.target)} ({safe(plan.target_kind)})"
    )
    if why:
        rows: list[tuple[str, str, tuple[str, ...]]] = [
            (r.what, r.value, (r.why,)) for r in plan.reasons
        ]
        rows.append(("what compiles", plan.toolchain, ()))
        if plan.floor_goal:
            rows.append(
                ("loads on", f"glibc {plan.floor_goal} and newer", ("checked after the build",))
            )
        rows.append(("compiler flags", " ".join(plan.cflags), ()))
        if plan.coverage:
            covers = ", ".join(
                f"{c.feature} ({c.flag or 'NOT COVERED: ' + (c.note or '')})" for c in plan.coverage
            )
            rows.append(
                (
                    "CPU features",
                    covers,
                    ("TensorFlow's guard features, each with the flag that enables it",),
                )
            )
        configs = " ".join(f"--config={c}" for c in plan.bazel_configs)
        command = f"build {configs} {' '.join(plan.build_options)} {plan.build_target}"
        rows.append((f"bazel {plan.bazel}", command, ()))
        if plan.runtime_env:
            rows.append(
                ("runtime env", " ".join(f"{k}={v}" for k, v in plan.runtime_env.items()), ())
            )
        _print_rows(console, rows, why=True)
    else:
        _print_rows(console, _plan_rows(plan), why=False)
    for warning in plan.warnings:  # escaped (in _hanging): archspec's say "[supported ...]"
        _hanging(console, "warning:", f" {warning}", style="yellow")
    if not why:
        console.print("[dim]every choice with its reason: the same command with --why[/dim]")


_FINDING_STYLE = {"ok": "green", "fail": "bold red", "note": "yellow", "skipped": "dim"}


def print_preflight(report: PreflightReport, *, title: str | None = None) -> None:
    """The preflight's findings, one line each: status, where in the tree, what (why). fix."""
    console = _console(highlight=False, soft_wrap=True, emoji=False)
    verdict = "fits" if report.passed else f"does NOT fit ({len(report.failures)} mismatches)"
    console.print(
        f"[bold]{title or 'source tree'}[/bold] {safe(report.tree)} {verdict}: {safe(report.plan)}"
    )
    for finding in report.findings:
        style = _FINDING_STYLE[finding.status]
        console.print(f"  [{style}]{finding.status:7}[/{style}] {safe(finding.text())}")


def print_release_check(result: ReleaseCheck) -> None:
    """``tfbuild recipes verify``: the recipe's own lists, then each plan's findings."""
    console = _console(highlight=False, soft_wrap=True, emoji=False)
    verdict = "matches" if result.passed else f"DRIFTED ({len(result.failures)} mismatches)"
    console.print(f"[bold]{safe(result.recipe)}[/bold] against {safe(result.tree)}: {verdict}")
    for finding in (*result.refused, *result.recipe_findings):
        style = _FINDING_STYLE[finding.status]
        console.print(f"  [{style}]{finding.status:7}[/{style}] {safe(finding.text())}")
    for report in result.reports:
        print_preflight(report, title="plan")


def print_smoke(report: SmokeReport) -> None:
    console = _console()
    cand = report.candidate
    console.print(
        f"[bold]{safe(report.candidate_label)}[/bold]: TensorFlow {safe(cand.version or '?')} "
        f"({safe(cand.git_version or 'no git version')})",
        highlight=False,
    )
    if not cand.ok:
        console.print(f"[red]import failed[/red]: {safe(cand.failure)}", highlight=False)
    guard = cand.guard
    if guard.unused:
        _print_hanging(
            console,
            "[red]unused instructions[/red] (TensorFlow's own message): ",
            2,
            " ".join(guard.unused),
            head_width=len("unused instructions (TensorFlow's own message): "),
        )
    elif cand.ok:
        console.print("[green]no unused-instruction message at import[/green]", highlight=False)
    console.print(f"TCMalloc loaded: {'yes' if cand.tcmalloc_loaded else 'no'}", highlight=False)
    if report.results:
        table = Table(
            title=f"vs {safe(report.baseline_label or 'no baseline')} (median, in alternation)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        for column in ("op", "threads", "candidate", "baseline"):
            table.add_column(column, no_wrap=True)
        table.add_column("verdict", ratio=1)  # the one that wraps in a narrow terminal
        short = {"GFLOP/s": "GF/s", "Gelem/s": "Gel/s"}
        for r in report.results:
            unit = short.get(r.candidate.unit, r.candidate.unit)
            base = f"{r.baseline.throughput_median:.2f} {unit}" if r.baseline else "-"
            peak = f" {r.peak_fraction:.0%} pk" if r.peak_fraction else ""
            if r.verdict:
                label = r.verdict.label
                color = {"faster": "green", "slower": "red"}.get(label, "white")
                confirmed = r.verdict.confirmed
                again = (
                    ""
                    if confirmed is None
                    else ", held on a recheck"
                    if confirmed
                    else ", gone on a recheck"
                )
                # "same 1.01x ±5%": short enough to keep each op on one line at 80 columns.
                verdict = (
                    f"[{color}]{label}[/{color}] {r.verdict.ratio:.2f}x "
                    f"±{r.verdict.margin * 100:.0f}%" + (f" ({again[2:]})" if again else "")
                )
            else:
                verdict = "-"
            table.add_row(
                safe(r.op),
                safe(r.threads),
                f"{r.candidate.throughput_median:.2f} {unit}{peak}",
                base,
                verdict,
            )
        console.print(table)
    for trial in report.settings:
        mark = "[green]wins[/green]" if trial.wins else "no gain"
        console.print(f"setting {safe(trial.name)}: {mark}", highlight=False)
    if report.env_file:
        console.print(f"runtime env file: {safe(report.env_file)}", highlight=False)
    if report.passed:
        console.print(f"[green]PASSED[/green] in {report.seconds:.0f} s", highlight=False)
    else:
        for failure in report.failures:
            _print_hanging(console, "[red]FAILED[/red]: ", 8, failure)


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {rest:02d} s" if minutes else f"{seconds:.1f} s"


def print_wheel_result(result: WheelResult, *, quiet: bool = False) -> None:
    """The end of `tfbuild wheel`: where the wheel is, what it is, and what to do next."""
    console = _console(highlight=False, soft_wrap=True)
    loud = _console(stderr=True, highlight=False, soft_wrap=True)
    for warning in result.warnings:
        loud.print(f"[bold red]WARNING[/bold red] {safe(result.wheel.name)}: {safe(warning)}")
    if quiet:
        console.print(safe(result.wheel))
        return
    attempts = len(result.attempts)
    how = "toolchain image built" if result.image_built else "toolchain image reused"
    if attempts > 1:
        jobs = " -> ".join(str(a.jobs) for a in result.attempts)
        how += f"; {attempts} attempts after OOM kills (jobs {jobs})"
    standin = result.data.standin
    # One value a line: paths run long, and a path is copied whole (never wrapped into two).
    rows = [
        ("wheel", str(result.wheel)),
        *([("", "STAND-IN canary, not TensorFlow")] if standin else []),
        ("size", human_size(result.size)),
        ("sha256", result.sha256),
        ("took", f"{_duration(result.seconds)} ({how})"),
        ("receipt", str(result.receipt)),
        ("env file", str(result.env_file)),
        ("", f"set -a; . {result.env_file}; set +a"),
        ("log", str(result.log)),
    ]
    if result.replaced:
        rows.append(("note", "a wheel of the same name was replaced"))
    if not standin:
        rows.append(("next", f"tfbuild smoke {result.wheel}"))
    for name, value in rows:
        console.print(f"{name:9} {safe(value)}")


_MARKS = {
    "ok": "[green]✓[/green]",
    "warn": "[yellow]![/yellow]",
    "fail": "[red]✗[/red]",
    "skip": "-",
}


def print_doctor_check(check: Check) -> None:
    """One doctor check as it completes: mark, name, what was found, and the fix when it failed."""
    console = _console(highlight=False, soft_wrap=True)
    # Wrapped under the detail's own column: marks and names stay a column in a narrow terminal.
    _print_hanging(console, f"{_MARKS[check.status]} {safe(f'{check.name:16}')} ", 19, check.detail)
    if check.fix and check.status != "ok":
        _print_hanging(console, " " * 19, 19, f"fix: {check.fix}")


def _wrap(text: str, width: int, *, first: int = 0, rest: int = 0) -> list[str]:
    """``text`` in lines of at most ``width`` columns after ``first`` columns on the first line and
    ``rest`` on the others (not included), broken between words only: a path or a file name longer
    than the line is never cut, it runs over."""
    lines = textwrap.wrap(
        text,
        max(width, first + 30, rest + 30),
        initial_indent=" " * first,
        subsequent_indent=" " * rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line[first if i == 0 else rest :] for i, line in enumerate(lines)] or [""]


def _print_hanging(
    console: Console, head: str, indent: int, text: str, *, head_width: int | None = None
) -> None:
    """``head`` (markup, ``head_width`` columns wide, default ``indent``), then ``text`` wrapped to
    the console's width with every further line indented ``indent`` columns (rich wraps none of it
    again)."""
    first = indent if head_width is None else head_width
    lines = _wrap(text, console.width, first=first, rest=indent)
    console.print(head + safe(lines[0]), soft_wrap=True)
    for line in lines[1:]:
        console.print(" " * indent + safe(line), soft_wrap=True)


def print_pick(result: PickResult) -> None:
    """``tfbuild pick``: the host, the chosen wheel and why, then every wheel with its status.

    One block per wheel, never a table: a wheel's file name is shown whole (to copy), its reason
    wrapped under it."""
    console = _console(highlight=False, soft_wrap=True)
    host = result.host
    glibc = f"glibc {host.glibc}" if host.glibc else "glibc unknown"
    libstdcxx = f"libstdc++ GLIBCXX_{host.libstdcxx}" if host.libstdcxx else "libstdc++ unknown"
    _print_hanging(
        console,
        "[bold]host[/bold]: ",
        6,
        f"{host.target} ({host.source}), {host.python_text} ({host.python_source}), "
        f"CUDA driver: {host.driver_cuda or 'none'} ({host.driver_source})",
    )
    _print_hanging(
        console,
        " " * 6,
        6,
        f"{glibc} ({host.glibc_source}), {libstdcxx} ({host.libstdcxx_source})",
    )
    if result.chosen is not None:
        standin = "  (STAND-IN canary, not TensorFlow)" if result.chosen.standin else ""
        _print_hanging(
            console,
            "[bold green]chosen[/bold green]: ",
            8,
            f"{result.chosen.wheel.filename}{standin}",
        )
        for line in result.why:
            _print_hanging(console, "  - ", 4, line)
    else:
        console.print("[bold red]no wheel runs here[/bold red]")
    console.print(f"[bold]wheels in {safe(result.source.source)}[/bold]")
    colors = {"runs": "green", "refused": "red", "filtered": "yellow"}
    for assessment in result.wheels:
        status = assessment.status
        reason = (
            assessment.reason
            if status != "filtered"
            else f"{assessment.filtered} ({assessment.reason})"
        )
        color = colors[status]
        rank = f"{assessment.rank or '':>3} [{color}]{status:8}[/{color}] "
        name = assessment.wheel.filename
        if assessment.standin:  # beside the name where it fits, else first in the reason
            if len(name) + 10 <= console.width - 13:
                name += "  STAND-IN"
            else:
                reason = f"STAND-IN, not TensorFlow: {reason}"
        _print_hanging(console, rank, 13, name)
        _print_hanging(console, " " * 13, 13, reason)
    for warning in result.warnings:
        _print_hanging(console, "[yellow]warning:[/yellow] ", 9, warning)


# --- verify --------------------------------------------------------------------------------------


def print_verify(result: VerifyResult) -> None:
    """``reproducible`` with the hash, or the members that differ (ELF: which sections). A sha256
    has a line of its own under a short name, so that it fits 80 columns whole."""
    console = _console(highlight=False, soft_wrap=True)
    diff = result.diff
    for warning in result.warnings:  # e.g. a receipt whose inputs no hash covers
        _print_hanging(console, "[yellow]warning:[/yellow] ", 9, warning)
    if result.reproducible:
        console.print(f"[green]reproducible[/green] {safe(result.wheel.name)}")
        console.print(f"  sha256 {result.sha256}")
        return
    _print_hanging(
        console, "[red]not reproducible[/red] ", 17, f"{result.wheel.name} (sha256 of each below)"
    )
    console.print(f"  wheel    {result.sha256}")
    console.print(f"  rebuild  {result.rebuilt_sha256}")
    if result.sha256 != result.receipt_sha256:
        console.print(f"  receipt  {result.receipt_sha256}")
        console.print(f"{'':11}the wheel is not the one its receipt describes")
    for member in diff.changed:
        # One block per member, never a table: member paths are long and must not be cut.
        size = (
            f"{member.size_a} bytes"
            if member.size_a == member.size_b
            else f"{member.size_a} / {member.size_b} bytes"
        )
        _print_hanging(console, "  ", 4, f"{member.path} differs: {size}")
        for sha256, corrupt, side in (
            (member.sha256_a, member.corrupt_a, "wheel"),
            (member.sha256_b, member.corrupt_b, "rebuild"),
        ):
            shown = f"corrupt: {corrupt}" if corrupt is not None else f"{sha256}"
            _print_hanging(console, f"    {side:8} ", 13, shown)
        if member.elf is not None:
            sections = ", ".join(member.elf.sections) or "none: the headers or padding differ"
            _print_hanging(console, "    ", 6, f"ELF sections that differ: {sections}")
    for path in diff.only_in_a:
        _print_hanging(console, "  ", 4, f"only in the wheel: {path}")
    for path in diff.only_in_b:
        _print_hanging(console, "  ", 4, f"only in the rebuild: {path}")
    for entry in diff.entries:
        _print_hanging(
            console,
            "  ",
            4,
            f"same contents, the zip entry differs: {entry.path} ({', '.join(entry.fields)})",
        )
    for note in diff.layout:
        _print_hanging(console, "  ", 4, f"archive: {note}")


# --- smoke --in-image ----------------------------------------------------------------------------


def print_loads(wheel: Path, reports: Sequence[LoadReport]) -> None:
    """Per image, one line: do the wheel's native libraries load there, does it suit that Python,
    does it import (and which dependencies are missing); then the loader's, Python's and pip's words
    for what did not."""
    console = _console(highlight=False, soft_wrap=True)
    console.print(safe(wheel.name))
    for report in reports:
        states = ["[green]loads[/green]" if report.loads else "[red]does NOT load[/red]"]
        if not report.installable:
            states.append("[red]does NOT install[/red]")
        ok = [m.name for m in report.modules if m.ok]
        failed = [m.name for m in report.modules if not m.ok]
        if ok:
            states.append(f"[green]imports {safe(', '.join(ok))}[/green]")
        if failed:
            states.append(f"[red]does NOT import {safe(', '.join(failed))}[/red]")
        if report.installable and not report.modules:
            states.append("nothing to import")
        if report.missing:
            states.append(f"[yellow]missing {safe(', '.join(report.missing))}[/yellow]")
        if report.installed_by == "pip":
            states.append(f"installed by pip {safe(report.pip or '')} from the wheelhouse")
        console.print(
            f"  {safe(report.image)} (glibc {safe(report.glibc or 'unknown')}, "
            f"Python {safe(report.python or 'unknown')}): {', '.join(states)}"
        )
        notes = [f"{lib.path}: {lib.error}" for lib in report.libraries if not lib.loads]
        if report.not_installable:
            notes.append(report.not_installable)
        notes += [
            f"import {m.name}: {m.error}"
            + (f" (likely cause: the missing dependency {m.cause})" if m.cause else "")
            for m in report.modules
            if not m.ok
        ]
        if report.no_pip:
            notes.append(f"{report.image} has no pip; dependencies cannot be installed offline")
        if report.install_error:
            notes.append(f"pip could not install it from the wheelhouse: {report.install_error}")
        notes += [
            f"{r.state} (no packaging here to evaluate markers): {r.requirement}"
            for r in report.requirements
            if r.state == "not evaluated"
        ]
        unknown = [r.name for r in report.requirements if r.state == "unknown"]
        if unknown:
            notes.append(
                f"not checked (this Python has no importlib.metadata): {', '.join(unknown)}"
            )
        for note in notes:
            console.print(f"    {safe(note)}")
