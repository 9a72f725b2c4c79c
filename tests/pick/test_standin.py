"""`tfbuild pick` marks STAND-IN wheels (the canary's, not TensorFlow) in its table and its JSON, as
`tfbuild index` and `tfbuild wheel` do: by the receipt's ``standin``, and when no receipt says so
by the canary's own name (``tfbuild_canary``) or, for a canary built before it had one, its version
label."""

from __future__ import annotations

import re
from pathlib import Path

from tests import receipts
from tests.conftest import cpuinfo_fixture, run_cli
from tests.pick.conftest import DIST, V3_FEATURES, make_wheel, write_receipt
from tfbuild.recipes.canary import TREE
from tfbuild.wheel.labels import STANDIN_LABEL, parse_label

CANARY = "tfbuild_canary-0.0.0+tfbuild.canary.x86_64v4-py3-none-linux_x86_64.whl"
#: A canary of before it had a name of its own: its version label says what it is.
OLD_CANARY = "tensorflow_cpu-0.0.0+tfbuild.canary.x86_64v4-py3-none-linux_x86_64.whl"
MARKED = f"{DIST}-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.whl"  # receipt: standin true
PLAIN = f"{DIST}-2.21.0+x86_64v2-cp311-cp311-linux_x86_64.whl"  # receipt: standin false


def wheels(directory: Path) -> Path:
    directory.mkdir()
    make_wheel(directory, CANARY)  # no receipt: its name says what it is
    make_wheel(directory, OLD_CANARY)  # no receipt: its version label does
    write_receipt(make_wheel(directory, MARKED), "x86_64_v3", V3_FEATURES, "-march=x86-64-v3")
    receipts.write_receipt(make_wheel(directory, PLAIN), target="x86_64_v2", label="x86_64v2")
    return directory


def test_json_says_which_wheels_are_stand_ins(tmp_path: Path) -> None:
    dist = wheels(tmp_path / "dist")
    zen4 = str(cpuinfo_fixture("zen4"))
    result = run_cli("pick", str(dist), "--cpuinfo", zen4, "--python", "3.11", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert {w["filename"]: w["standin"] for w in data["wheels"]} == {
        CANARY: True,
        OLD_CANARY: True,
        MARKED: True,
        PLAIN: False,
    }
    assert data["chosen"]["filename"] == MARKED and data["chosen"]["standin"] is True
    # tfbuild index says the same, by the receipt where there is one, else by the name.
    index = run_cli("index", str(dist), "--json")
    assert index.returncode == 0, index.stderr
    by_index = {e["name"]: e["standin"] for e in index.json()["wheels"]}
    assert by_index == {CANARY: True, OLD_CANARY: True, MARKED: True, PLAIN: False}


def test_the_table_marks_them(tmp_path: Path) -> None:
    dist = wheels(tmp_path / "dist")
    zen4 = str(cpuinfo_fixture("zen4"))
    result = run_cli("pick", str(dist), "--cpuinfo", zen4, "--python", "3.11")
    assert result.returncode == 0, result.stderr
    assert f"chosen: {MARKED}  (STAND-IN canary, not TensorFlow)" in result.stdout
    rows = {
        name: line for line in result.stdout.splitlines()
        for name in (CANARY, OLD_CANARY, MARKED, PLAIN)
        if name in line and not line.startswith("chosen")
    }  # fmt: skip
    assert "STAND-IN" in rows[CANARY]
    assert "STAND-IN" in rows[OLD_CANARY]
    assert "STAND-IN" in rows[MARKED]
    assert "STAND-IN" not in rows[PLAIN]


def test_the_label_marker_is_the_canarys_own_version() -> None:
    """The canary's wheel packer writes the version the marker is read from."""
    packer = TREE / "tensorflow" / "tools" / "pip_package"
    script = (packer / "pack_wheel.py").read_text()
    found = re.search(r'^VERSION = "([^"]+)"$', script, re.MULTILINE)
    assert found is not None
    public, _, local = found.group(1).partition("+")
    assert public == "0.0.0"
    assert parse_label(local).other == STANDIN_LABEL


def test_the_name_marker_is_the_canarys_own_wheel_name() -> None:
    """The plan names the canary's wheel (WHEEL_NAME, which its wheel rule takes), and that name
    is the one a stand-in is known by: never a TensorFlow's."""
    from tfbuild.core.defaults import STANDIN_WHEEL
    from tfbuild.plan.bazel import WHEEL_NAMES
    from tfbuild.wheel.labels import is_standin_name

    result = run_cli("plan", "--canary", "--json", "--skip-disk-check", "--base-image", "debian-12")
    assert result.returncode == 0, result.stderr
    plan = result.json()
    assert plan["wheel_name"] == STANDIN_WHEEL == "tfbuild_canary"
    assert f"build --repo_env=WHEEL_NAME={STANDIN_WHEEL}" in plan["rc_lines"]
    assert STANDIN_WHEEL not in WHEEL_NAMES
    assert is_standin_name(CANARY) and is_standin_name(OLD_CANARY)
    assert not is_standin_name(MARKED) and not is_standin_name(PLAIN)
    assert not is_standin_name("tensorflow_cpu-0.0.0+x86_64v4-py3-none-linux_x86_64.whl")
