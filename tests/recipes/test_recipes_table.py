"""``tfbuild recipes`` as a newcomer reads it: whether each recipe was checked against its release's
own files, in words and a count, whole in an 80-column terminal, the footer saying what it means."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tfbuild.recipes.recipe import VERIFIED_PARTS

MODEL = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
NO_RECORD = MODEL[: MODEL.index("\nverified:") + 1]
ALL_READ = (
    NO_RECORD
    + "verified:\n  date: 2027-01-05\n"
    + "".join(
        f"  {part}: 'read: the v2.21.0 tarball (tfbuild recipes verify)'\n"
        for part in VERIFIED_PARTS
    )
)
SOME_READ = NO_RECORD + (
    "verified:\n  date: 2027-01-05\n  bazel: 'read: .bazelversion of the v2.21.0 tarball'\n"
    "  configs: 'not verified: inferred'\n  cuda: 'cited: the docs'\n"
)


def _rows(text: str) -> dict[str, str]:
    """Each recipe's row: its version and its last column (the words after the CUDA column)."""
    rows = {}
    for line in text.splitlines():
        words = line.split()
        if words and words[0].startswith("2."):
            cuda = next(i for i, w in enumerate(words) if "/" in w)
            rest = words[cuda + 1 :]
            rows[words[0]] = " ".join(rest[1:] if rest[:1] == ["(h)"] else rest)
    return rows


def test_every_shipped_recipe_says_it_was_not_yet_checked_and_the_footer_says_what_that_means() -> (
    None
):
    listed = run_cli("recipes", "--json").json()["recipes"]
    shown = run_cli("recipes", env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, shown.stdout
    assert "…" not in shown.stdout  # nothing cut to fit
    (header,) = [line for line in lines if line.startswith("TF ")]
    assert header.split()[-1] == "checked"
    parts = len(VERIFIED_PARTS)
    # None is read yet (tests/build/preflight/test_preflight.py holds every shipped recipe to that).
    assert _rows(shown.stdout) == {r["tensorflow"]: f"no (0 of {parts})" for r in listed}
    footer = " ".join(shown.stdout.split())
    assert (
        f"checked: whether the recipe was checked against the release's own files; no (0 of "
        f"{parts}): none of the {parts} parts its verified record names was read there" in footer
    )
    assert "tfbuild recipes verify VERSION checks it (it downloads the release)" in footer


@pytest.mark.parametrize(
    ("text", "checked"),
    [
        (ALL_READ, f"yes ({len(VERIFIED_PARTS)} of {len(VERIFIED_PARTS)})"),
        (SOME_READ, "some (1 of 3)"),
        (NO_RECORD, "no record"),
    ],
    ids=["all-read", "some-read", "no-record"],
)
def test_a_users_recipe_says_how_far_it_was_checked(
    tmp_path: Path, text: str, checked: str
) -> None:
    (tmp_path / "tf-2.21.yaml").write_text(text)
    shown = run_cli("recipes", "--recipes-dir", str(tmp_path), env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    table = shown.stdout.split("\nfrom a user directory")[0]
    assert max(len(line.rstrip()) for line in table.splitlines()) <= 80, shown.stdout
    assert "…" not in shown.stdout
    rows = _rows(shown.stdout)
    assert rows["2.21.0"] == checked
    assert rows["2.20.0"] == f"no (0 of {len(VERIFIED_PARTS)})"  # the shipped ones, beside it
    # The path on one line, whole, however long (one to copy, not to read wrapped).
    assert f"from a user directory: {tmp_path / 'tf-2.21.yaml'}" in shown.stdout.splitlines()
