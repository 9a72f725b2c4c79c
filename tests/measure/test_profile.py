"""The arithmetic that turns profiles into a prediction, and the profile's lines decoded strictly;
the profile itself runs on real TensorFlow in tests/measure/test_model_levers.py and
tests/overlay/test_models.py."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfbuild.core.errors import SmokeFailed
from tfbuild.core.stats import verdict
from tfbuild.measure.profile import (
    Profile,
    amdahl,
    bound,
    decode_profiles,
    disagreement,
    predict,
    unclaimed,
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


@given(st.floats(0, 0.99))
def test_the_bound_is_amdahl_with_kernels_that_take_no_time(share: float) -> None:
    assert bound(share) == pytest.approx(1 / (1 - share))
    assert amdahl(share, 1e9) == pytest.approx(bound(share), rel=1e-6)
    assert bound(1.0) == float("inf")


def test_onednn_share_counts_onednns_kernels_only() -> None:
    found = profile(1.0, {"Tanh:float32": 0.1})
    found = Profile(
        **{
            **found.__dict__,
            "ops": {"_MklNativeFusedMatMul": 0.5, "_FusedConv2D": 0.2, "Tanh": 0.1, "Split": 0.2},
        }
    )
    assert found.onednn_share == pytest.approx(0.7)
    assert found.top(2) == (("_MklNativeFusedMatMul", 0.5), ("_FusedConv2D", 0.2))


def test_a_line_that_is_not_a_profile_is_one_error() -> None:
    good = json.dumps({**_data(profile(1.0, {"Exp:float32": 0.25})), "describe": {"params": 3}})
    (decoded,) = decode_profiles(good + "\n", "here")
    assert decoded.replaced == {"Exp:float32": 0.25}
    for bad in ("not json", json.dumps({"model": "m"}), json.dumps([1, 2])):
        with pytest.raises(SmokeFailed, match="here: a line is not a profile"):
            decode_profiles(bad, "here")


def _data(found: Profile) -> dict[str, object]:
    return {**found.__dict__, "not_run": list(found.not_run), "kernels": list(found.kernels)}


FAST = [0.010 + 0.0001 * (i % 3) for i in range(15)]
SLOW = [0.012 + 0.0001 * (i % 3) for i in range(15)]


def test_a_gain_the_replaced_kernels_cannot_explain_is_said_not_claimed() -> None:
    faster = verdict(FAST, SLOW, paired=True)  # 1.2x, every pair agreeing
    assert faster.label == "faster"
    note = disagreement(0.3, 1.01, 0.95, faster)
    assert note is not None and "not their doing" in note
    # 1.2x where 1 % of the time ran in them: more than they could give if they took none
    impossible = unclaimed(0.01, 3.0, faster)
    assert impossible is not None and "more than the 1.010x" in impossible
    assert unclaimed(0.3, 3.0, faster) is None  # 30 % of the time 3x faster: up to 1.25x
    outside = disagreement(0.3, 1.01, 2.0, faster)
    assert outside is not None and "outside the measured interval" in outside
    assert disagreement(0.3, 1.198, 2.0, faster) is None  # the prediction within the interval
    assert disagreement(0.3, None, None, faster) is None
    slower = verdict(SLOW, FAST, paired=True)
    assert unclaimed(0.0, 0.5, slower) is None  # a loss is never a gain to withhold
