"""What a line of text may hold, wherever tfbuild puts it: a rendered file (the Dockerfile, the rc
file, build.sh, runtime.env), a receipt, a terminal, a log.

One rule, :data:`CONTROL`, names the characters no single line may hold. Each boundary asks it one
of two questions, so that what one boundary accepts passes every other unchanged:

- refuse: a value that must stay one line (a plan's value, a receipt's text) holds none of them;
  :func:`control_in` names the first one it holds, for the message that refuses it.
- clean: text from an input that is only shown loses them, and the escape sequences they start:
  :func:`printable` for a message (tab and newline kept: a message may have lines),
  :func:`printable_line` for one line (tab kept).

The characters of :data:`CONTROL`, each with its reason:

- C0, U+0000 to U+001F. NUL ends a C string; LF, CR, VT, FF and FS, GS, RS end a line (for a
  shell, a Dockerfile, bazel's rc parser, ``str.splitlines``); ESC starts the escape sequences a
  terminal obeys; BEL, BS and the rest act on a terminal instead of showing. Tab too: no value
  tfbuild writes holds one (a shown line keeps its tabs).
- DEL, U+007F: no text holds it, and some terminals erase with it.
- C1, U+0080 to U+009F: NEL (U+0085) ends a line for YAML and ``str.splitlines``; CSI (U+009B),
  OSC (U+009D), DCS (U+0090) and ST (U+009C) are the 8-bit forms of escape sequences, obeyed by
  terminals that take 8-bit controls.
- U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR: they end a line for ``str.splitlines``,
  YAML and JavaScript, so a value holding one is two lines to the next reader.
- The bidirectional embeddings and overrides, U+202A to U+202E, and isolates, U+2066 to U+2069:
  they reorder what is shown, so that a line reads as something other than it is ("Trojan
  Source", CVE-2021-42574: the nine characters of that paper).
- Lone surrogates, U+D800 to U+DFFF: not characters; UTF-8 cannot encode them, so writing one to a
  file or a terminal fails (``os.fsdecode`` makes one of each byte of a name that is not UTF-8).

Left out, on purpose: the zero-width characters (U+200B to U+200D, U+2060), U+FEFF and the bidi
marks (U+200E, U+200F, U+061C). They end no line and drive no terminal, and a mark only sets the
direction of the neutral characters beside it; ZWJ and ZWNJ belong to Persian, the Indic scripts
and emoji, and the marks to how right-to-left names are written. That a value may look like another is the business
of each field's own grammar (names, paths, flags and versions are ASCII there), not of this rule.

Standard library only: every package, ``core.errors`` first, uses it.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["CONTROL", "char_name", "control_in", "printable", "printable_line"]

#: The characters no single line may hold (the module's docstring says why each).
CONTROL = re.compile(
    r"["
    r"\x00-\x1f\x7f"  # C0, DEL
    r"\x80-\x9f"  # C1
    r"\u2028\u2029"  # line and paragraph separators
    r"\u202a-\u202e\u2066-\u2069"  # bidi embeddings, overrides, isolates
    r"\ud800-\udfff"  # lone surrogates
    r"]"
)

#: The escape sequences a terminal obeys, removed whole before the characters that start them:
#: CSI (``ESC [`` or U+009B, parameters, intermediates, a final byte); the string sequences OSC,
#: DCS, SOS, PM and APC (``ESC ] P X ^ _`` or their C1 forms, to BEL or ST; OSC 8 hyperlinks and
#: window titles among them), an unterminated one to the end of its line; and ``ESC``, its
#: intermediate bytes and a final byte (ECMA-35: ``ESC ( B``, ``ESC 7``).
_SEQUENCE = (
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
_NOT_IN_A_MESSAGE = re.compile(rf"{_SEQUENCE}|(?![\t\n]){CONTROL.pattern}")
_NOT_IN_A_LINE = re.compile(rf"{_SEQUENCE}|(?!\t){CONTROL.pattern}")


def control_in(text: str) -> str | None:
    """The first character of ``text`` that no single line may hold (:data:`CONTROL`), or None:
    for a value that must stay one line, refused when this is not None."""
    found = CONTROL.search(text)
    return None if found is None else found.group()


def char_name(char: str) -> str:
    """``char`` as a message names it without holding it: ``U+2028 LINE SEPARATOR``, ``U+000A``
    (a control character has no name)."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {name}" if name else f"U+{ord(char):04X}"


def printable(text: str) -> str:
    """``text`` without anything a terminal or a log reader would act on (escape sequences and
    :data:`CONTROL` but tab and newline): for every string from an input before it is shown."""
    return _NOT_IN_A_MESSAGE.sub("", text)


def printable_line(text: str) -> str:
    """``text`` as one line: :func:`printable`, and without line breaks too (tab kept): for a
    line of a build's or a process's output, shown or matched."""
    return _NOT_IN_A_LINE.sub("", text)
