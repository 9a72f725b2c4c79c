"""Import TensorFlow in the interpreter under test, run a few ops, say what it found: one JSON line.

Run by ``tfbuild smoke`` in the wheel's own interpreter (``tfbuild/smoke/probe.py`` decodes it);
imports the standard library and tensorflow only. TensorFlow's own messages go to standard error,
where smoke reads the CPU-feature guard's line (``TF_CPP_MIN_LOG_LEVEL`` is unset for it).
"""

from __future__ import annotations

import json
import sys

import tensorflow as tf  # type: ignore[import-untyped]


def tcmalloc_maps() -> list[str]:
    """The TCMalloc libraries mapped into this process (LD_PRELOAD's, when it holds one)."""
    try:
        with open("/proc/self/maps") as handle:  # noqa: PTH123 (valid on Python 3.8)
            return sorted(
                {line.split()[-1] for line in handle if "tcmalloc" in line and "/" in line}
            )
    except OSError:
        return []


def main() -> None:
    x = tf.random.uniform([64, 64], seed=1)
    y = tf.linalg.matmul(x, x)
    h = tf.cast(x, tf.float16)  # fp16: oneDNN prints a harmless DT_HALF line here on some CPUs
    ok = bool(tf.reduce_all(tf.math.is_finite(y)).numpy()) and h.dtype == tf.float16
    try:
        info = dict(tf.sysconfig.get_build_info())
    except Exception as exc:
        info = {"error": str(exc)}
    plain = (str, int, float, bool, type(None))
    found = {
        "ok": ok,
        "version": tf.__version__,
        "git_version": getattr(tf, "__git_version__", None),
        "build_info": {k: (v if isinstance(v, plain) else str(v)) for k, v in sorted(info.items())},
        "tcmalloc_maps": tcmalloc_maps(),
        "python": sys.version.split()[0],
    }
    print(json.dumps(found))


if __name__ == "__main__":
    main()
