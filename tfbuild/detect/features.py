"""The CPU features TensorFlow's ``cpu_feature_guard`` checks, and how each is named elsewhere.

This is TensorFlow-specific knowledge that archspec does not carry: the guard's own spelling of each
feature, the /proc/cpuinfo flag that reveals it, and the ``-m`` option that turns it on in GCC and
Clang with the first release of each that accepts it.

Sources: tensorflow/core/platform/cpu_feature_guard.cc (2.14+ list and order); the Linux kernel's
cpufeatures names as they appear in /proc/cpuinfo (the same names archspec's data uses); GCC and
Clang release notes for the versions that introduced each option. Tests check every claim here
against the compilers installed on the test machine (the macro each option defines, ``-dM -E``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class GuardFeature:
    """One feature in TensorFlow's cpu_feature_guard list."""

    name: str  # TensorFlow's spelling, as printed in "To enable the following instructions: ..."
    cpuinfo: tuple[str, ...]  # /proc/cpuinfo flags (any of them) that mean the CPU has it
    option: str  # the GCC/Clang option that enables it
    gcc: str  # first GCC release that accepts the option
    clang: str  # first Clang release that accepts the option
    implies: tuple[str, ...] = ()  # guard features the option also turns on (direct ones)


# GCC's -mamx-int8/-bf16/-fp16 do not define __AMX_TILE__ (checked with GCC 12), so no AMX option
# is claimed to imply AMX_TILE; nor is FMA claimed for -mavx512f (Clang implies it, GCC does not).
# In the order TensorFlow prints them (2.14+; SSE and SSE2 are part of every x86-64 baseline).
# /proc/cpuinfo calls SSE3 "pni" (Prescott New Instructions); archspec's data says "sse3".
# (name, /proc/cpuinfo flags, option, first GCC, first Clang, what the option implies)
_TABLE: tuple[tuple[str, tuple[str, ...], str, str, str, tuple[str, ...]], ...] = (
    ("SSE3", ("pni", "sse3"), "-msse3", "4.3", "3.0", ()),
    ("SSE4.1", ("sse4_1",), "-msse4.1", "4.3", "3.0", ("SSE3",)),
    ("SSE4.2", ("sse4_2",), "-msse4.2", "4.3", "3.0", ("SSE4.1",)),
    ("AVX", ("avx",), "-mavx", "4.4", "3.0", ("SSE4.2",)),
    ("AVX2", ("avx2",), "-mavx2", "4.7", "3.2", ("AVX",)),
    ("AVX512F", ("avx512f",), "-mavx512f", "4.9", "3.5", ("AVX2",)),
    ("AVX512_VNNI", ("avx512_vnni", "avx512vnni"), "-mavx512vnni", "8.1", "6.0", ("AVX512F",)),
    ("AVX512_BF16", ("avx512_bf16",), "-mavx512bf16", "10.1", "9.0", ("AVX512F",)),
    ("AVX512_FP16", ("avx512_fp16",), "-mavx512fp16", "12.1", "14.0", ("AVX512F",)),
    ("AVX_VNNI", ("avx_vnni",), "-mavxvnni", "11.1", "12.0", ("AVX2",)),
    ("AVX_VNNI_INT8", ("avx_vnni_int8",), "-mavxvnniint8", "13.1", "16.0", ("AVX2",)),
    ("AVX_NE_CONVERT", ("avx_ne_convert",), "-mavxneconvert", "13.1", "16.0", ("AVX2",)),
    ("AMX_TILE", ("amx_tile",), "-mamx-tile", "11.1", "11.0", ()),
    ("AMX_INT8", ("amx_int8",), "-mamx-int8", "11.1", "11.0", ()),
    ("AMX_BF16", ("amx_bf16",), "-mamx-bf16", "11.1", "11.0", ()),
    ("AMX_FP16", ("amx_fp16",), "-mamx-fp16", "13.1", "16.0", ()),
    ("FMA", ("fma",), "-mfma", "4.7", "3.2", ("AVX",)),
)
GUARD_FEATURES: tuple[GuardFeature, ...] = tuple(
    GuardFeature(name=name, cpuinfo=flags, option=option, gcc=gcc, clang=clang, implies=implies)
    for name, flags, option, gcc, clang, implies in _TABLE
)

BY_NAME: dict[str, GuardFeature] = {f.name: f for f in GUARD_FEATURES}
BY_OPTION: dict[str, GuardFeature] = {f.option: f for f in GUARD_FEATURES}
NAMES: tuple[str, ...] = tuple(f.name for f in GUARD_FEATURES)


def present(cpu_flags: Iterable[str]) -> tuple[str, ...]:
    """The guard features a CPU with these /proc/cpuinfo (or archspec) flags has, in guard order."""
    flags = set(cpu_flags)
    return tuple(f.name for f in GUARD_FEATURES if flags.intersection(f.cpuinfo))


def closure(names: Iterable[str]) -> frozenset[str]:
    """The features these options turn on, including what they imply (``-mavx2`` gives AVX too)."""
    result: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name not in result:
            result.add(name)
            pending.extend(BY_NAME[name].implies)
    return frozenset(result)


def in_guard_order(names: Iterable[str]) -> tuple[str, ...]:
    wanted = set(names)
    return tuple(n for n in NAMES if n in wanted)
