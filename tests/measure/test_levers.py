"""The lever search's decisions, on races whose timings are given: which combinations run, which
one is kept, what each lever's row says, how the kept profile is applied and written. The races
themselves run real processes in tests/measure/test_race.py, real models in test_model_levers.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.goldens import compare_or_write
from tfbuild.core.stats import Summary, verdict
from tfbuild.measure.levers import (
    AUTO,
    ONE_THREAD,
    STOCK,
    XLA,
    Arm,
    Kept,
    Lever,
    ModelTune,
    OverlayLever,
    RebuildShare,
    apply_of,
    choose,
    first_choice,
    lever_results,
    reference_of,
    stage_one,
)
from tfbuild.measure.models import ModelFile
from tfbuild.measure.race import Lane, Race
from tfbuild.measure.run import OpResult
from tfbuild.measure.tune_report import model_tune_json, profile_env_lines

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "measure"
MODEL = ModelFile(path="/models/gru.keras", kind="keras", op="model:gru.keras", bytes=1, batch=8)
INSTALLED = OverlayLever(source="installed (tfbuild-overlay 2.21.0+icelake)", installed=True)
GIVEN = OverlayLever(
    source="dist/o.whl", installed=False, site="/tmp/x/site-packages", wheel="dist/o.whl"
)
#: A repetition's jitter, the same for every lane: pairs that agree, as a quiet machine times them.
JITTER = [1 + 0.004 * ((i * 7) % 5) for i in range(15)]


def lane(arm: Arm | str, ms: float, **extra: object) -> Lane:
    name = arm if isinstance(arm, str) else arm.name
    return Lane(name=name, seconds=tuple(ms / 1e3 * j for j in JITTER), **extra)  # type: ignore[arg-type]


def race(*lanes: Lane) -> Race:
    return Race(baseline=STOCK, lanes=lanes, rounds=15, looks=1, margin=0.05)


def test_the_first_stage_races_what_can_win_and_never_the_overlay_under_whole_step_xla() -> None:
    plain = stage_one(None)
    assert [a.name for a in plain] == [
        "stock", "XLA", "XLA auto", "1 thread", "1 thread + XLA", "1 thread + XLA auto",
    ]  # fmt: skip
    with_overlay = stage_one(GIVEN)
    names = [a.name for a in with_overlay]
    assert len(names) == len(set(names)) == 10
    assert "XLA auto + overlay" in names and "1 thread + overlay" in names
    assert not any("overlay" in a.keys and a.xla == "jit" for a in with_overlay)
    assert [reference_of(a) for a in plain[:4]] == [None, STOCK, STOCK, STOCK]
    assert reference_of(plain[4]) == Arm(levers=(ONE_THREAD,)).name


def test_each_process_gets_its_levers_and_the_overlay_on_or_off() -> None:
    base = {"PATH": "/bin"}
    auto_one = Arm(levers=(ONE_THREAD, AUTO))
    assert auto_one.env(base, None) == {
        "PATH": "/bin",
        "TF_NUM_INTEROP_THREADS": "1",
        "TF_NUM_INTRAOP_THREADS": "1",
        "TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit",
    }
    # installed: on unless told off; given: on when on the path
    assert Arm().env(base, INSTALLED)["TFBUILD_OVERLAY"] == "off"
    assert "TFBUILD_OVERLAY" not in Arm(levers=(INSTALLED.lever(),)).env(base, INSTALLED)
    assert "PYTHONPATH" not in Arm().env(base, GIVEN)
    assert Arm(levers=(GIVEN.lever(),)).env(base, GIVEN)["PYTHONPATH"] == "/tmp/x/site-packages"
    assert Arm(levers=(XLA,)).xla == "jit" and Arm(levers=(AUTO,)).xla == "off"


def first_race(*, one_thread_xla_ms: float = 4.9) -> tuple[Race, tuple[Arm, ...]]:
    arms = stage_one(GIVEN)
    timings = {
        "stock": 10.0,
        "XLA": 5.0,
        "XLA auto": 12.0,
        "overlay": 9.9,
        "XLA auto + overlay": 11.0,
        "1 thread": 11.0,
        "1 thread + XLA": one_thread_xla_ms,
        "1 thread + XLA auto": 13.0,
        "1 thread + overlay": 10.8,
        "1 thread + XLA auto + overlay": 12.5,
    }
    lanes = [lane(a, timings[a.name], overlay_loaded="overlay" in a.keys) for a in arms]
    return race(*lanes), arms


def test_the_simplest_arm_within_the_noise_of_the_fastest_is_kept() -> None:
    found, arms = first_race()
    # 1 thread + XLA is fastest by 2 %, within the noise: XLA alone (one lever) is kept
    assert choose(found, arms) == Arm(levers=(XLA,))
    clearly, arms = first_race(one_thread_xla_ms=3.0)
    assert choose(clearly, arms) == Arm(levers=(ONE_THREAD, XLA))


def test_an_overlay_gain_its_kernels_cannot_explain_is_not_claimed_nor_chosen() -> None:
    arms = stage_one(GIVEN)
    times = {"stock": 10.0, "overlay": 9.3, "1 thread": 10.5, "1 thread + overlay": 10.4}
    found = race(
        *(lane(a, times.get(a.name, 14.0), overlay_loaded="overlay" in a.keys) for a in arms)
    )
    rows = lever_results(found, arms, MODEL, GIVEN)
    assert next(r for r in rows if r.name == "overlay").outcome == "wins"  # 1.08x in the race
    # ... where 1 % of the op time runs in its kernels: 1.01x at most
    tiny = rebuild_of(share=0.01, measured=next(r for r in rows if r.name == "overlay").verdict)
    claimed, chosen = first_choice(found, arms, rows, tiny)
    overlay = next(r for r in claimed if r.name == "overlay")
    assert overlay.outcome == "undecided" and overlay.why and "not claimed" in overlay.why
    assert chosen == Arm()  # nothing else was faster: stock stays
    # where a third of the time runs in them, the same gain is theirs, and kept
    large = rebuild_of(share=0.33, measured=overlay.verdict)
    claimed, chosen = first_choice(found, arms, rows, large)
    assert next(r for r in claimed if r.name == "overlay").outcome == "wins"
    assert chosen == Arm(levers=(GIVEN.lever(),))


def rebuild_of(*, share: float, measured: object) -> RebuildShare:
    return RebuildShare(
        share=share,
        onednn_share=0.5,
        bound=1 / (1 - share),
        top=(),
        kernels=(),
        kernel_speedup=2.0,
        predicted=None,
        measured=measured,  # type: ignore[arg-type]
        note=None,
    )


def test_nothing_is_kept_when_nothing_is_faster_than_stock() -> None:
    arms = stage_one(None)
    found = race(*(lane(a, 10.0 if not a.levers else 12.0) for a in arms))
    assert choose(found, arms) is None


def test_each_row_is_against_stock_at_its_threads_and_a_failure_is_a_row() -> None:
    found, arms = first_race()
    failed = Lane(name="XLA", failed="cannot compile with XLA model:gru.keras: ...")
    refused = lane("overlay", 9.0, overlay_loaded=False, loader_lines=("tfbuild overlay: no",))
    lanes = tuple(
        failed if x.name == "XLA" else refused if x.name == "overlay" else x for x in found.lanes
    )
    rows = {r.name: r for r in lever_results(race(*lanes), arms, MODEL, GIVEN)}
    assert rows["XLA"].outcome == "failed" and rows["XLA"].why is not None
    assert rows["XLA"].verdict is None
    assert rows["overlay"].outcome == "failed"
    assert rows["overlay"].why == "the overlay did not load: tfbuild overlay: no"
    assert rows["1 thread"].against == "stock" and rows["1 thread"].outcome == "loses"
    assert rows["1 thread + XLA"].against == "1 thread" and rows["1 thread + XLA"].outcome == "wins"
    assert rows["XLA auto"].outcome == "loses"
    assert rows["1 thread + XLA"].apply.code and not rows["XLA auto"].apply.code
    assert rows["XLA auto + overlay"].apply.install == ("pip install dist/o.whl",)
    assert STOCK not in rows


def test_the_kept_profile_says_how_to_apply_it() -> None:
    tcmalloc = Lever(
        key="tcmalloc",
        name="tcmalloc",
        said="tcmalloc preloaded",
        env=(("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"),),
    )
    arm = Arm(levers=(AUTO, tcmalloc))
    found = tuned(arm, apply_of(arm, MODEL, INSTALLED))
    lines = profile_env_lines(found)
    assert lines[0].startswith("# runtime profile measured by tfbuild tune for tensorflow-cpu")
    assert "TF_XLA_FLAGS='--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit'" in lines
    assert "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4" in lines
    assert "TFBUILD_OVERLAY=off" in lines  # installed, and not part of what won
    xla = Arm(levers=(XLA,))
    code = profile_env_lines(tuned(xla, apply_of(xla, MODEL, None)))
    assert any(
        line.startswith("# and in your code") and "jit_compile=True" in line for line in code
    )
    assert not [line for line in code if not line.startswith("#")]


def confirmation(ratio: float) -> OpResult:
    base = [0.010 * j for j in JITTER]
    cand = [s / ratio for s in base]
    return OpResult(
        op=MODEL.op,
        threads="default",
        candidate=Summary.of(cand, 8, "Gsample/s"),
        baseline=Summary.of(base, 8, "Gsample/s"),
        verdict=verdict(cand, base, paired=True),
    )


def tuned(arm: Arm, apply: object, *, rebuild: RebuildShare | None = None) -> ModelTune:
    found, arms = first_race()
    return ModelTune(
        wheel="tensorflow-cpu==2.21.0",
        model=MODEL,
        described={"inputs": [], "params": 35524},
        stock_seconds=0.010,
        levers=tuple(lever_results(found, arms, MODEL, GIVEN)),
        kept=Kept(
            name=arm.name,
            said=arm.said,
            levers=arm.keys,
            apply=apply,  # type: ignore[arg-type]
            confirmation=confirmation(2.0),
        ),
        not_kept=None,
        rebuild=rebuild,
        overlay=GIVEN.source,
        overlay_note=None,
        not_tried=(),
        races=(found,),
        seconds=95.04,
    )


def test_the_json_of_a_tuned_model() -> None:
    xla = Arm(levers=(XLA,))
    rebuild = RebuildShare(
        share=0.062,
        onednn_share=0.67,
        bound=1 / (1 - 0.062),
        top=(("_MklNativeFusedMatMul", 0.0044), ("Split", 0.0005)),
        kernels=(),
        kernel_speedup=1.58,
        predicted=1.023,
        measured=None,
        note=None,
    )
    found = tuned(xla, apply_of(xla, MODEL, GIVEN), rebuild=rebuild)
    data = model_tune_json(found, "gru.keras: 10.0 ms -> 5.00 ms, 2.00x faster with XLA")
    assert data["schema"] == "tfbuild.tune-model/1"
    kept = data["kept"]
    assert isinstance(kept, dict) and kept["ratio"] == 2.0 and kept["levers"] == ["xla"]
    for row in data["levers"]:  # type: ignore[attr-defined]
        assert set(row) >= {"name", "outcome", "ratio", "interval", "apply"}
    compare_or_write(GOLDEN / "tune-model.json", json.dumps(data, indent=2) + "\n")


def test_a_process_settings_row_names_the_lever_it_was_raced_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The first stage's rows are each against stock at its threads, as the heading says; a
    process setting raced on top of the kept lever is against that lever, and says so."""
    from tfbuild.cli.tune_model import print_model_tune

    xla = Arm(levers=(XLA,))
    found = tuned(xla, apply_of(xla, MODEL, GIVEN))
    first = found.levers[0]
    on_top = dataclasses.replace(first, name="XLA + tcmalloc", against="XLA")
    found = dataclasses.replace(found, levers=(*found.levers, on_top))
    print_model_tune(found, "headline", tmp_path / "gru.env")
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    (mark,) = [line for line in rows if " against " in line]  # the one row not against stock
    assert mark.lstrip().startswith("XLA + tcmalloc") and " against XLA" in mark
