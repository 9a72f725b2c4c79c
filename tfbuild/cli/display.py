"""Human-readable output of the build side (rich tables): detect, recipes, matrix, plan, preflight,
wheel, doctor. Only the text modes import this; ``--json`` never does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table

from tfbuild.cli.console import make_console, print_hanging, safe
from tfbuild.core.controls import printable
from tfbuild.core.files import human_size
from tfbuild.core.text import hanging, wrap
from tfbuild.detect.report import DetectReport, MachineReport
from tfbuild.plan import BuildPlan
from tfbuild.recipes.recipe import VERIFIED_PARTS, RecipeSet

if TYPE_CHECKING:  # types of other commands' results: importing them would load docker and more
    from tfbuild.build.doctor import Check
    from tfbuild.build.preflight import PreflightReport
    from tfbuild.build.release_check import ReleaseCheck
    from tfbuild.build.run import WheelResult
    from tfbuild.detect.compilers import CompilerFlags
    from tfbuild.detect.cuda_report import CudaReport
    from tfbuild.detect.nvidia import NvidiaReport
    from tfbuild.plan.matrix import Skipped


_GIB = 1024**3


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
    flags = machine.compiler_flags
    coverage = {c.feature: c for c in flags.coverage} if flags else {}
    table = Table(
        title="TensorFlow CPU features (what cpu_feature_guard checks)", title_justify="left"
    )
    table.add_column("feature")
    table.add_column("CPU has it")
    table.add_column(f"enabled by ({safe(flags.compiler.spec)})" if flags else "enabled by")
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


def _gpu_lines(cuda: CudaReport | None, nvidia: NvidiaReport | None) -> list[str]:
    lines: list[str] = []
    if cuda is not None:
        if not cuda.toolkits:
            lines.append("CUDA toolkit: none found")
        for kit in cuda.toolkits:
            found_by = ", ".join(kit.found_by)
            lines.append(f"CUDA toolkit {kit.version or '?'} at {kit.root} (found by {found_by})")
        for entries, label in (
            (cuda.cudnn, "cuDNN"),
            (cuda.nccl, "NCCL"),
            (cuda.tensorrt, "TensorRT"),
        ):
            if not entries:
                lines.append(f"{label}: none found")
            for entry in entries:
                where = entry.header or ", ".join(str(path) for path in entry.libraries)
                lines.append(f"{label} {entry.version or '?'} ({where})")
    if nvidia is not None:
        driver = nvidia.driver
        if driver is None:
            lines.append("NVIDIA driver: none")
        else:
            lines.append(
                f"NVIDIA driver {driver.version} (supports CUDA up to {driver.cuda_version or '?'})"
            )
        for gpu in nvidia.gpus:
            lines.append(
                f"GPU {gpu.index}: {gpu.name}, {gpu.memory_mib} MiB, "
                f"compute capability {gpu.compute_capability or 'unknown'}"
            )
    return lines


def _hanging(console: Console, head: str, text: str, *, indent: int = 2, style: str = "") -> None:
    """``head`` + ``text`` wrapped at the console's width at spaces, the lines after the first
    indented under it (a terminal's own wrap would start them at column 0); ``style`` is the
    markup of ``head`` ("yellow" for "warning:"). Words longer than a line are left whole."""
    lines = hanging(printable(f"{head}{text}"), max(console.width, 40), indent=indent)
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


def _print_flags(console: Console, label: str, flags: CompilerFlags, *about: str) -> None:
    """``label (compiler, about...): flags``, the flags on one line, left whole to be copied."""
    said = ", ".join(safe(part) for part in (flags.compiler.spec, *about))
    console.print(f"[bold]{label}[/bold] ({said}): {safe(' '.join(flags.flags))}", soft_wrap=True)


def _print_answers(console: Console, report: DetectReport) -> None:
    """What ``--target`` and ``--why-not`` asked: the target's flags and where it runs, and
    whether each target fits each machine, and why not."""
    if report.target is not None:
        target = report.target
        _print_flags(console, f"Target {safe(target.name)}", target.compiler_flags)
        for fit in target.runs_on:
            mark, style = ("runs", "green") if fit.runs else ("does not run", "red")
            _hanging(console, f"  {mark}:", f" {fit.reason}", indent=4, style=style)
    for fit in report.why_not:
        mark, style = ("fits", "green") if fit.runs else ("does not fit", "red")
        where = "" if report.live else f" on {fit.machine}"
        _hanging(console, f"why not {fit.target + where}? {mark}:", f" {fit.reason}", style=style)


def print_detect_answers(report: DetectReport) -> None:
    """``tfbuild detect --target NAME`` or ``--why-not NAME``: the answers alone, first line
    first, then what reading a dump left out (it may change the answer) and the target's own
    flag warnings; the whole report is ``tfbuild detect`` without them."""
    console = make_console()
    _print_answers(console, report)
    warnings = [w for m in report.machines for w in m.cpu.warnings]
    if report.target is not None:
        warnings.extend(report.target.compiler_flags.warnings)
    for warning in dict.fromkeys(warnings):
        _hanging(console, "warning:", f" {warning}", style="yellow")


def print_detect(report: DetectReport) -> None:
    console = make_console()
    for machine in report.machines:
        title = "This machine" if report.live else f"Machine from {machine.cpu.source}"
        console.print(_cpu_table(machine, safe(title)))
        features = _feature_table(machine)
        if features is not None:
            console.print(features)
        else:
            console.print(safe(machine.tensorflow_features.note or ""))
        if machine.compiler_flags:
            _print_flags(console, "flags", machine.compiler_flags, machine.microarchitecture)
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
            _print_flags(console, "flags", common.compiler_flags)
        console.print()
    _print_answers(console, report)
    system = _system_rows(report)
    if system is not None:
        console.print(system)
    for line in _gpu_lines(report.cuda, report.nvidia):
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
        title="TensorFlow recipes",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,  # two spaces between columns, none at the edges: 80 columns hold it
        show_edge=False,
    )
    for column in ("TF", "Python", "compiler", "bazel", "wheel", "CUDA/cuDNN", "checked"):
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
            r.verified.checked if r.verified else "no record",
        )
    console = make_console()
    console.print(table)
    parts = len(VERIFIED_PARTS)
    console.print()
    console.print(
        "wheel: ':wheel' target (2.17+) or the build_pip_package script; (h) hermetic: bazel "
        "downloads CUDA/cuDNN at build time. checked: whether the recipe was checked against "
        f"the release's own files; no (0 of {parts}): none of the {parts} parts its verified "
        "record names was read there, each is cited from another source or not verified (tfbuild recipes "
        "show VERSION says how). tfbuild recipes verify VERSION checks it (it downloads the "
        "release).",
        highlight=False,
    )
    user = [r.path for r in recipes.recipes if not r.path.startswith("recipes/")]
    for path in user:
        # soft_wrap: a path is one line, copied whole, never folded at the terminal's width
        console.print(f"from a user directory: {safe(path)}", highlight=False, soft_wrap=True)


def print_matrix(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], *, left_out: int
) -> None:
    """A CI matrix (the wheels' or the overlays'): one row a job; ``left_out``: how many
    combinations were left out unexplained."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for column in columns:
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(*(safe(value) for value in row))
    console = make_console(highlight=False, soft_wrap=True)
    console.print(table)
    if left_out:
        s = "s" if left_out > 1 else ""
        console.print(f"{left_out} combination{s} left out: --explain says why")


def print_skipped(skipped: Sequence[Skipped]) -> None:
    """Why each combination was left out, on stderr (stdout may be the matrix JSON)."""
    console = make_console(stderr=True, highlight=False, soft_wrap=True)
    for entry in skipped:
        console.print(f"left out {safe(entry.name)}: {safe(entry.reason)}")


#: The determinism measures, each a reason of its own in --why: one line by default.
_MEASURES = ("SOURCE_DATE_EPOCH", "build environment", "path prefix map", "wheel normalisation")


def _plan_rows(plan: BuildPlan, *, why: bool) -> list[tuple[str, str, tuple[str, ...]]]:
    """The rows of a plan, one (what, value, reasons) each, in the planner's order. By default its
    decisions, the first reason that fits on the line shown: the compiler and its toolchain as
    one row (what compiles), the determinism measures as one, then the flags, bazel and the cache
    in short. ``why``: every choice with its reason, then what compiles, the flags and the CPU
    features each covers, the whole bazel command, the runtime environment."""
    rows: list[tuple[str, str, tuple[str, ...]]] = []
    measures = [r.what for r in plan.reasons if r.what in _MEASURES]
    for reason in plan.reasons:
        if why:
            rows.append((reason.what, reason.value, (reason.why,)))
        elif reason.what in _MEASURES:
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
    if plan.floor_goal and (why or "glibc floor" not in whats):
        rows.append(
            ("loads on", f"glibc {plan.floor_goal} and newer", ("checked after the build",))
        )
    rows.append(("compiler flags", " ".join(plan.cflags), ()))
    configs = " ".join(f"--config={c}" for c in plan.bazel_configs)
    if why:
        if plan.coverage:
            covers = ", ".join(
                f"{c.feature} ({c.flag or 'NOT COVERED: ' + (c.note or '')})" for c in plan.coverage
            )
            guard = "TensorFlow's guard features, each with the flag that enables it"
            rows.append(("CPU features", covers, (guard,)))
        from tfbuild.plan.bazel import bazel_command  # the planner's: loaded for --why only

        options = " ".join(bazel_command(plan).build)  # with those made from plan.resources
        rows.append((f"bazel {plan.bazel}", f"build {configs} {options} {plan.build_target}", ()))
        env = [f"{k}={v}" for k, v in plan.runtime_env.items()]
    else:
        if plan.coverage:
            missing = [c for c in plan.coverage if not c.flag]
            if missing:
                covered = "; ".join(
                    f"{c.feature} NOT COVERED: {c.note or 'no flag'}" for c in missing
                )
                value = f"{len(plan.coverage) - len(missing)} of {len(plan.coverage)}; {covered}"
            else:
                value = f"all {len(plan.coverage)} TensorFlow guard features of the target enabled"
            rows.append(("CPU features", value, ()))
        rows.append(("bazel", f"{plan.bazel} {configs}".strip(), (plan.build_target,)))
        rows.append(("cache volume", plan.cache_volume, ("bazel's disk and repository caches",)))
        shown = [value for _, value, _ in rows]
        # What no row above says already (the TCMalloc row names its LD_PRELOAD).
        env = [
            f"{k}={v}"
            for k, v in plan.runtime_env.items()
            if not any(f"{k}={v}" in v2 for v2 in shown)
        ]
    if env:
        rows.append(("runtime env", " ".join(env), ()))
    return rows


#: The rows whose value is a command line, or part of one (a bazel command is labelled "bazel
#: VERSION"): never broken, since a command pasted from two lines runs as two.
_COMMAND_ROWS = ("compiler flags", "runtime env")


def _print_rows(
    console: Console, rows: Sequence[tuple[str, str, tuple[str, ...]]], *, why: bool
) -> None:
    """Rows of a plan: the label, its value wrapped in the value column between words (a word
    longer than the column, a digest or a path, runs over it whole: never folded, never cut);
    then the first reason that fits on the value's line, or with ``why`` every reason in full below
    its value. A command line is never broken: when it does not fit the value column it goes whole
    on a line of its own below its label, two columns in."""
    label = max(len(what) for what, _, _ in rows)
    room = max(console.width - label - 2, 20)  # the value column: after the label and a gap
    indent = " " * (label + 2)
    for what, value, reasons in rows:
        shown = printable(value)
        command = what in _COMMAND_ROWS or (what.startswith("bazel ") and why)
        fits = [r for r in reasons if len(shown) + len(printable(r)) + 3 <= room]
        tail = f" [dim]({safe(fits[0])})[/dim]" if fits and not why else ""  # never cut
        if command and room < len(shown) <= console.width - 2:  # whole, below its label
            console.print(f"[bold]{safe(what)}[/bold]")
            console.print(f"  {safe(shown)}{tail}")
        else:  # a command too long for any line runs over beside its label, whole
            first, *rest = [shown] if command else wrap(shown, room) or [""]
            console.print(
                f"[bold]{safe(what)}[/bold]{' ' * (label + 2 - len(what))}{safe(first)}{tail}"
            )
            for line in rest:
                console.print(f"{indent}{safe(line)}")
        for reason in reasons if why else ():
            for line in wrap(printable(reason), room):
                console.print(f"{indent}[dim]{safe(line)}[/dim]")


def print_plan(
    plan: BuildPlan,
    *,
    why: bool = False,
    lead: Sequence[str] = (),
    here: Sequence[str] = (),
) -> None:
    """``tfbuild plan``: the decisions first, one line each, with a short reason where it fits on
    the line (never cut). ``why``: every choice with its reason in full below it, then what
    compiles, the flags and the CPU features each covers, the whole bazel command, the runtime
    environment. ``lead``: warnings said right below the title, before the decisions (no GPU seen
    for a CUDA build); ``here``: warnings about this build host now, said after the plan's own."""
    console = make_console(highlight=False, soft_wrap=True)  # soft: the lines are wrapped here
    console.print(
        f"[bold]TensorFlow {safe(plan.tensorflow)}[/bold] {safe(plan.variant)} wheel for Python "
        f"{safe(plan.python)}, target {safe(plan.target)} ({safe(plan.target_kind)})"
    )
    for warning in lead:
        _hanging(console, "warning:", f" {warning}", style="yellow")
    _print_rows(console, _plan_rows(plan, why=why), why=why)
    for warning in (*plan.warnings, *here):  # escaped (in _hanging): archspec's say "[supported"
        _hanging(console, "warning:", f" {warning}", style="yellow")
    if not why:
        console.print("[dim]every choice with its reason: the same command with --why[/dim]")


_FINDING_STYLE = {"ok": "green", "fail": "bold red", "note": "yellow", "skipped": "dim"}


def print_preflight(report: PreflightReport, *, title: str | None = None) -> None:
    """The preflight's findings, one line each: status, where in the tree, what (why). fix."""
    console = make_console(highlight=False, soft_wrap=True, emoji=False)
    verdict = "fits" if report.passed else f"does NOT fit ({len(report.failures)} mismatches)"
    console.print(
        f"[bold]{title or 'source tree'}[/bold] {safe(report.tree)} {verdict}: {safe(report.plan)}"
    )
    for finding in report.findings:
        style = _FINDING_STYLE[finding.status]
        console.print(f"  [{style}]{finding.status:7}[/{style}] {safe(finding.text())}")


def print_release_check(result: ReleaseCheck) -> None:
    """``tfbuild recipes verify``: the recipe's own lists, then each plan's findings."""
    console = make_console(highlight=False, soft_wrap=True, emoji=False)
    verdict = "matches" if result.passed else f"DRIFTED ({len(result.failures)} mismatches)"
    console.print(f"[bold]{safe(result.recipe)}[/bold] against {safe(result.tree)}: {verdict}")
    for finding in (*result.refused, *result.recipe_findings):
        style = _FINDING_STYLE[finding.status]
        console.print(f"  [{style}]{finding.status:7}[/{style}] {safe(finding.text())}")
    for report in result.plans:
        print_preflight(report, title="plan")


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {rest:02d} s" if minutes else f"{seconds:.1f} s"


def _shell_path(path: str) -> str:
    """``path`` as a command line takes it: relative to the working directory when it lies below
    it (``dist/...whl``), quoted for the shell when it needs quoting."""
    import os
    import shlex
    from pathlib import PurePath

    try:
        relative = os.path.relpath(path)
    except (ValueError, OSError):  # no working directory, or another drive
        relative = path
    return shlex.quote(path if PurePath(relative).parts[:1] == ("..",) else relative)


def print_wheel_result(result: WheelResult, *, quiet: bool = False) -> None:
    """The end of `tfbuild wheel`: where the wheel is, what it is, and what to do next."""
    console = make_console(highlight=False, soft_wrap=True)
    loud = make_console(stderr=True, highlight=False, soft_wrap=True)
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
    # Last: what to run next (the stand-in too: smoke tests it as the stand-in it is).
    rows.append(("next", f"tfbuild smoke {_shell_path(str(result.wheel))}"))
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
    console = make_console(highlight=False, soft_wrap=True)
    # Wrapped under the detail's own column: marks and names stay a column in a narrow terminal.
    print_hanging(console, f"{_MARKS[check.status]} {safe(f'{check.name:16}')} ", 19, check.detail)
    if check.fix and check.status != "ok":
        print_hanging(console, " " * 19, 19, f"fix: {check.fix}")
