"""``tfbuild tune --model``: the user's model as fast as this machine runs it (the lever search is
:mod:`tfbuild.measure.levers`); here, the overlay it measures (installed, given or built), the
lines it prints, and the env file it writes."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tfbuild.cli.output import echo_hanging, print_json
from tfbuild.core.errors import InputError, UsageError

if TYPE_CHECKING:
    from tfbuild.measure.envs import WheelSpec
    from tfbuild.measure.levers import LeverResult, ModelTune, OverlayLever
    from tfbuild.measure.models import ModelFile

Say = Callable[[str], None]
#: Seconds tune measures a model's levers by default.
MODEL_BUDGET = 600.0
#: ``--overlay-wheel``'s words besides a wheel's path.
OVERLAY_BUILD, OVERLAY_NONE = "build", "none"


def default_env_file(model: ModelFile) -> Path:
    """``gru.keras`` -> ``gru.env`` beside it; a SavedModel directory ``served`` -> ``served.env``."""
    path = Path(model.path)
    return path.with_name((path.stem if model.kind == "keras" else path.name) + ".env")


def tune_a_model(
    spec: WheelSpec,
    model: ModelFile,
    *,
    python: str,
    budget: float,
    env_file: Path | None,
    overlay: str | None,
    as_json: bool,
    say: Say,
) -> None:
    """Tune the model on ``spec``'s TensorFlow: the levers raced, the winner confirmed, the env
    file written (``env_file``, default beside the model), the result printed."""
    from tfbuild.core.heartbeat import Heartbeat
    from tfbuild.measure.envs import clean_env, ensure_env
    from tfbuild.measure.levers import LEVER_VARIABLES, ModelTuneOptions, tune_model
    from tfbuild.measure.tune import process_knobs
    from tfbuild.measure.tune_report import model_tune_json, write_env_file
    from tfbuild.overlay.ops import candidate_names

    target = env_file or default_env_file(model)
    with Heartbeat(say) as beat, tempfile.TemporaryDirectory(prefix="tfbuild-tune-") as scratch:
        beat(f"an environment with {spec.label} (made once, then reused)")
        env = ensure_env(spec, python=python)
        lever, note = find_overlay(overlay, env.python, Path(scratch), say=beat)
        options = ModelTuneOptions(
            python=env.python,
            wheel=spec.label,
            model=model,
            base_env={k: v for k, v in clean_env().items() if k not in LEVER_VARIABLES},
            budget=budget,
            overlay=lever,
            overlay_note=note,
            knobs=process_knobs(env.python),
            replaced=candidate_names(),
        )
        found = tune_model(options, say=beat)
    write_env_file(target, found)
    line = headline(found)
    if as_json:
        print_json(model_tune_json(found, line) | {"written": str(target)})
        return
    print_model_tune(found, line, target)


def find_overlay(
    choice: str | None, python: str, scratch: Path, *, say: Say
) -> tuple[OverlayLever | None, str | None]:
    """The overlay to measure, and why none is when none is: ``choice`` is --overlay-wheel (a
    wheel, "build", "none", or None: the one installed for ``python``, if any)."""
    from tfbuild.measure.envs import installed_version
    from tfbuild.measure.levers import OverlayLever
    from tfbuild.overlay.package import DISTRIBUTION

    installed = installed_version(python, DISTRIBUTION)
    if choice == OVERLAY_NONE:
        return None, "not measured (--overlay-wheel none)"
    if choice is None:
        if installed is None:
            return None, (
                "no overlay measured: none is installed in this TensorFlow; --overlay-wheel build "
                "makes one for this CPU here (about 30 s), --overlay-wheel WHEEL measures one"
            )
        return OverlayLever(source=f"installed ({DISTRIBUTION} {installed})", installed=True), None
    if installed is not None:
        raise UsageError(
            f"--overlay-wheel {choice}: an overlay ({DISTRIBUTION} {installed}) is installed in "
            "the TensorFlow tuned, and both would answer",
            fix="Drop --overlay-wheel to measure the installed one, or pip uninstall "
            f"{DISTRIBUTION}.",
        )
    wheel = build_overlay_here(python, say=say) if choice == OVERLAY_BUILD else Path(choice)
    return unpacked_overlay(wheel, scratch), None


def build_overlay_here(python: str, *, say: Say) -> Path:
    """An overlay for this CPU against ``python``'s TensorFlow, built with the host's compiler of
    the recipe's family, checked on special values, into dist/."""
    from tfbuild.cli.overlay import installed_release
    from tfbuild.overlay.build import OverlayRequest, build_overlay
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.options import PlanOptions

    release = installed_release(python)
    if release is None:
        raise UsageError(
            "--overlay-wheel build: no TensorFlow distribution found in the tuned interpreter",
            fix="Tune a stock TensorFlow (tensorflow-cpu==X.Y.Z, or --installed), or pass "
            "--overlay-wheel WHEEL.",
        )
    plan = plan_here(PlanOptions(tf=release)).plan
    say(f"building an overlay for {plan.target} against TensorFlow {release}")
    result = build_overlay(OverlayRequest.of_plan(plan, python=python), progress=say)
    say(f"built {result.wheel}")
    return result.wheel


def unpacked_overlay(wheel: Path, scratch: Path) -> OverlayLever:
    """An overlay wheel unpacked into ``scratch``/site-packages, which TensorFlow scans for
    tensorflow-plugins/ when it is on PYTHONPATH: on for the processes that measure it, and
    nothing installed into the user's TensorFlow."""
    from tfbuild.measure.levers import OverlayLever
    from tfbuild.overlay.build import install_into
    from tfbuild.wheel.overlay_receipt import is_overlay_wheel, read_overlay_receipt
    from tfbuild.wheel.receipt import receipt_path

    if not wheel.is_file() or not is_overlay_wheel(wheel):
        raise InputError(
            f"--overlay-wheel {wheel}: not an overlay wheel",
            why="no such file" if not wheel.exists() else "its name is not tfbuild_overlay-*.whl",
            fix="Pass a wheel tfbuild overlay made, 'build' or 'none'.",
        )
    receipt = receipt_path(wheel)
    kernels = read_overlay_receipt(receipt, wheel=wheel).kernels if receipt.exists() else ()
    site = scratch / "site-packages"
    install_into(wheel, site)
    return OverlayLever(
        source=str(wheel), installed=False, site=str(site), wheel=str(wheel), kernels=kernels
    )


# --- what it says -------------------------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    """Milliseconds to three significant digits, zeros kept: 4.70 ms, 12.3 ms, 0.512 ms."""
    return "-" if seconds is None else f"{seconds * 1e3:#.3g} ms".replace(". ms", " ms")


def _ratio(row: LeverResult) -> str:
    if row.verdict is None:
        return "-"
    low, high = row.verdict.interval
    return f"{row.verdict.ratio:.2f}x [{low:.2f}, {high:.2f}]"


def _overlay_clause(found: ModelTune) -> str:
    """What the overlay did, for the headline: nothing beyond noise, slower, or not measured."""
    from tfbuild.core.stats import UNDECIDED
    from tfbuild.measure.run import LOSES, WINS

    if found.overlay is None:
        return "no overlay measured"
    if found.kept is not None and "overlay" in found.kept.levers:
        return ""
    row = next((r for r in found.levers if r.levers == ("overlay",)), None)
    if row is None or row.outcome == "failed":
        return "the overlay could not be measured" + (f" ({row.why})" if row and row.why else "")
    if row.outcome == LOSES and row.verdict is not None:
        return f"the overlay is slower here ({row.verdict.ratio:.2f}x)"
    if row.outcome == WINS and row.verdict is not None:
        under_xla = found.kept is not None and "xla" in found.kept.levers
        why = " (its kernels do not run under XLA)" if under_xla else ", less than this"
        return f"the overlay alone gains {row.verdict.ratio:.2f}x{why}"
    if row.outcome == UNDECIDED and row.verdict is not None and row.why:
        return (
            f"the overlay's measured {row.verdict.ratio:.2f}x is not its kernels' doing "
            "(what a rebuild would add, below): not claimed"
        )
    if row.outcome == UNDECIDED and row.verdict is not None:
        return f"the overlay gains too little to tell from noise here ({_ratio(row)})"
    return "the overlay adds nothing beyond noise here"


def headline(found: ModelTune) -> str:
    """The first line: the model's step before and after, the ratio and its interval, and what
    gave it; or that nothing beat stock beyond the noise."""
    name = Path(found.model.path).name
    overlay = _overlay_clause(found)
    tail = f"; {overlay}" if overlay else ""
    if found.kept is not None:
        confirmation = found.kept.confirmation
        before = confirmation.baseline.seconds.median if confirmation.baseline else None
        after = confirmation.candidate.seconds.median
        verdict = found.kept.verdict
        low, high = verdict.interval
        return (
            f"{name}: {_ms(before)} -> {_ms(after)}, {verdict.ratio:.2f}x [{low:.2f}, {high:.2f}] "
            f"faster with {found.kept.said}{tail}"
        )
    losers = [
        f"{r.name} {r.verdict.ratio:.2f}x"
        for r in found.levers
        if r.threads == "default" and r.against == "stock" and r.verdict is not None
    ]
    measured = f" ({', '.join(losers)})" if losers else ""
    return (
        f"{name}: {_ms(found.stock_seconds)} a step; nothing measured here beats stock "
        f"TensorFlow's defaults beyond noise{measured}{tail}"
    )


def print_model_tune(found: ModelTune, line: str, written: Path) -> None:
    """The headline, how to apply the kept profile, each lever, what a rebuild would add: wrapped
    to the terminal when standard output is one, every line whole when piped."""
    from tfbuild.measure.levers import STOCK_NAMES
    from tfbuild.measure.tune_report import machine

    lines: list[tuple[str, int]] = [(line, 2)]
    if found.kept is not None:
        apply = found.kept.apply
        lines += [(f"  install first: {step}", 4) for step in apply.install]
        lines += [(f"  in your code: {change}", 4) for change in apply.code]
        env = " ".join(f"{k}={v}" for k, v in apply.env)
        lines.append((f"  env file {written}: {env or 'nothing to set'}", 4))
    else:
        lines.append((f"  env file {written}: TensorFlow's defaults (nothing to set)", 4))
    if found.not_kept:
        lines.append((f"  {found.not_kept}", 4))
    described = found.described
    made = ", ".join(
        f"{i['name']} {tuple(i['shape'])} {i['dtype']} {i['fill']}"
        for i in described.get("inputs", [])  # type: ignore[attr-defined]
    )
    params = described.get("params")
    size = f", {params:,} parameters" if isinstance(params, int) else ""
    model = f"{Path(found.model.path).name} ({found.model.step}{size}; a batch of {made})"
    lines.append((f"levers on {model}, each against stock at its threads:", 2))
    lines.append((f"  {'stock':<30}{'default':>8}  {_ms(found.stock_seconds)} a step", 4))
    for row in found.levers:
        shown = f"  {row.name:<30}{row.threads:>8}  {_ratio(row):<21}{row.outcome}"
        if row.against not in STOCK_NAMES:  # a process setting, raced on top of the kept lever
            shown += f" against {row.against}"
        if row.why:
            shown += f": {row.why}"
        lines.append((shown, 42))
    for name in found.not_tried:
        lines.append((f"  not tried: {name} (the --budget ran out)", 4))
    if found.overlay_note:
        lines.append((f"  {found.overlay_note}", 4))
    lines += _rebuild_lines(found)
    state = machine(found)
    if state is not None:
        lines.append((f"machine: {state.describe()}", 2))
    lines.append((f"tuned in {found.seconds:.0f} s", 2))
    echo_hanging(lines)


def _rebuild_lines(found: ModelTune) -> list[tuple[str, int]]:
    rebuild = found.rebuild
    if rebuild is None:
        return []
    top = ", ".join(f"{op} {s * 1e3:.2g}" for op, s in rebuild.top)
    kernels = ", ".join(k.kernel for k in rebuild.kernels[:4]) or "none of them ran"
    most = "no limit" if rebuild.bound == float("inf") else f"{rebuild.bound:.2f}x"
    text = (
        f"what a rebuild would add: {rebuild.share * 100:.1f}% of the op time is in kernels a "
        f"rebuild for this CPU recompiles with a gain ({kernels}), so at most {most} even if they "
        f"took no time; {rebuild.onednn_share * 100:.0f}% is oneDNN's matmuls and convolutions, "
        "which pick this CPU's code at run time already (ms a step: "
        f"{top})"
    )
    lines = [(text, 4)]
    if rebuild.predicted is not None and rebuild.kernel_speedup is not None:
        measured = ""
        if rebuild.measured is not None:
            low, high = rebuild.measured.interval
            measured = (
                f"; measured {rebuild.measured.ratio:.2f}x [{low:.2f}, {high:.2f}] "
                f"({rebuild.measured.label})"
            )
        lines.append(
            (
                f"  the overlay's kernels ran {rebuild.kernel_speedup:.2f}x faster there, which "
                f"predicts {rebuild.predicted:.3f}x for the model{measured}",
                4,
            )
        )
    if rebuild.note:
        lines.append((f"  {rebuild.note}", 4))
    return lines
