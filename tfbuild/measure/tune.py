"""The runtime profile of a wheel, measured on this machine: which settings win beyond the noise.

``tfbuild tune`` starts from TensorFlow's own defaults (no setting at all), tries one knob at a time
against them (intra- and inter-op threads, ``TF_ENABLE_ONEDNN_OPTS``, the allocator, and for an
OpenMP oneDNN build ``OMP_NUM_THREADS``/``KMP_BLOCKTIME``/``KMP_AFFINITY``), each timed in
alternation with the defaults on the smoke's op set and judged by the smoke's rule (a setting wins
when it is faster beyond the noise on most ops and slower on none; an op still undecided is timed
again while the budget lasts, and a setting the timings still cannot judge is "undecided", and not
kept). The winners together are then confirmed against the defaults, once more in alternation;
only a confirmed profile is kept. A time budget bounds the search: knobs left when it runs out are
reported as not tried.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tfbuild.core import serial
from tfbuild.core.defaults import multiarch
from tfbuild.core.files import write_text
from tfbuild.core.stats import UNDECIDED
from tfbuild.detect import contention, cpu
from tfbuild.detect.contention import Contention
from tfbuild.measure.envs import WheelSpec, clean_env, ensure_env, tensorflow_dir
from tfbuild.measure.levers import ONEDNN_OFF, Lever
from tfbuild.measure.run import (
    Method,
    SettingTrial,
    openmp_env,
    threads_env,
    try_setting,
    why_undecided,
)

Progress = Callable[[str], None]
SCHEMA = "tfbuild.tune/1"


@dataclass(frozen=True, kw_only=True)
class TuneOptions:
    spec: WheelSpec
    python: str
    budget: float = 300.0  # seconds for the whole search
    method: Method = field(default_factory=Method.quick)


def knobs(python: str) -> tuple[Lever, ...]:
    """The settings that matter for this wheel on this machine, in the order they are tried (each
    tried under its name in a sentence: "tcmalloc preloaded")."""
    info = cpu.host_cpuinfo()
    cores = str(info.physical_cores or info.logical_cpus or 1)
    found = [
        Lever(
            key="threads",
            name=f"threads intra={cores} inter=1",
            env=tuple(sorted(threads_env(cores).items())),
        ),
        ONEDNN_OFF,
    ]
    libs = Path("/usr/lib") / multiarch(info.architecture)
    for name, lib in (("tcmalloc", "libtcmalloc.so.4"), ("jemalloc", "libjemalloc.so.2")):
        if (libs / lib).exists():
            preload = (("LD_PRELOAD", str(libs / lib)),)
            found.append(Lever(key=name, name=name, said=f"{name} preloaded", env=preload))
    where = tensorflow_dir(python)  # an OpenMP oneDNN build (--config=mkl) ships its runtime
    if where is not None and (
        any(where.rglob("libiomp5*.so*")) or any(where.rglob("libgomp*.so*"))
    ):
        openmp = tuple(sorted(openmp_env(cores).items()))
        found.append(Lever(key="openmp", name="openmp", env=openmp))
    return tuple(found)


def process_knobs(python: str) -> tuple[Lever, ...]:
    """The process settings :func:`knobs` tries, as levers raced on top of a model's fastest way
    of running (its threads are a lever of their own there)."""
    return tuple(knob for knob in knobs(python) if knob.key != "threads")


def gain(trial: SettingTrial) -> tuple[float, float, float]:
    """The setting's median speed-up over its ops (baseline / candidate time), and the span of the
    ops' intervals, lowest start to highest end."""
    found = [r.verdict for r in trial.results if r.verdict is not None]
    if not found:
        return 1.0, 1.0, 1.0
    ratios = sorted(v.ratio for v in found)
    return (
        ratios[len(ratios) // 2],
        min(v.interval[0] for v in found),
        max(v.interval[1] for v in found),
    )


@dataclass(frozen=True, kw_only=True)
class TuneReport:
    wheel: str
    tried: tuple[SettingTrial, ...]
    not_tried: tuple[str, ...]  # knobs left when the budget ran out
    confirmation: SettingTrial | None  # the winners together against the defaults
    seconds: float

    @property
    def kept(self) -> tuple[SettingTrial, ...]:
        """The winners the confirmation combined, if it confirmed them."""
        if self.confirmation is None or not self.confirmation.wins:
            return ()
        together = set(self.confirmation.name.split(" + "))
        return tuple(t for t in self.tried if t.wins and t.name in together)

    @property
    def rejected(self) -> tuple[SettingTrial, ...]:
        """Tried and not kept: it lost, gained nothing, was not confirmed, or was undecided."""
        kept = {t.name for t in self.kept}
        return tuple(t for t in self.tried if t.name not in kept)

    @property
    def undecided(self) -> tuple[SettingTrial, ...]:
        """Settings the timings could not judge: not kept, for want of evidence, not of gain."""
        return tuple(t for t in self.tried if t.outcome == UNDECIDED)

    @property
    def machine(self) -> Contention | None:
        """What else ran on the CPUs while the settings were timed."""
        trials = [*self.tried, *([self.confirmation] if self.confirmation else [])]
        spans = [r.contention for t in trials for r in t.results if r.contention is not None]
        return contention.combine(spans) if spans else None

    def undecided_note(self) -> str | None:
        """Why some settings could not be judged, and what to do: the machine first when busy."""
        if not self.undecided:
            return None
        names = ", ".join(t.name for t in self.undecided)
        return why_undecided(f"{names} undecided, so not kept", self.machine)

    def env(self) -> dict[str, str]:
        return {k: v for t in self.kept for k, v in t.env}

    # hand-written: kept/rejected with gains are views over `tried`, whose order the CLI needs
    def to_json(self) -> dict[str, Any]:
        def trial(t: SettingTrial) -> dict[str, Any]:
            median, low, high = gain(t)
            return t.to_json() | {
                "gain": round(median, 3),
                "interval": [round(low, 3), round(high, 3)],
            }

        return {
            "schema": SCHEMA,
            "wheel": self.wheel,
            "model": None,  # tfbuild.tune/1 had one; --model now prints tfbuild.tune-model/1
            "kept": [trial(t) for t in self.kept],
            "rejected": [trial(t) for t in self.rejected],
            "undecided": [t.name for t in self.undecided],
            "undecided_note": self.undecided_note(),
            "machine": serial.to_data(self.machine),
            "not_tried": list(self.not_tried),
            "confirmation": trial(self.confirmation) if self.confirmation else None,
            "env": self.env(),
            "seconds": round(self.seconds, 1),
        }


def run_tune(options: TuneOptions, *, progress: Progress) -> TuneReport:
    started = time.perf_counter()
    env = ensure_env(options.spec, python=options.python)
    base = clean_env()
    tried: list[SettingTrial] = []
    not_tried: list[str] = []
    # The first knob is always tried; another only if one more trial as long as the longest so far
    # still fits the budget.
    longest = 0.0
    found = knobs(env.python)
    for index, knob in enumerate(found):
        left = options.budget - (time.perf_counter() - started)
        name = knob.said or knob.name
        if tried and longest > left:
            not_tried.append(name)
            continue
        progress(f"trying {name} against TensorFlow's defaults, in alternation")
        began = time.perf_counter()
        # What is left beyond the first rounds is shared by this knob, the ones after it and the
        # confirmation: an undecided op is timed again from that share.
        share = max(0.0, left - longest * (len(found) - index)) / (len(found) - index + 1)
        tried.append(
            try_setting(
                env.python,
                base_env=base,
                name=name,
                env=dict(knob.env),
                method=replace(options.method, budget=share),
            )
        )
        longest = max(longest, time.perf_counter() - began)
    # Best first; a knob that sets what a better one set (two allocators) is left out.
    winners: list[SettingTrial] = []
    for t in sorted((t for t in tried if t.wins), key=lambda t: -gain(t)[0]):
        if not {k for k, _ in t.env} & {k for w in winners for k, _ in w.env}:
            winners.append(t)
    confirmation = None
    if winners:
        merged = {k: v for t in winners for k, v in t.env}
        names = " + ".join(t.name for t in winners)
        progress(f"confirming {names} against the defaults, in alternation")
        confirmation = try_setting(
            env.python,
            base_env=base,
            name=names,
            env=merged,
            method=replace(
                options.method,
                budget=max(0.0, options.budget - (time.perf_counter() - started) - longest),
            ),
        )
    return TuneReport(
        wheel=options.spec.label,
        tried=tuple(tried),
        not_tried=tuple(not_tried),
        confirmation=confirmation,
        seconds=time.perf_counter() - started,
    )


def write_profile(path: Path, report: TuneReport) -> None:
    """The kept settings as the wheel's env file: each line under a comment with its gain."""
    lines = [
        f"# runtime profile measured by tfbuild tune for {report.wheel}",
        "# Use: set -a; . THIS_FILE; set +a",
    ]
    for t in report.kept:
        median, low, high = gain(t)
        lines.append(
            f"# {t.name}: {median:.2f}x faster than TensorFlow's defaults "
            f"(ops' middle halves {low:.2f}-{high:.2f}x)"
        )
        lines.extend(f"{name}={value}" for name, value in t.env)
    if not report.kept:
        lines.append("# nothing won beyond the noise: TensorFlow's defaults are the profile")
    note = report.undecided_note()
    if note:
        lines.append(f"# {note}")
    write_text(path, "\n".join(lines) + "\n")
