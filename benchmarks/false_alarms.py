"""How often `tfbuild smoke` calls the stock wheel faster or slower than itself: real TensorFlow.

The stock wheel against itself, with smoke's own timing loop (the ``--quick`` method: 15 pairs a
round, 10 ms repetitions, undecided ops timed again up to five rounds, claims rechecked in a fresh
pair of processes), many rounds per thread setting, each with a fresh pair of workers. Every answer is counted: "same" and "undecided" are
right (the second says the noise was too wide), "faster" and "slower" are false alarms. Target:
none. The machine's state over the run is printed beside the counts.

    python benchmarks/false_alarms.py [--spec tensorflow-cpu==2.21.0] [--rounds 10]

About 10 minutes with the defaults on a 2-core machine.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections import Counter
from collections.abc import Iterator

from tfbuild.core import serial
from tfbuild.core.stats import FASTER, SLOWER, describe
from tfbuild.detect.contention import combine
from tfbuild.measure.envs import WheelSpec, clean_env, ensure_env
from tfbuild.measure.run import THREAD_SETTINGS, Method, Worker, shared_cpu, time_and_recheck

OPS = ("matmul_1024", "conv2d_nhwc", "exp", "tanh", "add", "softmax")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="tensorflow-cpu==2.21.0")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds of extra rounds")
    args = parser.parse_args()
    python = ensure_env(WheelSpec.parse(args.spec)).python
    method = Method(pairs=15, min_rep_seconds=0.01, ops=OPS, budget=args.budget)  # as --quick
    env = clean_env()
    alarms_total = 0
    for threads, intra, inter in THREAD_SETTINGS:
        answers: Counter[str] = Counter()
        spans = []
        rechecked = 0
        began = time.perf_counter()
        cpus = shared_cpu(intra)

        @contextlib.contextmanager
        def start(
            intra: int = intra, inter: int = inter, cpus: tuple[int, ...] = cpus
        ) -> Iterator[tuple[Worker, Worker | None]]:
            with (
                Worker(python, intra=intra, inter=inter, env=env, label="a", cpus=cpus) as a,
                Worker(python, intra=intra, inter=inter, env=env, label="b", cpus=cpus) as b,
            ):
                yield a, b

        for _ in range(args.rounds):
            deadline = time.monotonic() + args.budget
            for result in time_and_recheck(
                start, method=method, threads=threads, deadline=deadline
            ):
                assert result.verdict is not None and result.contention is not None
                answers[result.verdict.label] += 1
                spans.append(result.contention)
                if result.recheck is not None:
                    rechecked += 1
                    print(
                        f"  rechecked in fresh processes: {result.op} "
                        f"{describe(result.verdict)} (again: {describe(result.recheck)})"
                    )
                if result.verdict.label in (FASTER, SLOWER):
                    print(f"  false alarm: {result.op} {serial.to_data(result.verdict)}")
        alarms = answers[FASTER] + answers[SLOWER]
        alarms_total += alarms
        print(
            f"{threads:>7} thread(s): {sum(answers.values())} comparisons in "
            f"{time.perf_counter() - began:.0f} s: {dict(answers)}, {rechecked} rechecked in fresh "
            f"processes; {alarms} false alarms "
            f"({'ok' if alarms == 0 else 'MISSES the target'}); {combine(spans).describe()}"
        )
    return 1 if alarms_total else 0


if __name__ == "__main__":
    raise SystemExit(main())
