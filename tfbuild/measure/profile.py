"""Where a model's time goes, and what that predicts for recompiling some of its kernels.

A profile is one process's line from TensorFlow's profiler (``scripts/profile_tf.py``, run by the
measuring worker on the user's model, ``worker.py --profile``, or by the overlay's models script):
each op type's own time per step, and the time of the *replaced* kernels asked about ("Exp:float32",
"Cast:float32->bfloat16"): those a tfbuild overlay registers, which are the kernels a rebuild for
this CPU recompiles with a gain (matmul and convolution are oneDNN's, which picks its code for this
CPU at run time in the stock wheel already).

The prediction is Amdahl's: a step spending a share ``s`` of its op time in kernels made ``k``
times faster runs ``1 / (1 - s + s / k)`` times faster; with no faster kernels measured,
``1 / (1 - s)`` bounds what any speedup of them could give. Op time is summed over threads, so with
inter-op parallelism the share of wall time can differ: a prediction is shown beside a measurement,
never instead of one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tfbuild.core import commands, serial
from tfbuild.core.errors import SmokeFailed
from tfbuild.core.stats import FASTER, SAME, SLOWER, Verdict
from tfbuild.measure.models import ModelFile
from tfbuild.measure.protocol import decode_ready
from tfbuild.measure.run import WORKER, model_failed

#: Profiled calls per model and side: after one warm call, every op of each is traced.
PROFILE_STEPS = 5
#: Seconds a profiling process may take (TensorFlow's import, the model built or loaded, traced).
PROFILE_TIMEOUT = 600
#: Op types that are oneDNN's (matmuls, convolutions, their fused forms): picked for the CPU at
#: run time by the stock wheel, unchanged by a rebuild or the overlay.
ONEDNN_PREFIXES = ("_Mkl", "_FusedConv", "_FusedMatMul", "_FusedBatchMatMul")
_REPORT_IT = "Report it with the output of 'tfbuild --debug' and the same command."


@dataclass(frozen=True, kw_only=True)
class Profile:
    """One profiling process's line for one model, seconds per step."""

    model: str
    steps: int
    overlay_loaded: bool
    host_tracer_level: int | None
    total_op_s: float  # every op's own time, summed over threads
    wall_s: float
    replaced_s: float
    share: float  # replaced_s / total_op_s
    unknown_s: float  # ops of a replaced type whose dtypes could not be told: in no share
    not_run: tuple[str, ...]  # replaced op types in the graph that never ran (rewritten, fused)
    kernels: tuple[str, ...]  # the kernels counted as replaced
    replaced: dict[str, float]  # "Sigmoid:float32" -> seconds
    ops: dict[str, float]  # op type -> seconds

    @property
    def onednn_share(self) -> float:
        """The share of op time in oneDNN's kernels."""
        found = sum(s for op, s in self.ops.items() if op.startswith(ONEDNN_PREFIXES))
        return found / self.total_op_s if self.total_op_s else 0.0

    def top(self, count: int = 4) -> tuple[tuple[str, float], ...]:
        """The op types taking most of the time, seconds per step."""
        return tuple(sorted(self.ops.items(), key=lambda item: -item[1])[:count])


@dataclass(frozen=True, kw_only=True)
class KernelTime:
    kernel: str  # "Erfc:bfloat16"
    stock_s: float  # per step, profiled with the overlay off
    overlay_s: float  # ... on


def amdahl(share: float, speedup: float) -> float:
    """The whole's speedup when a ``share`` of its time runs ``speedup`` times faster."""
    if not 0 <= share <= 1 or speedup <= 0:
        raise ValueError(f"share lies in [0, 1] and speedup above 0, not {share}, {speedup}")
    return 1 / (1 - share + share / speedup)


def bound(share: float) -> float:
    """The most any speedup of a ``share`` of the time can give: those kernels taking no time."""
    if not 0 <= share <= 1:
        raise ValueError(f"a share lies in [0, 1], not {share}")
    return float("inf") if share == 1 else 1 / (1 - share)


def kernel_times(stock: Profile, overlay: Profile | None = None) -> tuple[KernelTime, ...]:
    """Each replaced kernel's time, slowest first: stock's, and the overlay's (0 without one)."""
    on = overlay.replaced if overlay is not None else {}
    return tuple(
        KernelTime(kernel=k, stock_s=s, overlay_s=on.get(k, 0.0))
        for k, s in sorted(stock.replaced.items(), key=lambda item: -item[1])
    )


def predict(stock: Profile, overlay: Profile) -> tuple[float, float, tuple[KernelTime, ...]]:
    """The replaced kernels' speedup together, the model's predicted speedup, each kernel's times."""
    kernels = kernel_times(stock, overlay)
    after = sum(k.overlay_s for k in kernels)
    speedup = stock.replaced_s / after if after > 0 and stock.replaced_s > 0 else 1.0
    return speedup, amdahl(stock.share, speedup), kernels


def decode_profiles(stdout: str, what: str) -> list[Profile]:
    """The profile lines a profiling process printed, decoded strictly; SmokeFailed when one is
    not a profile."""
    found = []
    for line in stdout.splitlines():
        try:
            data = json.loads(line)
            data.pop("describe", None)  # the worker's model description: said at its start
            found.append(serial.from_data(data, Profile))
        except (ValueError, TypeError, AttributeError) as exc:
            raise SmokeFailed(
                f"{what}: a line is not a profile",
                why=str(exc),
                fix=_REPORT_IT,
            ) from None
    return found


def profile_model(
    python: str,
    model: ModelFile,
    *,
    env: Mapping[str, str],
    replaced: Sequence[str] | None = None,
    steps: int = PROFILE_STEPS,
) -> Profile:
    """The user's model profiled in one process of ``python`` (default threads, as the worker loads
    and calls it), counting ``replaced`` (default: the kernels this process runs at the overlay's
    priority)."""
    args = [*model.worker_args(), "--profile", str(steps)]
    if replaced is not None:
        args += ["--replaced", ",".join(replaced)]
    call = commands.Command(
        argv=commands.in_python(python, WORKER, *args, paths=commands.python_path(env)),
        what=f"the profile of {model.op} failed",
        fix="Time it without the profile: the levers' timings stand on their own.",
        error=SmokeFailed,
        env=env,
        timeout=PROFILE_TIMEOUT,
    )
    done = commands.attempt(call)
    if done.returncode is not None and done.returncode > 0:
        try:
            problem = decode_ready(done.stdout.splitlines()[-1]).model_error
        except (ValueError, IndexError):
            problem = None
        if problem is not None:
            raise model_failed(model, problem)
    if not done.ok:
        raise commands.failure(call, done)
    profiles = decode_profiles(done.stdout, f"the profile of {model.op}")
    if len(profiles) != 1:
        raise SmokeFailed(
            f"the profile of {model.op} printed {len(profiles)} profiles, not one",
            fix=_REPORT_IT,
        )
    return profiles[0]


def unclaimed(share: float, kernel_speedup: float | None, measured: Verdict | None) -> str | None:
    """Why a measured gain is not the replaced kernels' doing, when it cannot be: they ran no
    faster, or it is more than they could give even if they took no time (:func:`bound`). Two
    processes of one build differ by a few percent, steadily; such a gain is said, not claimed."""
    if measured is None or measured.label != FASTER:
        return None
    low = measured.interval[0]
    if kernel_speedup is not None and kernel_speedup <= 1.0:
        return (
            f"measured {measured.ratio:.2f}x faster while the replaced kernels ran "
            f"{kernel_speedup:.2f}x their stock speed: not their doing, so not claimed"
        )
    most = bound(share)
    if low > most:
        return (
            f"measured {measured.ratio:.2f}x faster, more than the {most:.3f}x the replaced "
            f"kernels could give even if they took no time ({share * 100:.1f}% of the op time): "
            "two processes differing, not the kernels, so not claimed"
        )
    return None


def disagreement(
    share: float, predicted: float | None, kernel_speedup: float | None, measured: Verdict | None
) -> str | None:
    """Where a measured gain and the profile part beyond the noise: a gain the kernels cannot
    explain (:func:`unclaimed`), or a prediction outside the measured interval (op time is summed
    over threads, wall time is not)."""
    reason = unclaimed(share, kernel_speedup, measured)
    if reason is not None or predicted is None or measured is None:
        return reason
    low, high = measured.interval
    if not low <= predicted <= high and measured.label in (FASTER, SLOWER, SAME):
        return (
            f"the profile predicts {predicted:.3f}x, outside the measured interval "
            f"[{low:.2f}, {high:.2f}]: op time summed over threads is not wall time"
        )
    return None
