"""Properties of the display's escaping: for any text from an input, what reaches the terminal holds
no escape sequence, BEL or C1 character but rich's own styling, and shows the text literally (its
terminal controls removed), whatever markup it holds."""

from __future__ import annotations

import io
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tfbuild.cli.console import make_console as _console
from tfbuild.cli.console import safe
from tfbuild.core.controls import printable

_SGR = re.compile(r"\x1b\[[0-9;]*m")
_OSC8 = re.compile(r"\x1b\]8;[^\x1b\x07]*(?:\x1b\\|\x07)")  # rich's own links: none here

#: Text that looks like what attacks a terminal or rich: markup tags, escapes, controls, emoji codes.
_pieces = st.sampled_from(
    [
        "[/x]", "[link=http://e]", "[bold]", "[/]", "[red]", "\\", "\\[", "[", "]", ":smile:",
        "\x1b", "\x1b[31m", "\x1b]8;;http://evil\x07", "\x1b]0;title\x1b\\", "\x1bP", "\x07",
        "\x9b", "\x9d", "\x85", "\r", "\b", "\t", "\n", "\x7f", "\u202e", "\u2066", "x", " ", "é",
        "字",
    ]
)  # fmt: skip
_texts = st.one_of(
    st.text(),
    st.lists(_pieces | st.text(max_size=5), max_size=20).map("".join),
)


def _shown(template: str, text: str, *, terminal: bool) -> str:
    """Print ``template`` around ``text`` the way every printer in tfbuild.cli does."""
    buffer = io.StringIO()
    console = _console(
        file=buffer,
        force_terminal=terminal,
        color_system="truecolor" if terminal else None,
        width=100_000,
        soft_wrap=True,
        highlight=True,  # the highlighter styles, never changes the text
    )
    console.print(template.format(safe(text)))
    return buffer.getvalue()


def _words(text: str) -> list[str]:
    # rich expands tabs to the next tab stop: whitespace is compared as word breaks.
    return text.split()


@settings(max_examples=500, deadline=None)
@given(text=_texts, terminal=st.booleans())
def test_printed_input_text_is_shown_literally_and_never_obeyed(text: str, terminal: bool) -> None:
    out = _shown("[bold]value[/bold]: {} [dim](end)[/dim]", text, terminal=terminal)
    if terminal:
        out = _SGR.sub("", out)
    assert not _OSC8.search(out), "a link was made from input"
    assert "\x1b" not in out
    assert "\x07" not in out
    assert not re.search("[\x80-\x9f]", out)
    assert _words(out) == _words(f"value: {printable(text)} (end)")


@settings(max_examples=200, deadline=None)
@given(text=_texts)
@example(text="\t\t00000000")  # a tab rich measured as 1 column and printed as 8
def test_table_cells_and_titles_are_safe(text: str) -> None:
    from rich.table import Table

    buffer = io.StringIO()
    console = _console(file=buffer, force_terminal=True, color_system="truecolor", width=100_000)
    table = Table(title=safe(text), show_header=False, box=None)
    table.add_column("what")
    table.add_column("value", no_wrap=True)
    table.add_row("model", safe(text))
    console.print(table)
    out = _SGR.sub("", buffer.getvalue())
    assert "\x1b" not in out and "\x07" not in out
    assert not re.search("[\x80-\x9f]", out)
    shown = printable(text)
    if shown.strip() and "\n" not in shown:
        assert " ".join(_words(shown)) in " ".join(_words(out))


def test_printable_keeps_text_and_drops_what_a_terminal_obeys() -> None:
    hostile = "[/x][link=http://e]\x1b]8;;http://evil\x07click\x1b[31m"
    assert printable(hostile) == "[/x][link=http://e]click"
    assert printable("a\tb\nc\x1b[1;31md\x9b0me\x7f\u202ef") == "a\tb\ncdef"
    assert safe("[/x]") == "\\[/x]"
