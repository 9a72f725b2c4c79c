"""Stock TensorFlow's own ops, timed in the stock wheel's environment (``_forecast_tf.py``: eager,
one thread, on the tensors the benchmark's kernels take), for the TensorFlow-level ratio of
:func:`tfbuild.measure.forecast_report.tensorflow_ratio`.
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core import serial
from tfbuild.measure.envs import clean_env

TF_TIMER = Path(__file__).with_name("_forecast_tf.py")


@dataclass(frozen=True, kw_only=True)
class TensorFlowTimes:
    """What ``_forecast_tf.py`` prints: stock TensorFlow's seconds per call of each op."""

    tensorflow: str
    elements: int
    ops: dict[str, list[float]]

    def of(self, name: str, elements: int) -> list[float] | None:
        """The op's seconds per call when it was timed on ``elements`` (positive, finite)."""
        seconds = self.ops.get(name) if elements == self.elements else None
        if not seconds or not all(math.isfinite(s) and s > 0 for s in seconds):
            return None
        return seconds


def tensorflow_times(python: str, *, reps: int) -> TensorFlowTimes | str:
    """Each of the forecast's ops timed in the stock wheel's TensorFlow (eager, one thread, the
    kernels' tensors), or why not, in words."""
    env = clean_env() | {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    try:
        proc = subprocess.run(  # argv built here, no shell
            [python, str(TF_TIMER), str(reps)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=env,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"it could not be run ({exc})"
    lines = proc.stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        data = None
    if isinstance(data, dict) and "error" in data:
        return f"it failed: {str(data['error'])[:300]}"
    if proc.returncode != 0 or data is None:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1][-300:]
        return f"it exited with {proc.returncode}: {last}"
    try:
        return serial.from_data(data, TensorFlowTimes)
    except serial.DecodeFailure as exc:
        return f"its output does not read ({exc})"
