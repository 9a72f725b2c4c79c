"""``tfbuild smoke OVERLAY.whl``: the overlay against stock TensorFlow, on real TensorFlow, here.

The overlay is installed with its stock TensorFlow in a fresh environment (made once per wheel, as
smoke makes one for any wheel). Both sides run in that one environment: the baseline's workers
have ``TFBUILD_OVERLAY=off``, which the loader obeys, so the only difference is the kernels. Ops are
timed as smoke times a wheel (:func:`tfbuild.smoke.run.compare`: repetitions in alternation, rounds
until decided, every claim rechecked in fresh processes), at one thread and the machine's default;
then models end to end (:mod:`tfbuild.overlay.models`).

What the overlay cannot change, said with every result (:data:`SCOPE`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core.stats import SLOWER
from tfbuild.smoke.envs import WheelSpec, clean_env, ensure_env
from tfbuild.smoke.run import Method, OpResult, compare
from tfbuild.wheel.overlay_receipt import OverlayReceipt, read_overlay_receipt
from tfbuild.wheel.receipt import receipt_path

Progress = Callable[[str], None]

#: The smoke worker's ops the overlay replaces, then controls it must leave alone.
REPLACED = (
    "exp",
    "tanh",
    "sigmoid",
    "erf",
    "gelu",
    "log1p",
    "softmax",
    "log_softmax",
    "cast_f32_bf16",
    "cast_f32_f16",
)
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
    scope: tuple[str, ...] = SCOPE

    @property
    def slower(self) -> tuple[str, ...]:
        return tuple(
            f"{r.op} ({r.threads} thread{'s' if r.threads != '1' else ''})"
            for r in self.ops
            if r.verdict is not None and r.verdict.label == SLOWER
        )


_IMPORT = "import tensorflow"


def load_line(python: str) -> str | None:
    """The loader's line at ``import tensorflow`` when it did not load the kernels, else None."""
    done = subprocess.run(
        [python, "-c", _IMPORT],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=clean_env(),
    )
    for line in done.stderr.splitlines():
        if line.startswith("tfbuild overlay"):
            return line
    return None


def prove_overlay(
    wheel: Path,
    *,
    python: str,
    quick: bool = False,
    budget: float | None = None,
    progress: Progress | None = None,
) -> OverlayProof:
    say = progress or (lambda _m: None)
    receipt_file = receipt_path(wheel)
    receipt = read_overlay_receipt(receipt_file, wheel=wheel) if receipt_file.exists() else None
    say(f"an environment with {wheel.name} and its stock TensorFlow (made once, then reused)")
    env = ensure_env(WheelSpec(kind="file", value=str(wheel.resolve())), python=python)
    line = load_line(env.python)
    if line is not None:
        say(line)
        return OverlayProof(
            wheel=wheel.name,
            receipt=receipt,
            python=env.python,
            loaded=False,
            load_message=line,
            ops=(),
        )
    seconds = budget if budget is not None else (90.0 if quick else 300.0)
    method = Method.quick(budget=seconds) if quick else Method(budget=seconds)
    method = Method(
        pairs=method.pairs,
        min_rep_seconds=method.min_rep_seconds,
        ops=(*REPLACED, *CONTROLS),
        min_margin=method.min_margin,
        budget=method.budget,
    )
    say("each op with the overlay against stock, in alternation (TFBUILD_OVERLAY=off)")
    results = compare(
        env.python,
        env.python,
        candidate_env=clean_env(),
        baseline_env={**clean_env(), **OFF},
        method=method,
        progress=say,
    )
    return OverlayProof(
        wheel=wheel.name,
        receipt=receipt,
        python=env.python,
        loaded=True,
        load_message=None,
        ops=tuple(results),
    )
