"""What ``tfbuild tune --model`` writes of a tuned model (:mod:`tfbuild.measure.levers` tunes it):
the env file of the kept profile, the ``tfbuild.tune-model/1`` JSON, and how busy the machine was
while it measured."""

from __future__ import annotations

import shlex
from pathlib import Path

from tfbuild.core import serial
from tfbuild.core.files import write_text
from tfbuild.core.stats import Verdict
from tfbuild.detect import contention
from tfbuild.detect.contention import Contention
from tfbuild.measure.levers import Apply, ModelTune

SCHEMA = "tfbuild.tune-model/1"


def profile_env_lines(found: ModelTune) -> list[str]:
    """The env file's lines for the kept profile, each group under a comment with its gain."""
    lines = [
        f"# runtime profile measured by tfbuild tune for {found.wheel} on {found.model.op} "
        f"({found.model.step}, batch {found.model.batch})",
        "# Use: set -a; . THIS_FILE; set +a",
    ]
    if found.kept is None:
        lines.append("# nothing won beyond the noise: TensorFlow's defaults are the profile")
        overlay_off = next(
            (r for r in found.levers if ("TFBUILD_OVERLAY", "off") in r.apply.env), None
        )
        if overlay_off is not None:
            lines += [
                "# the overlay installed here gains nothing on this model",
                "TFBUILD_OVERLAY=off",
            ]
        return lines
    found_verdict = found.kept.verdict
    low, high = found_verdict.interval
    lines.append(
        f"# {found.kept.name}: {found_verdict.ratio:.2f}x [{low:.2f}, {high:.2f}] faster than "
        "stock at its defaults (confirmed in a fresh pair of processes)"
    )
    lines += [
        f"# and in your code (an environment variable cannot do it): {change}"
        for change in found.kept.apply.code
    ]
    lines += [f"# and first: {step}" for step in found.kept.apply.install]
    lines += [f"{name}={shlex.quote(value)}" for name, value in found.kept.apply.env]
    return lines


def write_env_file(path: Path, found: ModelTune) -> None:
    write_text(path, "\n".join(profile_env_lines(found)) + "\n")


def _verdict_json(found: Verdict | None) -> dict[str, object] | None:
    if found is None:
        return None
    return {
        "label": found.label,
        "ratio": _r4(found.ratio),
        "interval": [_r4(found.interval[0]), _r4(found.interval[1])],
        "confidence": float(found.confidence),
        "pairs": found.n_candidate,
    }


def _r4(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _apply_json(apply: Apply) -> dict[str, object]:
    return {"env": dict(apply.env), "code": list(apply.code), "install": list(apply.install)}


def _sig(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.4g}")


# hand-written: a view for the reader and scripts (each lever with how to apply it, the kept
# profile with its end-to-end ratio), not the races' raw timings
def model_tune_json(found: ModelTune, headline: str) -> dict[str, object]:
    kept = None
    if found.kept is not None:
        confirmation = found.kept.confirmation
        kept = {
            "name": found.kept.name,
            "levers": list(found.kept.levers),
            "apply": _apply_json(found.kept.apply),
            "ratio": _r4(found.kept.verdict.ratio),
            "interval": [_r4(x) for x in found.kept.verdict.interval],
            "verdict": _verdict_json(found.kept.verdict),
            "recheck": _verdict_json(confirmation.recheck),
            "seconds": {
                "stock": _sig(
                    confirmation.baseline.seconds.median if confirmation.baseline else None
                ),
                "kept": _sig(confirmation.candidate.seconds.median),
            },
        }
    rebuild = found.rebuild
    return {
        "schema": SCHEMA,
        "wheel": found.wheel,
        "headline": headline,
        "model": serial.to_data(found.model) | {"described": dict(found.described)},
        "stock_seconds": _sig(found.stock_seconds),
        "levers": [
            {
                "name": row.name,
                "levers": list(row.levers),
                "threads": row.threads,
                "against": row.against,
                "outcome": row.outcome,
                "ratio": _r4(row.verdict.ratio) if row.verdict else None,
                "interval": [_r4(x) for x in row.verdict.interval] if row.verdict else None,
                "verdict": _verdict_json(row.verdict),
                "seconds": _sig(row.seconds),
                "why": row.why,
                "apply": _apply_json(row.apply),
            }
            for row in found.levers
        ],
        "kept": kept,
        "not_kept": found.not_kept,
        "rebuild": None
        if rebuild is None
        else {
            "share": _r4(rebuild.share),
            "onednn_share": _r4(rebuild.onednn_share),
            "bound": None if rebuild.bound == float("inf") else _r4(rebuild.bound),
            "top": {op: _sig(s) for op, s in rebuild.top},
            "kernels": {
                k.kernel: {"stock": _sig(k.stock_s), "overlay": _sig(k.overlay_s)}
                for k in rebuild.kernels
            },
            "kernel_speedup": _r4(rebuild.kernel_speedup),
            "predicted": _r4(rebuild.predicted),
            "measured": _verdict_json(rebuild.measured),
            "note": rebuild.note,
        },
        "overlay": found.overlay,
        "overlay_note": found.overlay_note,
        "not_tried": list(found.not_tried),
        "machine": serial.to_data(machine(found)),
        "seconds": round(found.seconds, 1),
    }


def machine(found: ModelTune) -> Contention | None:
    """What else ran on the CPUs while the model was timed."""
    spans = [r.contention for r in found.races if r.contention is not None]
    if found.kept is not None and found.kept.confirmation.contention is not None:
        spans.append(found.kept.confirmation.contention)
    return contention.combine(spans) if spans else None
