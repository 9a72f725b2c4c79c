"""The README and docs/ link to each other: every relative link resolves, and every #anchor names
a heading of the page it points to (GitHub's heading ids). No network: web links are not followed."""

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s>]+(?:\([^()\s]*\)[^()\s>]*)*)>?")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where a link is only text."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """GitHub's ids for the headings of a page: lowercased, punctuation dropped, spaces to
    hyphens, a repeated id suffixed -1, -2..."""
    seen: Counter[str] = Counter()
    ids = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        words = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        slug = re.sub(r"[^\w\- ]", "", words.lower()).replace(" ", "-")
        ids.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    return ids


def links(page: Path) -> list[str]:
    return LINK.findall(_prose(page.read_text(encoding="utf-8")))


def broken(page: Path) -> list[str]:
    found = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # http(s), mailto: the web is not checked here
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists() or not where.is_relative_to(ROOT):
            found.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            found.append(f"{target}: no heading #{anchor} in {where.relative_to(ROOT)}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_every_docs_page_is_linked_from_the_readme_or_the_docs_index() -> None:
    linked = {
        (page.parent / target.partition("#")[0]).resolve()
        for page in (ROOT / "README.md", ROOT / "docs" / "index.md")
        for target in links(page)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE)
    }
    assert [page.name for page in PAGES[1:] if page.resolve() not in linked] == []


def test_the_readme_is_the_first_screen_not_the_reference() -> None:
    """The issue's bound: the README says what to run first; the reference lives in docs/."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


def test_the_checker_sees_links_and_headings(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(
        "# Title\n## `tfbuild wheel --from-receipt`\n## Same\n## Same\n"
        "[ok](b.md#the-b) [x](#title) [gone](c.md) [no](b.md#nope) [web](https://x.y/z)\n"
        "`[code](c.md)`\n```\n[fenced](c.md)\n```\n"
    )
    (tmp_path / "b.md").write_text("# The B\n")
    assert anchors(tmp_path / "a.md") == {"title", "tfbuild-wheel---from-receipt", "same", "same-1"}
    assert links(tmp_path / "a.md") == [
        "b.md#the-b",
        "#title",
        "c.md",
        "b.md#nope",
        "https://x.y/z",
    ]
