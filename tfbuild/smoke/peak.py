"""The machine's FP32 ceiling: computed from what /proc/cpuinfo says, and measured with an FMA loop.

``tfbuild smoke`` reports matmul GFLOP/s as a fraction of a peak. Two peaks exist and both are useful:

* :func:`theoretical_peak` multiplies cores × FP32 lanes × 2 (a fused multiply-add is two flops) ×
  FMA pipes per core × clock. It works for any dump (``--cpuinfo``), needs no compiler, and every guess
  it makes is written into :attr:`Peak.assumptions` as a plain sentence. Its clock is the nominal one,
  so on machines that boost (all of them) it is lower than what the cores really reach.
* :func:`measure_fma_peak` compiles a tiny C kernel (``peak_kernel.c``, shipped with this module:
  12 independent FMA chains on the widest vectors ``-march=native`` allows) and runs one copy per
  physical core at the same time, each pinned to its own core. This is the real ceiling at the clock
  the machine runs under load. On this project's Zen 5 VM the nominal figure is 332 GFLOP/s and the
  measured one about 500 (see the stock-wheel baseline, §2).

The pipe counts per microarchitecture (:data:`FMA_DATAPATH_BITS`) come from the vendors' optimization
guides and from Agner Fog's and Chips and Cheese's measurements; each entry carries its reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from tfbuild.core.errors import UsageError
from tfbuild.core.rounded import Round3
from tfbuild.detect._run import run_command
from tfbuild.detect.cpu import identify
from tfbuild.detect.cpuinfo import CpuInfo

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


def _datapath(info: CpuInfo, name: str, isa: str, lanes: int) -> tuple[int, str]:
    """FP32 multiply-add bits per cycle per core, and the sentence saying where it came from."""
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
    name = str(identify(info).name)
    isa, lanes, fused, sentences = _vector_unit(info)
    sentences.append(_fma_sentence(isa, fused, info))
    bits, why = _datapath(info, name, isa, lanes)
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
# Measured peak
# --------------------------------------------------------------------------------------------------

#: The kernel's C source, shipped next to this module (in the wheel too): 12 independent
#: multiply-add chains on the widest vectors the compiler enables; its header comment says more.
KERNEL_SOURCE = "peak_kernel.c"


def fma_kernel() -> str:
    """The C source of the FMA kernel, read from the package (a source tree or an installed wheel)."""
    return resources.files("tfbuild.smoke").joinpath(KERNEL_SOURCE).read_text(encoding="utf-8")


#: Flag sets tried in order: -march=native is what the baseline measured; some Arm compilers only
#: know -mcpu=native; the last resort is the compiler's default target.
_FLAG_SETS: tuple[tuple[str, ...], ...] = (
    ("-O2", "-march=native"),
    ("-O2", "-mcpu=native"),
    ("-O2",),
)
_LINE = re.compile(r"isa=(\S+) lanes=(\d+) gflops=([0-9.]+) seconds=([0-9.]+) checksum=(\S+)")
_COMPILE_TIMEOUT = 60.0


@dataclass(frozen=True, kw_only=True)
class MeasuredPeak:
    """FP32 FMA throughput measured on this machine: one pinned process per core, summed."""

    gflops_total: Round3  # the sum over the processes that ran at the same time
    gflops_per_process: tuple[Round3, ...]
    gflops_single: Round3  # one process alone (the single-core figure, at its boost clock)
    isa: str  # avx512, avx2, avx, sse, neon, generic: what the kernel was compiled for
    lanes: int
    compiler: str
    flags: tuple[str, ...]
    seconds: float  # measured time per process (after its warm-up)
    cpus: tuple[int, ...]  # the CPU each process was pinned to; empty when not pinned

    def __post_init__(self) -> None:
        # Exact figures, written to 3 decimals, whatever float the maker passed.
        object.__setattr__(self, "gflops_total", Round3(self.gflops_total))
        per_process = tuple(Round3(g) for g in self.gflops_per_process)
        object.__setattr__(self, "gflops_per_process", per_process)
        object.__setattr__(self, "gflops_single", Round3(self.gflops_single))


@dataclass(frozen=True, kw_only=True)
class _Run:
    isa: str
    lanes: int
    gflops: float


def one_cpu_per_core() -> list[int]:
    """The CPUs this process may use, one per physical core (SMT siblings share FMA units).

    Uses Linux's sysfs topology; elsewhere (or when it is unreadable) every usable CPU is listed.
    """
    if not hasattr(os, "sched_getaffinity"):
        return list(range(os.cpu_count() or 1))
    allowed = sorted(os.sched_getaffinity(0))
    seen: set[tuple[str, str]] = set()
    chosen: list[int] = []
    for cpu in allowed:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            key = (
                (topology / "physical_package_id").read_text().strip(),
                (topology / "core_id").read_text().strip(),
            )
        except OSError:
            return allowed
        if key not in seen:
            seen.add(key)
            chosen.append(cpu)
    return chosen or allowed


def _compile(compiler: list[str], workdir: Path) -> tuple[Path, tuple[str, ...]] | None:
    source = workdir / "fmapeak.c"
    binary = workdir / "fmapeak"
    source.write_text(fma_kernel())
    for flags in _FLAG_SETS:
        result = run_command(
            [*compiler, *flags, "-o", str(binary), str(source)], timeout=_COMPILE_TIMEOUT
        )
        if result is not None and result.returncode == 0 and binary.is_file():
            return binary, flags
    return None


def _run_together(binary: Path, count: int, seconds: float, cpus: list[int]) -> list[_Run] | None:
    """Run ``count`` copies at once (pinned when ``cpus`` is given); None if any fails."""
    warmup = min(0.05, seconds)
    procs: list[subprocess.Popen[str]] = []
    try:
        barrier_read, barrier_write = os.pipe()
        try:
            for index in range(count):
                proc = subprocess.Popen(  # argv is built here, never by a shell
                    [str(binary), repr(seconds), repr(warmup)],
                    stdin=barrier_read,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    errors="replace",
                )
                procs.append(proc)
                if cpus:
                    with contextlib.suppress(OSError):  # pinning is best effort
                        os.sched_setaffinity(proc.pid, {cpus[index % len(cpus)]})
        finally:
            os.close(barrier_read)
            os.close(barrier_write)  # every copy sees end-of-file on stdin and starts now
        runs: list[_Run] = []
        for proc in procs:
            out, _err = proc.communicate(timeout=seconds + warmup + 30.0)
            match = _LINE.search(out)
            if proc.returncode != 0 or match is None:
                return None
            runs.append(_Run(isa=match[1], lanes=int(match[2]), gflops=float(match[3])))
        return runs
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        for proc in procs:  # after a failure or an interrupt, leave no copy running
            if proc.poll() is None:
                proc.kill()
            if proc.stdout is not None and not proc.stdout.closed:
                proc.communicate()


def measure_fma_peak(
    *, compiler: str = "cc", processes: int | None = None, seconds: float = 0.5
) -> MeasuredPeak | None:
    """Measure FP32 FMA GFLOP/s: one process alone, then one per core at once (summed).

    Returns None when no compiler works (or the kernel it builds does not run), so that callers fall
    back to :func:`theoretical_peak`. The kernel is compiled in a temporary directory that is removed
    afterwards. ``processes`` defaults to the number of physical cores this process may use.
    """
    if seconds <= 0:
        raise UsageError(f"cannot measure for {seconds} seconds", fix="Pass a positive duration.")
    if processes is not None and processes < 1:
        raise UsageError(f"cannot measure with {processes} processes", fix="Pass at least 1.")
    argv = shlex.split(compiler)
    if not argv:
        return None
    cpus = one_cpu_per_core() if hasattr(os, "sched_setaffinity") else []
    count = processes if processes is not None else max(1, len(cpus) or (os.cpu_count() or 1))
    with tempfile.TemporaryDirectory(prefix="tfbuild-fmapeak-") as tmp:
        built = _compile(argv, Path(tmp))
        if built is None:
            return None
        binary, flags = built
        single = _run_together(binary, 1, seconds, cpus[:1])
        if not single:
            return None
        together = single if count == 1 else _run_together(binary, count, seconds, cpus)
        if not together:
            return None
    per_process = tuple(run.gflops for run in together)
    return MeasuredPeak(
        gflops_total=Round3(sum(per_process)),
        gflops_per_process=tuple(Round3(g) for g in per_process),
        gflops_single=Round3(single[0].gflops),
        isa=single[0].isa,
        lanes=single[0].lanes,
        compiler=compiler,
        flags=flags,
        seconds=seconds,
        cpus=tuple(cpus[i % len(cpus)] for i in range(count)) if cpus else (),
    )
