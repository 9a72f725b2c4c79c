"""The closed choices of a build, one definition each: the variant, and oneDNN's threading.

They are ``str`` enums whose members are named as they are spelt, so a member is equal to its text,
hashes like it (``JOB_MIB["cpu"]`` finds ``Variant.cpu``), prints as it, and serialises to JSON as
it: plans, receipts and rendered files read exactly as they did with plain strings. typer checks
them on the command line.
"""

from __future__ import annotations

from enum import Enum


class _Choice(str, Enum):
    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Variant(_Choice):
    """What a wheel is built as: plain CPU, oneDNN (``--mkl``), or CUDA."""

    cpu = "cpu"
    mkl = "mkl"
    cuda = "cuda"


class MklThreading(_Choice):
    """oneDNN's threading: TensorFlow's own thread pool (``mkl_threadpool``) or OpenMP (``mkl``)."""

    threadpool = "threadpool"
    openmp = "openmp"


VARIANTS: tuple[Variant, ...] = tuple(Variant)
