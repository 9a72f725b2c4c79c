"""tfbuild's canary wheel: a stand-in for TensorFlow, built by the real tfbuild pipeline."""

import ctypes
import pathlib

_lib = ctypes.CDLL(str(pathlib.Path(__file__).with_name("libcanary.so")))
_lib.canary_kernel.restype = ctypes.c_float
_lib.canary_kernel.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, ctypes.c_int]


def run(n: int = 1 << 16, reps: int = 200) -> float:
    """Run the kernel over n floats, reps times; returns a checksum."""
    data = (ctypes.c_float * n)(*([0.001] * n))
    return float(_lib.canary_kernel(data, n, reps))
