"""The machine's FP32 ceiling: computed from what /proc/cpuinfo says, and the ceiling each benchmark
row is compared with (that figure, or the one an FMA loop measured).

``tfbuild smoke`` reports matmul GFLOP/s as a fraction of a peak. Two peaks exist and both are useful:

* :func:`theoretical_peak` multiplies cores × FP32 lanes × 2 (a fused multiply-add is two flops) ×
  FMA pipes per core × clock. It works for any dump (``--cpuinfo``), needs no compiler, and every guess
  it makes is written into :attr:`Peak.assumptions` as a plain sentence. Its clock is the nominal one,
  so on machines that boost (all of them) it is lower than what the cores really reach.
* :func:`tfbuild.measure.fma_probe.measure_fma_peak` runs a tiny FMA loop, the best of repeated
  warmed-up probes, alone and on every core at once: the real ceiling at the clock the machine runs
  under load. On this project's Zen 5 VM (2 vCPUs) the nominal figure is 332 GFLOP/s and the
  measured one about 525 (266 for one process).

:func:`peak_ceilings` picks, for each thread count a benchmark row uses ("1": one core; "default":
all of them), the figure the row is compared with, and says why; :func:`peak_fraction` (or
:meth:`Ceilings.fraction`) gives the row's fraction, or None with the reason when the row beats the
ceiling (a row never shows more than 100 %: if it beats the peak, the peak is wrong). A single
0.3 s probe taken while another job shared the CPU once put a matmul at 141 % of "peak".

The pipe counts per microarchitecture (:data:`FMA_DATAPATH_BITS`) come from the vendors' optimization
guides and from Agner Fog's and Chips and Cheese's measurements; each entry carries its reason.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from tfbuild.core.errors import UsageError
from tfbuild.core.rounded import Round3
from tfbuild.detect.cpu import identify
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.measure.fma_probe import MeasuredPeak, probe_count

# --------------------------------------------------------------------------------------------------
# Theoretical peak
# --------------------------------------------------------------------------------------------------

#: FP32 multiply-add datapath width per core, in bits per cycle, with the reason. Dividing by the
#: width of the widest vector the flags allow gives the "FMA pipes" of the formula: Zen 4's 512 bits
#: are two ymm pipes for AVX2 code but one zmm pipe for AVX-512 code (a zmm FMA takes both halves).
#: For cores without FMA the width is that of one multiplier plus one adder working side by side.
FMA_DATAPATH_BITS: dict[str, tuple[int, str]] = {
    # Intel
    "core2": (128, "Core 2 has one 128-bit multiplier and one 128-bit adder (ports 0 and 1)"),
    "nehalem": (128, "Nehalem has one 128-bit multiplier and one 128-bit adder (ports 0 and 1)"),
    "westmere": (128, "Westmere has one 128-bit multiplier and one 128-bit adder (ports 0 and 1)"),
    "sandybridge": (256, "Sandy Bridge has one 256-bit multiplier (port 0) and one adder (port 1)"),
    "ivybridge": (256, "Ivy Bridge has one 256-bit multiplier (port 0) and one adder (port 1)"),
    "haswell": (512, "Haswell has two 256-bit FMA units (ports 0 and 1)"),
    "broadwell": (512, "Broadwell has two 256-bit FMA units (ports 0 and 1)"),
    "skylake": (512, "Skylake has two 256-bit FMA units (ports 0 and 1)"),
    "alderlake": (
        512,
        "Alder Lake P-cores have two 256-bit FMA units; its E-cores have less, "
        "so a hybrid chip's real peak is lower than counting every core as a P-core",
    ),
    "arrowlake": (512, "Arrow Lake P-cores have two 256-bit FMA units; E-cores are counted alike"),
    "arrowlake_s": (
        512,
        "Arrow Lake P-cores have two 256-bit FMA units; E-cores are counted alike",
    ),
    "mic_knl": (1024, "Knights Landing has two 512-bit vector units per core"),
    "cannonlake": (512, "Cannon Lake (client) has one 512-bit FMA unit (ports 0+1 fused)"),
    "skylake_avx512": (
        1024,
        "Skylake-SP Gold 6000/Platinum/W/Core-X parts have two 512-bit FMA units (ports 0+1 and 5)",
    ),
    "cascadelake": (
        1024,
        "Cascade Lake Gold 6000/Platinum/W/Core-X parts have two 512-bit FMA units (ports 0+1 and 5)",
    ),
    "icelake": (1024, "Ice Lake-SP Xeons have two 512-bit FMA units (ports 0+1 and 5)"),
    "sapphirerapids": (1024, "Sapphire Rapids has two 512-bit FMA units (ports 0+1 and 5)"),
    # AMD
    "k10": (128, "K10 has one 128-bit FADD and one 128-bit FMUL pipe"),
    "bulldozer": (
        256,
        "a Bulldozer module has two 128-bit FMAC pipes shared by its two integer cores, "
        "and Linux lists a module as one core with two threads",
    ),
    "piledriver": (
        256,
        "a Piledriver module has two 128-bit FMAC pipes shared by its two integer cores, "
        "and Linux lists a module as one core with two threads",
    ),
    "steamroller": (
        256,
        "a Steamroller module has two 128-bit FMAC pipes shared by its two integer cores, "
        "and Linux lists a module as one core with two threads",
    ),
    "excavator": (
        256,
        "an Excavator module has two 128-bit FMAC pipes shared by its two integer cores, "
        "and Linux lists a module as one core with two threads",
    ),
    "zen": (256, "Zen 1 has two 128-bit FMA pipes (FP0, FP1), so one 256-bit FMA per cycle"),
    "zen2": (512, "Zen 2 has two 256-bit FMA pipes (FP0, FP1)"),
    "zen3": (512, "Zen 3 has two 256-bit FMA pipes (FP0, FP1)"),
    "zen4": (
        512,
        "Zen 4 has two 256-bit FMA pipes; a 512-bit FMA uses both halves, "
        "so it does one zmm FMA per cycle",
    ),
    "zen5": (1024, "Zen 5 server and desktop cores have two full-width 512-bit FMA pipes"),
    "zen6": (1024, "Zen 6 is assumed to keep Zen 5's two 512-bit FMA pipes"),
    # Arm (NEON is 128 bits; SVE widths are given where they are known)
    "neoverse_n1": (256, "Neoverse N1 has two 128-bit FP/ASIMD pipes (V0, V1)"),
    "neoverse_n2": (256, "Neoverse N2 has two 128-bit FP/SVE2 pipes"),
    "neoverse_v1": (512, "Neoverse V1 has two 256-bit SVE pipes, which run four 128-bit NEON FMAs"),
    "neoverse_v2": (512, "Neoverse V2 has four 128-bit FP/SVE2 pipes"),
    "neoverse_v3ae": (512, "Neoverse V3AE has four 128-bit FP/SVE2 pipes"),
    "thunderx2": (256, "ThunderX2 has two 128-bit FP/NEON pipes"),
    "ampere1": (256, "AmpereOne has two 128-bit FP/NEON pipes"),
    "ampere1a": (256, "AmpereOne has two 128-bit FP/NEON pipes"),
    "a64fx": (1024, "A64FX has two 512-bit SVE pipes"),
    "m1": (512, "Apple M1 performance cores have four 128-bit FMA pipes"),
    "m2": (512, "Apple M2 performance cores have four 128-bit FMA pipes"),
    "m3": (512, "Apple M3 performance cores have four 128-bit FMA pipes"),
    "m4": (512, "Apple M4 performance cores have four 128-bit FMA pipes"),
}

_RATED_GHZ = re.compile(r"@\s*([0-9]+(?:\.[0-9]+)?)\s*GHz", re.IGNORECASE)
_XEON_ONE_FMA = re.compile(r"Xeon\(R\)\s+(Bronze|Silver|Gold\s+5[12]\d\d)", re.IGNORECASE)
_XEON_TWO_FMA_GOLD5 = re.compile(r"Gold\s+5[12]22\b", re.IGNORECASE)
_XEON_SCALABLE = re.compile(r"Xeon\(R\)\s+(Platinum|Gold|Silver|Bronze|W-3)", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class Peak:
    """The FP32 ceiling computed from a cpuinfo dump, with every assumption behind it."""

    gflops: Round3 | None  # None when the clock is unknown (Arm and POWER dumps give none)
    cores: int
    lanes: int  # FP32 lanes of the widest vector the flags allow
    fma_pipes: int  # vectors of that width multiplied-and-added per cycle per core
    flops_per_cycle_per_core: int = field(init=False)  # lanes × 2 × pipes
    ghz: float | None
    isa: str  # avx512, avx2, avx, sse, asimd, sve, vsx, scalar
    fused: bool  # True for FMA; False for a separate multiply and add (still 2 flops per lane)
    microarchitecture: str
    assumptions: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.gflops is not None:
            object.__setattr__(self, "gflops", Round3(self.gflops))
        object.__setattr__(self, "flops_per_cycle_per_core", self.lanes * 2 * self.fma_pipes)

    @property
    def flops_per_cycle(self) -> int:
        """FP32 flops one core can do per cycle: lanes × 2 × pipes."""
        return self.flops_per_cycle_per_core


def _vector_unit(info: CpuInfo) -> tuple[str, int, bool, list[str]]:
    """The widest usable vector ISA: (name, FP32 lanes, fused multiply-add?, sentences)."""
    flags = info.flags
    if info.architecture in ("x86_64", "i686"):
        if "avx512f" in flags:
            return (
                "avx512",
                16,
                True,
                ["The widest vector unit is AVX-512 (avx512f): 16 FP32 lanes."],
            )
        fused = bool(flags & {"fma", "fma4"})
        if "avx2" in flags or "avx" in flags:
            name = "avx2" if "avx2" in flags else "avx"
            lanes_note = f"The widest vector unit is {name.upper()} (256-bit): 8 FP32 lanes."
            return name, 8, fused, [lanes_note]
        if "sse" in flags:
            return "sse", 4, False, ["The widest vector unit is SSE (128-bit): 4 FP32 lanes."]
        return "scalar", 1, False, ["The flags list no SSE, so one FP32 lane is counted."]
    if info.architecture == "aarch64":
        if "sve" in flags:
            return (
                "sve",
                4,
                True,
                [
                    "The CPU has SVE, but cpuinfo does not give its vector length, so it is "
                    "counted as 128 bits (4 FP32 lanes) and the pipes in 128-bit units."
                ],
            )
        if "asimd" in flags:
            return "asimd", 4, True, ["The widest vector unit is NEON/ASIMD: 4 FP32 lanes."]
        return "scalar", 1, True, ["The Features line lists no ASIMD, so one FP32 lane is counted."]
    if info.architecture.startswith("ppc64"):
        return (
            "vsx",
            4,
            True,
            ["POWER dumps list no vector features; VSX (128-bit, 4 FP32 lanes) is assumed."],
        )
    return (
        "scalar",
        1,
        False,
        [f"The vector width of {info.architecture} is unknown, so one FP32 lane is counted."],
    )


def _fma_sentence(isa: str, fused: bool, info: CpuInfo) -> str:
    if fused and isa == "avx512":
        return "AVX-512 includes FMA, so each lane does a fused multiply-add (2 flops) per pipe per cycle."
    if fused and info.architecture in ("x86_64", "i686"):
        which = "fma" if "fma" in info.flags else "fma4"
        return f"The flags include {which}, so each lane does a fused multiply-add (2 flops) per pipe per cycle."
    if fused:
        return "Each lane does a fused multiply-add (2 flops) per pipe per cycle."
    return (
        "Without FMA a multiply and an add issue separately; this assumes one multiply pipe and one "
        "add pipe working side by side, i.e. 2 flops per lane per cycle, counted as one pipe pair."
    )


def _by_vendor_family(info: CpuInfo, isa: str) -> tuple[int, str] | None:
    """The datapath width for generic targets (VMs hiding flags), from vendor and family."""
    if info.architecture != "x86_64" or info.family is None:
        return None
    family, model = info.family, info.model or 0
    if info.vendor == "AuthenticAMD":
        if family == 26:
            if _zen5_mobile(info):
                return (
                    512,
                    "AMD family 26 (Zen 5) mobile Ryzen AI cores have a 256-bit FPU datapath",
                )
            return (
                1024,
                "AMD family 26 is Zen 5; its server and desktop cores have two 512-bit FMA pipes",
            )
        if family == 25:
            if isa == "avx512":
                return (
                    512,
                    "AMD family 25 with AVX-512 is Zen 4: one zmm FMA per cycle (two 256-bit halves)",
                )
            return 512, "AMD family 25 without AVX-512 is Zen 3: two 256-bit FMA pipes"
        if family == 23:
            if model >= 0x30:
                return 512, "AMD family 23 model 0x30 and later is Zen 2: two 256-bit FMA pipes"
            return 256, "AMD family 23 before model 0x30 is Zen 1: two 128-bit FMA pipes"
        if family == 21:
            return 256, "AMD family 21 is the Bulldozer family: two 128-bit FMAC pipes per module"
    if info.vendor == "HygonGenuine" and family == 24:
        return 256, "Hygon family 24 (Dhyana) is a Zen 1 derivative: two 128-bit FMA pipes"
    if info.vendor == "GenuineIntel" and family == 6 and isa == "avx512":
        return (
            1024,
            "an Intel family 6 CPU with AVX-512 is taken to be a server part with two 512-bit FMA units",
        )
    return None


def _zen5_mobile(info: CpuInfo) -> bool:
    """Strix Point and Krackan Point ("Ryzen AI", not "Ryzen AI Max") cut Zen 5's FPU to 256 bits."""
    brand = info.brand or ""
    return "Ryzen AI" in brand and "Max" not in brand


def _sku_refinement(name: str, info: CpuInfo) -> tuple[int, str] | None:
    """Parts whose FMA width depends on the SKU rather than the microarchitecture."""
    brand = info.brand or ""
    if name == "zen5" and _zen5_mobile(info):
        return 512, (
            f"{brand.strip()} is a mobile Zen 5 with a 256-bit FPU datapath: "
            "one zmm FMA per cycle, like Zen 4"
        )
    if name in ("skylake_avx512", "cascadelake"):
        if _XEON_ONE_FMA.search(brand) and not _XEON_TWO_FMA_GOLD5.search(brand):
            return 512, (
                f"{brand.strip()} is a Bronze, Silver or Gold 5100/5200 part, "
                "which Intel ships with one 512-bit FMA unit"
            )
        return None
    if name == "icelake":
        if _XEON_SCALABLE.search(brand):
            return None
        if "hypervisor" in info.flags:
            return 1024, (
                "Ice Lake in a virtual machine is taken to be an Ice Lake-SP Xeon "
                "with two 512-bit FMA units"
            )
        return 512, (
            "Ice Lake outside a Xeon Scalable (client, Tiger Lake, Rocket Lake) "
            "has one 512-bit FMA unit"
        )
    return None


def _datapath(
    info: CpuInfo, name: str, isa: str, lanes: int, *, generic: bool = False
) -> tuple[int, str]:
    """FP32 multiply-add bits per cycle per core, and the sentence saying where it came from.

    ``generic``: archspec named only a vendor-neutral level (``x86_64_v4``), which happens when a
    hypervisor hides flags; the vendor and family then decide, and the sentence says so.
    """
    vector_bits = lanes * 32
    refined = _sku_refinement(name, info)
    if refined is not None:
        bits, why = refined
        return bits, f"The pipe count for this {name} part comes from its model: {why}."
    if name in FMA_DATAPATH_BITS:
        bits, why = FMA_DATAPATH_BITS[name]
        return bits, f"The pipe count comes from the table entry for {name}: {why}."
    guess = _by_vendor_family(info, isa)
    if guess is not None:
        bits, why = guess
        if generic:
            hidden = (
                " (it runs under a hypervisor, which often hides the flags that tell cores apart)"
                if "hypervisor" in info.flags
                else ""
            )
            return bits, (
                f"The pipe count is a guess from the vendor and family, as archspec names this CPU "
                f"only by the generic level {name}{hidden}, which is not in the table of known "
                f"cores: {why}."
            )
        return (
            bits,
            f"The pipe count is a guess, as {name} is not in the table of known cores: {why}.",
        )
    if info.architecture in ("x86_64", "i686"):
        if isa in ("avx512", "avx2") or (isa == "avx" and bool(info.flags & {"fma", "fma4"})):
            bits = 2 * vector_bits
            why = f"two {vector_bits}-bit FMA pipes, as on most cores with FMA"
        else:
            bits = vector_bits
            why = f"one {vector_bits}-bit multiplier and one adder"
        return bits, f"The table of known cores has no {name}, so {why} are assumed."
    if info.architecture == "aarch64":
        return (
            256,
            f"The table of known cores has no {name}, so two 128-bit FMA pipes are assumed.",
        )
    if info.architecture.startswith("ppc64"):
        if (info.generation or 0) >= 10:
            return 512, "POWER10 is assumed to have four 128-bit VSX FMA pipes per core."
        return (
            256,
            f"POWER{info.generation or '?'} is assumed to have two 128-bit VSX FMA pipes per core.",
        )
    return vector_bits, f"The FMA pipes of {name} are unknown, so one is assumed."


def _cores(info: CpuInfo, cores: int | None) -> tuple[int, str]:
    if cores is not None:
        if cores < 1:
            raise UsageError(
                f"cannot compute a peak for {cores} cores", fix="Pass a positive count."
            )
        return cores, f"Cores: {cores}, as passed in."
    listed_only_one = info.processors_listed == 1 and (info.logical_cpus or 1) > 1
    partial = (
        " The dump lists only its first processor, so the count is that processor's 'cpu cores' "
        "times the one socket it names."
        if listed_only_one
        else ""
    )
    if info.physical_cores:
        return info.physical_cores, (
            f"Cores: the {info.physical_cores} physical cores the dump lists "
            f"(SMT threads share their core's FMA units).{partial}"
        )
    if info.logical_cpus:
        return info.logical_cpus, (
            f"Cores: the dump gives no physical core count, so its {info.logical_cpus} logical "
            "CPU(s) are counted as cores (too many if SMT is on, too few if the dump lists only one "
            "processor); pass cores= to correct it."
        )
    return (
        1,
        "Cores: the dump gives no core count, so one core is counted; pass cores= to correct it.",
    )


def _clock(info: CpuInfo, ghz: float | None) -> tuple[float | None, str]:
    if ghz is not None:
        if ghz <= 0:
            raise UsageError(f"cannot compute a peak at {ghz} GHz", fix="Pass a positive clock.")
        return ghz, f"Clock: {ghz:g} GHz, as passed in."
    rated = _RATED_GHZ.search(info.brand or "")
    if rated:
        value = float(rated.group(1))
        return value, (
            f"Clock: {value:g} GHz, the nominal (base) clock in the model name; cores boost above "
            "it, so the real ceiling is higher (AVX-heavy code may also run below it)."
        )
    if info.mhz:
        value = info.mhz / 1000.0
        if "hypervisor" in info.flags:
            where = "in a virtual machine this is the nominal (TSC) clock"
        else:
            where = (
                "on bare metal it is the clock at the moment the dump was read, which frequency "
                "scaling moves, and it is taken as the nominal clock"
            )
        idle = (
            " This looks like an idle core's clock, so pass ghz= with the nominal one."
            if value < 1.5 and "hypervisor" not in info.flags
            else ""
        )
        return value, (
            f"Clock: {value:g} GHz from 'cpu MHz'; {where}. It is not the boost clock the cores "
            f"reach under load, so the real ceiling is higher.{idle}"
        )
    return None, (
        "Clock: the dump gives none (Arm and POWER dumps never do), so no GFLOP/s figure is "
        "computed; pass ghz= to get one."
    )


def theoretical_peak(info: CpuInfo, *, cores: int | None = None, ghz: float | None = None) -> Peak:
    """FP32 GFLOP/s = cores × lanes × 2 (multiply-add) × FMA pipes per core × nominal clock."""
    target = identify(info)
    name = str(target.name)
    isa, lanes, fused, sentences = _vector_unit(info)
    sentences.append(_fma_sentence(isa, fused, info))
    bits, why = _datapath(info, name, isa, lanes, generic=target.vendor == "generic")
    pipes = max(1, bits // (lanes * 32))
    sentences.append(why)
    sentences.append(
        f"So one core does {pipes} × {lanes} lanes × 2 = {pipes * lanes * 2} FP32 flops per cycle."
    )
    core_count, core_note = _cores(info, cores)
    sentences.append(core_note)
    clock, clock_note = _clock(info, ghz)
    sentences.append(clock_note)
    gflops = core_count * lanes * 2 * pipes * clock if clock is not None else None
    return Peak(
        gflops=None if gflops is None else Round3(gflops),
        cores=core_count,
        lanes=lanes,
        fma_pipes=pipes,
        ghz=clock,
        isa=isa,
        fused=fused,
        microarchitecture=name,
        assumptions=tuple(sentences),
    )


# --------------------------------------------------------------------------------------------------
# The ceiling a benchmark row is compared with
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Ceiling:
    """The FP32 GFLOP/s that benchmark rows of one thread count are compared with, and why."""

    threads: str  # "1" (one intra-op thread: one core) or "default" (TensorFlow's pool: all cores)
    gflops: float | None  # None: no figure (no probe ran and the dump gives no clock)
    source: str  # "measured" (best of the FMA probes), "nominal" (theoretical peak) or "none"
    note: str  # a few words for the display, e.g. "best of 3 FMA probes"
    why: str  # one sentence: which figure this is and why it was chosen

    def __post_init__(self) -> None:
        if self.gflops is not None:
            object.__setattr__(self, "gflops", Round3(self.gflops))


@dataclass(frozen=True, kw_only=True)
class Ceilings:
    """The ceiling of each thread count smoke's rows use: "1" and "default"."""

    single: Ceiling  # rows with threads "1": one intra-op thread runs on one core
    all_cores: Ceiling  # rows with threads "default": TensorFlow's pool over every usable CPU

    def for_threads(self, threads: str) -> Ceiling | None:
        """The ceiling of rows with ``threads`` ("1" or "default"); None for any other count."""
        return {"1": self.single, "default": self.all_cores}.get(threads)

    def fraction(self, gflops: float, *, threads: str) -> tuple[float | None, str | None]:
        """``gflops`` as a fraction of the ceiling of ``threads`` (:func:`peak_fraction`); for a
        thread count with no ceiling, None and why."""
        ceiling = self.for_threads(threads)
        if ceiling is None:
            return None, f"peak unknown: no ceiling for {threads} thread(s)"
        return peak_fraction(gflops, ceiling)


def peak_fraction(gflops: float, ceiling: Ceiling) -> tuple[float | None, str | None]:
    """``gflops`` over ``ceiling`` and None; or None and the reason, for the display, when there is
    no ceiling or ``gflops`` is above it (a row never shows more than 100 %: if a measurement beats
    the peak, the peak is wrong). The fraction is exact, written to 3 decimals (a ``Round3``)."""
    if not math.isfinite(gflops) or gflops < 0:
        raise UsageError(f"cannot compare {gflops} GFLOP/s with a peak", fix="Pass a rate >= 0.")
    if ceiling.gflops is None or ceiling.gflops <= 0:
        return None, f"peak unknown: {ceiling.note}"
    if gflops > ceiling.gflops:
        return None, (
            f"peak unknown: {gflops:.0f} GF/s measured is above the {ceiling.gflops:.0f} GF/s "
            f"ceiling ({ceiling.note})"
        )
    return Round3(gflops / ceiling.gflops), None


_ROWS = {
    "1": "rows with 1 thread (one intra-op thread, on one core)",
    "default": "rows with the default threads (TensorFlow's pool over every CPU it may use)",
}


def _ceiling(
    threads: str,
    measured: float | None,
    nominal: float | None,
    *,
    probes: int,
    narrower: str,
    nominal_what: str,
) -> Ceiling:
    rows = _ROWS[threads]
    if measured is not None and (nominal is None or measured >= nominal):
        against = (
            f", above the {nominal:.1f} GFLOP/s {nominal_what} gives (the cores boost above it)"
            if nominal is not None
            else ", as the dump gives no clock for a nominal figure"
        )
        return Ceiling(
            threads=threads,
            gflops=measured,
            source="measured",
            note=f"best of {probe_count(probes).replace('probe', 'FMA probe')}",
            why=f"The ceiling of {rows} is the best of {probe_count(probes)} of an FMA loop, "
            f"{measured:.1f} GFLOP/s{against}.",
        )
    if nominal is not None and measured is not None:
        return Ceiling(
            threads=threads,
            gflops=nominal,
            source="nominal",
            note="nominal clock; the FMA probes measured less",
            why=f"The ceiling of {rows} is {nominal_what}, {nominal:.1f} GFLOP/s: the best of "
            f"{probe_count(probes)} of an FMA loop measured only {measured:.1f}{narrower}, so the "
            "probes were held back (other work shared the CPU, or the cores slow down for wide "
            "vectors) and the higher figure is kept.",
        )
    if nominal is not None:
        return Ceiling(
            threads=threads,
            gflops=nominal,
            source="nominal",
            note="nominal clock; the cores boost above it",
            why=f"The ceiling of {rows} is {nominal_what}, {nominal:.1f} GFLOP/s, as no C compiler "
            "built and ran the FMA probe; the cores boost above the nominal clock, so a row can "
            "beat it, and then shows no fraction.",
        )
    return Ceiling(
        threads=threads,
        gflops=None,
        source="none",
        note="no FMA probe ran and cpuinfo gives no clock",
        why=f"There is no ceiling for {rows}: no C compiler built and ran the FMA probe, and the "
        "dump gives no clock for a nominal figure.",
    )


def peak_ceilings(theory: Peak, measured: MeasuredPeak | None) -> Ceilings:
    """The ceiling of each thread count: the measured best-of figure, or the nominal one.

    The measured figure is taken when it is at least the nominal-clock one (it is: the cores boost);
    the nominal one when no probe ran, or when the probes measured less than the nominal clock
    allows (they were held back: a ceiling too low would put rows above 100 %). The nominal
    all-cores figure counts the cores the probe ran on (those this process may use), else the
    dump's.
    """
    per_core = theory.gflops / theory.cores if theory.gflops is not None else None
    cores = theory.cores
    if measured is not None and measured.gflops_per_process:
        cores = min(theory.cores, len(measured.gflops_per_process))
    all_nominal = per_core * cores if per_core is not None else None
    probes = measured.probes if measured is not None else 0
    narrower = (
        f" (its kernel was compiled for {measured.isa}, not the {theory.isa} the flags list)"
        if measured is not None and measured.isa != theory.isa
        else ""
    )
    return Ceilings(
        single=_ceiling(
            "1",
            measured.gflops_single if measured is not None else None,
            per_core,
            probes=probes,
            narrower=narrower,
            nominal_what="one core at the nominal clock",
        ),
        all_cores=_ceiling(
            "default",
            measured.gflops_total if measured is not None else None,
            all_nominal,
            probes=probes,
            narrower=narrower,
            nominal_what=f"{cores} core{'s' if cores != 1 else ''} at the nominal clock",
        ),
    )
