"""Compiling the overlay: the loader for baseline x86-64, the kernels for the target.

Both are compiled from sources in this package against the stock wheel's headers, in a scratch
directory, with every path that could reach the binaries mapped to a fixed name
(``-ffile-prefix-map``), no debug information and no build id: the same compiler, flags and headers
give the same bytes wherever and whenever they run (``tfbuild verify`` rebuilds and compares).

Each compiler command goes through a :class:`CompilerDrivers`: its drivers, the flags every
command gets (a sysroot), and where the commands run: on the host (:func:`host_toolchain`,
``--compiler``), or each in a one-shot container of the overlay's toolchain image (:mod:`.image`),
which sees the scratch directory and the stock TensorFlow at their own paths. The commands are the same either way,
so the paths in them, and the bytes, do not depend on where they ran.

The instruction sets the kernels need are what the compiler itself says the target flags enable
(its predefined macros, ``-dM -E``), by the names ``/proc/cpuinfo`` gives them: the loader checks
each on the CPU it lands on before loading the kernels.
"""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from tfbuild.core import commands
from tfbuild.core.compilers import CompilerExecutable, c_driver
from tfbuild.core.errors import BuildFailed, UnsupportedError
from tfbuild.core.files import sha256_file
from tfbuild.measure.stock import StockTensorFlow
from tfbuild.overlay.ops import PARTS, Part, Registration, inc_files
from tfbuild.wheel.overlay_receipt import LeftOut

#: The loader's flags: C for the x86-64 baseline (SSE2), whatever the target.
LOADER_FLAGS = ("-x", "c", "-march=x86-64", "-O2", "-fPIC", "-fvisibility=hidden")
#: The kernels' flags besides the target's: TensorFlow's opt config level, hidden symbols (else the
#: framework's own instantiations win at run time, and stock's -mavx code runs).
KERNEL_FLAGS = (
    "-O2",
    "-DNDEBUG",
    "-fPIC",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
    "-w",  # TensorFlow's headers warn by the hundred (deprecated mutex, uint32)
)
REPRODUCIBLE = ("-g0", "-fno-ident")
LINK_FLAGS = ("-shared", "-Wl,-Bsymbolic", "-Wl,--no-undefined", "-Wl,--build-id=none")
SOURCES = (
    *(f"{part}_kernels.cc" for part in PARTS),
    "overlay_kernels.h",
    "loader.c",
)
#: Flags one kernel file is compiled with besides the target's and :data:`KERNEL_FLAGS`.
#:
#: exact (Sqrt): Eigen's fast math off. Eigen/src/Core/util/Macros.h defines EIGEN_FAST_MATH 1
#: unless told; TensorFlow's headers and tf.sysconfig's flags do not set it, and stock's kernels
#: were built with it (its tanh is Eigen's vectorized one; its float32 Rsqrt is the rsqrt estimate
#: and a Newton step, up to 2 ulp from 1/sqrt). With it, psqrt of an AVX-512
#: packet is a Newton step from the rsqrt14 estimate (arch/AVX512/MathFunctions.h, ``#if
#: EIGEN_FAST_MATH``), where the AVX packets stock is built with always take vsqrtps/vsqrtpd
#: (arch/AVX/MathFunctions.h): up to 2 ulp off, and under TensorFlow's denormals-are-zero it
#: returns a subnormal input itself (MathFunctionsImpl.h, generic_sqrt_newton_step returns ``a``
#: where a == 0, which a subnormal is under DAZ) where stock's instruction returns 0. Without it the
#: AVX-512 packets take the instruction too: measured bit for bit stock's, 1.7x (float32) to 2.7x
#: (bfloat16) stock's speed. Not the whole library's flag: fast math off also takes the packet
#: path from tanh, erf and erfc (``HasTanh``, ``HasErf``, ``HasErfc = EIGEN_FAST_MATH`` in
#: arch/AVX512/PacketMath.h's packet_traits<float>): tanh measured 110x slower (std::tanh per
#: element), gelu (erfc) 3.6x; erf's scalar code vectorizes and keeps its speed.
PART_FLAGS: Mapping[Part, tuple[str, ...]] = {"exact": ("-DEIGEN_FAST_MATH=0",)}
KERNELS = "kernels.so"
LOADER = "libtfbuild_overlay.so"
#: How each line the loader writes to standard error begins (loader.c).
LOADER_SAYS = "tfbuild overlay ("
#: The stock TensorFlow's library the kernels link against (its soname), in the stock wheel.
FRAMEWORK = "libtensorflow_framework.so.2"

#: The instruction sets whose /proc/cpuinfo name is their compiler macro's, in lower case
#: (``__AVX2__``: avx2). AVX512ER and AVX512PF are Knights Landing's (mic_knl).
_SAME_NAMES = (
    "SSE3 SSSE3 SSE4_1 SSE4_2 SSE4A POPCNT AVX AVX2 FMA FMA4 XOP F16C BMI2 MOVBE AES ADX RDSEED GFNI "
    "VAES VPCLMULQDQ AVX512F AVX512DQ AVX512CD AVX512BW AVX512VL AVX512IFMA AVX512VBMI AVX512ER "
    "AVX512PF AMX_TILE AMX_INT8 AMX_BF16 CLFLUSHOPT CLWB CLZERO FSGSBASE XSAVE XSAVEOPT XSAVEC RDPID "
    "MOVDIRI MOVDIR64B SERIALIZE WAITPKG CLDEMOTE PKU SHA512 SM3 SM4 CMPCCXADD TBM"
)
#: The compiler's predefined macro -> the instruction set's /proc/cpuinfo name (loader.c's table).
MACROS = {
    **{f"__{name}__": name.lower() for name in _SAME_NAMES.split()},
    "__LZCNT__": "abm",
    "__BMI__": "bmi1",
    "__PCLMUL__": "pclmulqdq",
    "__RDRND__": "rdrand",
    "__SHA__": "sha_ni",
    "__AVX512VBMI2__": "avx512_vbmi2",
    "__AVX512VNNI__": "avx512_vnni",
    "__AVX512BITALG__": "avx512_bitalg",
    "__AVX512VPOPCNTDQ__": "avx512_vpopcntdq",
    "__AVX512BF16__": "avx512_bf16",
    "__AVX512FP16__": "avx512_fp16",
    "__AVX512VP2INTERSECT__": "avx512_vp2intersect",
    "__AVXVNNI__": "avx_vnni",
    "__AVXIFMA__": "avx_ifma",
    "__AVXVNNIINT8__": "avx_vnni_int8",
    "__AVXVNNIINT16__": "avx_vnni_int16",
    "__AVXNECONVERT__": "avx_ne_convert",
    "__PRFCHW__": "",  # PREFETCHW: a hint, harmless where absent (a NOP on older CPUs)
    "__CRC32__": "",  # part of SSE4.2, checked there
}
_DEFINE = re.compile(r"#define (__[A-Z0-9_]+__) 1")


@dataclass(frozen=True, kw_only=True)
class Compiled:
    kernels: Path
    loader: Path
    token: str  # the kernels' sha256, which a passed check's record names


@dataclass(frozen=True, kw_only=True)
class Ran:
    """How one compiler command ended: its exit code and what it said (its stderr)."""

    code: int
    output: str


#: Runs one compiler command (argv, in the directory given), wherever the toolchain lives.
Runner = Callable[[Sequence[str], Path], Ran]


def loader_line(stderr: str, *, last: bool) -> str | None:
    """The loader's line in a process's standard error (its first, or its ``last``), or None."""
    said = [line for line in stderr.splitlines() if line.startswith(LOADER_SAYS)]
    if not said:
        return None
    return said[-1] if last else said[0]


def run_here(argv: Sequence[str], cwd: Path) -> Ran:
    """A compiler command on this host."""
    call = commands.Command(
        argv=tuple(argv),
        what=f"{argv[0]} did not run",
        fix="Check the compiler.",
        error=BuildFailed,
        cwd=cwd,
        timeout=900,
    )
    done = commands.attempt(call)
    if done.returncode is None:
        raise commands.failure(call, done)
    return Ran(code=done.returncode, output=done.stderr)


@dataclass(frozen=True, kw_only=True)
class CompilerDrivers:
    """The compilers of a build and where their commands run."""

    cxx: str  # the C++ driver, as ``run`` finds it
    cc: str  # the C driver beside it (the loader)
    flags: tuple[str, ...] = ()  # given to every command after the driver: a sysroot
    run: Runner = run_here
    where: str = "on this host"  # for messages: "in tfbuild/overlay-toolchain:..."


def host_toolchain(compiler: str) -> CompilerDrivers:
    """``compiler`` (a C++ driver on this host) and the C driver beside it."""
    return CompilerDrivers(cxx=compiler, cc=c_driver(compiler))


def _run(toolchain: CompilerDrivers, argv: Sequence[str], *, cwd: Path, what: str) -> None:
    """``argv`` (its first word a driver of ``toolchain``, the toolchain's flags added after it)."""
    ran = toolchain.run([argv[0], *toolchain.flags, *argv[1:]], cwd)
    if ran.code != 0:
        errors = [line for line in ran.output.splitlines() if "error" in line] or [
            (ran.output.strip().splitlines() or ["(no output)"])[-1]
        ]
        raise BuildFailed(
            f"{what} failed ({toolchain.where})",
            why=errors[0][:400],
            fix="Check that the compiler supports the target's flags and C++17; --compiler picks "
            "another.",
        )


#: Where the compiler writes its predefined macros (in the scratch directory it runs in).
MACROS_FILE = "predefined-macros.h"


def predefined(toolchain: CompilerDrivers, cflags: Sequence[str], *, cwd: Path) -> set[str]:
    """The feature macros (``__AVX2__``) the compiler defines for ``cflags``."""
    _run(
        toolchain,
        [toolchain.cxx, *cflags, "-dM", "-E", "-x", "c++", "/dev/null", "-o", MACROS_FILE],
        cwd=cwd,
        what="asking the compiler what the target enables",
    )
    out = (cwd / MACROS_FILE).read_text(errors="replace")
    (cwd / MACROS_FILE).unlink()
    return set(_DEFINE.findall(out))


def target_features(
    toolchain: CompilerDrivers, cflags: Sequence[str], *, cwd: Path
) -> tuple[str, ...]:
    """The instruction sets ``cflags`` let the compiler use, by /proc/cpuinfo name. ``cwd`` is a
    scratch directory: the compiler writes its macros there (a file, since a container's output
    mixes stdout and stderr)."""
    names = set()
    for macro in sorted(predefined(toolchain, cflags, cwd=cwd)):
        name = MACROS.get(macro)
        if name:
            names.add(name)
        elif macro not in MACROS and _is_isa(macro):
            raise UnsupportedError(
                f"the target's flags enable {macro.strip('_')}, which the overlay's loader cannot "
                "check for",
                why="the loader must check every instruction set the kernels may use",
                fix="Pick an older target (--target), or report it to tfbuild.",
            )
    return tuple(sorted(names))


_NOT_ISA = re.compile(
    r"__(?:SSE2?|MMX|SSE_MATH|SSE2_MATH|FXSR|CX8|CX16|SAHF|LAHF|GCC_ASM_FLAG_OUTPUTS|"
    r"SEG_FS|SEG_GS|CET|SHSTK|IBT|TSXLDTRK|HRESET|UINTR|KL|WIDEKL|RTM|HLE|MWAITX|"
    r"LWP|ENQCMD|INVPCID|PCONFIG|PTWRITE|SGX|WBNOINVD|RAOINT|USERMSR|PREFETCHI|AMX_[A-Z0-9]+|"
    r"AVX10_[0-9_]+(?:_512)?|APX_F|EVEX512|MOVRS|ZU|NF|PPX|PUSH2POP2|NDD|CCMP|CFCMP)__"
)


def _is_isa(macro: str) -> bool:
    """A macro naming an instruction set extension tfbuild does not map (not a system macro)."""
    upper = macro.strip("_")
    looks = upper.startswith(("AVX", "SSE", "AMX", "SHA", "SM", "FMA", "BMI", "AES", "GFNI"))
    return looks and not _NOT_ISA.fullmatch(macro)


#: Eigen's AVX512-FP16 packet math (Eigen/src/Core/arch/AVX512/PacketMathFP16.h, as TensorFlow 2.21
#: ships it) does not compile with clang 16, nor with Debian's clang 18.1.8 of the overlay's
#: toolchain image ("no function template matches function template specialization
#: 'predux_half_dowto4'", PacketMathFP16.h:740, both seen for a target with AVX512-FP16 on a
#: Sapphire Rapids VM, 2026-11-28); TensorFlow's own builds never enable AVX512-FP16. None of the
#: overlay's kernels computes in FP16 arithmetic but the half-precision ones, which then convert
#: to float as stock's do, so a clang before this builds them without it (gcc builds it as is).
FP16_CLANG = 19


_ONLY_INTRINSICS = (
    "compilers emit it only where code calls its intrinsics, which these kernels do not"
)
#: Instruction sets of the system, not of computing: a target's -march enables them, but a compiler
#: emits them only for their intrinsics (or attributes), which Eigen's kernels never call; and the
#: hypervisors of cloud machines often hide them from /proc/cpuinfo and CPUID (pku, rdseed, mwaitx,
#: rdpru, wbnoinvd, shstk seen hidden on a Zen 5 VM, pku on a Sapphire Rapids one). Compiled with
#: each turned off, the kernels cannot contain them, and the loader has nothing of them to check:
#: an overlay for a CPU loads on its virtual machines. Macro -> (the flag that turns it off, why).
SYSTEM_ONLY: Mapping[str, tuple[str, str]] = {
    "__PKU__": ("-mno-pku", f"memory protection keys (RDPKRU, WRPKRU): {_ONLY_INTRINSICS}"),
    "__RDSEED__": ("-mno-rdseed", f"hardware random seeds: {_ONLY_INTRINSICS}"),
    "__RDRND__": ("-mno-rdrnd", f"hardware random numbers: {_ONLY_INTRINSICS}"),
    "__RDPID__": ("-mno-rdpid", f"reading the processor's id: {_ONLY_INTRINSICS}"),
    "__FSGSBASE__": ("-mno-fsgsbase", f"the FS/GS base registers: {_ONLY_INTRINSICS}"),
    "__MOVDIRI__": ("-mno-movdiri", f"direct stores for devices: {_ONLY_INTRINSICS}"),
    "__MOVDIR64B__": ("-mno-movdir64b", f"64-byte direct stores: {_ONLY_INTRINSICS}"),
    "__SERIALIZE__": ("-mno-serialize", f"instruction serialization: {_ONLY_INTRINSICS}"),
    "__WAITPKG__": ("-mno-waitpkg", f"user-mode waits (UMWAIT, TPAUSE): {_ONLY_INTRINSICS}"),
    "__CLDEMOTE__": ("-mno-cldemote", f"cache-line demotion: {_ONLY_INTRINSICS}"),
    "__CLFLUSHOPT__": ("-mno-clflushopt", f"cache-line flushes: {_ONLY_INTRINSICS}"),
    "__CLWB__": ("-mno-clwb", f"cache-line write-back: {_ONLY_INTRINSICS}"),
    "__CLZERO__": ("-mno-clzero", f"cache-line zeroing: {_ONLY_INTRINSICS}"),
    "__MWAITX__": ("-mno-mwaitx", f"monitored waits: {_ONLY_INTRINSICS}"),
    "__RDPRU__": ("-mno-rdpru", f"reading processor registers: {_ONLY_INTRINSICS}"),
    "__WBNOINVD__": ("-mno-wbnoinvd", f"cache write-back (privileged): {_ONLY_INTRINSICS}"),
    "__SHSTK__": ("-mno-shstk", f"CET shadow stacks: {_ONLY_INTRINSICS}"),
    "__SGX__": ("-mno-sgx", f"SGX enclaves: {_ONLY_INTRINSICS}"),
    "__PCONFIG__": ("-mno-pconfig", f"platform configuration (privileged): {_ONLY_INTRINSICS}"),
    "__PTWRITE__": ("-mno-ptwrite", f"processor trace writes: {_ONLY_INTRINSICS}"),
    "__ENQCMD__": ("-mno-enqcmd", f"enqueue commands for devices: {_ONLY_INTRINSICS}"),
    "__UINTR__": ("-mno-uintr", f"user interrupts: {_ONLY_INTRINSICS}"),
    "__HRESET__": ("-mno-hreset", f"history reset: {_ONLY_INTRINSICS}"),
    "__INVPCID__": ("-mno-invpcid", f"TLB invalidation (privileged): {_ONLY_INTRINSICS}"),
    "__TSXLDTRK__": ("-mno-tsxldtrk", f"TSX load tracking: {_ONLY_INTRINSICS}"),
    "__RTM__": ("-mno-rtm", f"transactional memory: {_ONLY_INTRINSICS}"),
    "__KL__": ("-mno-kl", f"Key Locker: {_ONLY_INTRINSICS}"),
    "__WIDEKL__": ("-mno-widekl", f"wide Key Locker: {_ONLY_INTRINSICS}"),
    "__LWP__": ("-mno-lwp", f"lightweight profiling: {_ONLY_INTRINSICS}"),
}


#: The system-only instruction sets by their /proc/cpuinfo names (and ``ospke``, protection keys
#: enabled by the OS): what an overlay's loader never checks, as its kernels cannot contain them.
SYSTEM_FLAGS = frozenset(
    {MACROS.get(macro) or macro.strip("_").lower() for macro in SYSTEM_ONLY} | {"ospke"}
)


def _left_out(macro: str, flag: str, why: str, *, system: bool = True) -> LeftOut:
    name = MACROS.get(macro) or macro.strip("_").lower()
    return LeftOut(instruction_set=name, flag=flag, why=why, system=system)


#: Why a clang before :data:`FP16_CLANG` leaves AVX512-FP16 out.
FP16_WHY = (
    f"Eigen's AVX512-FP16 packet math does not compile with a clang before {FP16_CLANG}; the "
    "half-precision kernels convert to float as stock's do"
)


def workarounds(
    compiler: CompilerExecutable, toolchain: CompilerDrivers, cflags: Sequence[str], *, cwd: Path
) -> tuple[LeftOut, ...]:
    """The instruction sets the target enables that its kernels are compiled without, each with
    its flag and why: the system-only ones (:data:`SYSTEM_ONLY`), and AVX512-FP16 for a clang
    before 19. The vector and arithmetic instruction sets the target enables stay, checked here."""
    macros = predefined(toolchain, cflags, cwd=cwd)
    left = [_left_out(m, *SYSTEM_ONLY[m]) for m in sorted(macros) if m in SYSTEM_ONLY]
    major = compiler.major if compiler.family == "clang" else None
    old_clang = major is not None and major < FP16_CLANG
    if old_clang and "-mno-avx512fp16" not in cflags and "__AVX512FP16__" in macros:
        left.append(_left_out("__AVX512FP16__", "-mno-avx512fp16", FP16_WHY, system=False))
    if not left:
        return ()
    added = [o.flag for o in left]
    kept = predefined(toolchain, [*cflags, *added], cwd=cwd)
    lost = {m for m in macros - kept if m not in SYSTEM_ONLY and m != "__AVX512FP16__"}
    lost -= {m for m in lost if not (MACROS.get(m) or _is_isa(m))}
    if lost:
        raise BuildFailed(
            f"turning off {' '.join(added)} also turned off {' '.join(sorted(lost))}",
            why="the overlay leaves out only system instruction sets its kernels never contain",
            fix="Report it to tfbuild with the compiler and target.",
        )
    return tuple(left)


def _defines(
    stock: StockTensorFlow,
    target: str,
    features: Sequence[str],
    kernels: int,
    *,
    pending: Sequence[str],
    token: str,
) -> list[str]:
    def string(name: str, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.,+-]*", value):
            raise ValueError(f"{name}: {value!r}")  # decoded values only: never reached
        return f'-D{name}="{value}"'

    return [
        string("TFB_FEATURES", ",".join(features)),
        string("TFB_TARGET", target),
        string("TFB_TENSORFLOW", stock.version),
        f"-DTFB_FRAMEWORK_SIZE={stock.framework_size}LL",
        string("TFB_KERNELS", KERNELS),
        f"-DTFB_KERNEL_COUNT={kernels}",
        string("TFB_PENDING", ",".join(pending)),
        string("TFB_TOKEN", token),
    ]


def compile_overlay(
    *,
    toolchain: CompilerDrivers,
    stock: StockTensorFlow,
    registration: Registration,
    target: str,
    cflags: Sequence[str],
    features: tuple[str, ...],
    scratch: Path,
    pending: Sequence[str] = (),
) -> Compiled:
    """The kernels and the loader, compiled in ``scratch`` (an absolute path); ``features``: what
    the loader checks (:func:`target_features` of ``cflags``). ``pending``: the instruction sets
    the build machine lacks, so the kernels' check waits for a machine that has them; the loader
    registers nothing until a CHECK file beside the kernels says it passed for these kernels
    (their sha256, :attr:`Compiled.token`)."""
    package = resources.files("tfbuild.overlay")
    for name in SOURCES:
        (scratch / name).write_bytes(package.joinpath(name).read_bytes())
    for name, text in inc_files(registration).items():
        (scratch / name).write_text(text)
    include = str(Path(stock.include).resolve())
    maps = [
        f"-ffile-prefix-map={scratch}=overlay",
        f"-ffile-prefix-map={include}=tensorflow/include",
    ]
    tf_flags = [f for f in stock.compile_flags if not f.startswith("-I")]
    common = [*KERNEL_FLAGS, *REPRODUCIBLE, *maps, f"-I{scratch}", f"-I{include}", *tf_flags]
    objects = []
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for part in PARTS:
            source = f"{part}_kernels.cc"
            obj = scratch / f"{part}_kernels.o"
            objects.append(obj)
            own = PART_FLAGS.get(part, ())
            argv = [toolchain.cxx, "-c", *cflags, *common, *own, source, "-o", obj.name]
            jobs.append(pool.submit(_run, toolchain, argv, cwd=scratch, what=f"compiling {source}"))
        for job in jobs:
            job.result()
    _keep_apart(scratch, objects)
    framework_dir = str(Path(stock.framework).resolve().parent)
    _run(
        toolchain,
        [
            toolchain.cxx,
            *LINK_FLAGS,
            *(o.name for o in objects),
            "-o",
            KERNELS,
            f"-L{framework_dir}",
            f"-l:{FRAMEWORK}",
        ],
        cwd=scratch,
        what="linking the kernels",
    )
    token = sha256_file(scratch / KERNELS)
    _run(
        toolchain,
        [
            toolchain.cc,
            *LOADER_FLAGS,
            *REPRODUCIBLE,
            *maps,
            *_defines(
                stock, target, features, len(registration.names), pending=pending, token=token
            ),
            "loader.c",
            "-o",
            LOADER,
            *LINK_FLAGS,
            "-ldl",
        ],
        cwd=scratch,
        what="compiling the loader",
    )
    return Compiled(kernels=scratch / KERNELS, loader=scratch / LOADER, token=token)


#: Mangled-name pieces of the code EIGEN_FAST_MATH changes: Eigen's packet math (Eigen::internal),
#: and the tensor evaluators and executors it is inlined into.
_FAST_MATH_CODE = re.compile(r"5Eigen8internal|TensorEvaluator|TensorExecutor|EvalRange")


def _defined(obj: Path) -> set[str]:
    """The global and weak symbols an object file defines (what the linker merges across files)."""
    with obj.open("rb") as stream:
        table = ELFFile(stream).get_section_by_name(".symtab")
        if not isinstance(table, SymbolTableSection):
            return set()
        return {
            symbol.name
            for symbol in table.iter_symbols()
            if symbol["st_shndx"] != "SHN_UNDEF"
            and symbol["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK", "STB_LOOS")  # GNU_UNIQUE
        }


def shared_math(own: Path, others: Sequence[Path]) -> tuple[str, ...]:
    """The symbols of the code fast math changes that ``own`` defines and one of ``others`` does too,
    sorted. The linker keeps one definition of each, whichever file it met first: the kernels of
    ``own`` would run the others' code, compiled with the other setting."""
    mine = {name for name in _defined(own) if _FAST_MATH_CODE.search(name)}
    theirs = set().union(*(_defined(other) for other in others))
    return tuple(sorted(mine & theirs))


def _keep_apart(scratch: Path, objects: Sequence[Path]) -> None:
    """Each part compiled with flags of its own (:data:`PART_FLAGS`) shares none of the code those
    flags change with the other parts."""
    for part in PART_FLAGS:
        own = scratch / f"{part}_kernels.o"
        clash = shared_math(own, [o for o in objects if o != own])
        if clash:
            raise BuildFailed(
                f"the {part} kernels share code with the others that their flags "
                f"({' '.join(PART_FLAGS[part])}) change",
                why=f"{len(clash)} symbol(s) both define, the first {clash[0]}",
                fix="Report it to tfbuild with the compiler and target; the linker would keep "
                "one of the two.",
            )
