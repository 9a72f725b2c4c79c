"""The CPU features TensorFlow's ``cpu_feature_guard`` checks, and how each is named elsewhere.

This is TensorFlow-specific knowledge that archspec does not carry: the guard's own spelling of each
feature, the /proc/cpuinfo flag that reveals it, the compile-time macro the guard tests, and the
``-m`` option that turns it on in GCC and Clang with the first release of each that accepts it.

Sources: tensorflow/core/platform/cpu_feature_guard.cc (2.14+ list and order); the Linux kernel's
cpufeatures names as they appear in /proc/cpuinfo (the same names archspec's data uses); GCC and
Clang release notes for the versions that introduced each option. Tests check every claim here
against the compilers installed on the test machine (``-dM -E``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class GuardFeature:
    """One feature in TensorFlow's cpu_feature_guard list."""

    name: str  # TensorFlow's spelling, as printed in "To enable the following instructions: ..."
    cpuinfo: tuple[str, ...]  # /proc/cpuinfo flags (any of them) that mean the CPU has it
    macro: str  # the predefined macro the guard tests at compile time
    option: str  # the GCC/Clang option that enables it
    gcc: str  # first GCC release that accepts the option
    clang: str  # first Clang release that accepts the option
    implies: tuple[str, ...] = ()  # guard features the option also turns on (direct ones)


# GCC's -mamx-int8/-bf16/-fp16 do not define __AMX_TILE__ (checked with GCC 12), so no AMX option
# is claimed to imply AMX_TILE; nor is FMA claimed for -mavx512f (Clang implies it, GCC does not).
# In the order TensorFlow prints them (2.14+; SSE and SSE2 are part of every x86-64 baseline).
GUARD_FEATURES: tuple[GuardFeature, ...] = (
    # /proc/cpuinfo calls SSE3 "pni" (Prescott New Instructions); archspec's data says "sse3".
    GuardFeature(
        name="SSE3", cpuinfo=("pni", "sse3"), macro="__SSE3__", option="-msse3", gcc="4.3",
        clang="3.0",
    ),
    GuardFeature(
        name="SSE4.1", cpuinfo=("sse4_1",), macro="__SSE4_1__", option="-msse4.1", gcc="4.3",
        clang="3.0", implies=("SSE3",),
    ),
    GuardFeature(
        name="SSE4.2", cpuinfo=("sse4_2",), macro="__SSE4_2__", option="-msse4.2", gcc="4.3",
        clang="3.0", implies=("SSE4.1",),
    ),
    GuardFeature(
        name="AVX", cpuinfo=("avx",), macro="__AVX__", option="-mavx", gcc="4.4", clang="3.0",
        implies=("SSE4.2",),
    ),
    GuardFeature(
        name="AVX2", cpuinfo=("avx2",), macro="__AVX2__", option="-mavx2", gcc="4.7",
        clang="3.2", implies=("AVX",),
    ),
    GuardFeature(
        name="AVX512F", cpuinfo=("avx512f",), macro="__AVX512F__", option="-mavx512f", gcc="4.9",
        clang="3.5", implies=("AVX2",),
    ),
    GuardFeature(
        name="AVX512_VNNI", cpuinfo=("avx512_vnni", "avx512vnni"), macro="__AVX512VNNI__",
        option="-mavx512vnni", gcc="8.1", clang="6.0", implies=("AVX512F",),
    ),
    GuardFeature(
        name="AVX512_BF16", cpuinfo=("avx512_bf16",), macro="__AVX512BF16__",
        option="-mavx512bf16", gcc="10.1", clang="9.0", implies=("AVX512F",),
    ),
    GuardFeature(
        name="AVX512_FP16", cpuinfo=("avx512_fp16",), macro="__AVX512FP16__",
        option="-mavx512fp16", gcc="12.1", clang="14.0", implies=("AVX512F",),
    ),
    GuardFeature(
        name="AVX_VNNI", cpuinfo=("avx_vnni",), macro="__AVXVNNI__", option="-mavxvnni",
        gcc="11.1", clang="12.0", implies=("AVX2",),
    ),
    GuardFeature(
        name="AVX_VNNI_INT8", cpuinfo=("avx_vnni_int8",), macro="__AVXVNNIINT8__",
        option="-mavxvnniint8", gcc="13.1", clang="16.0", implies=("AVX2",),
    ),
    GuardFeature(
        name="AVX_NE_CONVERT", cpuinfo=("avx_ne_convert",), macro="__AVXNECONVERT__",
        option="-mavxneconvert", gcc="13.1", clang="16.0", implies=("AVX2",),
    ),
    GuardFeature(
        name="AMX_TILE", cpuinfo=("amx_tile",), macro="__AMX_TILE__", option="-mamx-tile",
        gcc="11.1", clang="11.0",
    ),
    GuardFeature(
        name="AMX_INT8", cpuinfo=("amx_int8",), macro="__AMX_INT8__", option="-mamx-int8",
        gcc="11.1", clang="11.0",
    ),
    GuardFeature(
        name="AMX_BF16", cpuinfo=("amx_bf16",), macro="__AMX_BF16__", option="-mamx-bf16",
        gcc="11.1", clang="11.0",
    ),
    GuardFeature(
        name="AMX_FP16", cpuinfo=("amx_fp16",), macro="__AMX_FP16__", option="-mamx-fp16",
        gcc="13.1", clang="16.0",
    ),
    GuardFeature(
        name="FMA", cpuinfo=("fma",), macro="__FMA__", option="-mfma", gcc="4.7", clang="3.2",
        implies=("AVX",),
    ),
)  # fmt: skip

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
