"""Human-readable output of finished wheels: smoke, pick, verify and smoke --in-image. Only the text
modes import this; ``--json`` never does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from tfbuild.cli.console import make_console, print_hanging, safe
from tfbuild.core.stats import FASTER, SLOWER, UNDECIDED, describe
from tfbuild.measure.run import LOSES, WINS

if TYPE_CHECKING:  # types of other commands' results: importing them would load docker and more
    from rich.console import Console

    from tfbuild.build.rebuild import VerifyResult
    from tfbuild.pick import Assessment, PickResult
    from tfbuild.smoke.loads import LoadReport
    from tfbuild.smoke.report import SmokeReport
    from tfbuild.smoke.standin import StandinSmoke


def _rate(value: float) -> str:
    """A throughput to four or five significant digits: ``0.52``, ``12.34``, ``804.8``, ``9350.1``
    (the noise is wider than the last one, and a row must fit 80 columns)."""
    return f"{value:.1f}" if value >= 100 else f"{value:.2f}"


def print_smoke(report: SmokeReport) -> None:
    console = make_console()
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
        print_hanging(
            console,
            "[red]unused instructions[/red] (TensorFlow's own message): ",
            2,
            " ".join(guard.unused),
            head_width=len("unused instructions (TensorFlow's own message): "),
        )
    elif cand.ok:
        console.print("[green]no unused-instruction message at import[/green]", highlight=False)
    console.print(f"TCMalloc loaded: {'yes' if cand.tcmalloc_loaded else 'no'}", highlight=False)
    if report.undecided_note:  # before the numbers it qualifies
        print_hanging(console, "[yellow]undecided[/yellow]: ", 11, report.undecided_note)
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
        colors = {FASTER: "green", SLOWER: "red", UNDECIDED: "yellow"}
        for r in report.results:
            unit = short.get(r.candidate.unit, r.candidate.unit)
            base = f"{_rate(r.baseline.throughput_median)} {unit}" if r.baseline else "-"
            verdict = "-"
            if r.verdict:
                color = colors.get(r.verdict.label, "white")
                label, _, rest = describe(r.verdict).partition(" ")
                verdict = f"[{color}]{label}[/{color}] {rest}"
            table.add_row(
                safe(r.op),
                safe(r.threads),
                f"{_rate(r.candidate.throughput_median)} {unit}",
                base,
                verdict,
            )
        console.print(table)
        machine = report.machine
        if machine is not None:
            print_hanging(console, "machine: ", 9, machine.describe())
    for trial in report.settings:
        outcome = trial.outcome
        color = {WINS: "green", LOSES: "red", UNDECIDED: "yellow"}.get(outcome, "white")
        undecided = f" ({', '.join(trial.undecided)} undecided)" if trial.undecided else ""
        console.print(
            f"setting {safe(trial.name)}: [{color}]{outcome}[/{color}]{safe(undecided)}",
            highlight=False,
        )
    if report.env_file:
        console.print(f"runtime env file: {safe(report.env_file)}", highlight=False)
    if report.passed:
        console.print(f"[green]PASSED[/green] in {report.seconds:.0f} s", highlight=False)
    else:
        for failure in report.failures:
            print_hanging(console, "[red]FAILED[/red]: ", 8, failure)


def print_standin_smoke(report: StandinSmoke, *, bench: bool) -> None:
    """``tfbuild smoke`` of the canary's stand-in: what it is, that it runs, and what shows its
    flags (recorded, and in its machine code)."""
    console = make_console(highlight=False, soft_wrap=True)
    console.print(f"[bold]{safe(report.wheel)}[/bold]")
    print_hanging(
        console,
        "[yellow]STAND-IN[/yellow]: ",
        10,
        "tfbuild's canary, not TensorFlow: tested as the stand-in it is",
    )
    environment = "a reused environment" if report.reused else "a new environment"
    if report.ran:
        print_hanging(
            console,
            "[green]runs[/green]: ",
            6,
            f"installs into {environment}, imports {report.module}, its kernel ran (sum "
            f"{report.checksum:.6g}) and its C++ part (a thread, a libstdc++ string: "
            f"{report.runtime})",
        )
    else:
        print_hanging(console, "[red]does NOT run[/red]: ", 6, report.failure or "", head_width=14)
    if report.flags is not None:
        said = " ".join(report.flags) or "no flags"
        if report.receipt_flags is None:
            where = "recorded in the wheel; no receipt beside it to compare with"
        elif report.flags == report.receipt_flags:
            where = f"recorded in the wheel, as its receipt says; target {report.target}"
        else:
            where = f"recorded in the wheel; its receipt says {' '.join(report.receipt_flags)}"
        print_hanging(console, "flags: ", 7, f"{said} ({where})")
    found = report.instructions
    if found.counted is not None:
        counts = ", ".join(f"{found.counted.get(kind, 0)} {kind}" for kind in ("zmm", "ymm", "fma"))
        said = ""
        if found.expected is not None:
            kinds = " and ".join(found.expected)
            said = (
                f": the {kinds} its flags call for"
                if kinds
                else ": no vector extensions, as its flags enable none"
            )
        print_hanging(console, "machine code: ", 14, f"{counts} instructions{said}")
    if found.note:
        print_hanging(console, "machine code: ", 14, found.note)
    if bench:
        print_hanging(
            console,
            "no benchmark: ",
            14,
            "a stand-in has no stock wheel to be compared with; tfbuild doctor times the canary "
            "built for this machine against its x86_64 build",
        )
    if report.passed:
        print_hanging(
            console,
            "[green]PASSED[/green] ",
            7,
            f"in {report.seconds:.1f} s: the stand-in works (it proves the pipeline, not "
            "TensorFlow)",
        )
    else:
        for failure in report.failures:
            print_hanging(console, "[red]FAILED[/red]: ", 8, failure)


def print_pick(result: PickResult) -> None:
    """``tfbuild pick``: the host, the chosen wheel and why, the chosen overlay and why, then every
    wheel with its status, and every overlay.

    One block per wheel, never a table: a wheel's file name is shown whole (to copy), its reason
    wrapped under it."""
    from tfbuild.pick.machine import TENSORFLOW_NOT_ASKED

    console = make_console(highlight=False, soft_wrap=True)
    host = result.host
    glibc = f"glibc {host.glibc}" if host.glibc else "glibc unknown"
    libstdcxx = f"libstdc++ GLIBCXX_{host.libstdcxx}" if host.libstdcxx else "libstdc++ unknown"
    print_hanging(
        console,
        "[bold]host[/bold]: ",
        6,
        f"{host.target} ({host.source}), {host.python_text} ({host.python_source}), "
        f"CUDA driver: {host.driver_cuda or 'none'} ({host.driver_source})",
    )
    print_hanging(
        console,
        " " * 6,
        6,
        f"{glibc} ({host.glibc_source}), {libstdcxx} ({host.libstdcxx_source})",
    )
    if host.tensorflow_source != TENSORFLOW_NOT_ASKED:  # there were overlays to judge
        installed = (
            f"{host.tensorflow.text} ({host.tensorflow_source})"
            if host.tensorflow is not None
            else host.tensorflow_source
        )
        print_hanging(console, " " * 6, 6, f"TensorFlow: {installed}")
    if result.chosen is not None:
        standin = "  (STAND-IN canary, not TensorFlow)" if result.chosen.standin else ""
        print_hanging(
            console,
            "[bold green]chosen[/bold green]: ",
            8,
            f"{result.chosen.wheel.filename}{standin}",
        )
        for line in result.why:
            print_hanging(console, "  - ", 4, line)
    elif not result.options.overlay and (result.wheels or not result.overlays):
        console.print("[bold red]no wheel runs here[/bold red]")
    if result.overlay is not None:
        print_hanging(
            console, "[bold green]overlay[/bold green]: ", 9, result.overlay.wheel.filename
        )
        for line in result.overlay_why:
            print_hanging(console, "  - ", 4, line)
        if result.chosen is not None:
            print_hanging(
                console,
                "  - ",
                4,
                "an overlay goes on the TensorFlow installed, which the chosen wheel would "
                "replace: --overlay chooses among overlays alone (and --install installs it)",
            )
    elif result.overlays:
        console.print("[bold red]no overlay runs here on the TensorFlow installed[/bold red]")
    _print_assessments(console, "wheels", result.source.source, result.wheels)
    _print_assessments(console, "overlays", result.source.source, result.overlays)
    for warning in result.warnings:
        print_hanging(console, "[yellow]warning:[/yellow] ", 9, warning)


def _print_assessments(
    console: Console, kind: str, source: str, assessments: Sequence[Assessment]
) -> None:
    """``wheels in SOURCE`` (or ``overlays in``), then one block per wheel: its rank and status,
    its whole name, its reason wrapped beneath."""
    if not assessments:
        return
    head = f"{kind} in "
    if len(head) + len(source) <= console.width:
        console.print(f"[bold]{head}{safe(source)}[/bold]", soft_wrap=True)
    else:  # a long path on a line of its own, whole, to copy
        console.print(f"[bold]{head.strip()}[/bold]")
        console.print(f"  [bold]{safe(source)}[/bold]", soft_wrap=True)
    colors = {"runs": "green", "refused": "red", "filtered": "yellow"}
    for assessment in assessments:
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
        print_hanging(console, rank, 13, name)
        print_hanging(console, " " * 13, 13, reason)


# --- verify --------------------------------------------------------------------------------------


def print_verify(result: VerifyResult) -> None:
    """``reproducible`` with the hash, or the members that differ (ELF: which sections). A sha256
    has a line of its own under a short name, so that it fits 80 columns whole."""
    console = make_console(highlight=False, soft_wrap=True)
    diff = result.diff
    for warning in result.warnings:  # e.g. a receipt whose inputs no hash covers
        print_hanging(console, "[yellow]warning:[/yellow] ", 9, warning)
    if result.reproducible:
        console.print(f"[green]reproducible[/green] {safe(result.wheel.name)}")
        console.print(f"  sha256 {result.sha256}")
        return
    print_hanging(
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
        print_hanging(console, "  ", 4, f"{member.path} differs: {size}")
        for sha256, corrupt, side in (
            (member.sha256_a, member.corrupt_a, "wheel"),
            (member.sha256_b, member.corrupt_b, "rebuild"),
        ):
            shown = f"corrupt: {corrupt}" if corrupt is not None else f"{sha256}"
            print_hanging(console, f"    {side:8} ", 13, shown)
        if member.elf is not None:
            sections = ", ".join(member.elf.sections) or "none: the headers or padding differ"
            print_hanging(console, "    ", 6, f"ELF sections that differ: {sections}")
    notes = [
        *(f"only in the wheel: {path}" for path in diff.only_in_a),
        *(f"only in the rebuild: {path}" for path in diff.only_in_b),
        *(
            f"same contents, the zip entry differs: {e.path} ({', '.join(e.fields)})"
            for e in diff.entries
        ),
        *(f"archive: {note}" for note in diff.layout),
    ]
    for note in notes:
        print_hanging(console, "  ", 4, note)


# --- smoke --in-image ----------------------------------------------------------------------------


def print_loads(wheel: Path, reports: Sequence[LoadReport]) -> None:
    """Per image, one line: do the wheel's native libraries load there, does it suit that Python,
    does it import (and which dependencies are missing); then the loader's, Python's and pip's words
    for what did not."""
    console = make_console(highlight=False, soft_wrap=True)
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
        if report.install.by == "pip":
            states.append(f"installed by pip {safe(report.install.pip or '')} from the wheelhouse")
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
        if report.install.error:
            notes.append(f"pip could not install it from the wheelhouse: {report.install.error}")
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
