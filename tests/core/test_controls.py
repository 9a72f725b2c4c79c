"""tfbuild.core.controls: the one rule of what a line of text may hold, and its two uses (refuse a
value that must stay one line, clean text that is only shown)."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfbuild.core.controls import CONTROL, char_name, control_in, printable, printable_line

#: The nine characters of "Trojan Source" (CVE-2021-42574): embeddings, overrides, isolates.
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
#: Characters the rule leaves alone on purpose (tfbuild.core.controls says why).
LEFT_ALONE = "\u200b\u200c\u200d\u2060\ufeff\u200e\u200f\u061c"


def _every_character() -> str:
    return "".join(map(chr, range(sys.maxunicode + 1)))


def test_the_rule_is_exactly_the_controls_line_breaks_bidi_overrides_and_surrogates() -> None:
    expected = {
        char
        for char in _every_character()
        if unicodedata.category(char) in {"Cc", "Zl", "Zp", "Cs"} or char in BIDI
    }
    assert set(CONTROL.findall(_every_character())) == expected
    assert len(expected) == 65 + 2 + 9 + 2048


def test_every_line_break_python_knows_is_in_the_rule() -> None:
    """str.splitlines() splits on these: a value holding one is two lines to the next reader."""
    breaks = {c for c in _every_character() if len(f"a{c}b".splitlines()) == 2}
    assert breaks == set("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
    assert all(control_in(c) == c for c in breaks)


@pytest.mark.parametrize("char", list(LEFT_ALONE))
def test_zero_width_characters_and_bidi_marks_are_left_alone(char: str) -> None:
    text = f"x{char}y"
    assert control_in(text) is None
    assert printable(text) == text
    assert printable_line(text) == text


def test_control_in_names_the_first_one() -> None:
    assert control_in("plain text, é and 字") is None
    assert control_in("a\u202eb\nc") == "\u202e"
    assert control_in("tab\there") == "\t"
    assert control_in("\udce9") == "\udce9"


def test_char_name_names_a_character_without_holding_it() -> None:
    assert char_name("\u2028") == "U+2028 LINE SEPARATOR"
    assert char_name("\u202e") == "U+202E RIGHT-TO-LEFT OVERRIDE"
    assert char_name("\n") == "U+000A"
    assert char_name("\x9b") == "U+009B"


def test_printable_keeps_tab_and_newline_and_drops_what_a_terminal_obeys() -> None:
    text = "a\tb\nc\x1b[1;31md\x9b0me\x7f\u202ef\u2028g\r"
    assert printable(text) == "a\tb\ncdefg"


def test_printable_line_keeps_tab_only() -> None:
    colored = "\x1b[31m\x1b[1mERROR: \x1b[0mfoo\x07\r\x1b(B\tbar\x00\nbaz\u2029"
    assert printable_line(colored) == "ERROR: foo\tbarbaz"


@pytest.mark.parametrize(
    ("shown", "expected"),
    [
        ("\x1b]8;;http://evil\x07click\x1b]8;;\x07", "click"),  # OSC 8 link, BEL-terminated
        ("\x1b]0;title\x1b\\text", "text"),  # a window title, ST-terminated
        ("\x9d0;title\x9ctext", "text"),  # the same in its 8-bit form
        ("\x1bPq#0;2;0;0;0\x1b\\after", "after"),  # DCS (sixel)
        ("\x1b(Bcharset", "charset"),  # ESC, an intermediate byte, a final byte
        ("\x1b7saved\x1b8", "saved"),  # two-character escapes
        ("\x9b31mred", "red"),  # 8-bit CSI
        ("\x1b]0;no end\nnext line", "\nnext line"),  # unterminated: to the end of its line
    ],
)
def test_escape_sequences_go_whole(shown: str, expected: str) -> None:
    assert printable(shown) == expected


_NASTY = st.sampled_from(
    [*"\x1b\x9b\x9d\x90\x9c\x07\\[]();0m\t\n\r\x00\x7f\x85\u2028\u202e\u2066", "\udce9", "é", "x"]
)
TEXTS = st.one_of(
    st.text(st.characters(exclude_categories=())),  # every code point, surrogates included
    st.lists(_NASTY, max_size=30).map("".join),
)


@settings(max_examples=500, deadline=None)
@given(text=TEXTS)
def test_what_is_cleaned_holds_no_control_and_cleans_to_itself(text: str) -> None:
    shown, line = printable(text), printable_line(text)
    assert set(CONTROL.findall(shown)) <= {"\t", "\n"}
    assert set(CONTROL.findall(line)) <= {"\t"}
    assert printable(shown) == shown
    assert printable_line(line) == line
    assert printable_line(shown) == printable_line(text)


@settings(max_examples=500, deadline=None)
@given(text=TEXTS)
def test_a_line_that_is_not_refused_is_not_changed_by_cleaning(text: str) -> None:
    """Refuse and clean are one rule: what may stay one line is shown as it is."""
    if control_in(text) is None:
        assert printable(text) == text
        assert printable_line(text) == text
    elif set(CONTROL.findall(text)) != {"\t"}:  # a tab: refused in a value, kept on a shown line
        assert printable_line(text) != text
