"""Properties of ``tfbuild index`` over any directory: it refuses, or it writes only well-formed lines.

For any set of file names drawn from a broad alphabet (controls, spaces, markup, quotes, non-ASCII,
bytes that are not UTF-8), with wheel-like and junk contents, :func:`write_index` either raises
:class:`InputError` or :class:`UsageError` and leaves no file behind, or writes a SHA256SUMS whose
every line is ``<64 hex>  <name>`` with a valid wheel name (each the true sha256 of that file) and an
index.html whose names and links appear only escaped.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import tempfile
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from tests.wheels import pack
from tfbuild.core.errors import InputError, UsageError
from tfbuild.wheel.index import DEFAULT_TITLE, INDEX_NAME, SUMS_NAME, WHEEL_NAME, write_index

SUMS_LINE = re.compile(r"([0-9a-f]{64})  (.+)")
ALLOWED_TAGS = {
    *("html", "head", "meta", "title", "style", "body", "h1", "p", "code", "table"),
    *("thead", "tbody", "tr", "th", "td", "a", "strong"),
}

#: Broad on purpose: every character a Linux file name may hold (not "/" or NUL) is possible, and
#: the ones that broke things before (newline, ESC, quotes, markup, "%", "#", spaces) come often.
_ANY = st.characters(exclude_characters="/\x00", exclude_categories=["Cs"])
_NASTY = st.sampled_from([*"\n\r\t\x1b\x07 <>&\"'%#?\\\u202e\u00e9", "\udce9"])
_TEXT = st.text(st.one_of(_ANY, _NASTY, st.sampled_from("abc_.+019")), min_size=1, max_size=12)


#: Names that are fine, so that a good share of the examples get past the refusals.
_GOOD_NAMES = st.builds(
    "{}-{}-{}.whl".format,
    st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from(["1.0", "2.21.0+x86_64v4", "2.20.0+zen4.cu125", "0.1.dev3"]),
    st.sampled_from(["py3-none-any", "cp311-cp311-linux_x86_64", "1_b-cp312-cp312-linux_aarch64"]),
)


@st.composite
def hostile_names(draw: st.DrawFn) -> str:
    """A wheel-like name with any component made hostile, or any text at all, ending in .whl."""
    parts = [
        draw(st.one_of(st.just("tfbuild_standin"), _TEXT)),
        draw(st.one_of(st.just("2.21.0+x86_64v4"), st.just("1.0"), _TEXT)),
        *draw(st.lists(_TEXT, max_size=1)),  # a build tag, sometimes
        draw(st.one_of(st.just("py3-none-any"), st.just("cp311-cp311-linux_x86_64"), _TEXT)),
    ]
    name = draw(st.one_of(st.just("-".join(parts)), _TEXT)) + ".whl"
    return name if len(os.fsencode(name)) <= 255 else name[-200:]


def _wheel_bytes(path: Path, kind: str) -> None:
    if kind == "wheel":
        pack(
            path,
            {
                "x-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
                "x/__init__.py": b"",
            },
        )
    elif kind == "zip":
        pack(path, {"x/__init__.py": b""})
    else:
        path.write_bytes(b"" if kind == "empty" else b"not a zip\n")


class _Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "a":
            self.hrefs.append(dict(attrs)["href"] or "")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    good=st.dictionaries(_GOOD_NAMES, st.just("wheel"), min_size=1, max_size=3),
    hostile=st.dictionaries(
        st.one_of(hostile_names(), _GOOD_NAMES),
        st.sampled_from(["wheel", "zip", "empty", "junk"]),
        max_size=2,
    ),
    title=st.one_of(st.none(), st.text(st.one_of(_ANY, _NASTY), max_size=20)),
)
@example(good={"tfbuild_canary-1.0-py3-none-any.whl": "wheel"}, hostile={}, title="0\r")
def test_index_refuses_or_writes_only_wellformed_lines(
    good: dict[str, str], hostile: dict[str, str], title: str | None
) -> None:
    files = good | hostile
    with tempfile.TemporaryDirectory() as temp:
        directory = Path(temp)
        for name, kind in files.items():
            if name.startswith(".") or name in (INDEX_NAME, SUMS_NAME):
                continue
            _wheel_bytes(directory / name, kind)
        listed = sorted(p.name for p in directory.iterdir())
        try:
            result = write_index(directory, title=title)
        except (InputError, UsageError) as exc:
            event("refused")
            # A refusal writes nothing, leaves nothing, and its line is terminal-safe.
            assert sorted(p.name for p in directory.iterdir()) == listed
            assert "\n" not in exc.line()
            assert not any(c in exc.line() for c in "\x1b\x07\r\u202e\udce9")
            return
        # Bytes decoded as they are: read_text() would turn a title's "\r" into "\n".
        sums = (directory / SUMS_NAME).read_bytes().decode("utf-8")
        page_text = (directory / INDEX_NAME).read_bytes().decode("utf-8")
        real = {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in directory.iterdir()
            if p.name not in (INDEX_NAME, SUMS_NAME)
        }
    event("written")
    lines = sums.splitlines()
    assert sums.endswith("\n") and len(lines) == len(result.entries) >= 1
    published = []
    for line in lines:
        match = SUMS_LINE.fullmatch(line)
        assert match, repr(line)
        digest, name = match.groups()
        assert WHEEL_NAME.fullmatch(name), repr(name)
        published.append((name, digest))
    # Every line names a real wheel that was there, with that file's own sha256, and every file
    # named like a wheel is listed (nothing skipped quietly).
    assert dict(published) == {n: real[n] for n in real if n.endswith(".whl")}
    assert all(files[name] == "wheel" for name, _digest in published)
    by_name = {e.name: e.sha256 for e in result.entries}
    page = _Page(page_text)
    assert set(page.tags) <= ALLOWED_TAGS
    assert sorted(urllib.parse.unquote(h.partition("#")[0]) for h in page.hrefs) == sorted(by_name)
    # The title (the default for one that is only whitespace) appears only escaped.
    assert result.title == (title if title and title.strip() else DEFAULT_TITLE)
    escaped = html.escape(result.title, quote=True)
    assert f"<title>{escaped}</title>" in page_text
    assert result.title == escaped or f"<title>{result.title}</title>" not in page_text
