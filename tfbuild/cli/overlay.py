"""The ``tfbuild overlay`` command: plan the target, build the overlay wheel, say what it holds."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tfbuild.cli.forecast import left_to_stock, print_forecast_beside
from tfbuild.cli.options import takes
from tfbuild.cli.output import print_data, print_json, progressing
from tfbuild.core import serial
from tfbuild.core.controls import printable
from tfbuild.core.errors import UsageError
from tfbuild.core.options import (
    CPUINFO,
    DIST,
    HOST_COMPILER,
    INSTALLED,
    JSON,
    STOCK,
    TARGET,
    TF,
    declared,
    option,
)
from tfbuild.core.pythons import PYTHON_INTERPRETER

if TYPE_CHECKING:
    from tfbuild.overlay.models import ModelResult
    from tfbuild.overlay.prove import OverlayProof
    from tfbuild.wheel.overlay_receipt import KernelCheck, OverlayReceipt


@dataclass(frozen=True, kw_only=True)
class OverlayArgs:
    """What ``tfbuild overlay`` was asked: the machine and release (as plan takes them), the stock
    TensorFlow to build against, the compiler, where the wheel goes."""

    tf: str | None = option(TF, default=None)
    target: str | None = option(TARGET, default=None)
    cpuinfo: Path | None = option(CPUINFO, default=None)
    stock: str | None = option(
        STOCK.but(help=f"{STOCK.help} The overlay is built against it."), default=None
    )
    installed: bool = option(INSTALLED, default=False)
    python: str = option(PYTHON_INTERPRETER, default=sys.executable)
    compiler: str | None = option(HOST_COMPILER, default=None)
    dist: Path = option(DIST, default=Path("dist"))
    as_json: bool = option(JSON, default=False)
    check: bool = declared(
        False,
        "--check",
        help="Build nothing: run the special-value check of the overlay installed for "
        "--python on this CPU, and record that it passed where its loader reads it. An "
        "overlay built on a machine without its target's instruction sets loads only after "
        "that.",
    )


@takes(OverlayArgs)
def overlay_command(args: OverlayArgs) -> None:
    """A faster stock TensorFlow in minutes: its element-wise kernels compiled for this CPU, as a
    wheel installed beside it (pip uninstall it and TensorFlow is stock again)."""
    from tfbuild.overlay.build import OverlayRequest, build_overlay
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.options import PlanOptions

    if args.check:
        check_command(args)
        return
    if args.installed and args.stock is not None:
        raise UsageError("--installed and --stock both name the TensorFlow", fix="Drop one.")
    installed = installed_release(args.python, args.tf) if args.installed else None
    release = ".".join(installed.split(".")[:2]) if installed else args.tf
    planned = plan_here(PlanOptions(tf=release, target=args.target, cpuinfo=args.cpuinfo))
    plan = planned.plan
    if plan.architecture != "x86_64":
        raise UsageError(
            f"an overlay is for x86-64 (this plan is for {plan.architecture})",
            fix="Build the overlay on an x86-64 machine.",
        )

    with progressing("overlay", quiet=args.as_json) as progress:
        result = build_overlay(
            OverlayRequest.of_plan(
                plan,
                host_compiler=args.compiler,
                in_image=args.compiler is None,
                # --installed: the release installed, which a patch release of the recipe's minor is
                tensorflow=installed or plan.tensorflow,
                stock=args.stock,
                python=args.python if args.installed else None,
                venv_python=args.python,
                out=args.dist,
            ),
            progress=progress,
        )
    if args.as_json:
        print_data(result.receipt)
        return
    typer.echo(printable("\n".join(built_lines(result.wheel, result.receipt))))


def check_command(args: OverlayArgs) -> None:
    """``tfbuild overlay --check``: the installed overlay's check, run and recorded here."""
    from tfbuild.overlay.pending import check_installed

    building = {
        "--tf": args.tf,
        "--target": args.target,
        "--cpuinfo": args.cpuinfo,
        "--stock": args.stock,
        "--installed": args.installed or None,
        "--compiler": args.compiler,
    }
    given = [flag for flag, value in building.items() if value is not None]
    if given:
        raise UsageError(
            f"--check builds nothing, so {' '.join(given)} has no use with it",
            fix="Drop them: --check runs the check of the overlay installed for --python.",
        )

    with progressing("overlay", quiet=args.as_json) as progress:
        done = check_installed(args.python, progress=progress)
    if args.as_json:
        data = {
            "schema": "tfbuild.overlay-check/1",
            "site": str(done.site),
            "target": done.manifest.target,
            "tensorflow": done.manifest.tensorflow,
            "pending": list(done.manifest.pending),
            "recorded": str(done.record) if done.record else None,
            "checks": serial.to_data(done.checks),
        }
        print_json(data)
        return
    manifest = done.manifest
    lines = [
        f"the overlay for {manifest.target} (TensorFlow {manifest.tensorflow}) in {done.site}",
        *_block(_checked_line(done.checks)),
        *_block(
            f"recorded in {done.record}: its loader registers the kernels from the next "
            "import tensorflow"
            if done.record
            else "its check was not pending (it passed when the overlay was built): nothing "
            "to record"
        ),
    ]
    typer.echo(printable("\n".join(lines)))


def _checked_line(checks: Sequence[KernelCheck]) -> str:
    exact = sum(1 for c in checks if c.max_ulp == 0)
    widest = max(checks, key=lambda c: (c.max_ulp, c.bound), default=None)
    if widest is None:
        return "not checked against stock"
    return (
        f"checked against stock on special values: {len(checks)} kernels, {exact} exact, the "
        f"rest within their ulp bounds (widest: {widest.kernel} {widest.max_ulp} of "
        f"{widest.bound})"
    )


def installed_release(python: str, asked: str | None = None) -> str | None:
    """The TensorFlow release installed for ``python`` (tensorflow-cpu's, else tensorflow's), or
    None when there is none to read (the build then says why). A ``--tf`` of another minor
    release than the one installed is refused; a patch release of it is the same overlay."""
    from tfbuild.measure.envs import installed_version

    found = installed_version(python, "tensorflow-cpu") or installed_version(python, "tensorflow")
    if found is None:
        return None
    minor = found.split(".")[:2]
    if asked is not None and asked.split(".")[:2] != minor:
        raise UsageError(
            f"--tf {asked} asks for another release than the TensorFlow {found} of {python}",
            fix=f"Drop --tf (--installed builds for {found}), or pass an interpreter with "
            f"TensorFlow {asked}.",
        )
    return found


def _block(text: str, *, width: int = 80) -> list[str]:
    """One statement, two columns in, its further lines four in (paths and commands kept whole;
    one too long for that indent starts further left, so that it still fits when it can)."""
    from tfbuild.core.text import wrap

    lines = wrap(text, width, first=2, rest=4)
    return [
        " " * max(0, min(4 if i else 2, width - len(line))) + line for i, line in enumerate(lines)
    ]


def built_lines(wheel: Path, receipt: OverlayReceipt) -> list[str]:
    """What ``tfbuild overlay`` says of the wheel it made: each fact once, in 80 columns; the
    receipt (``--json``) holds every kernel's check and reason."""
    from tfbuild.overlay.pending import COMMAND

    if receipt.pending:
        checked = (
            f"special-value check pending: the machine it was built on lacks "
            f"{' '.join(receipt.pending)}; its loader registers nothing until '{COMMAND}' "
            "passes on a machine that has them, after pip install (pick --install runs it)"
        )
    else:
        checked = _checked_line(receipt.checks)
        checked += "; each kernel's in the receipt" if receipt.checks else ""
    lines = [
        str(wheel),
        *_block(
            f"{len(receipt.kernels)} kernels of {receipt.distribution} {receipt.tensorflow} for "
            f"{receipt.target}, {receipt.compiler_version}, {receipt.seconds:.0f} s"
        ),
        *_block(f"flags: {' '.join(receipt.cflags)}"),
        *_block(f"loads only where the CPU has: {' '.join(receipt.features)}"),
    ]
    system = [o.instruction_set for o in receipt.left_out if o.system]
    if system:
        lines += _block(
            f"not needed (system instructions no kernel contains; a VM may hide them): "
            f"{' '.join(system)}"
        )
    for other in receipt.left_out:
        if not other.system:
            lines += _block(f"not used: {other.instruction_set} ({other.why})")
    lines += _block(checked)
    for left in left_to_stock(receipt.skipped):
        lines += _block(left)
    lines += [
        *_command("install", "pip install", wheel),
        f"    (beside {receipt.distribution}=={receipt.tensorflow})",
        *_command("prove", "tfbuild smoke", wheel),
    ]
    return lines


def _command(label: str, command: str, path: Path, *, width: int = 80) -> list[str]:
    """``  label: command PATH`` on one line when it fits, else the path on a line of its own
    after a shell continuation: copied whole, either runs."""
    one = f"  {label}: {command} {path}"
    if len(one) <= width:
        return [one]
    return [f"  {label}: {command} \\", f"    {path}"]


def print_overlay_smoke(proof: OverlayProof) -> None:
    """``tfbuild smoke OVERLAY.whl``: each replaced op and control against stock, then the models."""
    from tfbuild.core.stats import describe
    from tfbuild.overlay.prove import CONTROLS, LEFT_TO_STOCK

    lines = [f"{proof.wheel}: " + ("loaded" if proof.loaded else "NOT loaded")]
    if proof.load_message:
        lines.append(f"  {proof.load_message}")
    if proof.ops:
        lines.append(f"  {'op':<15}{'threads':>8}{'stock':>9}{'overlay':>9}  verdict")
    for r in proof.ops:
        base = f"{r.baseline.throughput.median:>9.2f}" if r.baseline else f"{'-':>9}"
        found = describe(r.verdict) if r.verdict else "-"
        lines.append(
            f"  {r.op:<15}{r.threads:>8}{base}{r.candidate.throughput.median:>9.2f}  {found}"
        )
    if proof.ops:
        lines += _block(
            "(Gelem/s, medians; stock: the same environment with TFBUILD_OVERLAY=off; "
            f"{', '.join(LEFT_TO_STOCK)}: left to stock, and {', '.join(CONTROLS)}: "
            "controls, the same)"
        )
    lines += _model_lines(proof.models)
    scope = textwrap.TextWrapper(width=80, initial_indent="  ", subsequent_indent="    ")
    lines += [line for note in proof.scope for line in scope.wrap(f"scope: {note}")]
    typer.echo(printable("\n".join(lines)))
    if proof.forecast is not None:
        print_forecast_beside(proof.forecast)
    elif proof.receipt is not None and proof.ops:
        note = (
            f"no forecast kept for {proof.receipt.target}: 'tfbuild forecast --tf "
            f"{proof.receipt.tensorflow} --target {proof.receipt.target}' predicts these "
            "gains, and smoke shows them side by side"
        )
        typer.echo(printable("\n".join(_block(note))))


def _model_lines(models: Sequence[ModelResult]) -> list[str]:
    """Each model: the replaced kernels' share of its time, the gain that predicts, the gain
    measured with its interval, then what it is and where its time went; 80 columns."""
    if not models:
        return []
    lines = [
        "  models, default threads: the replaced kernels' share of the op time (stock),",
        "  their speedup, what that predicts for the model (Amdahl), what it measured:",
        f"  {'model':<13}{'share':>7}{'kernels':>9}{'predicts':>10}  measured [interval]",
    ]
    wrap = textwrap.TextWrapper(width=80, initial_indent=" " * 6, subsequent_indent=" " * 8)
    for m in models:
        found = m.measured.verdict
        if found is None:
            measured = "-"
        else:
            low, high = found.interval
            label = "not claimed" if m.note and found.label == "faster" else found.label
            measured = f"{found.ratio:.3f}x [{low:.3f}, {high:.3f}] {label}"
        lines.append(
            f"  {m.model:<13}{m.share * 100:>6.1f}%{m.speedup:>8.2f}x{m.predicted:>9.3f}x  "
            f"{measured}"
        )
        top = ", ".join(f"{op} {seconds * 1e3:.1f}" for op, seconds in m.top)
        lines += wrap.wrap(f"{m.what}; ms a step: {top}")
        if m.kernels:
            kernels = ", ".join(
                f"{k.kernel} {k.stock_s * 1e3:.2f}->{k.overlay_s * 1e3:.2f}" for k in m.kernels
            )
            lines += wrap.wrap(f"replaced, ms a step: {kernels}")
        if m.not_run:
            lines += wrap.wrap(f"fused or rewritten before they ran: {', '.join(m.not_run)}")
        if m.note:
            lines += wrap.wrap(f"not claimed: {m.note}")
    return lines


def verify_overlay_command(wheel: Path, *, as_json: bool) -> None:
    """``tfbuild verify OVERLAY.whl``: rebuilt from its receipt, the same bytes or exit 8."""
    from tfbuild.overlay.build import verify_overlay

    with progressing("verify", quiet=as_json) as progress:
        again = verify_overlay(wheel, progress=progress)
    if as_json:
        data = {"wheel": wheel.name, "reproducible": True, "sha256": again.receipt.wheel.sha256}
        print_json(data)
        return
    typer.echo(
        printable(
            f"{wheel.name}: rebuilt from its receipt with {again.receipt.compiler_version}, "
            f"the same bytes (sha256 {again.receipt.wheel.sha256})"
        )
    )
