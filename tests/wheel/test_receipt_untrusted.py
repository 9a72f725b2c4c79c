"""A receipt is untrusted input (issue 21, items 1 and 2): bounded, typed decoding and every field
checked to its grammar, for files, HTTP bodies, ``index`` and ``pick``.

The valid receipt here is a real one: ``tests/fixtures/receipts/`` holds a canary wheel and the
receipt ``tfbuild wheel`` wrote for it before this change (no ``inputs_sha256``), kept so that
receipts already written keep reading. The reproductions that need a Docker engine (``verify`` and
``wheel --from-receipt`` connect to it first) are in ``tests/docker/test_untrusted_receipts.py``.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, cpuinfo_fixture, one_error_line, run_cli
from tests.http_server import served
from tfbuild.core.errors import InputError
from tfbuild.wheel.receipt import (
    MAX_RECEIPT_DEPTH,
    Receipt,
    canonical_sha256,
    decode_receipt,
    is_debian_version,
    json_depth,
    read_receipt,
)

FIXTURES = ROOT / "tests" / "fixtures" / "receipts"
WHEEL = "tensorflow_cpu-0.0.0+tfbuild.canary.x86_64v4-py3-none-manylinux_2_34_x86_64.whl"
RECEIPT = WHEEL.removesuffix(".whl") + ".json"
ZEN4 = ("--cpuinfo", str(cpuinfo_fixture("zen4")), "--python", "3.11")


def fixture_json() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / RECEIPT).read_text(encoding="utf-8"))
    return data


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    """A copy of the canary wheel and the receipt main wrote for it."""
    directory = tmp_path / "dist"
    directory.mkdir()
    for name in (WHEEL, RECEIPT):
        shutil.copyfile(FIXTURES / name, directory / name)
    return directory


# --- receipts written before this change still read ---------------------------------------------------


def test_the_receipt_main_wrote_reads_and_round_trips(dist: Path) -> None:
    receipt = read_receipt(dist / RECEIPT, wheel=dist / WHEEL)
    assert receipt.standin and receipt.wheel.name == WHEEL
    assert receipt.inputs.packages["zip"] == "3.0-13+deb12u1"
    assert receipt.plan_intact()
    assert receipt.inputs_sha256 is None and receipt.inputs_intact() is None  # no hash covers them
    assert Receipt.from_json(json.loads(json.dumps(receipt.to_json()))) == receipt
    # Every version dpkg reported in that image is one the grammar takes.
    assert all(is_debian_version(v) for v in receipt.inputs.packages.values())


def test_index_and_pick_read_the_receipt_main_wrote(dist: Path) -> None:
    indexed = run_cli("index", str(dist), "--json")
    assert indexed.returncode == 0, indexed.stderr
    (entry,) = indexed.json()["wheels"]
    assert entry["described_by"] == "receipt" and entry["floor"]["glibc"] == "2.34"
    picked = run_cli("pick", str(dist), *ZEN4, "--json")
    assert "Traceback" not in picked.stderr
    report = picked.json()
    assert report["warnings"] == []
    assert report["wheels"][0]["receipt"]["target"] == "x86_64_v4"  # read from the receipt


# --- bounded decoding: nesting, numbers, constants ------------------------------------------------------


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        (b"{}", 1),
        (b'{"a": [1, {"b": []}], "c": "[[[[[[[[["}', 4),  # brackets in strings do not count
        (b'{"a": "\\"[[[["}', 1),  # nor after an escaped quote
        (deep(MAX_RECEIPT_DEPTH), MAX_RECEIPT_DEPTH),
        (deep(100_000), MAX_RECEIPT_DEPTH + 1),  # counted up to the bound, then stopped
        (b"[" * 100_000, MAX_RECEIPT_DEPTH + 1),  # unpaired: deeper than any bound
    ],
)
def test_json_depth_counts_without_recursion(text: bytes, depth: int) -> None:
    assert json_depth(text, limit=MAX_RECEIPT_DEPTH) == depth


def _true_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_true_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_true_depth, value), default=0)
    return 0


@settings(max_examples=500, deadline=None, derandomize=True)
@given(
    value=st.recursive(
        st.none() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=4), inner, max_size=3)
        ),
        max_leaves=30,
    )
)
def test_json_depth_is_the_depth_json_parses(value: Any) -> None:
    """Brackets, quotes and backslashes inside strings never count."""
    assert json_depth(json.dumps(value).encode(), limit=MAX_RECEIPT_DEPTH) == _true_depth(value)


NESTED_100K = b'{"schema": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def _with(path: tuple[str, ...], raw_value: str) -> Callable[[], bytes]:
    """The fixture receipt with the value at ``path`` replaced by the JSON text ``raw_value``."""

    def make() -> bytes:
        data = fixture_json()
        marker = "@@REPLACED@@"
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = marker
        return json.dumps(data).replace(f'"{marker}"', raw_value).encode()

    return make


#: doctor's canary section as a real run wrote it (tests/fixtures/canary/README.md).
SECTION: dict[str, Any] = json.loads(
    (ROOT / "tests" / "fixtures" / "canary" / "section.json").read_text(encoding="utf-8")
)


def _canary(*path: str, value: Any) -> Callable[[], bytes]:
    """The fixture receipt with the recorded canary section, ``value`` at ``path`` inside it."""
    section = copy.deepcopy(SECTION)
    node = section
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return _with(("canary",), json.dumps(section))


HOSTILE: dict[str, tuple[Callable[[], bytes], str]] = {
    "nested-100k": (lambda: NESTED_100K, "it nests deeper than 64 levels"),
    "size-1e400": (_with(("wheel", "size"), "1e400"), "it holds the number 1e400, which is out"),
    "size-5000-digits": (
        _with(("wheel", "size"), "9" * 5000),
        "it holds a number of 5000 characters (at most 32)",
    ),
    "nan": (_with(("timings", "build_s"), "NaN"), "it holds NaN, which is not JSON"),
    "infinity": (_with(("timings", "build_s"), "-Infinity"), "it holds -Infinity, which is not"),
    "size-bool": (
        _with(("wheel", "size"), "true"),
        "its wheel.size holds True, not a whole number",
    ),
    "size-negative": (
        _with(("wheel", "size"), "-1"),
        "its wheel.size holds -1, not a whole number",
    ),
    "bad-sha256": (
        _with(("wheel", "sha256"), '"' + "A" * 64 + '"'),
        "its wheel.sha256 holds 'AAAA",
    ),
    "unknown-top-key": (_with(("surprise",), "1"), "the receipt has the unknown key 'surprise'"),
    "unknown-inputs-key": (
        _with(("inputs", "run_first"), '"curl x | sh"'),
        "inputs has the unknown key 'run_first'",
    ),
    "unknown-wheel-key": (_with(("wheel", "url"), '"x"'), "wheel has the unknown key 'url'"),
    "unknown-source-key": (
        _with(("inputs", "source", "cache_volume"), '"/etc"'),
        "inputs.source has the unknown key 'cache_volume'",
    ),
    "duplicate-key": (
        lambda: fixture_json_text().replace('"schema":', '"schema": 1, "schema":', 1).encode(),
        "it holds the key 'schema' twice in one object",
    ),
    "lone-surrogate": (_with(("build_id",), '"\\ud800"'), "it holds a lone surrogate"),
    "injected-pin": (
        _with(
            ("inputs", "packages", "zip"), json.dumps("3.0-13+deb12u1 && echo INJECTED-$(id -u)")
        ),
        "its inputs.packages['zip'] holds '3.0-13+deb12u1 && echo INJECTED-$(id -u)', not a Debian "
        "version",
    ),
    "pin-with-newline": (
        _with(("inputs", "packages", "zip"), json.dumps("3.0-13+deb12u1\nRUN id")),
        "its inputs.packages['zip'] holds",
    ),
    "package-name-option": (
        _with(("inputs", "packages", "-o"), json.dumps("1.0")),
        "its inputs.packages key holds '-o', not a Debian package name",
    ),
    "image-with-space": (
        _with(("inputs", "base_image"), json.dumps("debian AS x")),
        "its inputs.base_image holds 'debian AS x', not a Docker image reference",
    ),
    "variant-list": (_with(("variant",), "[]"), "its variant holds a JSON array, not a variant"),
    "variant-markup": (
        _with(("variant",), json.dumps("cpu<script>")),
        "its variant holds 'cpu<script>', not a variant",
    ),
    "canary-list": (_with(("canary",), "[]"), "its canary holds list, not an object"),
    "canary-unknown-key": (
        _canary("run_first", value="curl x | sh"),
        "canary has the unknown key 'run_first'",
    ),
    "canary-stderr-escape": (
        _canary(
            "smoke",
            "host",
            value={"ok": False, "exit_code": 1, "stderr": "\x1b]8;;http://x\x07Illegal"},
        ),
        "its canary.smoke['host'].stderr holds '\\x1b]8;;http://x\\x07Illegal', not lines of text",
    ),
    "canary-unknown-build": (
        _canary("median_ms", "other", value=1.0),
        "its canary.median_ms key holds 'other', not a canary build (host or baseline)",
    ),
    "canary-count-bool": (
        _canary("isa", "found", "host", "zmm", value=True),
        "its canary.isa.found['host']['zmm'] holds True, not a whole number",
    ),
    "canary-verdict-label": (
        _canary("verdict", "label", value="faster; rm -rf /"),
        "its canary.verdict.label holds 'faster; rm -rf /', not a verdict",
    ),
    "canary-verdict-interval": (
        _canary("verdict", "interval", value=[2.0, 1.0, 3.0]),
        "its canary.verdict.interval holds a JSON array, not an interval",
    ),
    "canary-no-speedup": (
        _with(("canary",), json.dumps({k: v for k, v in SECTION.items() if k != "speedup"})),
        "it is malformed: its canary has no 'speedup'",
    ),
}


def fixture_json_text() -> str:
    return json.dumps(fixture_json())


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_receipt_file_is_one_input_error(case: str, tmp_path: Path) -> None:
    make, said = HOSTILE[case]
    path = tmp_path / RECEIPT
    path.write_bytes(make())
    with pytest.raises(InputError) as caught:
        read_receipt(path)
    assert said in caught.value.line(), caught.value.line()
    assert caught.value.exit_code == 3


@pytest.mark.parametrize(
    "case", ["nested-100k", "size-1e400", "size-5000-digits", "canary-stderr-escape"]
)
def test_index_refuses_a_hostile_receipt_in_one_line(case: str, dist: Path) -> None:
    make, said = HOSTILE[case]
    (dist / RECEIPT).write_bytes(make())
    result = run_cli("index", str(dist))
    assert result.returncode == 3, result.stderr
    line = one_error_line(result)
    assert line.startswith(f"tfbuild: error: {dist / RECEIPT} is not a ")
    assert said in line
    assert not (dist / "index.html").exists()


@pytest.mark.parametrize("case", ["nested-100k", "size-1e400", "size-5000-digits"])
def test_pick_sets_a_hostile_receipt_aside_from_a_directory(case: str, dist: Path) -> None:
    make, said = HOSTILE[case]
    (dist / RECEIPT).write_bytes(make())
    result = run_cli("pick", str(dist), *ZEN4, "--json")
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr  # judged by its label, as without a receipt
    (warning,) = result.json()["warnings"]
    assert warning.startswith(f"receipt {dist / RECEIPT} not used: ") and said in warning


@pytest.mark.parametrize("case", ["nested-100k", "size-1e400", "size-5000-digits"])
def test_pick_sets_a_hostile_receipt_aside_over_http(case: str, dist: Path) -> None:
    make, said = HOSTILE[case]
    # A page that links the wheel and its receipt, which pick fetches.
    page = f'<a href="{quote(WHEEL)}">{WHEEL}</a>\n<a href="{quote(RECEIPT)}">{RECEIPT}</a>\n'
    (dist / "index.html").write_text(page, encoding="utf-8")
    (dist / RECEIPT).write_bytes(make())
    with served(dist) as url:
        result = run_cli("pick", f"{url}/index.html", *ZEN4, "--json")
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr
    (warning,) = result.json()["warnings"]
    assert warning.startswith(f"receipt {url}/{quote(RECEIPT)} not used: ") and said in warning


# --- a property: any change to a valid receipt reads back the same, or is one InputError ---------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


ORIGINAL = fixture_json()
PATHS = [p for p in _paths(ORIGINAL) if p]


def _check(raw: bytes) -> None:
    """``raw`` decodes to a receipt whose JSON reads back equal, or is one InputError."""
    try:
        receipt = decode_receipt(raw, source="the receipt")
    except InputError as exc:
        assert exc.exit_code == 3 and "\n" not in exc.line()
        return
    again = decode_receipt(json.dumps(receipt.to_json()).encode(), source="again")
    assert again == receipt
    # What readers ask never fails on a receipt that was read.
    assert isinstance(receipt.plan_intact(), bool)
    assert receipt.inputs_intact() in (True, False, None)
    assert all(isinstance(feature, str) for feature in receipt.covered)
    assert receipt.cuda is None or isinstance(receipt.cuda, str)
    assert isinstance(receipt.built_for, str)


@pytest.mark.slow  # 1,000 examples, each a receipt read twice
@settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(path=st.sampled_from(PATHS), value=JSON_VALUES, delete=st.booleans())
def test_a_changed_value_reads_back_the_same_or_is_an_input_error(
    path: tuple[Any, ...], value: Any, delete: bool
) -> None:
    data = copy.deepcopy(ORIGINAL)
    node = data
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    _check(json.dumps(data).encode())


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    at=st.integers(min_value=0, max_value=len(json.dumps(ORIGINAL)) - 1),
    cut=st.integers(min_value=0, max_value=8),
    put=st.binary(max_size=8),
)
def test_changed_bytes_read_back_the_same_or_are_an_input_error(
    at: int, cut: int, put: bytes
) -> None:
    text = json.dumps(ORIGINAL).encode()
    _check(text[:at] + put + text[at + cut :])


def test_the_plan_sha256_covers_the_plan_only_and_inputs_sha256_the_inputs(dist: Path) -> None:
    """An honest receipt written now carries both hashes; each covers its part."""
    receipt = read_receipt(dist / RECEIPT)
    sealed = Receipt.from_json({**receipt.to_json(), "inputs_sha256": receipt.inputs.sha256})
    assert sealed.inputs_intact() is True
    edited = sealed.to_json()
    edited["inputs"]["packages"]["zip"] = "3.0-12"  # a valid version, but not the one recorded
    assert Receipt.from_json(edited).inputs_intact() is False
    assert Receipt.from_json(edited).plan_intact()  # the plan does not cover the inputs
    assert canonical_sha256(edited["plan"]) == edited["plan_sha256"]


WITH_CANARY = {**fixture_json(), "canary": SECTION}
CANARY_PATHS = [p for p in _paths(WITH_CANARY) if p and p[0] == "canary"]


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(path=st.sampled_from(CANARY_PATHS), value=JSON_VALUES, delete=st.booleans())
def test_a_changed_canary_section_reads_back_the_same_or_is_an_input_error(
    path: tuple[Any, ...], value: Any, delete: bool
) -> None:
    """doctor's section, typed: any value anywhere in it (a verdict's, a smoke outcome's) reads
    into CanaryCheck and back, or is one InputError line; never a crash."""
    data = copy.deepcopy(WITH_CANARY)
    node = data
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    _check(json.dumps(data).encode())
