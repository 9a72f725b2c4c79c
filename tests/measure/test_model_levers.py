"""Your own model on real TensorFlow: every form a user saves with Keras 3 loaded, batched and
timed by the real worker; profiled by TensorFlow's profiler; and ``tfbuild tune --model`` end to
end with a real overlay, its levers raced, its winner confirmed, its profile written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import one_error_line, run_cli
from tests.overlays import BuiltOverlay
from tfbuild.core.errors import UnsupportedError
from tfbuild.measure.envs import clean_env
from tfbuild.measure.models import ModelFile, ModelInput, check_model
from tfbuild.measure.profile import profile_model
from tfbuild.measure.run import Worker


def served(python: str, model: ModelFile, **options: Any) -> dict[str, Any]:
    """The worker's description of the model it loaded, after one timed repetition of it."""
    with Worker(
        python, intra=0, inter=0, env=clean_env(), model=model, model_only=True, **options
    ) as w:
        assert list(w.ops) == [model.op]
        reply = w.run(model.op, reps=2, min_rep_seconds=0.0)
        assert len(reply.seconds_per_call) == 2 and min(reply.seconds_per_call) > 0
        assert w.info.model is not None
        return w.info.model


def keras_model(path: Path, batch: int = 4, **changes: Any) -> ModelFile:
    found = check_model(path, batch=batch)
    return ModelFile(**{**found.__dict__, **changes})


#: Each form, and the batch the worker makes for it: (name, shape, dtype, fill) per input.
FORMS: dict[str, list[tuple[str | None, list[int], str, str]]] = {
    "gru_input.keras": [("input_layer", [4, 40, 24], "float32", "normal")],
    "gru_built.keras": [(None, [4, 40, 24], "float32", "normal")],
    "embedding.keras": [(None, [4, 20], "int32", "token ids")],
    "embedding_built.keras": [(None, [4, 20], "float32", "token ids")],
    "dict_inputs.keras": [
        ("features", [4, 4], "float32", "normal"),
        ("ids", [4, 10], "int32", "token ids"),
        ("segment", [4, 10], "int32", "token ids"),
    ],
    "tiny_saved": [("features", [4, 16], "float32", "normal")],
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_form_a_user_saves_is_loaded_batched_and_timed(
    stock_python: str, user_models: Path, name: str
) -> None:
    described = served(stock_python, keras_model(user_models / name))
    made = sorted((i["shape"], i["dtype"], i["fill"], i["name"]) for i in described["inputs"])
    expected = sorted(
        (shape, dtype, fill, input_name) for input_name, shape, dtype, fill in FORMS[name]
    )
    assert [m[:3] for m in made] == [e[:3] for e in expected], made
    # the model's own input names, where it gives them (a Sequential names its input itself)
    assert all(e[3] is None or e[3] == m[3] for m, e in zip(made, expected, strict=True)), made
    vocabularies = {i["name"]: i.get("vocabulary") for i in described["inputs"]}
    if name == "dict_inputs.keras":
        assert vocabularies["ids"] == 50 and vocabularies["segment"] == 2  # ids below each
    assert described["params"] > 0 and described["step"] == "predict"


def test_a_training_step_and_xla_are_the_same_model_called_otherwise(
    stock_python: str, user_models: Path
) -> None:
    model = keras_model(user_models / "embedding.keras", step="train")
    trained = served(stock_python, model)
    assert trained["step"] == "train" and trained["inputs"][0]["fill"] == "token ids"
    compiled = served(stock_python, keras_model(user_models / "gru_input.keras"), xla="jit")
    assert compiled["xla"] == "jit"


def test_an_open_width_needs_its_shape_and_takes_it_from_the_command_line(
    stock_python: str, user_models: Path
) -> None:
    open_model = keras_model(user_models / "open.keras")
    with pytest.raises(UnsupportedError) as refused:
        served(stock_python, open_model)
    line = refused.value.line()
    assert "cannot make a batch for model:open.keras" in line and "open dimension" in line
    assert "--model-input" in line
    given = keras_model(user_models / "open.keras", inputs=(ModelInput(shape=(7, 3)),))
    (made,) = served(stock_python, given)["inputs"]
    assert made["shape"] == [4, 7, 3] and made["name"] == "points"


def test_a_subclassed_model_loads_with_the_code_that_defines_it(
    stock_python: str, user_models: Path
) -> None:
    model = keras_model(user_models / "subclassed.keras")
    with pytest.raises(UnsupportedError) as refused:
        served(stock_python, model)
    assert "Could not locate class 'Scaled'" in refused.value.line()
    assert "--model-code" in refused.value.line()
    with_code = keras_model(user_models / "subclassed.keras", code=str(user_models / "scaled.py"))
    (made,) = served(stock_python, with_code)["inputs"]
    assert made["shape"] == [4, 8]  # its build shape, the batch it was built with replaced


def test_the_profile_counts_the_kernels_asked_for(stock_python: str, user_models: Path) -> None:
    model = keras_model(user_models / "gru_input.keras", batch=16)
    found = profile_model(
        stock_python, model, env=clean_env(), replaced=("Sigmoid:float32", "Tanh:float32"), steps=2
    )
    assert set(found.replaced) == {"Sigmoid:float32", "Tanh:float32"}
    assert 0 < found.share < 1 and found.total_op_s > found.replaced_s > 0
    assert found.onednn_share > 0  # the GRU's matmuls are oneDNN's


def test_tune_finds_the_fastest_way_to_run_the_users_sequential(
    user_models: Path, built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    """The issue's Sequential, with a real overlay built for this CPU: every lever raced, the
    profile kept only when faster than stock in a fresh pair of processes, written to its env
    file, and what a rebuild would add read off the profiler."""
    env_file = tmp_path / "gru.env"
    result = run_cli(
        "tune", "tensorflow-cpu==2.21.0", "--model", str(user_models / "gru_input.keras"),
        "--model-batch", "32", "--overlay-wheel", str(built_overlay.result.wheel),
        "--budget", "60", "--env-file", str(env_file), "--json",
        timeout=1200,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["schema"] == "tfbuild.tune-model/1" and data["written"] == str(env_file)
    assert data["headline"].startswith("gru_input.keras: ")
    rows = {row["name"]: row for row in data["levers"]}
    for name in ("XLA", "XLA auto", "overlay", "XLA auto + overlay", "1 thread", "1 thread + XLA"):
        assert name in rows, sorted(rows)
    for row in rows.values():
        assert row["outcome"] in {"wins", "loses", "no gain", "undecided", "failed"}
        assert (row["ratio"] is None) == (row["outcome"] == "failed"), row
        if row["outcome"] == "failed":
            assert row["why"]
    assert rows["overlay"]["apply"]["install"] == [f"pip install {built_overlay.result.wheel}"]
    assert any("jit_compile=True" in c for c in rows["XLA"]["apply"]["code"])
    assert rows["XLA auto"]["apply"]["env"]["TF_XLA_FLAGS"].startswith("--tf_xla_auto_jit=2")
    kept = data["kept"]
    text = env_file.read_text()
    if kept is None:  # nothing beat stock beyond the noise here: the defaults are the profile
        assert "TensorFlow's defaults are the profile" in text
    else:  # never slower: kept only when faster, confirmed in a fresh pair of processes
        assert kept["verdict"]["label"] == "faster" and kept["ratio"] > 1
        assert kept["interval"][0] >= 1  # rounded: a bound just above 1 may read 1.0
        for name, value in kept["apply"]["env"].items():
            assert name in text and value.split()[0] in text
        assert f"{kept['ratio']:.2f}x" in data["headline"]
    rebuild = data["rebuild"]
    assert 0 < rebuild["share"] < 1 and rebuild["kernels"]
    assert rebuild["kernel_speedup"] is not None and rebuild["predicted"] >= 1.0
    assert set(rebuild["kernels"]) <= set(built_overlay.result.receipt.kernels)
    assert data["machine"] is not None and data["seconds"] > 0
    described = data["model"]["described"]
    assert described["inputs"][0]["shape"] == [32, 40, 24] and described["params"] == 35524


def test_tune_says_what_it_found_in_lines_for_people(user_models: Path, tmp_path: Path) -> None:
    result = run_cli(
        "tune", "tensorflow-cpu==2.21.0", "--model", str(user_models / "gru_built.keras"),
        "--overlay-wheel", "none", "--budget", "1", "--env-file", str(tmp_path / "p.env"),
        timeout=1200,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        lines[0].startswith("gru_built.keras: ")
        and "not measured (--overlay-wheel none)" in result.stdout
    )
    assert any(
        line.startswith("levers on gru_built.keras (predict, 35,524 parameters") for line in lines
    )
    assert any("what a rebuild would add" in line for line in lines)
    progress = [line for line in result.stderr.splitlines() if line.startswith("[tune] ")]
    assert (
        progress[0] == "[tune] an environment with tensorflow-cpu==2.21.0 (made once, then reused)"
    )
    assert "Traceback" not in result.stderr and "error" not in result.stderr
    assert (tmp_path / "p.env").stat().st_size > 0
    one_line = run_cli(
        "tune", "tensorflow-cpu==2.21.0", "--model", str(user_models / "gru_built.keras"),
        "--overlay-wheel", str(tmp_path / "p.env"),
    )  # fmt: skip
    one_error_line(one_line, 3, "not an overlay wheel", among_others=True)
