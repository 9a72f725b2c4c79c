"""`tfbuild doctor`: know in minutes what would fail after hours.

It checks what a TensorFlow build needs from this machine (the engine, its storage driver and free
disk, memory and cores against the plan, proxy and CA settings) and then runs the canary, a
miniature STAND-IN source, through the whole pipeline twice: once for this machine and once for the
x86_64 baseline. Both wheels are installed, imported and run in the toolchain container (the smoke),
their machine code is checked for the planned instructions, and their kernels are timed side by side:
the ``speedup`` of the host-targeted build.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tfbuild.build.publish import update_receipt
from tfbuild.build.run import BuildRun, ca_bundle_from, proxies_from
from tfbuild.core import commands, serial
from tfbuild.core.controls import printable, printable_line
from tfbuild.core.engine import DockerEngine, EngineInfo, Mount
from tfbuild.core.engine_protocol import Engine
from tfbuild.core.errors import EnvironmentProblem, Interrupted, TfbuildError
from tfbuild.core.image_failure import ImageUnavailable
from tfbuild.core.stats import FASTER, UNDECIDED, Verdict, sequential
from tfbuild.detect.host import HostFacts, host_facts
from tfbuild.plan import GIB, MIB, BuildPlan
from tfbuild.plan.here import plan_here
from tfbuild.plan.options import PlanOptions
from tfbuild.plan.resources import DISK_NEEDED_GIB, JOB_MIB, few_cpus
from tfbuild.recipes import canary
from tfbuild.wheel.receipt import (
    CANARY_BUILDS,
    INSTRUCTIONS,
    MAX_COUNT,
    MAX_SIZE,
    CanaryBuildName,
    CanaryCheck,
    Instruction,
    InstructionCheck,
    SmokeOutcome,
    json_depth,
)

Status = Literal["ok", "warn", "fail", "skip"]
#: Storage drivers that make a multi-gigabyte build slow or fragile.
SLOW_DRIVERS = {
    "vfs": "vfs copies every layer in full: slow, and it needs many times the disk",
    "devicemapper": "devicemapper (loop-lvm) is deprecated and fills its pool",
}
CANARY_VOLUME = "tfbuild-canary-cache"


@dataclass(frozen=True, kw_only=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


@dataclass(frozen=True, kw_only=True)
class CanaryBuild:
    """One of the canary's two builds, as doctor reports it."""

    wheel: Path
    receipt: Path
    target: str
    cflags: tuple[str, ...]
    seconds: float  # the build's, to a tenth
    toolchain_image_built: bool
    sha256: str  # the wheel's


@dataclass(frozen=True, kw_only=True)
class CanaryReport(CanaryCheck):
    """The canary in ``doctor --json``: the section it adds to the host wheel's receipt, then the
    base image both builds were made on and each build."""

    base_image: str
    builds: dict[CanaryBuildName, CanaryBuild]


@dataclass(frozen=True, kw_only=True)
class DoctorReport:
    """Every check, in the order run, and the canary's report (None when it did not run)."""

    schema: Literal["tfbuild.doctor/1"] = "tfbuild.doctor/1"
    ok: bool = field(init=False)  # no check failed
    checks: tuple[Check, ...] = ()
    canary: CanaryReport | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "ok", all(c.status != "fail" for c in self.checks))

    def failure(self) -> EnvironmentProblem | None:
        """The error ``tfbuild doctor`` exits with: the failed checks, the first one's fix."""
        failed = [c for c in self.checks if c.status == "fail"]
        if not failed:
            return None
        # A failure whose fix is another check's (the canary without its base image) takes that.
        fixes = (c.fix for c in (failed[0], *self.checks) if c.fix and c.status != "ok")
        return EnvironmentProblem(
            f"{len(failed)} check(s) failed: {', '.join(c.name for c in failed)}",
            why=failed[0].detail,
            fix=next(fixes, ""),
        )


# --- checks that need no build ----------------------------------------------------------------------


def engine_checks(info: EngineInfo, *, disk_needed_gib: int) -> list[Check]:
    driver = info.storage_driver
    if info.free_disk_bytes is None:
        disk = Check(
            name="disk",
            status="skip",
            detail=f"the engine's root {info.docker_root_dir or '?'} is not on this machine",
        )
    else:
        free = info.free_disk_bytes / GIB
        enough = free >= disk_needed_gib
        disk = Check(
            name="disk",
            status="ok" if enough else "fail",
            detail=f"{free:.0f} GiB free under {info.docker_root_dir} (images, bazel caches); "
            f"a build needs about {disk_needed_gib} GiB",
            fix="" if enough else "Free space there, or move the engine's data-root.",
        )
    return [
        Check(
            name="engine",
            status="ok",
            detail=f"Docker {info.server_version} (API {info.api_version}) at {info.endpoint}, "
            f"cgroup v{info.cgroup_version}",
        ),
        Check(
            name="storage driver",
            status="warn" if driver in SLOW_DRIVERS else "ok",
            detail=SLOW_DRIVERS.get(driver, driver),
            fix="Configure overlay2 in /etc/docker/daemon.json." if driver in SLOW_DRIVERS else "",
        ),
        disk,
    ]


def resource_check(plan: BuildPlan, *, cpus: int, memory_bytes: int | None) -> Check:
    jobs, per_job = plan.resources.jobs, JOB_MIB[plan.variant]
    if memory_bytes is None:
        return Check(name="memory", status="warn", detail="the memory size is unknown")
    memory_mib = memory_bytes // MIB
    detail = (
        f"{cpus} cpus, {memory_mib / 1024:.1f} GiB: bazel --jobs={jobs}, "
        f"--local_ram_resources={plan.resources.local_ram_mb} (about {per_job} MiB per compile job)"
    )
    if memory_mib < per_job + plan.resources.jvm_heap_mb:
        return Check(
            name="memory",
            status="fail",
            detail=detail + ": less than one compile job and bazel's server need",
            fix=f"A TensorFlow build needs at least {(per_job + 1024) / 1024:.0f} GiB.",
        )
    slow = few_cpus(cpus)  # the plan's warning too: one wording, one threshold
    if slow is not None:
        what, advice = slow
        return Check(name="memory", status="warn", detail=f"{detail}; {what}", fix=advice)
    return Check(name="memory", status="ok", detail=detail)


def network_check(env: dict[str, str]) -> Check:
    proxies = proxies_from(env)
    try:
        ca = ca_bundle_from(None, env)
    except TfbuildError as exc:
        return Check(name="proxy and CA", status="fail", detail=exc.what, fix=exc.fix)
    parts = [f"{name}={value}" for name, value in proxies if name.isupper()] or ["no proxy"]
    parts.append(f"CA bundle {ca} (mounted read-only)" if ca else "system CA certificates")
    return Check(name="proxy and CA", status="ok", detail="; ".join(parts) + ", passed to builds")


# --- the canary -------------------------------------------------------------------------------------


def canary_base(
    engine: Engine, *, on_line: Callable[[str], None], verbose: bool = False
) -> tuple[str, Check]:
    """The canary's base image: the local `tfbuild base` image, made now when possible (what it
    does said through ``on_line``; debootstrap's own lines only with ``verbose``)."""
    from tfbuild.build.base_images import make_base_image
    from tfbuild.recipes.images import default_tag

    tag = default_tag(canary.SUITE)
    if engine.image_exists(tag):
        return tag, Check(
            name="base image",
            status="ok",
            detail=f"{tag}, made by tfbuild base (no container registry needed)",
        )
    lacking = base_lacks(root=os.geteuid() == 0, debootstrap=shutil.which("debootstrap"))
    if lacking:
        return "debian-12", base_image_warning(tag, canary.SUITE, lacking)
    try:
        made = make_base_image(engine, suite=canary.SUITE, on_line=on_line, verbose=verbose)
    except TfbuildError as exc:
        return "debian-12", Check(
            name="base image",
            status="warn",
            detail=f"no local base image {tag}, and tfbuild base could not make it: {exc.what}: "
            f"{exc.why}; the canary pulls debian:12 from a registry",
            fix=exc.fix,
        )
    return tag, Check(
        name="base image",
        status="ok",
        detail=f"{tag} created now with tfbuild base in {made.seconds:.0f} s (debootstrap "
        "from the Debian mirror, no container registry needed)",
    )


def base_lacks(*, root: bool, debootstrap: str | None) -> tuple[str, ...]:
    """What this machine lacks to make a base image with tfbuild base: "debootstrap", "root"."""
    return tuple(
        name
        for name, missing in (("debootstrap", debootstrap is None), ("root", not root))
        if missing
    )


def base_image_warning(tag: str, suite: str, lacking: tuple[str, ...]) -> Check:
    """No local base image, and tfbuild base cannot make one here: say what is missing, once."""
    why = {"debootstrap": "debootstrap is not installed", "root": "tfbuild base needs root"}
    steps = [f"sudo tfbuild base --suite {suite}"]
    if "debootstrap" in lacking:
        steps.insert(0, "install debootstrap (sudo apt-get install debootstrap)")
    return Check(
        name="base image",
        status="warn",
        detail=f"no local base image {tag}, and {' and '.join(why[m] for m in lacking)} to make "
        "one: the canary pulls debian:12 from a registry",
        fix=f"Where no registry can be reached, {', then '.join(steps)}.",
    )


def canary_failure(exc: TfbuildError, base_check: Check) -> Check:
    """The failed canary build: what and why (its fix is said once, beside them). When it failed
    for want of the base image the base image check already warned about, that check's fix is the
    one to follow, and the report's last line says it."""
    detail = f"{exc.what}: {exc.why}" if exc.why else exc.what
    if base_check.status != "ok" and isinstance(exc.__cause__, ImageUnavailable):
        return Check(
            name="canary build",
            status="fail",
            detail=f"{detail} (the canary's base image: see the base image check)",
        )
    return Check(name="canary build", status="fail", detail=detail, fix=exc.fix)


def expected_instructions(plan: BuildPlan) -> list[Instruction]:
    """What the host build's machine code must contain: the widest vectors and FMA, when planned."""
    enabled = {c.feature for c in plan.coverage if c.flag}
    vectors: list[Instruction] = (
        ["zmm"] if "AVX512F" in enabled else ["ymm"] if "AVX2" in enabled else []
    )
    return [*vectors, "fma"] if "FMA" in enabled else vectors


def run_canary(
    engine: DockerEngine,
    *,
    base: str,
    dist: Path,
    facts: HostFacts,
    say: Callable[[str], None],
    verbose: bool = False,
    quiet: bool = False,
) -> CanaryReport:
    """Build the canary for this machine and for x86_64, smoke both, check and time them (each
    build's progress shown as a build shows it, ``[doctor] ...``, unless ``quiet``)."""
    builds = {}
    plans: dict[CanaryBuildName, BuildPlan] = {}
    targets: tuple[tuple[CanaryBuildName, str | None], ...] = (
        ("host", None),
        ("baseline", "x86_64"),
    )
    for name, target in targets:
        say(f"canary: building the {name} wheel (STAND-IN source, real pipeline)")
        args = PlanOptions(
            canary=True,
            target=target,
            base_image=base,
            cache_volume=CANARY_VOLUME,
            skip_disk_check=True,
        )
        planned = plan_here(args, engine, host=facts)
        plans[name] = planned.plan
        run = BuildRun(dist=dist / name, quiet=quiet, verbose=verbose, tag="doctor")
        builds[name] = run.execute(planned, engine=engine)
    host, baseline = builds["host"], builds["baseline"]
    say("canary: smoke (install, import, run), instruction check and timing in the toolchain image")
    probe = _probe(engine, host.data.inputs.toolchain_image, host.wheel, baseline.wheel)
    section = canary_check(probe, expected_instructions(plans["host"]))
    update_receipt(host.receipt, section)
    return CanaryReport(
        **{f.name: getattr(section, f.name) for f in dataclasses.fields(CanaryCheck)},
        base_image=base,
        builds={
            name: CanaryBuild(
                wheel=result.wheel,
                receipt=result.receipt,
                target=result.data.target,
                cflags=tuple(result.data.cflags),
                seconds=round(result.seconds, 1),
                toolchain_image_built=result.image_built,
                sha256=result.sha256,
            )
            for name, result in builds.items()
        },
    )


def canary_check(probe: CanaryProbe, expected: Sequence[Instruction]) -> CanaryCheck:
    """The canary's section from what its probe found: the instruction check (the host build holds
    every ``expected`` instruction, the baseline none of the three), each wheel's smoke, and the
    kernels' timing judged by core.stats 15 pairs at a time."""
    counts = probe.instructions
    isa_ok = (
        bool(counts)
        and all(counts["host"].get(m, 0) > 0 for m in expected)
        and not any(counts["baseline"].get(m, 0) for m in INSTRUCTIONS)
    )
    seconds = probe.seconds
    medians = {name: statistics.median(times) for name, times in seconds.items()}
    judged = (
        sequential(seconds["host"], seconds["baseline"], per_look=CANARY_PAIRS_PER_LOOK)
        if seconds
        else None
    )
    return CanaryCheck(
        isa=InstructionCheck(expected=tuple(expected), found=counts, ok=isa_ok),
        smoke={name: _outcome(probe.smoke[name]) for name in CANARY_BUILDS},
        median_ms={name: round(value * 1e3, 3) for name, value in medians.items()},
        rounds=len(seconds.get("host", ())),
        speedup=None if judged is None else round(judged.ratio, 2),
        verdict=judged,
    )


def _outcome(found: ProbeSmoke) -> SmokeOutcome:
    """A wheel's smoke as the receipt keeps it: ok, or its exit code and its errors' last lines."""
    if found.ok:
        return SmokeOutcome(ok=True)
    return SmokeOutcome(
        ok=False,
        exit_code=serial.UNSET if found.exit_code is None else found.exit_code,
        stderr=serial.UNSET if found.stderr is None else _last_lines(found.stderr),
    )


#: What a receipt keeps of a canary wheel's errors: the last lines, at most so many characters.
STDERR_KEPT_LINES, STDERR_KEPT_CHARS = 20, 2000


def _last_lines(text: str) -> str:
    """The end of a program's errors, shown text only (no escape sequence, no control character
    but line breaks and tabs: core.controls), as a receipt may hold them."""
    lines = printable(text).splitlines()[-STDERR_KEPT_LINES:]
    return "\n".join(lines)[-STDERR_KEPT_CHARS:]


# --- the canary's findings in words (the JSON keeps the numbers) ----------------------------------------


def _counts(found: dict[Instruction, int]) -> str:
    """``32 zmm, 0 ymm, 6 fma``: how many instructions of each kind a library holds."""
    return ", ".join(f"{found.get(m, 0)} {m}" for m in INSTRUCTIONS)


def isa_text(isa: InstructionCheck) -> str:
    """The instruction check as a sentence: what the host build was to use, and what was counted."""
    wanted = " and ".join(isa.expected) or "no vector extensions"
    if not isa.found:
        return f"host build to use {wanted}: no instructions counted (the probe did not run)"
    return (
        f"host build uses {wanted} ({_counts(isa.found.get('host', {}))} instructions), "
        f"the baseline none ({_counts(isa.found.get('baseline', {}))})"
    )


#: The canary's pairs judged at each look (its probe times ROUNDS = 5 looks of them at once).
CANARY_PAIRS_PER_LOOK = 15


def speedup_text(found: Verdict | None, median_ms: dict[CanaryBuildName, float]) -> str:
    """The timing as a sentence: core.stats' verdict, each median with its unit."""
    if found is None:
        return "the canary kernels could not be timed"
    medians = " and ".join(
        f"{median_ms[name]:.3f} ms {name}" for name in CANARY_BUILDS if name in median_ms
    )
    low, high = found.interval
    reach = f"±{found.spread * 100:.0f}%" if found.label == UNDECIDED else f"{low:.2f}-{high:.2f}"
    said = f"{found.label}: {found.ratio:.2f}x ({reach}) the speed of the x86_64 build"
    pairs = found.n_candidate
    return f"the host-targeted canary kernel is {said} ({pairs} alternating pairs: {medians})"


def smoke_failure_text(smoke: dict[CanaryBuildName, SmokeOutcome]) -> str:
    """Which canary wheel did not run, with its exit code and last line of errors."""
    parts = []
    for name in CANARY_BUILDS:
        outcome = smoke.get(name, SmokeOutcome(ok=False))
        if outcome.ok:
            continue
        said = [f"exit {outcome.exit_code}"] if isinstance(outcome.exit_code, int) else []
        errors = outcome.stderr if isinstance(outcome.stderr, str) else ""
        lines = errors.strip().splitlines()
        if lines:
            said.append(lines[-1].strip())
        parts.append(f"the {name} wheel did not run" + (f" ({': '.join(said)})" if said else ""))
    return "; ".join(parts) or "a canary wheel did not run"


# --- the canary's probe, run in the toolchain image: what it prints is untrusted --------------------


@dataclass(frozen=True, kw_only=True)
class ProbeSmoke:
    """One wheel's smoke as the probe printed it (scripts/canary_probe.py's ``install``)."""

    ok: bool
    exit_code: int | None = None
    stderr: str | None = None
    checksum: float | None = None  # the kernel's result, when it ran
    library: str | None = None  # where the wheel's library was installed, in the container


@dataclass(frozen=True, kw_only=True)
class CanaryProbe:
    """What the canary's probe printed (its one JSON line), decoded strictly: each wheel's smoke,
    and when both ran, the instructions counted in each library and each kernel's seconds per
    call, timed in alternating pairs."""

    smoke: dict[CanaryBuildName, ProbeSmoke]
    instructions: dict[CanaryBuildName, dict[Instruction, int]] = field(default_factory=dict)
    seconds: dict[CanaryBuildName, tuple[float, ...]] = field(default_factory=dict)


#: Bounds on the probe's line: it prints about 4 KB, nested three levels, 75 pairs of timings.
MAX_PROBE_LINE, MAX_PROBE_DEPTH, MAX_PROBE_PAIRS = 1 << 20, 8, 10_000
#: The calls of the canary kernel believed: it takes milliseconds. Within these, every figure of the
#: verdict (a ratio below 1e9, its interval's cap) is one a receipt's decoder reads back.
MIN_PROBE_SECONDS, MAX_PROBE_SECONDS = 1e-6, 600.0


def decode_probe(lines: Sequence[str], *, exit_code: int) -> CanaryProbe:
    """The probe's result from the lines its container printed: the last one that starts with
    ``{``, decoded strictly. A probe that printed none is a failed smoke of the host wheel, with the
    container's exit code and last lines; one whose result cannot be read (too long or deep, not
    JSON, not the probe's fields, impossible values) is one too, its last line saying why."""
    found = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("{")), None)
    if found is None:
        return _not_run(exit_code, "\n".join(lines[-STDERR_KEPT_LINES:]))
    try:
        return _probed(lines[found])
    except ValueError as exc:  # serial.DecodeFailure and json's errors too
        others = [*lines[:found], *lines[found + 1 :]][-STDERR_KEPT_LINES:]
        why = printable_line(str(exc))[:500]
        return _not_run(
            exit_code, "\n".join([*others, f"tfbuild cannot read the probe's result: {why}"])
        )


def _not_run(exit_code: int, stderr: str) -> CanaryProbe:
    return CanaryProbe(
        smoke={
            "host": ProbeSmoke(ok=False, exit_code=exit_code, stderr=stderr),
            "baseline": ProbeSmoke(ok=False),
        }
    )


def _not_json(text: str) -> None:
    raise ValueError(f"it holds {text}, which is not JSON")


def _probed(line: str) -> CanaryProbe:
    """The probe's line decoded and checked; a ValueError says why it cannot be read."""
    if len(line) > MAX_PROBE_LINE:
        raise ValueError(f"it is longer than {MAX_PROBE_LINE} characters")
    if json_depth(line.encode("utf-8", "replace"), limit=MAX_PROBE_DEPTH) > MAX_PROBE_DEPTH:
        raise ValueError(
            f"it nests deeper than {MAX_PROBE_DEPTH} levels, or its brackets do not pair"
        )
    probe = serial.from_data(json.loads(line, parse_constant=_not_json), CanaryProbe)
    missing = [name for name in CANARY_BUILDS if name not in probe.smoke]
    if missing:
        raise ValueError(f"it has no smoke of the {missing[0]} wheel")
    for name, smoke in probe.smoke.items():
        if smoke.exit_code is not None and abs(smoke.exit_code) > MAX_COUNT:
            raise ValueError(f"the {name} wheel's exit code is {smoke.exit_code}")
    for part, values in (("instructions", probe.instructions), ("seconds", probe.seconds)):
        if values and set(values) != set(CANARY_BUILDS):
            raise ValueError(f"its {part} are not those of both wheels")
    counts = [n for found in probe.instructions.values() for n in found.values()]
    if not all(0 <= n <= MAX_SIZE for n in counts):
        raise ValueError("it holds an instruction count out of range")
    times = probe.seconds
    if times:
        pairs = len(times["host"])
        if len(times["baseline"]) != pairs or not 1 <= pairs <= MAX_PROBE_PAIRS:
            raise ValueError(f"its timings are not pairs (as many of each, 1 to {MAX_PROBE_PAIRS})")
        every = (*times["host"], *times["baseline"])
        if not all(MIN_PROBE_SECONDS <= t <= MAX_PROBE_SECONDS for t in every):
            raise ValueError(
                f"it holds a timing out of range ({MIN_PROBE_SECONDS:g} to "
                f"{MAX_PROBE_SECONDS:g} seconds)"
            )
    return probe


def _probe(engine: Engine, image: str, host: Path, baseline: Path) -> CanaryProbe:
    lines: list[str] = []
    result = engine.run(
        image,
        [
            "python3",
            "/probe/probe.py",
            f"/wheels/host/{host.name}",
            f"/wheels/baseline/{baseline.name}",
        ],
        mounts=[
            Mount(str(commands.script("canary_probe.py")), "/probe/probe.py", read_only=True),
            Mount(str(host.parent), "/wheels/host", read_only=True),
            Mount(str(baseline.parent), "/wheels/baseline", read_only=True),
        ],
        user=f"{os.getuid()}:{os.getgid()}",
        env={"HOME": "/tmp"},
        on_line=lines.append,
    )
    return decode_probe(lines, exit_code=result.exit_code)


# --- the doctor -------------------------------------------------------------------------------------


def run_doctor(
    *,
    with_canary: bool = True,
    dist: Path | None = None,
    say: Callable[[str], None] = lambda _text: None,
    show: Callable[[Check], None] = lambda _check: None,
    verbose: bool = False,
    quiet: bool = False,
) -> DoctorReport:
    """Run the checks, each shown through ``show`` as it is made; the canary's report is None
    when it did not run."""
    checks: list[Check] = []

    def add(check: Check) -> None:
        checks.append(check)
        show(check)

    try:
        engine = DockerEngine.connect()
    except TfbuildError as exc:
        add(Check(name="engine", status="fail", detail=exc.what + f": {exc.why}", fix=exc.fix))
        return DoctorReport(checks=tuple(checks))
    try:
        facts = host_facts()
        plan = plan_here(PlanOptions(skip_disk_check=True), engine, host=facts).plan
        for check in engine_checks(engine.info(), disk_needed_gib=DISK_NEEDED_GIB["cpu"]):
            add(check)
        add(resource_check(plan, cpus=facts.build_cpus, memory_bytes=facts.build_memory_bytes))
        add(network_check(dict(os.environ)))
        if not with_canary:
            return DoctorReport(checks=tuple(checks))
        base, base_check = canary_base(
            engine, on_line=lambda line: say(f"base: {line}"), verbose=verbose
        )
        add(base_check)
        holder = dist or Path(tempfile.mkdtemp(prefix="tfbuild-doctor-"))
        started = time.monotonic()
        try:
            canary_report = run_canary(
                engine,
                base=base,
                dist=holder,
                facts=facts,
                say=say,
                verbose=verbose,
                quiet=quiet,
            )
        except Interrupted:
            raise  # SIGINT or SIGTERM stopped the canary: no failed check, the run ends (130)
        except TfbuildError as exc:
            add(canary_failure(exc, base_check))
            return DoctorReport(checks=tuple(checks))
        finally:
            if dist is None:
                shutil.rmtree(holder, ignore_errors=True)
        host = canary_report.builds["host"]
        smoke_ok = canary_report.smoke_ok
        isa = canary_report.isa
        found = canary_report.judged
        for check in (
            Check(
                name="canary build",
                status="ok",
                detail=f"both wheels built through the pipeline in {time.monotonic() - started:.0f} s "
                f"(host target {host.target}: {' '.join(host.cflags)})",
            ),
            Check(
                name="canary smoke",
                status="ok" if smoke_ok else "fail",
                detail="both wheels install, import and run"
                if smoke_ok
                else smoke_failure_text(canary_report.smoke),
                fix="" if smoke_ok else "Read the canary's build log; report it if it persists.",
            ),
            Check(
                name="instruction set",
                status="ok" if isa.ok else "fail",
                detail=isa_text(isa),
                fix="" if isa.ok else "The planned flags did not reach the compiler: report it.",
            ),
            Check(
                name="speedup",
                status="ok" if found is not None and found.label == FASTER else "warn",
                detail=speedup_text(found, canary_report.median_ms),
            ),
        ):
            add(check)
    finally:
        engine.close()
    return DoctorReport(checks=tuple(checks), canary=canary_report)
