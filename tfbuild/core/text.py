"""The one text wrapper of every printer, and the width of a terminal: no rich here, so that an
error line or ``--json`` never loads it.

A line is broken between words, never inside one: a hash, a path or a file name longer than the
line runs over it (a terminal folds it softly, and copies it whole), and a command quoted in a
sentence (``tfbuild recipes verify 2.21``, ``sudo tfbuild base --suite noble``,
``python -c '...'``) is kept on one line, since a command pasted from two lines runs as two.
"""

from __future__ import annotations

import os
import textwrap
from typing import TextIO

#: Stands for a space inside a command while the text is wrapped (a private-use character).
_GLUE = "\ue000"
#: The programs whose commands are kept whole when a sentence quotes them.
_PROGRAMS = {"tfbuild", "python", "python3", "pip", "docker"}
#: The ends of a sentence that follow a command without belonging to it.
_PUNCTUATION = ".,;:)"
#: What makes a word an argument rather than prose: an option, a version, a path, a value.
_ARGUMENT_MARKS = set("-0123456789/.=@:*'\"")


def _argument(word: str, after_option: bool) -> bool:
    if not word or word[0] in "(":
        return False
    if word[0] == "-" or after_option:
        return True
    return any(c in _ARGUMENT_MARKS for c in word)


def _command_end(words: list[str], start: int) -> int:
    """The index after the last word of the command that starts at ``words[start]`` (a program
    name, or ``sudo`` before one), or ``start`` when none starts there."""
    at = start + (words[start].lstrip("('\"") == "sudo")
    if at >= len(words) - 1 or words[at].lstrip("('\"") not in _PROGRAMS:
        return start
    program, first = words[at].lstrip("('\""), words[at + 1]
    if program == "tfbuild":
        if not first.isalpha() or not first.islower():
            return start  # "tfbuild's", "tfbuild, which": prose
        end = at + 2
        if first == "recipes" and end < len(words) and words[end] in ("show", "verify"):
            end += 1
    elif first.startswith("-"):
        end = at + 1  # python -c '...', pip -m: the arguments follow
    else:
        return start
    quote = ""
    while end < len(words):
        word = words[end]
        if quote:  # inside a quoted argument: to the word that closes it
            end += 1
            if word.rstrip(_PUNCTUATION).endswith(quote):
                quote = ""
            continue
        core = word.rstrip(_PUNCTUATION)
        previous = words[end - 1]
        if not _argument(core, previous.startswith("--") and "=" not in previous):
            break
        end += 1
        if core[:1] in "'\"" and not (len(core) > 1 and core.endswith(core[0])):
            quote = core[0]
            continue
        if core != word:  # the sentence goes on after the command
            break
    return end


def _glued(text: str) -> str:
    """``text`` with the spaces inside each quoted command replaced by :data:`_GLUE`."""
    words = text.split(" ")
    out: list[str] = []
    at = 0
    while at < len(words):
        end = _command_end(words, at)
        if end - at > 1:
            out.append(_GLUE.join(words[at:end]))
            at = end
        else:
            out.append(words[at])
            at += 1
    return " ".join(out)


def wrap(text: str, width: int, *, first: int = 0, rest: int = 0) -> list[str]:
    """``text`` in lines of at most ``width`` columns after ``first`` columns on the first line and
    ``rest`` on the others (not included), broken between words (never at hyphens, never inside a
    command a sentence quotes); a word longer than the line (a path, a hash) runs over. No line for
    a blank text. Every printer wraps with this (a terminal's own
    wrap would start lines at column 0)."""
    lines = textwrap.wrap(
        _glued(text),
        width,
        initial_indent=" " * first,
        subsequent_indent=" " * rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line[first if i == 0 else rest :].replace(_GLUE, " ") for i, line in enumerate(lines)]


def terminal_width(stream: TextIO) -> int | None:
    """The columns of the terminal ``stream`` writes to (``$COLUMNS`` first, as rich and click
    read it), or None when it is no terminal: piped output is left whole, one line a line."""
    try:
        if not stream.isatty():
            return None
        fileno = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(fileno).columns or 80
    except OSError:
        return 80


def hanging(text: str, width: int | None, *, indent: int = 2) -> list[str]:
    """``text`` as lines of ``width`` columns, each after the first ``indent`` columns in, or the
    whole text as one line when ``width`` is None (not a terminal)."""
    if width is None:
        return [text]
    lines = wrap(text, max(width, indent + 20), rest=indent) or [""]
    return [(" " * indent if i else "") + line for i, line in enumerate(lines)]
