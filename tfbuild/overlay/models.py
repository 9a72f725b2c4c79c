"""Whole models with the overlay and without: the replaced kernels' share of each, the gain that
share predicts, and the gain measured.

Both sides run in the overlay's environment; the stock side has ``TFBUILD_OVERLAY=off``. Each model
(``scripts/models_tf.py``) is first profiled in one process per side (TensorFlow's profiler: each op
type's own time per step, and the time of each replaced kernel), then timed as smoke times an op
(:func:`tfbuild.measure.run.compare` driving ``scripts/models_tf.py``, which speaks the smoke worker's
protocol: repetitions in alternation, rounds until decided, a claim rechecked in fresh processes),
at the machine's default threads.

The prediction is Amdahl's: a model spending a share ``s`` of its op time in the replaced kernels,
which the overlay makes ``k`` times faster (their stock time over their overlay time, both
profiled), runs ``1 / (1 - s + s / k)`` times faster. Op time is summed over threads, so with
inter-op parallelism the share of wall time can differ; a prediction far from the measurement is
shown, not hidden, and the profile's op table says where the time went.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tfbuild.core import commands
from tfbuild.core.errors import SmokeFailed
from tfbuild.core.stats import MARGIN
from tfbuild.measure.models import ModelFile
from tfbuild.measure.profile import (
    PROFILE_STEPS,
    PROFILE_TIMEOUT,
    KernelTime,
    Profile,
    decode_profiles,
    disagreement,
    predict,
    profile_model,
)
from tfbuild.measure.run import WORKER, Method, OpResult, compare

SCRIPT = commands.script("models_tf.py")
MODELS = ("lstm", "mlp_gelu", "mlp_bf16", "transformer")
#: What each model is, for the reader (``scripts/models_tf.py`` builds them).
WHAT = {
    "lstm": "LSTM(64) inference, 1024 sequences of 32 steps",
    "mlp_gelu": "gelu MLP 64-2048-64 training step, batch 4096",
    "mlp_bf16": "the same MLP in mixed bfloat16",
    "transformer": "transformer block inference (attention, gelu MLP, layer norms)",
}


@dataclass(frozen=True, kw_only=True)
class ModelResult:
    """One model: where its time goes, what that predicts, what was measured."""

    model: str
    what: str
    share: float  # the replaced kernels' share of the model's op time, stock
    speedup: float  # the replaced kernels together, stock time over overlay time (profiled)
    predicted: float  # amdahl(share, speedup)
    kernels: tuple[KernelTime, ...]  # slowest (stock) first
    top: tuple[tuple[str, float], ...]  # the op types taking most of the stock time, seconds
    not_run: tuple[str, ...]
    measured: OpResult  # overlay against stock, timed in alternation
    note: str | None = None  # where the measurement and the prediction disagree beyond the noise


def profile_models(
    python: str,
    models: Sequence[str],
    *,
    env: Mapping[str, str],
    replaced: Sequence[str] | None = None,
    steps: int = PROFILE_STEPS,
) -> dict[str, Profile]:
    """Each model profiled in one process of ``python`` (default threads); ``replaced``: the
    kernels to count (default: those the process runs at the overlay's priority)."""
    args = ["--models", ",".join(models), "--profile", "--steps", str(steps)]
    if replaced is not None:
        args += ["--replaced", ",".join(replaced)]
    call = commands.Command(
        argv=commands.in_python(python, SCRIPT, *args, paths=commands.python_path(env)),
        what="the models' profile failed",
        fix="Report it with the output of 'tfbuild --debug smoke OVERLAY.whl'.",
        error=SmokeFailed,
        env=env,
        timeout=PROFILE_TIMEOUT,
    )
    done = commands.run(call)
    found = {p.model: p for p in decode_profiles(done.stdout, "the models' profile")}
    missing = sorted(set(models) - set(found))
    if missing:
        raise SmokeFailed(
            "the models' profile is incomplete",
            why=f"no profile of {', '.join(missing)}",
            fix="Report it with the output of 'tfbuild --debug smoke OVERLAY.whl'.",
        )
    return found


def _result(name: str, what: str, off: Profile, on: Profile, measured: OpResult) -> ModelResult:
    """One model's profiles (overlay off, then on) and its measured result, with their prediction."""
    speedup, predicted, times = predict(off, on)
    return ModelResult(
        model=name,
        what=what,
        share=off.share,
        speedup=speedup,
        predicted=predicted,
        kernels=times,
        top=off.top(),
        not_run=off.not_run,
        measured=measured,
        note=disagreement(off.share, predicted, speedup, measured.verdict),
    )


def prove_models(
    python: str,
    *,
    stock_env: Mapping[str, str],
    overlay_env: Mapping[str, str],
    method: Method,
    models: Sequence[str] = MODELS,
    model: ModelFile | None = None,
    progress: Callable[[str], object] | None = None,
) -> tuple[ModelResult, ...]:
    """The built-in ``models``, or the user's ``model`` instead, each profiled with the overlay on,
    then off (counting the kernels it ran at the overlay's priority), and timed overlay against
    stock at the machine's default threads; a disagreement between the two is said, not hidden."""
    say = progress or (lambda _message: None)
    if model is None:
        say(f"profiling {', '.join(models)}: where each model's time goes, overlay on, then off")
        on = profile_models(python, models, env=overlay_env)
        kernels = next(iter(on.values())).kernels
        off = profile_models(python, models, env=stock_env, replaced=kernels)
        say("each model with the overlay against stock, in alternation")
        named = {f"model_{m}": (m, WHAT[m]) for m in models}  # op -> (model, what it is)
    else:
        say(f"profiling {model.op}: where its time goes, overlay on, then off")
        on = {model.op: profile_model(python, model, env=overlay_env)}
        kernels = on[model.op].kernels
        off = {model.op: profile_model(python, model, env=stock_env, replaced=kernels)}
        say(f"{model.op} with the overlay against stock, in alternation")
        named = {model.op: (model.op, f"your model ({model.step}, batch {model.batch})")}
    timed = compare(
        python,
        python,
        candidate_env=overlay_env,
        baseline_env=stock_env,
        method=dataclasses.replace(method, ops=tuple(named), min_margin=MARGIN),
        thread_settings=(("default", 0, 0),),
        script=SCRIPT if model is None else WORKER,
        extra=("--models", ",".join(models)) if model is None else (),
        model=model,
        progress=say,
    )
    by_op = {r.op: r for r in timed}
    if model is not None and model.op not in by_op:
        raise SmokeFailed(
            f"{model.op} could not be timed with the overlay or without",
            why="it raised while timed",
            fix="Time it with tfbuild tune --model first: it says what fails.",
        )
    return tuple(
        _result(name, what, off[name], on[name], by_op[op])
        for op, (name, what) in named.items()
        if op in by_op
    )
