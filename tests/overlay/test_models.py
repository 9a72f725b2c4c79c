"""The overlay's models end to end: profiled and served by real TensorFlow with a real overlay, and
the arithmetic that turns two profiles into a prediction."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfbuild.core.errors import SmokeFailed
from tfbuild.measure.run import Worker
from tfbuild.overlay.models import SCRIPT, Profile, amdahl, predict, profile_models

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
    argv = {"script": SCRIPT, "extra": ("--models", "transformer"), "intra": 0, "inter": 0}
    with Worker(python, env=tf_env(site), **argv) as on:  # type: ignore[arg-type]
        assert on.info["overlay_loaded"] is True
        assert set(on.info["overlaid"]) == set(built_overlay.result.receipt.kernels)
        assert on.ops == {
            "model_transformer": {
                "unit": "Gsample/s",
                "work": 8,
                "group": "model",
                "dtype": "float32",
            }
        }
        reply = on.run("model_transformer", reps=2, min_rep_seconds=0.0)
        assert len(reply["seconds_per_call"]) == 2 and min(reply["seconds_per_call"]) > 0
    off_env = tf_env(site, TFBUILD_OVERLAY="off")
    with Worker(python, env=off_env, **argv) as off:  # type: ignore[arg-type]
        assert off.info["overlay_loaded"] is False and off.info["overlaid"] == []


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


def profile(total: float, replaced: dict[str, float]) -> Profile:
    spent = sum(replaced.values())
    return Profile(
        model="m",
        steps=1,
        overlay_loaded=False,
        host_tracer_level=2,
        total_op_s=total,
        wall_s=total,
        replaced_s=spent,
        share=spent / total,
        unknown_s=0.0,
        not_run=(),
        kernels=tuple(replaced),
        replaced=replaced,
        ops={},
    )


@given(st.floats(0, 1), st.floats(0.1, 10))
def test_amdahl_holds_its_ends(share: float, speedup: float) -> None:
    assert amdahl(0.0, speedup) == 1.0
    assert amdahl(share, 1.0) == pytest.approx(1.0)
    assert amdahl(1.0, speedup) == pytest.approx(speedup)
    low, high = sorted((1.0, speedup))
    assert low - 1e-9 <= amdahl(share, speedup) <= high + 1e-9


@given(
    st.floats(0.01, 1.0),
    st.floats(0.01, 1.0),
    st.floats(0.001, 1.0),
    st.floats(0.001, 1.0),
)
def test_the_prediction_is_the_step_with_the_kernels_times_swapped(
    rest: float, a_off: float, b_off: float, ratio: float
) -> None:
    """Amdahl over the profiles is the stock step with each replaced kernel's stock time replaced
    by its overlay time."""
    stock = profile(rest + a_off + b_off, {"Exp:float32": a_off, "Tanh:float32": b_off})
    on = {"Exp:float32": a_off * ratio, "Tanh:float32": b_off}
    overlay = profile(rest + sum(on.values()), on)
    speedup, predicted, kernels = predict(stock, overlay)
    assert predicted == pytest.approx(stock.total_op_s / overlay.total_op_s)
    assert speedup == pytest.approx((a_off + b_off) / (a_off * ratio + b_off))
    assert [k.kernel for k in kernels] == sorted(stock.replaced, key=lambda k: -stock.replaced[k])


def test_amdahl_refuses_what_is_not_a_share() -> None:
    with pytest.raises(ValueError, match="share"):
        amdahl(1.5, 2.0)
    with pytest.raises(ValueError, match="share"):
        amdahl(0.5, 0.0)
