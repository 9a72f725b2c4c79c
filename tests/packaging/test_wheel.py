"""What ships: a plain (non-editable) install of tfbuild's wheel finds templates/ and recipes/."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import tfbuild
from tests.conftest import ROOT


def test_wheel_ships_data_and_a_clean_install_finds_it(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
    )
    (wheel,) = tmp_path.glob("tfbuild-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "tfbuild/_data/templates/README.md" in names
    assert "tfbuild/_data/recipes/README.md" in names
    assert "tfbuild/py.typed" in names
    # Data the package runs from files, not imports: the smoke worker, the canary tree.
    # every script run in another interpreter or system (tfbuild/scripts: the smoke worker, the
    # canary's probe in the toolchain container, the load probe of smoke --in-image)
    scripts = Path(tfbuild.__file__).parent / "scripts"
    assert {f"tfbuild/scripts/{s.name}" for s in scripts.glob("*.py")} <= set(names)
    assert "tfbuild/recipes/canary/tree/src/kernel.c" in names
    assert (
        "tfbuild/recipes/canary/tree/tensorflow/tools/pip_package/BUILD" in names
    )  # the source marker
    assert (
        "tfbuild/recipes/canary/tree/src/runtime.cc" in names
    )  # the canary's C++ part (its floor)
    # The canary's bazel workspace (Debian's bazel builds it in the toolchain image).
    assert {"tfbuild/recipes/canary/tree/WORKSPACE", "tfbuild/recipes/canary/tree/.bazelrc"} <= set(
        names
    )
    packer = zipfile.ZipFile(wheel).getinfo(
        "tfbuild/recipes/canary/tree/tensorflow/tools/pip_package/pack_wheel.py"
    )
    assert (packer.external_attr >> 16) & 0o111, "the canary's wheel packer must stay executable"

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # Install without dependencies into the clean venv: resources must not need them.
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "install", "--quiet",
         "--no-deps", str(wheel)],
        check=True,
    )  # fmt: skip
    probe = (
        "from tfbuild.core.resources import data_dir\n"
        "for name in ('templates', 'recipes'):\n"
        "    print(data_dir(name))\n"
    )
    out = subprocess.run(
        [str(venv / "bin/python"), "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},  # the clean venv's alone
    ).stdout.split()
    assert out == [
        str(p) for p in sorted(venv.glob("lib/python*/site-packages/tfbuild/_data/*"), reverse=True)
    ]
