"""What tfbuild needs to know of the TensorFlow an interpreter imports (the one ``pick`` would put an
overlay on, the one ``tfbuild overlay`` builds against), read in that interpreter.

Run by that interpreter (``python stock_tf.py [OP ...]``); imports TensorFlow and nothing of
tfbuild. Prints one JSON object: the release, the distribution that installed it, its git version,
its compile and link flags, its framework library (path, size), and, for each op named, the data
types of the kernels registered for it on the CPU and their priorities. The caller decodes it
strictly (:mod:`tfbuild.overlay.stock`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TFBUILD_OVERLAY"] = "off"  # an overlay installed here must not answer for stock

from importlib import metadata

import tensorflow as tf  # type: ignore[import-untyped]
from tensorflow.python.framework import kernels  # type: ignore[import-untyped]


def distribution() -> str:
    """The installed distribution that owns tensorflow/__init__.py (tensorflow-cpu, tensorflow)."""
    for dist in metadata.distributions():
        for path in dist.files or ():
            if str(path).replace("\\", "/") == "tensorflow/__init__.py":
                return str(dist.metadata["Name"])
    return ""


def registry(op: str) -> list[dict[str, object]]:
    found = []
    for kernel in kernels.get_registered_kernels_for_op(op).kernel:
        if kernel.device_type != "CPU":
            continue
        found.append(
            {
                "constraints": {
                    c.name: [tf.dtypes.as_dtype(t).name for t in c.allowed_values.list.type]
                    for c in kernel.constraint
                },
                "priority": kernel.priority,
                "label": kernel.label,
            }
        )
    return found


def main() -> None:
    package = Path(tf.__file__).parent
    framework = package / "libtensorflow_framework.so.2"
    facts = {
        "version": tf.__version__,
        "git_version": tf.version.GIT_VERSION,
        "distribution": distribution(),
        "package": str(package),
        "include": tf.sysconfig.get_include(),
        "compile_flags": tf.sysconfig.get_compile_flags(),
        "link_flags": tf.sysconfig.get_link_flags(),
        "framework": str(framework),
        "framework_size": framework.stat().st_size if framework.is_file() else None,
        "kernels": {op: registry(op) for op in sys.argv[1:]},
    }
    sys.stdout.write(json.dumps(facts) + "\n")


if __name__ == "__main__":
    main()
