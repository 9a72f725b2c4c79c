"""The consoles every printer uses: input text shown, never obeyed; the one text wrapper
(:func:`tfbuild.core.text.wrap`, here too) for their hanging lines."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.text import Text

from tfbuild.core.controls import printable
from tfbuild.core.text import wrap

# Text from inputs (a cpuinfo's model name, paths, file names, recipe fields, a wheel's METADATA,
# a build's log) is shown, never obeyed: every console here is a _SafeConsole, which removes what a
# terminal would act on (escape sequences, control characters) from every string it renders,
# markup templates included, and every input value goes into markup through safe(), so that "[/x]"
# or "[link=...]" in it prints as those characters instead of failing or becoming a link.


class _SafeConsole(Console):
    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(printable(text), **options)


def make_console(**options: Any) -> Console:
    """The console of every printer here: terminal controls removed, no ``:emoji:`` codes."""
    options.setdefault("emoji", False)
    return _SafeConsole(**options)


#: rich's own tag pattern (rich.markup.RE_TAGS): backslashes, then "[" and a tag.
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def _literal(text: str) -> str:
    """Markup that rich renders as exactly ``text``. rich.markup.escape is not that: rich drops
    the backslash of a "\\[" that starts no tag, and a trailing backslash escapes the tag after it."""
    parts: list[str] = []
    position = 0
    for match in _TAG.finditer(text):
        # Outside tags rich turns "\\[" into "[": one more backslash before each "[" keeps them.
        parts.append(text[position : match.start()].replace("[", "\\["))
        slashes, tag = match.groups()
        parts.append(f"{slashes}{slashes}\\{tag}")  # n literal backslashes, then the tag as text
        position = match.end()
    rest = text[position:]
    stripped = rest.rstrip("\\")
    parts.append(stripped.replace("[", "\\["))
    if len(rest) > len(stripped):  # trailing backslashes: doubled before an empty tag, they show
        parts.append("\\" * 2 * (len(rest) - len(stripped)) + "[default][/default]")
    return "".join(parts)


def safe(value: object) -> str:
    """An input's text for a markup string: terminal controls removed, markup shown literally, a
    tab a space (rich measures a tab as one column and prints it as eight: a table's title then
    wraps inside a word)."""
    return _literal(printable(str(value)).replace("\t", " "))


def print_hanging(
    console: Console, head: str, indent: int, text: str, *, head_width: int | None = None
) -> None:
    """``head`` (markup, ``head_width`` columns wide, default ``indent``), then ``text`` wrapped to
    the console's width with every further line indented ``indent`` columns (rich wraps none of it
    again)."""
    first = indent if head_width is None else head_width
    width = max(console.width, first + 30, indent + 30)
    lines = wrap(text, width, first=first, rest=indent) or [""]
    console.print(head + safe(lines[0]), soft_wrap=True)
    for line in lines[1:]:
        console.print(" " * indent + safe(line), soft_wrap=True)
