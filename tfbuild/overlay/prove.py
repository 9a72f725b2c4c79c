"""``tfbuild smoke OVERLAY.whl``: the overlay against stock TensorFlow, on real TensorFlow, here.

The overlay is installed with its stock TensorFlow in a fresh environment (made once per wheel, as
smoke makes one for any wheel). Both sides run in that one environment: the baseline's workers
have ``TFBUILD_OVERLAY=off``, which the loader obeys, so the only difference is the kernels. Ops are
timed as smoke times a wheel (:func:`tfbuild.measure.run.compare`: repetitions in alternation, rounds
until decided, every claim rechecked in fresh processes), at one thread and the machine's default;
then whole models at the machine's default threads (:mod:`tfbuild.overlay.models`: four built-in
ones, or the user's own with ``--model``): the share of their time the replaced kernels take, the
gain that share predicts, the gain measured.

What the overlay cannot change, said with every result (:data:`SCOPE`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core import commands
from tfbuild.core.errors import SmokeFailed
from tfbuild.core.stats import SLOWER
from tfbuild.measure.envs import WheelSpec, clean_env, ensure_env
from tfbuild.measure.models import ModelFile
from tfbuild.measure.run import Method, OpResult, compare
from tfbuild.overlay.compile import loader_line
from tfbuild.overlay.models import ModelResult, prove_models
from tfbuild.smoke.session import forecast_beside
from tfbuild.wheel.overlay_receipt import OverlayReceipt, read_overlay_receipt
from tfbuild.wheel.receipt import receipt_path

Progress = Callable[[str], None]

#: The smoke worker's ops whose kernels the overlay replaces.
REPLACED = ("exp", "tanh", "sigmoid", "erf", "gelu", "log_softmax", "cast_f32_bf16")
#: Ops whose kernels it leaves to stock (``tfbuild.overlay.ops.LEFT_OUT`` says why), and controls
#: it never touches: every one of them must come out the same.
LEFT_TO_STOCK = ("log1p", "softmax", "cast_f32_f16")
CONTROLS = ("add", "relu", "reduce_sum")
OFF = {"TFBUILD_OVERLAY": "off"}

SCOPE = (
    "matmul and convolution stay oneDNN's, already compiled for this CPU at run time",
    "functions compiled by XLA (jit_compile=True) do not use these kernels",
    "ops that Grappler or oneDNN fuse (e.g. _FusedMatMul with an activation) are not replaced",
)


@dataclass(frozen=True, kw_only=True)
class OverlayProof:
    wheel: str
    receipt: OverlayReceipt | None
    python: str
    loaded: bool
    load_message: str | None  # the loader's line when it did not load the kernels
    ops: tuple[OpResult, ...]
    models: tuple[ModelResult, ...] = ()
    #: ``tfbuild forecast``'s prediction for this release and target (when one was kept), per op
    #: class beside the one-thread ratios measured here (:func:`tfbuild.smoke.session.forecast_beside`)
    forecast: dict[str, object] | None = None
    scope: tuple[str, ...] = SCOPE

    @property
    def slower(self) -> tuple[str, ...]:
        timed = (*self.ops, *(m.measured for m in self.models))
        return tuple(
            f"{r.op} ({r.threads} thread{'s' if r.threads != '1' else ''})"
            for r in timed
            if r.verdict is not None and r.verdict.label == SLOWER
        )


#: How the loader's line begins its reason when the kernels' check waits (loader.c, unchecked()).
PENDING_SAYS = "its special-value check has not run on a CPU with its instruction sets"


def load_line(python: str) -> str | None:
    """The loader's line at ``import tensorflow`` when it did not load the kernels, else None."""
    call = commands.Command(
        argv=commands.in_python(python, "import_tf.py"),
        what=f"cannot import TensorFlow with {python}",
        error=SmokeFailed,
        env=clean_env(),
        timeout=300,
    )
    return loader_line(commands.attempt(call).stderr, last=False)


def prove_overlay(
    wheel: Path,
    *,
    python: str,
    quick: bool = False,
    budget: float | None = None,
    bench: bool = True,
    models: bool = True,
    model: ModelFile | None = None,
    progress: Progress | None = None,
) -> OverlayProof:
    """Whether the overlay loads here; with ``bench``, each op (and with ``models`` each model:
    the user's ``model`` when given, else the built-in ones) with the overlay against stock. The
    ops get two thirds of the budget, the models the rest."""
    say = progress or (lambda _m: None)
    spec = WheelSpec.parse(str(wheel))  # no such file: an InputError, as for any wheel smoke tests
    receipt_file = receipt_path(wheel)
    receipt = read_overlay_receipt(receipt_file, wheel=wheel) if receipt_file.exists() else None
    say(f"an environment with {wheel.name} and its stock TensorFlow (made once, then reused)")
    env = ensure_env(spec, python=python)
    line = load_line(env.python)
    if line is not None and PENDING_SAYS in line:
        # built on a machine without its target's instruction sets: its check runs here first
        from tfbuild.overlay.pending import check_installed

        say("its special-value check waits for a CPU with its instruction sets: running it here")
        check_installed(env.python, env=clean_env(), progress=say)
        line = load_line(env.python)
    proof = OverlayProof(
        wheel=wheel.name,
        receipt=receipt,
        python=env.python,
        loaded=line is None,
        load_message=line,
        ops=(),
    )
    if line is not None:
        say(line)
    if line is not None or not bench:
        return proof
    seconds = budget if budget is not None else (90.0 if quick else 300.0)
    share = 2 / 3 if models else 1.0
    method = Method.quick(budget=seconds) if quick else Method(budget=seconds)
    method = dataclasses.replace(
        method, ops=(*REPLACED, *LEFT_TO_STOCK, *CONTROLS), budget=method.budget * share
    )
    say("each op with the overlay against stock, in alternation (TFBUILD_OVERLAY=off)")
    stock_env, overlay_env = {**clean_env(), **OFF}, clean_env()
    results = compare(
        env.python,
        env.python,
        candidate_env=overlay_env,
        baseline_env=stock_env,
        method=method,
        progress=say,
    )
    rest = dataclasses.replace(method, budget=seconds - method.budget)
    timed_models = (
        prove_models(
            env.python,
            stock_env=stock_env,
            overlay_env=overlay_env,
            method=rest,
            model=model,
            progress=say,
        )
        if model is not None or models
        else ()
    )
    return dataclasses.replace(
        proof,
        ops=tuple(results),
        models=timed_models,
        # beside the ops the overlay replaces: the forecast is of a build, which would change all
        forecast=forecast_beside(
            receipt.tensorflow,
            receipt.target,
            tuple(r for r in results if r.op in (*REPLACED, *CONTROLS)),
        )
        if receipt is not None
        else None,
    )
