"""The overlay's ops one at a time: stock against overlay, one thread, in one pair of processes.

An overlay for this host is built (``tfbuild overlay``'s plan and build, checked against stock), or
``--wheel`` names one; it is installed with its stock TensorFlow in an environment made once (as
``tfbuild smoke OVERLAY.whl`` makes it). Two smoke workers run there, pinned to one CPU, one intra-
and one inter-op thread: the overlay's, and stock's (``TFBUILD_OVERLAY=off``, the same environment
otherwise). Every op is timed repetition by repetition in alternation (tfbuild.measure.run.alternate:
a calibrated inner loop of at least ``--min-rep`` seconds, ABBA order, undecided ops timed again
while ``--budget`` lasts). Ops: the smoke worker's element-wise ops the overlay is for
(tfbuild.overlay.prove.REPLACED, on 2^18 float32), those it leaves to stock (LEFT_TO_STOCK) and
the controls it must leave alone (add, relu, reduce_sum).

    python benchmarks/overlay_ops.py [--wheel dist/tfbuild_overlay-...whl] [--budget 120]
        [--pairs 15] [--ops exp,sigmoid,erf]

Figures: the median seconds per call on each side, stock / overlay (above 1: the overlay is
faster) with the interval and verdict of tfbuild.core.stats, and which TensorFlow kernel the op
runs and whether the overlay replaces it (its manifest); the load average (/proc/loadavg) before and
after, and how much of the CPU other processes took meanwhile. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

from tfbuild.detect.contention import between, snapshot
from tfbuild.measure.envs import WheelSpec, clean_env, ensure_env
from tfbuild.measure.run import Method, Worker, alternate, shared_cpu
from tfbuild.overlay.build import OverlayRequest, build_overlay
from tfbuild.overlay.package import MANIFEST, PLUGINS
from tfbuild.overlay.prove import CONTROLS, LEFT_TO_STOCK, OFF, REPLACED, load_line
from tfbuild.plan.here import plan_here
from tfbuild.plan.options import PlanOptions

#: The kernel each smoke op runs that the overlay could replace (gelu's erf form is TensorFlow's
#: erfc times x, two Mul kernels the overlay leaves alone).
KERNEL = {
    "exp": "Exp:float32",
    "tanh": "Tanh:float32",
    "sigmoid": "Sigmoid:float32",
    "erf": "Erf:float32",
    "gelu": "Erfc:float32",
    "log1p": "Log1p:float32",
    "softmax": "Softmax:float32",
    "log_softmax": "LogSoftmax:float32",
    "cast_f32_bf16": "Cast:float32->bfloat16",
    "cast_f32_f16": "Cast:float32->float16",
}


def say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@contextlib.contextmanager
def overlay_wheel(given: Path | None, tf: str | None) -> Iterator[Path]:
    """``given``, or an overlay built now for this host's plan (in a directory removed after)."""
    if given is not None:
        yield given
        return
    plan = plan_here(PlanOptions(tf=tf)).plan
    with tempfile.TemporaryDirectory(prefix="tfbuild-bench-overlay-") as out:
        request = OverlayRequest(
            tensorflow=plan.tensorflow,
            architecture=plan.architecture,
            target=plan.target,
            cflags=plan.cflags,
            compiler=plan.compiler,
            out=Path(out),
        )
        yield build_overlay(request, progress=say).wheel


def replaced(wheel: Path) -> frozenset[str]:
    """The kernels the overlay registers, from its manifest (``Exp:float32``, ...)."""
    with zipfile.ZipFile(wheel) as archive:
        manifest = json.loads(archive.read(f"{PLUGINS}/tfbuild_overlay/{MANIFEST}"))
    return frozenset(manifest["kernels"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="an overlay wheel (default: build one here)")
    parser.add_argument("--tf", help="the TensorFlow release to build for (default: the newest)")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds for extra rounds")
    parser.add_argument("--pairs", type=int, default=15, help="pairs of repetitions a round")
    parser.add_argument("--min-rep", type=float, default=0.05, help="seconds a repetition")
    parser.add_argument("--ops", default=",".join((*REPLACED, *LEFT_TO_STOCK, *CONTROLS)))
    args = parser.parse_args(argv)
    ops = tuple(o for o in args.ops.split(",") if o)
    with overlay_wheel(args.wheel, args.tf) as wheel:
        kernels = replaced(wheel)
        say(f"an environment with {wheel.name} and its stock TensorFlow (made once, then reused)")
        env = ensure_env(WheelSpec(kind="file", value=str(wheel.resolve())), python=sys.executable)
    refused = load_line(env.python)
    if refused is not None:
        print(refused)
        return 1
    method = Method(pairs=args.pairs, min_rep_seconds=args.min_rep, ops=ops, budget=args.budget)
    cpus = shared_cpu(1)
    load_before, before = loadavg(), snapshot()
    with (
        Worker(env.python, intra=1, inter=1, env=clean_env(), label="overlay", cpus=cpus) as cand,
        Worker(
            env.python, intra=1, inter=1, env={**clean_env(), **OFF}, label="stock", cpus=cpus
        ) as base,
    ):
        results = alternate(
            cand,
            base,
            method=method,
            threads="1",
            deadline=time.monotonic() + args.budget,
            progress=say,
        )
    machine, load_after = between(before, snapshot()), loadavg()
    print(f"{wheel.name}: one thread, CPU {','.join(map(str, cpus)) or 'any'}, 2^18 float32")
    print(
        f"{'op':<14}{'kernel':<24}{'by':<8}{'stock s':>11}{'overlay s':>11}"
        f"  stock/overlay [interval]  verdict"
    )
    for r in results:
        found = r.verdict
        if found is None or r.baseline is None:
            continue
        kernel = KERNEL.get(r.op, "")
        by = ("overlay" if kernel in kernels else "stock") if kernel else "stock"
        low, high = found.interval
        print(
            f"{r.op:<14}{kernel or '(control)':<24}{by:<8}"
            f"{r.baseline.seconds.median:>11.3e}{r.candidate.seconds.median:>11.3e}"
            f"  {found.ratio:.2f}x [{low:.2f}, {high:.2f}]"
            f"{'':<4}{found.label} ({found.n_candidate} pairs, {found.looks} round(s))"
        )
    print(f"load average {load_before} before, {load_after} after; {machine.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
