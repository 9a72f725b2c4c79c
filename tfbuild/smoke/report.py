"""The smoke report: what the wheel says at import, how it compares, and the verdict.

A wheel passes only when its import names no unused instruction and no op is slower than the
baseline beyond the measured noise. Both rules can be relaxed explicitly (``--allow-unused``,
``--allow-slower``), never silently. An op the timings could not decide does not fail the wheel:
the report names it, with the interval's width and what else ran on the CPU meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfbuild.core import serial
from tfbuild.core.errors import EnvironmentProblem
from tfbuild.core.files import replacing, write_text
from tfbuild.core.stats import SLOWER
from tfbuild.detect import contention
from tfbuild.detect.contention import Contention
from tfbuild.measure.run import Method, OpResult, SettingTrial, why_undecided
from tfbuild.smoke.options import Rules
from tfbuild.smoke.probe import ProbeResult

#: /2: each verdict gives its interval and "undecided"; the method times pairs within a budget;
#: "machine" says what else ran on the CPU, "undecided" which comparisons could not tell.
#: /3: no "peak", and no result's "peak_fraction" or "peak_note": no verdict read the CPU's peak
#: (a nominal one from /proc/cpuinfo's clock, a measured one from FMA probes that cost 4-8 s of
#: every benchmarked smoke), and a boosting CPU's matmul ran above either.
SCHEMA = "tfbuild.smoke/3"


@dataclass(frozen=True, kw_only=True)
class SmokeReport:
    candidate_label: str
    baseline_label: str | None
    candidate: ProbeResult
    baseline: ProbeResult | None
    method: Method | None
    results: tuple[OpResult, ...] = ()
    settings: tuple[SettingTrial, ...] = ()
    rules: Rules = field(default_factory=Rules)
    env_file: str | None = None
    seconds: float = 0.0
    tcmalloc_expected: bool = False  # the wheel's runtime env preloads TCMalloc
    built_for: str | None = None  # the target the wheel's receipt names
    #: The forecast kept for this wheel's version and target, beside what was measured (per op
    #: class; tfbuild.measure.forecast_report.Beside); None: no forecast was made for it.
    forecast: dict[str, Any] | None = None

    @property
    def failures(self) -> tuple[str, ...]:
        """Every reason the wheel does not pass, one sentence each."""
        reasons = []
        if not self.candidate.ok:
            built = f"; it was built for {self.built_for}" if self.built_for else ""
            reasons.append(f"the wheel does not work: {self.candidate.failure}{built}")
        if self.tcmalloc_expected and self.candidate.ok and not self.candidate.tcmalloc_loaded:
            reasons.append(
                "TCMalloc should be preloaded (the runtime env says so) but the probe's "
                "/proc/self/maps has no libtcmalloc"
            )
        unused = self.candidate.guard.unused
        if unused and not self.rules.allow_unused:
            reasons.append(f"TensorFlow says it leaves {' '.join(unused)} unused on this CPU")
        slower = [
            f"{r.op} ({r.threads} thread(s), {r.verdict.ratio:.2f}x)"
            for r in self.results
            if r.verdict and r.verdict.label == SLOWER and r.op not in self.rules.allow_slower
        ]
        if slower:
            reasons.append(f"slower than the baseline beyond noise: {', '.join(slower)}")
        return tuple(reasons)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def machine(self) -> Contention | None:
        """What else ran on the CPUs while the ops were timed, over the whole benchmark."""
        spans = [r.contention for r in self.results if r.contention is not None]
        return contention.combine(spans) if spans else None

    @property
    def undecided(self) -> tuple[OpResult, ...]:
        return tuple(r for r in self.results if r.verdict and not r.verdict.decided)

    @property
    def undecided_note(self) -> str | None:
        """Why some comparisons could not tell, and what to do: the machine's state first when
        it was busy."""
        if not self.undecided:
            return None
        compared = sum(1 for r in self.results if r.verdict)
        spreads = sorted(r.verdict.spread for r in self.undecided if r.verdict)
        reach = f"±{spreads[0] * 100:.0f}%" + (
            f" to ±{spreads[-1] * 100:.0f}%" if len(spreads) > 1 else ""
        )
        count = f"{len(self.undecided)} of {compared} comparisons undecided ({reach})"
        split = sum(1 for r in self.undecided if r.recheck is not None)
        if split:
            count += (
                f"; {split} of them differed between two pairs of processes of the same builds, "
                "a difference no longer timing can settle"
            )
        return why_undecided(count, self.machine)

    # hand-written: "forecast" is written only when there is one (a dataclass writes every key)
    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "candidate": {"spec": self.candidate_label, **serial.to_data(self.candidate)},
            "baseline": None
            if self.baseline is None
            else {"spec": self.baseline_label, **serial.to_data(self.baseline)},
            "method": serial.to_data(self.method) if self.method else None,
            "results": serial.to_data(self.results),
            "settings": [s.to_json() for s in self.settings],
            "rules": serial.to_data(self.rules),
            "env_file": self.env_file,
            "seconds": round(self.seconds, 1),
            "tcmalloc_expected": self.tcmalloc_expected,
            "built_for": self.built_for,
            "passed": self.passed,
            "failures": list(self.failures),
            "undecided": [f"{r.op} ({r.threads})" for r in self.undecided],
            "undecided_note": self.undecided_note,
            "machine": serial.to_data(self.machine),
        } | ({"forecast": self.forecast} if self.forecast is not None else {})


def write_env_file(path: Path, settings: tuple[SettingTrial, ...], header: str) -> None:
    """The runtime settings that won, as NAME=value lines (written whole: temp name, then rename)."""
    lines = [f"# {header}", "# Use: set -a; . THIS_FILE; set +a"]
    for trial in settings:
        if trial.wins:
            lines.append(f"# {trial.name}: faster than without it on most ops, slower on none")
            lines.extend(f"{name}={value}" for name, value in trial.env)
    write_text(path, "\n".join(lines) + "\n")


def check_plot() -> None:
    """--plot needs matplotlib: say so before minutes of measuring, not after.

    The advice names the interpreter tfbuild runs in. It is never ``pip install 'tfbuild[plot]'``:
    the name tfbuild on PyPI belongs to another project, and that would install it. This project's
    own extra is ``plot`` in pyproject.toml, installed from a checkout with ``pip install '.[plot]'``.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        import shlex
        import sys

        raise EnvironmentProblem(
            "--plot needs matplotlib",
            why=f"it is not installed for the Python tfbuild runs in ({sys.executable})",
            fix=f"Install it there: {shlex.quote(sys.executable)} -m pip install matplotlib "
            "(or, from tfbuild's checkout, pip install '.[plot]'); or drop --plot.",
        ) from None


def plot(report: SmokeReport, path: Path) -> None:
    """Candidate vs baseline per op (median throughput, min-max error bars), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(r, r.baseline) for r in report.results if r.baseline is not None]
    labels = [f"{r.op}\n({r.threads})" for r, _ in rows]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.6 * len(rows)), 5))
    positions = range(len(rows))
    for offset, side, color in ((-0.2, "candidate", "tab:green"), (0.2, "baseline", "tab:gray")):
        medians, lows, highs = [], [], []
        for result, base in rows:
            summary = result.candidate if side == "candidate" else base
            scale = base.throughput_median
            value = summary.throughput_median / scale
            medians.append(value)
            lows.append(value - summary.throughput_min / scale)
            highs.append(summary.throughput_max / scale - value)
        ax.bar(
            [p + offset for p in positions],
            medians,
            width=0.4,
            yerr=[lows, highs],
            label=side,
            color=color,
            capsize=2,
        )
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(positions))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("throughput relative to the baseline's median")
    ax.set_title(f"{report.candidate_label} vs {report.baseline_label}")
    ax.legend()
    fig.tight_layout()
    with replacing(path) as temp:
        fig.savefig(temp, dpi=110, format="png")
    plt.close(fig)
