"""tfbuild tune, run for real on the stock wheel (with a real model of the user's too), and its
refusals."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest

from tests.conftest import one_error_line, run_cli
from tests.terminal import run_cli_on_terminal
from tests.wheels import pack


@pytest.mark.slow
def test_tune_measures_a_knob_and_writes_the_profile(stock_python: str, tmp_path: Path) -> None:
    profile = tmp_path / "stock.env"
    result = run_cli(
        "tune", "tensorflow-cpu==2.21.0", "--budget", "1", "--env-file", str(profile), "--json",
        timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["schema"] == "tfbuild.tune/1"
    assert data["written"] == str(profile)
    # A budget of one second: the first knob is timed, the rest are reported as not tried.
    tried = data["kept"] + data["rejected"]
    assert len(tried) == 1 and tried[0]["name"].startswith("threads intra="), tried
    assert data["not_tried"] and "oneDNN off" in data["not_tried"]
    for trial in tried:
        low, high = trial["interval"]
        assert low <= high and trial["gain"] > 0
        assert set(trial["ops"]) == {"matmul_1024", "conv2d_nhwc", "exp", "add", "softmax"}
    text = profile.read_text()
    assert text.startswith("# runtime profile measured by tfbuild tune for tensorflow-cpu==2.21.0")
    for name, value in data["env"].items():
        assert f"{name}={value}" in text.splitlines()
    if not data["kept"]:
        assert "TensorFlow's defaults are the profile" in text


#: A trial's line: its word, its setting, its gain and interval, each op's verdict.
TRIAL = re.compile(r"  (kept|rejected|undecided) +threads ")
WHOLE_TRIAL = re.compile(
    r"  (kept|rejected|undecided) +threads intra=\d+ inter=\d+: \d+\.\d\dx "
    r"\(\d+\.\d\d-\d+\.\d\dx; (matmul_1024|conv2d_nhwc|exp|add|softmax) \w+"
    r"(, (matmul_1024|conv2d_nhwc|exp|add|softmax) \w+){4}\)"
)


@pytest.mark.slow
def test_tune_wraps_its_lines_to_a_terminal_and_leaves_piped_ones_whole(
    stock_python: str, tmp_path: Path
) -> None:
    """Each trial's line (its word, its gain, each op's verdict) is longer than 80 columns: on an
    80-column terminal it goes on under its name, never wider; piped, it is one line."""
    args = (
        "tune",
        "tensorflow-cpu==2.21.0",
        "--budget",
        "1",
        "--env-file",
        str(tmp_path / "p.env"),
    )
    shown = run_cli_on_terminal(*args, terminal=("stdout",), timeout=900)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in lines), lines
    (trial,) = [i for i, line in enumerate(lines) if TRIAL.match(line)]
    rest = list(itertools.takewhile(lambda line: line.startswith(" " * 12), lines[trial + 1 :]))
    assert rest and all(line[12] != " " for line in rest), lines  # under the trial's name
    assert WHOLE_TRIAL.fullmatch(" ".join([lines[trial], *(line.strip() for line in rest)]))
    written = next(i for i, line in enumerate(lines) if line.startswith("profile written to"))
    # The path whole, on a line of its own if it does not fit after the words.
    assert " ".join(line.strip() for line in lines[written:]) == (
        f"profile written to {tmp_path / 'p.env'}"
    )
    piped = run_cli(*args, timeout=900)
    assert piped.returncode == 0, piped.stderr
    (whole,) = [line for line in piped.stdout.splitlines() if TRIAL.match(line)]
    assert len(whole) > 80 and WHOLE_TRIAL.fullmatch(whole), whole


def test_tune_needs_a_wheel_or_installed() -> None:
    result = run_cli("tune")
    assert result.returncode == 2, result.stderr
    assert "tune needs one wheel" in result.stderr


# --- --model: a model the worker cannot use -------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("lambda.keras", ("cannot load model:lambda.keras", "Lambda", "safe_mode")),
        (
            "open_dims",
            (
                "cannot make a batch for model:open_dims",
                "open dimension",
                "--model-input 224,224,3",
            ),
        ),
        (
            "picky",
            ("cannot call model:picky", "a batch of 1", "only positive inputs", "--model-batch"),
        ),
    ],
)
def test_a_model_the_worker_cannot_use_is_one_line_and_exit_4(
    user_models: Path, name: str, fragments: tuple[str, ...]
) -> None:
    result = run_cli(
        "tune", "tensorflow-cpu==2.21.0", "--model", str(user_models / name), "--budget", "1",
        "--json", timeout=900,
    )  # fmt: skip
    one_error_line(result, 4, *fragments, among_others=True)
    assert result.stdout == ""


def test_model_refusals_come_before_any_tensorflow(tmp_path: Path) -> None:
    empty_dir = tmp_path / "empty_model"
    empty_dir.mkdir()
    fifo = tmp_path / "pipe.keras"
    os.mkfifo(fifo)
    not_zip = tmp_path / "text.keras"
    not_zip.write_text("not a zip\n")
    no_config = pack(tmp_path / "weights_only.keras", {"model.weights.h5": b"x"})
    fifo_inside = tmp_path / "fifo_inside"
    (fifo_inside / "variables").mkdir(parents=True)
    (fifo_inside / "saved_model.pb").write_bytes(b"\n")
    os.mkfifo(fifo_inside / "variables" / "variables.index")
    huge = tmp_path / "huge.keras"
    with huge.open("wb") as handle:  # sparse: no disk used, refused by its size before a read
        handle.truncate(3 << 30)
    legacy = tmp_path / "old.h5"
    legacy.write_bytes(b"\x89HDF\r\n\x1a\n")
    cases = [
        (tmp_path / "missing.keras", "no such file or directory"),
        (empty_dir, "no saved_model.pb"),
        (fifo, "a FIFO"),
        (not_zip, "not a zip archive"),
        (no_config, "no config.json"),
        (fifo_inside, "variables.index is a FIFO"),
        (huge, "larger than 2 GiB"),
        (legacy, "HDF5"),
    ]
    for path, why in cases:
        result = run_cli("tune", "tensorflow-cpu==2.21.0", "--model", str(path))
        line = one_error_line(result, 3, "cannot time the model", why)
        assert str(path) in line, line
