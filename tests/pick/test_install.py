"""`tfbuild pick --install`: pip installs the chosen stand-in wheel into a fresh virtual environment.

Offline: the stand-in wheels have no dependencies, and pip is told ``--no-deps --no-index`` through
``--pip-arg``. The wheels are tagged for the interpreter running the tests and for linux_x86_64.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import run_cli
from tests.pick.conftest import DIST, make_wheel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        platform.machine() != "x86_64" or not sys.platform.startswith("linux"),
        reason="the stand-in wheels are tagged linux_x86_64",
    ),
]

PY = f"cp{sys.version_info.major}{sys.version_info.minor}"
OFFLINE = ("--pip-arg=--no-deps", "--pip-arg=--no-index")
# x86_64 runs on every x86-64 machine; x86_64_v2 on nearly all; x86_64_v4 only with AVX-512.
LABELS = ("x86_64", "x86_64v2", "x86_64v4")


def installed_label(python: Path) -> str:
    code = f"import {DIST} as m; assert m.STANDIN; print(m.LABEL)"
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True, timeout=300)
    return target / "bin" / "python"


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("install-wheels")
    for label in LABELS:
        make_wheel(directory, f"{DIST}-2.21.0+{label}-{PY}-{PY}-linux_x86_64.whl")
    return directory


def test_install_from_a_directory(venv_python: Path, wheel_dir: Path) -> None:
    result = run_cli(
        "pick", str(wheel_dir), "--install", "--python", str(venv_python), *OFFLINE, "--json"
    )
    assert result.returncode == 0, result.stderr
    data = result.json()
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert data["host"]["python"] == python
    assert data["host"]["python_source"] == f"--python {venv_python}"
    assert data["install"]["returncode"] == 0
    assert data["install"]["command"][:4] == [str(venv_python), "-m", "pip", "install"]
    # What pip installed is the wheel pick chose (which one depends on this machine's CPU).
    label = data["chosen"]["label"]["text"]
    assert label in LABELS
    assert installed_label(venv_python) == label


def test_install_from_an_index_checks_the_sha256(
    venv_python: Path, wheel_dir: Path, http_root: tuple[Path, str]
) -> None:
    root, base = http_root
    wheel = wheel_dir / f"{DIST}-2.21.0+x86_64-{PY}-{PY}-linux_x86_64.whl"
    (root / wheel.name).write_bytes(wheel.read_bytes())
    good = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (root / "good.html").write_text(f'<a href="{quote(wheel.name)}#sha256={good}">w</a>')
    (root / "bad.html").write_text(f'<a href="{quote(wheel.name)}#sha256={"0" * 64}">w</a>')
    args = ("--install", "--python", str(venv_python), *OFFLINE)
    ok = run_cli("pick", f"{base}/good.html", *args, "--pip-arg=--force-reinstall")
    assert ok.returncode == 0, ok.stderr
    assert f"installed {wheel.name} into {venv_python}" in ok.stdout
    assert installed_label(venv_python) == "x86_64"
    # A link whose hash does not match: pip refuses, and its own words are shown.
    bad = run_cli("pick", f"{base}/bad.html", *args, "--pip-arg=--force-reinstall")
    assert bad.returncode == 5
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in bad.stderr
    assert bad.stderr.splitlines()[-1].startswith(
        f"tfbuild: error: pip could not install {wheel.name} into {venv_python}: pip exited with "
        "status 1"
    )


def test_an_interpreter_without_pip(tmp_path: Path, wheel_dir: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"
    result = run_cli("pick", str(wheel_dir), "--install", "--python", str(python), "--json")
    assert result.returncode == 5
    assert "No module named pip" in result.stderr  # pip's (here: Python's) output, shown
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"tfbuild: error: pip could not install {DIST}-2.21.0+")
    assert "No module named pip" in last
    install = result.json()["install"]  # the JSON is printed before the error
    assert install["returncode"] == 1
    assert any("No module named pip" in line for line in install["output"])


def test_install_from_a_local_page_has_pip_check_the_sha256(
    venv_python: Path, wheel_dir: Path, tmp_path: Path
) -> None:
    """A local page's link carries the sha256: pip is given the file's URL with it, and checks it."""
    dist = tmp_path / "dist"
    dist.mkdir()
    wheel = dist / f"{DIST}-2.21.0+x86_64-{PY}-{PY}-linux_x86_64.whl"
    wheel.write_bytes((wheel_dir / wheel.name).read_bytes())
    good = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (dist / "index.html").write_text(f'<a href="{quote(wheel.name)}#sha256={good}">w</a>')
    args = ("--install", "--python", str(venv_python), *OFFLINE, "--pip-arg=--force-reinstall")
    ok = run_cli("pick", str(dist / "index.html"), *args, "--json")
    assert ok.returncode == 0, ok.stderr
    assert ok.json()["install"]["command"][-1] == f"{wheel.as_uri()}#sha256={good}"
    # The file changed after the page was written: pip refuses it.
    wheel.write_bytes((wheel_dir / wheel.name.replace("x86_64-", "x86_64v2-")).read_bytes())
    bad = run_cli("pick", str(dist / "index.html"), *args)
    assert bad.returncode == 5
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in bad.stderr


def test_install_without_a_hash_only_when_allowed(
    venv_python: Path, wheel_dir: Path, http_root: tuple[Path, str]
) -> None:
    root, base = http_root
    wheel = wheel_dir / f"{DIST}-2.21.0+x86_64-{PY}-{PY}-linux_x86_64.whl"
    (root / wheel.name).write_bytes(wheel.read_bytes())
    (root / "unhashed.html").write_text(f'<a href="{quote(wheel.name)}">w</a>')
    args = ("--install", "--python", str(venv_python), *OFFLINE, "--pip-arg=--force-reinstall")
    refused = run_cli("pick", f"{base}/unhashed.html", *args)
    assert refused.returncode == 3
    assert "carries no #sha256=" in refused.stderr.splitlines()[-1]
    allowed = run_cli("pick", f"{base}/unhashed.html", *args, "--allow-unhashed")
    assert allowed.returncode == 0, allowed.stderr
    assert (
        f"tfbuild: warning: installing {wheel.name} without a hash check (--allow-unhashed): its "
        "link carries no #sha256=" in allowed.stderr.splitlines()
    )
    assert f"installed {wheel.name} into {venv_python}" in allowed.stdout
    assert installed_label(venv_python) == "x86_64"
