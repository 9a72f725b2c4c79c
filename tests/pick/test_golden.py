"""``tfbuild pick --json`` byte for byte: the stand-in wheels judged on recorded machines.

Regenerate after an intended change with TFBUILD_UPDATE_GOLDEN=1 (then read the diff).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CPUINFO_DIR, cpuinfo_fixture, in_json
from tests.goldens import GOLDEN_DIR, compare_or_write, json_text
from tfbuild.core import serial
from tfbuild.core.variants import Variant
from tfbuild.pick.install import InstallResult
from tfbuild.pick.listing import load_wheels
from tfbuild.pick.machine import describe_host
from tfbuild.pick.rank import PickOptions, pick
from tfbuild.pick.report import pick_report

GOLDEN = GOLDEN_DIR / "pick"

CASES = {
    "zen4": ("zen4", PickOptions(), None),
    "haswell-cuda": ("haswell", PickOptions(), "12.6"),
    "sapphirerapids-py312": ("sapphirerapids", PickOptions(tf="2.21"), None),
    "zen5-mkl": ("zen5-vm", PickOptions(variant=Variant.mkl), None),
    "zen3-old": ("zen3", PickOptions(tf="2.20"), None),
    "neoverse_n1": ("neoverse_n1", PickOptions(), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pick_json(case: str, standin_dir: Path) -> None:
    machine, options, driver_cuda = CASES[case]
    python = "3.12" if case.endswith("py312") else "3.11"
    host = describe_host(cpuinfo=cpuinfo_fixture(machine), python=python, driver_cuda=driver_cuda)
    result = pick(load_wheels(str(standin_dir)), host, options)
    installed = None
    if result.chosen is not None:
        installed = InstallResult(
            wheel=result.chosen.wheel.filename,
            python="/usr/bin/python3",
            command=("/usr/bin/python3", "-m", "pip", "install", result.chosen.wheel.location),
            returncode=0,
            output=("Processing ...", "Successfully installed tfbuild_standin-2.21.0"),
        )
    data = serial.to_data(pick_report(result, installed))  # as the CLI prints it (pick --json)
    text = json_text(data)
    text = text.replace(in_json(standin_dir), "<wheels>").replace(in_json(CPUINFO_DIR), "<cpuinfo>")
    compare_or_write(GOLDEN / f"{case}.json", text)
