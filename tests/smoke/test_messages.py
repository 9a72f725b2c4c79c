"""TensorFlow's CPU-feature messages, read from real captured logs (tests/fixtures/tf-logs/).

SOURCES.md there names the thread, repository or command each log came from; three were captured
on this machine with the stock tensorflow-cpu 2.21.0.
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest

from tfbuild.core import serial
from tfbuild.smoke.messages import FORMS, TensorFlowMessages, parse_messages

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "tf-logs"

STOCK_2_21 = ("AVX2", "AVX512F", "AVX512_VNNI", "AVX512_BF16", "AVX_VNNI", "FMA")
DT_HALF = (
    "oneDNN supports DT_HALF only on platforms with AVX-512. "
    "Falling back to the default Eigen-based implementation if present."
)
ABSL = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"


def fx(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def parsed(name: str) -> TensorFlowMessages:
    return parse_messages(fx(name))


# What each fixture must give: form, unused, missing, oneDNN line, number of benign and error lines.
EXPECTED: dict[str, tuple[str | None, tuple[str, ...], tuple[str, ...], bool, int, int]] = {
    "tf1.0-per-feature.txt": (
        "1.x-per-feature",
        ("SSE3", "SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA"),
        (),
        False,
        0,
        0,
    ),
    "tf1.x-per-feature-squashed.txt": (
        "1.x-per-feature",
        ("SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA"),
        (),
        False,
        0,
        0,
    ),
    "tf1.x-per-feature-windows.txt": ("1.x-per-feature", ("AVX", "AVX2"), (), False, 0, 0),
    "tf1.12-supports-not-compiled.txt": (
        "supports-not-compiled",
        ("AVX2", "AVX512F", "FMA"),
        (),
        False,
        0,
        0,
    ),
    "tf2.1-supports-not-compiled.txt": ("supports-not-compiled", ("AVX2", "FMA"), (), False, 0, 0),
    "tf2.0-mkl-dnn.txt": ("mkl-dnn", ("AVX2", "FMA"), (), False, 0, 0),
    "tf2.4-onednn-nospace-repeated.txt": ("onednn-2.4", ("AVX", "AVX2"), (), False, 0, 0),
    "tf2.7-onednn-first-line-only.txt": (
        "onednn-2.4",
        ("SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA"),
        (),
        False,
        0,
        0,
    ),
    "tf2.9-onednn-amx.txt": (
        "onednn-2.4",
        (
            "AVX2",
            "AVX512F",
            "AVX512_VNNI",
            "AVX512_BF16",
            "AVX_VNNI",
            "AMX_TILE",
            "AMX_INT8",
            "AMX_BF16",
            "FMA",
        ),
        (),
        True,
        0,
        0,
    ),
    "tf2.11-onednn-indented-repeats.txt": (
        "onednn-2.4",
        ("AVX2", "AVX512F", "AVX512_VNNI", "FMA"),
        (),
        False,
        0,
        0,
    ),
    "tf2.13-2.12plus-markdown.txt": (
        "2.12+",
        ("SSE", "SSE2", "SSE3", "SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA"),
        (),
        False,
        0,
        0,
    ),
    "tf2.14-cuda-factory-errors.txt": ("2.12+", ("AVX2", "FMA"), (), False, 0, 3),
    "tf2.18-2.12plus-dt-half-windows.txt": (
        "2.12+",
        ("SSE3", "SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA"),
        (),
        True,
        1,
        0,
    ),
    "tf2.21-stock-this-machine.txt": ("2.12+", STOCK_2_21, (), True, 2, 0),
    "tf2.21-stock-log-level-1.txt": (None, (), (), True, 2, 0),
    "tf2.21-stock-onednn-opts-0.txt": ("2.12+", STOCK_2_21, (), False, 1, 0),
    "cuda-factory-errors-mixed-prefixes.txt": (None, (), (), False, 1, 3),
    "fatal-avx2-tf1.0.txt": (None, (), ("AVX2",), False, 0, 0),
    "fatal-avx-qemu.txt": (None, (), ("AVX",), False, 0, 0),
    "fatal-sse4.1-no-severity.txt": (None, (), ("SSE4.1",), False, 0, 0),
    "tcmalloc-large-alloc.txt": (None, (), (), False, 1, 0),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture(name: str) -> None:
    form, unused, missing, onednn, n_benign, n_errors = EXPECTED[name]
    report = parsed(name)
    assert report.form == form
    assert report.unused == unused
    assert report.missing == missing
    assert report.onednn_custom_ops is onednn
    assert len(report.benign) == n_benign, report.benign
    assert len(report.errors) == n_errors, report.errors
    assert report.silent is (not unused)
    assert report.failed is bool(missing or n_errors)


def test_every_fixture_is_expected_and_sourced() -> None:
    files = {p.name for p in FIXTURES.iterdir() if p.suffix == ".txt"}
    assert files == set(EXPECTED)
    sources = fx("SOURCES.md")
    for name in files:
        assert f"`{name}`" in sources, f"{name} is not named in SOURCES.md"


def test_every_form_has_a_real_capture() -> None:
    assert {expected[0] for expected in EXPECTED.values()} - {None} == set(FORMS)


def test_stock_2_21_on_this_machine() -> None:
    """The required case: stock tensorflow-cpu 2.21.0 as it ran here, DT_HALF line included."""
    report = parsed("tf2.21-stock-this-machine.txt")
    assert report.unused == STOCK_2_21
    assert report.onednn_custom_ops
    assert not report.silent
    assert not report.failed
    assert report.errors == ()
    # absl's line is printed twice (two copies of absl) and kept once.
    assert report.benign[0] == ABSL
    assert report.benign[1].startswith("E0000 ")
    assert report.benign[1].endswith(DT_HALF)


def test_dt_half_is_benign_in_both_prefixes() -> None:
    """ERROR level, printed by fp16 ops even on AVX-512 CPUs: never a failure."""
    for name in ("tf2.21-stock-this-machine.txt", "tf2.18-2.12plus-dt-half-windows.txt"):
        report = parsed(name)
        assert [line for line in report.benign if line.endswith(DT_HALF)], name
        assert report.errors == ()
        assert not report.failed


def test_dt_half_does_not_hide_a_real_error() -> None:
    stock = fx("tf2.21-stock-this-machine.txt")
    cuda = fx("cuda-factory-errors-mixed-prefixes.txt")
    report = parse_messages(stock + cuda)
    assert report.unused == STOCK_2_21
    assert len(report.errors) == 3
    assert not any("DT_HALF" in line for line in report.errors)
    assert report.failed


def test_errors_in_every_prefix() -> None:
    mixed = parsed("cuda-factory-errors-mixed-prefixes.txt")
    assert mixed.errors[0].startswith("2025-07-02 09:22:30.972636: E external/")
    assert mixed.errors[1].startswith("E0000 00:00:1751448150.986970")
    assert mixed.errors[2].startswith("E0000 00:00:1751448150.991431")
    # W0000 lines are warnings, not errors; absl's WARNING line is benign.
    assert mixed.benign == (ABSL,)
    pasted = parsed("tf2.14-cuda-factory-errors.txt")  # the first line starts with a backtick
    assert [line.split("]")[0].rsplit("/", 1)[1] for line in pasted.errors] == [
        "cuda_dnn.cc:9342",
        "cuda_fft.cc:609",
        "cuda_blas.cc:1518",
    ]


def test_fatal_guard_is_missing_not_error() -> None:
    for name in ("fatal-avx2-tf1.0.txt", "fatal-avx-qemu.txt", "fatal-sse4.1-no-severity.txt"):
        report = parsed(name)
        assert report.errors == (), name
        assert report.failed, name
        assert report.form is None, name


def test_several_missing_instructions() -> None:
    # TensorFlow aborts at the first; several appear when logs of several runs are read together.
    report = parse_messages(fx("fatal-avx-qemu.txt") + fx("fatal-avx2-tf1.0.txt") * 2)
    assert report.missing == ("AVX", "AVX2")


def test_curly_apostrophe() -> None:
    # As pasted in Zeta36/tensorflow-tex-wavenet#8 (the apostrophe went through a word processor).
    line = (
        "The TensorFlow library was compiled to use AVX instructions, "
        "but these aren’t available on your machine."
    )
    assert parse_messages(line).missing == ("AVX",)


def test_tcmalloc_is_benign() -> None:
    report = parsed("tcmalloc-large-alloc.txt")
    assert report.benign[0].startswith("tcmalloc: large alloc 6645350400 bytes")
    assert report.silent
    assert not report.failed


def test_no_guard_message() -> None:
    for name in ("tcmalloc-large-alloc.txt", "cuda-factory-errors-mixed-prefixes.txt"):
        report = parsed(name)
        assert report.form is None
        assert report.silent
    empty = parse_messages("")
    assert empty == TensorFlowMessages(
        form=None, unused=(), missing=(), onednn_custom_ops=False, benign=(), errors=()
    )
    assert empty.silent


def test_log_level_1_is_silent_but_distinguishable() -> None:
    """With TF_CPP_MIN_LOG_LEVEL=1 the stock wheel looks silent; only the environment tells."""
    hidden = parsed("tf2.21-stock-log-level-1.txt")
    shown = parsed("tf2.21-stock-this-machine.txt")
    assert hidden.silent
    assert hidden.form is None
    assert hidden.onednn_custom_ops  # printed even though it is INFO too
    assert not shown.silent


def test_repeats_are_deduplicated() -> None:
    repeated = parsed("tf2.11-onednn-indented-repeats.txt")  # four copies of the message
    assert repeated.unused == ("AVX2", "AVX512F", "AVX512_VNNI", "FMA")
    for name in EXPECTED:
        once = parsed(name)
        assert parse_messages(fx(name) * 3) == once, name


def test_order_is_as_printed_across_forms() -> None:
    report = parse_messages(fx("tf2.1-supports-not-compiled.txt") + fx("tf1.0-per-feature.txt"))
    assert report.form == "supports-not-compiled"  # the first form printed
    assert report.unused == ("AVX2", "FMA", "SSE3", "SSE4.1", "SSE4.2", "AVX")


def test_stderr_and_stdout() -> None:
    stock = fx("tf2.21-stock-this-machine.txt")
    said = "tf.Tensor(1, shape=(), dtype=int32)\n"
    assert parse_messages(stock + "\n" + said) == parse_messages(said + "\n" + stock)
    assert parse_messages(stock + "\n" + said) == parse_messages(stock)


def test_windows_line_endings_and_colour() -> None:
    stock = fx("tf2.21-stock-this-machine.txt")
    assert parse_messages(stock.replace("\n", "\r\n")) == parse_messages(stock)
    coloured = "\x1b[33m" + stock.replace("\n", "\x1b[0m\n")
    assert parse_messages(coloured).unused == STOCK_2_21


def test_2_12_head_line_alone_names_the_form() -> None:
    head = fx("tf2.21-stock-this-machine.txt").splitlines()[2]
    assert "cpu_feature_guard.cc:227" in head
    report = parse_messages(head)
    assert report.form == "2.12+"
    assert report.unused == ()


@pytest.mark.parametrize(
    "junk",
    [
        "",
        b"\x00\xff\xfe\x80".decode(errors="replace") * 1000,
        bytes(range(256)).decode(errors="replace") * 64,
        "\x00" * 10_000,
        "E" * 100_000,
        "To enable the following instructions:" * 5000,
        "Your CPU supports instructions that this TensorFlow binary was not compiled to use:",
        "2023-10-11 08:35:26.693664: E " + "x" * 50_000,
        "\r\r\n\n\x0b\x0c\u2028",
    ],
)
def test_odd_input_does_not_raise(junk: str) -> None:
    report = parse_messages(junk + "\n" + junk)
    assert isinstance(report, TensorFlowMessages)
    json.dumps(serial.to_data(report))


def test_random_bytes_neither_raise_nor_invent_findings() -> None:
    """Noise is no guard message: random bytes alone give no finding, and between two lines of a
    real log they leave its findings as they were. Cut into the middle of a line, they still give
    a report (parse_messages never raises)."""
    rng = random.Random(1729)
    stock = fx("tf2.21-stock-this-machine.txt").encode()
    expected = parse_messages(stock.decode())
    assert expected.form is not None and expected.unused  # the log has findings to keep
    line_starts = [0, *(i + 1 for i, c in enumerate(stock) if c == ord("\n"))]

    def findings(report: TensorFlowMessages) -> tuple[object, ...]:
        return report.form, report.unused, report.missing

    for _ in range(200):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4000)))
        alone = parse_messages(blob.decode(errors="replace"))
        assert findings(alone) == (None, (), ())
        at = rng.choice(line_starts)
        between = parse_messages(
            (stock[:at] + b"\n" + blob + b"\n" + stock[at:]).decode(errors="replace")
        )
        assert findings(between) == findings(expected)
        cut = rng.randrange(len(stock))
        cut_in = (stock[:cut] + blob + stock[cut:]).decode(
            errors="replace"
        )  # as the probe reads it
        json.dumps(serial.to_data(parse_messages(cut_in)))


def test_to_json_is_deterministic() -> None:
    report = parsed("tf2.21-stock-this-machine.txt")
    data = serial.to_data(report)
    assert list(data) == [
        "form",
        "silent",
        "unused",
        "missing",
        "onednn_custom_ops",
        "failed",
        "benign",
        "errors",
    ]
    assert data["unused"] == list(STOCK_2_21)
    assert data["silent"] is False
    again = json.dumps(serial.to_data(parsed("tf2.21-stock-this-machine.txt")))
    assert json.dumps(data) == again


def test_frozen() -> None:
    report = parsed("tf2.21-stock-this-machine.txt")
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.form = None  # type: ignore[misc]
