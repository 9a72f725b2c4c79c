"""Properties of the cpuinfo parser: any input is read or refused with an InputError (never another
exception), and a real dump cut anywhere is read with its whole flag set, read with fewer flags (a
one-block dump cut inside its flags line, the last line it may have), or refused as truncated."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.conftest import cpuinfo_fixtures
from tests.detect.test_cpuinfo_complete import multi_block
from tfbuild.core import serial
from tfbuild.core.errors import InputError
from tfbuild.detect import cpu
from tfbuild.detect.cpuinfo import (
    LONGER_LINUX_FLAGS,
    CpuInfo,
    flags_read,
    parse_cpuinfo,
    read_cpuinfo,
)

DUMPS = {p.name: p.read_text() for p in cpuinfo_fixtures()}
needs_dumps = pytest.mark.skipif(not DUMPS, reason="recorded cpuinfo dumps not found")

#: Every field name the real dumps use, and the lines themselves: inputs close to real ones reach
#: the parser's field readers instead of stopping at "not a cpuinfo dump".
KEYS = sorted({line.partition(":")[0].strip() for t in DUMPS.values() for line in t.splitlines()})
LINES = sorted({line for t in DUMPS.values() for line in t.splitlines()})

_values = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"-?[0-9.]{0,12}( [A-Za-z0-9_]{0,8}){0,3}", fullmatch=True),
)
_field = st.builds(
    lambda key, sep, value: f"{key}{sep}{value}",
    st.sampled_from(KEYS or ["processor"]) | st.text(max_size=12),
    st.sampled_from([":", "\t: ", "\t\t: ", " : "]),
    _values,
)
_line = _field | st.sampled_from(LINES or [""]) | st.just("") | st.text(max_size=30)
_dump_like = st.builds(
    lambda lines, ending: "\n".join(lines) + ending,
    st.lists(_line, max_size=40),
    st.sampled_from(["", "\n", "\n\n", "\r\n"]),
)


def _parse(text: str) -> CpuInfo | None:
    try:
        return parse_cpuinfo(text, source="x")
    except InputError:
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_dump_like)
def test_any_text_is_read_or_refused_as_an_input_error(text: str) -> None:
    info = _parse(text)
    if info is not None:
        # Whatever is read is usable: counts that become OMP_NUM_THREADS and jobs are positive.
        for count in (info.logical_cpus, info.physical_cores, info.sockets):
            assert count is None or count >= 1
        assert info.mhz is None or info.mhz >= 0
        serial.to_data(info)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000) | _dump_like.map(lambda t: t.encode("utf-8", "surrogatepass")))
@example(b"cpu family:\nflags:\nprocessor:")  # read, then written: once met a removed to_json()
def test_any_bytes_are_read_or_refused_as_an_input_error(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "node.cpuinfo"
        path.write_bytes(raw)
        try:
            info = read_cpuinfo(path)
        except InputError as exc:  # refused in one line; any other exception fails
            assert exc.exit_code == 3 and "\n" not in exc.line(), exc.line()
            return
    # Whatever is read is usable: counts that become OMP_NUM_THREADS and jobs are positive.
    for count in (info.logical_cpus, info.physical_cores, info.sockets):
        assert count is None or count >= 1
    json.dumps(serial.to_data(info))  # and it can be written as JSON (detect --json)


@needs_dumps
@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(sorted(DUMPS) or ["none"]),
    processors=st.sampled_from([1, 2, 4]),
    data=st.data(),
)
def test_a_real_dump_cut_anywhere_is_read_whole_or_refused(
    name: str, processors: int, data: st.DataObject
) -> None:
    text = DUMPS[name] if processors == 1 else multi_block(DUMPS[name], processors)
    full = parse_cpuinfo(text, source="x")
    cut = data.draw(st.integers(min_value=0, max_value=len(text)), label="cut")
    info = _parse(text[:cut])
    if info is not None:  # read: then with the whole dump's facts of the machine
        if info.flags != full.flags:  # only where a lone processor's flags line was cut
            assert info.processors_listed == 1
            _assert_safe_cut(info, full, text[:cut])
        assert (info.architecture, info.vendor, info.brand) == (
            full.architecture,
            full.vendor,
            full.brand,
        )
        assert (info.family, info.model, info.stepping, info.cpu_part) == (
            full.family,
            full.model,
            full.stepping,
            full.cpu_part,
        )


def _assert_safe_cut(info: CpuInfo, full: CpuInfo, cut: str) -> None:
    """What a dump cut inside its flags line may say: the flags before its last word, and that word
    only when it names no flag a decision reads; so a target the whole machine runs."""
    words = cut.splitlines()[-1].partition(":")[2].split()
    assert set(words[:-1]) <= info.flags <= set(words)
    extra = info.flags - full.flags  # at most the last word, cut from a longer one
    assert extra <= set(words[-1:])
    assert not extra & flags_read(), f"claims {extra & flags_read()}, which the machine lacks"
    dropped = bool(words) and words[-1] not in info.flags
    assert len(info.warnings) == dropped
    if dropped:
        assert f"its last token '{words[-1]}' may be cut" in info.warnings[0]
    assert cpu.why_not(cpu.identify(info), full).runs


X86 = sorted(n for n, t in DUMPS.items() if parse_cpuinfo(t, source="x").architecture == "x86_64")


@needs_dumps
@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(X86 or ["none"]), data=st.data())
def test_any_cut_of_a_flags_line_claims_no_flag_the_machine_lacks(
    name: str, data: st.DataObject
) -> None:
    """One processor block cut anywhere inside its flags line (archspec stores its dumps so, whole):
    read with a subset of the whole dump's read flags (refused only before 'lm', which tells x86-64
    from 32-bit x86), never a flag a decision reads that the whole dump lacks."""
    text = DUMPS[name].split("\n\n")[0]  # the first processor block
    full = parse_cpuinfo(text + "\n", source="x")
    start = text.index(":", text.index("\nflags")) + 1
    end = text.find("\n", start) % (len(text) + 1)  # the line's end, or the text's
    cut = text[: data.draw(st.integers(min_value=start, max_value=end), label="cut")]
    info = _parse(cut)
    if info is None:
        assert "lm" not in cut[start:].split()[:-1]
        return
    _assert_safe_cut(info, full, cut)
    assert info.architecture == full.architecture


def test_every_longer_linux_flag_the_dumps_name_is_known() -> None:
    """A recorded flag that starts with a read flag's name is read, or named in LONGER_LINUX_FLAGS:
    otherwise a cut inside it would claim the shorter flag."""
    read = flags_read()
    words = {
        word
        for text in DUMPS.values()
        for line in text.splitlines()
        if line.startswith(("flags", "Features"))
        for word in line.partition(":")[2].split()
    }
    unknown = sorted(
        word
        for word in words - read - LONGER_LINUX_FLAGS
        if any(word.startswith(short) for short in read)
    )
    assert unknown == []


@needs_dumps
@pytest.mark.parametrize("name", sorted(DUMPS))
def test_every_real_dump_without_its_final_newline_is_read_whole(name: str) -> None:
    for text in (DUMPS[name], multi_block(DUMPS[name], 2)):
        assert parse_cpuinfo(text.rstrip("\n"), source="x") == parse_cpuinfo(text, source="x")
