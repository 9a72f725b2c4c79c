"""archspec's microarchitectures, and the few x86-64 ones it does not name yet.

Every stage that names a CPU target (detect, plan, wheel labels, pick) reads archspec's table
through :func:`targets`. archspec 0.2.7 (the newest release, 2026-11) and archspec-json at commit
90b453f4053b6b139d1d2cb78c463b02e71ef363 have no Granite Rapids, which clouds sell and TensorFlow
users run on. :data:`EXTRA` adds it in archspec's own format, into archspec's own tables
(``TARGETS_JSON`` and ``TARGETS``), so that archspec's rules (``host()``, ancestry, compiler
flags) treat it as one of theirs. An entry archspec comes to know itself is left to archspec.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from archspec.cpu import Microarchitecture

#: Microarchitectures archspec does not name, in the format of archspec-json's
#: cpu/microarchitectures.json but for ``features``: the features they add to their parents'
#: (``adds``), so that they keep up with archspec's data of their parents. Granite Rapids (Xeon 6 P-cores): Sapphire Rapids' sets, AVX512-FP16
#: (which archspec leaves out of sapphirerapids though those CPUs have it), and AMX-FP16, which
#: Linux shows as ``amx_fp16`` (arch/x86/include/asm/cpufeatures.h, X86_FEATURE_AMX_FP16) and
#: glibc reads from CPUID leaf 7 subleaf 1, EAX bit 21 (sysdeps/x86/bits/platform/x86.h,
#: x86_cpu_AMX_FP16). Its -march: clang 16.0 and newer (clang 16.0.6 here defines __AMX_FP16__,
#: __AVX512FP16__ and __PREFETCHI__ for it), GCC 13 and newer (GCC 12.2 here refuses it: its list
#: ends at sapphirerapids and alderlake).
EXTRA: Mapping[str, Mapping[str, Any]] = {
    "graniterapids": {
        "from": ["sapphirerapids"],
        "vendor": "GenuineIntel",
        "adds": ["avx512_fp16", "amx_fp16"],
        "compilers": {
            "gcc": [{"versions": "13.1:", "flags": "-march={name} -mtune={name}"}],
            "clang": [{"versions": "16.0:", "flags": "-march={name} -mtune={name}"}],
        },
    },
}


@functools.cache
def targets() -> Mapping[str, Microarchitecture]:
    """archspec's ``TARGETS``, with :data:`EXTRA` in it (added once, in archspec's tables)."""
    import archspec.cpu
    from archspec.cpu.schema import TARGETS_JSON

    known: dict[str, dict[str, Any]] = TARGETS_JSON["microarchitectures"]
    table: Mapping[str, Microarchitecture] = archspec.cpu.TARGETS
    for name, extra in EXTRA.items():
        if name in known:
            continue  # archspec names it now: its data wins
        parents = list(extra["from"])
        features = set(extra["adds"]).union(*(known[parent]["features"] for parent in parents))
        values = {
            "from": parents,
            "vendor": extra["vendor"],
            "features": sorted(features),
            "compilers": {k: [dict(e) for e in v] for k, v in extra["compilers"].items()},
        }
        known[name] = values
        archspec.cpu.TARGETS[name] = archspec.cpu.Microarchitecture(
            name, [table[p] for p in parents], values["vendor"], features, values["compilers"]
        )
    return table


if __name__ == "__main__":  # python -m tfbuild.core.targets: every name, as --target takes them
    print(*sorted(targets()))
