"""The overlay's models end to end: profiled and served by real TensorFlow with a real overlay (the
arithmetic that turns two profiles into a prediction is tests/measure/test_profile.py's)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from tfbuild.core.errors import SmokeFailed
from tfbuild.measure.models import check_model
from tfbuild.measure.profile import amdahl
from tfbuild.measure.protocol import OpInfo
from tfbuild.measure.run import Method, Worker
from tfbuild.overlay.models import SCRIPT, profile_models, prove_models

from .conftest import BuiltOverlay


def tf_env(site: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": site, "TF_CPP_MIN_LOG_LEVEL": "3", **extra}


def test_the_profile_counts_the_kernels_the_overlay_registered(
    built_overlay: BuiltOverlay,
) -> None:
    site, python = built_overlay.site, built_overlay.python
    on = profile_models(python, ["lstm"], env=tf_env(site), steps=1)["lstm"]
    assert on.overlay_loaded
    # what the running TensorFlow has at the overlay's priority is what the receipt says it holds
    assert set(on.kernels) == set(built_overlay.result.receipt.kernels)
    assert {"Sigmoid:float32", "Tanh:float32"} <= set(on.replaced)
    assert math.isclose(on.replaced_s, sum(on.replaced.values()))
    assert 0 < on.share < 1 and on.total_op_s >= on.replaced_s
    assert on.ops["Sigmoid"] >= on.replaced["Sigmoid:float32"]

    off_env = tf_env(site, TFBUILD_OVERLAY="off")
    off = profile_models(python, ["lstm"], env=off_env, replaced=on.kernels, steps=1)["lstm"]
    assert not off.overlay_loaded and off.kernels == on.kernels
    assert set(off.replaced) == set(on.replaced)


def test_the_models_are_timed_through_the_smoke_workers_protocol(
    built_overlay: BuiltOverlay,
) -> None:
    site, python = built_overlay.site, built_overlay.python
    extra = ("--models", "transformer")
    argv = {"script": SCRIPT, "extra": extra, "intra": 0, "inter": 0}
    with Worker(python, env=tf_env(site), **argv) as on:  # type: ignore[arg-type]
        assert on.info.overlay_loaded is True
        assert set(on.info.overlaid) == set(built_overlay.result.receipt.kernels)
        assert on.ops == {
            "model_transformer": OpInfo(unit="Gsample/s", work=8, group="model", dtype="float32")
        }
        reply = on.run("model_transformer", reps=2, min_rep_seconds=0.0)
        assert len(reply.seconds_per_call) == 2 and min(reply.seconds_per_call) > 0
    off_env = tf_env(site, TFBUILD_OVERLAY="off")
    with Worker(python, env=off_env, **argv) as off:  # type: ignore[arg-type]
        assert off.info.overlay_loaded is False and off.info.overlaid == ()


def test_an_unknown_model_stops_the_worker_with_its_reason(built_overlay: BuiltOverlay) -> None:
    with pytest.raises(SmokeFailed, match="known models are"):
        Worker(
            built_overlay.python,
            intra=0,
            inter=0,
            env=tf_env(built_overlay.site),
            script=SCRIPT,
            extra=("--models", "resnet"),
        )


def test_the_users_model_is_profiled_predicted_and_timed_as_the_built_in_ones(
    built_overlay: BuiltOverlay, user_models: Path
) -> None:
    """smoke OVERLAY --model: the user's GRU, profiled with the overlay on and off (its Sigmoid and
    Tanh are the overlay's), the prediction from their share, and the overlay timed against stock."""
    site, python = built_overlay.site, built_overlay.python
    model = check_model(user_models / "gru_input.keras", batch=32)
    (found,) = prove_models(
        python,
        model=model,
        stock_env=tf_env(site, TFBUILD_OVERLAY="off"),
        overlay_env=tf_env(site),
        method=Method(pairs=15, min_rep_seconds=0.02, budget=20.0),
    )
    assert found.model == "model:gru_input.keras"
    assert found.what == "your model (predict, batch 32)"
    assert {k.kernel for k in found.kernels} >= {"Sigmoid:float32", "Tanh:float32"}
    assert 0 < found.share < 1 and found.predicted == pytest.approx(
        amdahl(found.share, found.speedup)
    )
    assert found.measured.op == model.op and found.measured.verdict is not None
    if found.note is not None:  # said instead of a gain the kernels cannot explain
        assert "not their doing" in found.note or "outside the measured interval" in found.note
