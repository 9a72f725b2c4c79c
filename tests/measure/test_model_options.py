"""How the user's model is called, from the command line: ``--model-input``'s grammar, the options
that need --model, and the same options in tune and in smoke of an overlay (declared once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import one_error_line, run_cli
from tests.wheels import pack
from tfbuild.cli import request_of
from tfbuild.core.errors import UsageError
from tfbuild.measure.models import MAX_DIM, ModelInput, ModelOptions, parse_model_input


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("224,224,3", ModelInput(shape=(224, 224, 3))),
        ("128", ModelInput(shape=(128,))),
        ("token_ids=128:int32", ModelInput(name="token_ids", shape=(128,), dtype="int32")),
        ("serving/x=8,8:bfloat16", ModelInput(name="serving/x", shape=(8, 8), dtype="bfloat16")),
        (" 40,24 ", ModelInput(shape=(40, 24))),
    ],
)
def test_a_model_input_is_a_shape_and_maybe_a_name_and_dtype(
    text: str, expected: ModelInput
) -> None:
    assert parse_model_input(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "is not [NAME=]DIMS[:DTYPE]"),
        ("224x224", "is not"),
        ("=3", "is not"),
        ("x=", "is not"),
        ("3:", "is not"),
        ("0,3", "dimensions of 0 to 3"),
        (f"{MAX_DIM + 1}", "dimensions of"),
        ("1,1,1,1,1,1,1,1,1", "9 dimensions"),
        ("65536,65536", "elements a sample"),
        ("3:complex64", "unknown dtype 'complex64'"),
        ("3;rm -rf", "is not"),
    ],
)
def test_a_bad_model_input_is_refused_saying_why(text: str, why: str) -> None:
    with pytest.raises(UsageError, match="--model-input") as raised:
        parse_model_input(text)
    assert why in raised.value.line()


@given(st.text(max_size=40))
def test_any_text_is_an_input_or_refused(text: str) -> None:
    try:
        found = parse_model_input(text)
    except UsageError:
        return
    assert found.shape and all(1 <= d <= MAX_DIM for d in found.shape)


def test_tune_and_smoke_read_the_same_model_options(tmp_path: Path) -> None:
    given_args = [
        "--model", "m.keras", "--model-batch", "8", "--model-input", "224,224,3",
        "--model-input", "ids=128:int32", "--model-step", "train", "--model-code", "layers.py",
    ]  # fmt: skip
    tune = request_of(["tune", "tensorflow-cpu==2.21.0", *given_args])
    smoke = request_of(["smoke", "o.whl", *given_args])
    assert tune.model == smoke.model
    model: ModelOptions = tune.model
    assert model.model == Path("m.keras") and model.model_batch == 8
    assert model.model_input == (
        ModelInput(shape=(224, 224, 3)),
        ModelInput(name="ids", shape=(128,), dtype="int32"),
    )
    assert (model.model_step, model.model_code) == ("train", Path("layers.py"))
    assert request_of(["tune", "x", "--model", "m.keras", "--overlay-wheel", "build"]).overlay == (
        "build"
    )


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--model-input", "3"], "say how to call --model"),
        (["--model-step", "train"], "say how to call --model"),
        (["--model", "m.keras", "--model-step", "fit"], "--model-step 'fit'"),
        (["--model", "m.keras", "--model-input", "3", "--model-input", "4"], "one input"),
        (["--overlay-wheel", "build"], "--overlay-wheel is a lever measured on a model"),
    ],
)
def test_model_options_that_cannot_be_used_are_one_line_and_exit_2(
    argv: list[str], fragment: str
) -> None:
    result = run_cli("tune", "tensorflow-cpu==2.21.0", *argv)
    one_error_line(result, 2, fragment)


def test_smoke_takes_a_model_only_with_an_overlay(tmp_path: Path) -> None:
    result = run_cli("smoke", "tensorflow-cpu==2.21.0", "--model", str(tmp_path / "m.keras"))
    one_error_line(result, 2, "with an overlay", "tfbuild tune WHEEL --model PATH")


def test_model_code_must_be_a_python_file(tmp_path: Path) -> None:
    model = pack(tmp_path / "m.keras", {"config.json": b"{}"})
    for code, why in ((tmp_path / "missing.py", "No such file"), (tmp_path, "a directory")):
        result = run_cli(
            "tune", "tensorflow-cpu==2.21.0", "--model", str(model), "--model-code", str(code)
        )
        one_error_line(result, 3, "cannot", why)
