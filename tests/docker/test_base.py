"""`tfbuild base`: the debootstrap-made base image, reused by tag, and its refusals."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tfbuild.build.base_images import make_base_image
from tfbuild.core.errors import UsageError

pytestmark = pytest.mark.docker


def test_the_base_image_is_reused_by_tag(engine: Any, base_image: str) -> None:
    result = make_base_image(engine, suite="bookworm", tag=base_image)
    assert result.created is False
    assert result.image_id == engine.image_id(base_image)


def test_the_base_image_has_what_the_pipeline_needs(engine: Any, base_image: str) -> None:
    out = engine.run(
        base_image, ["sh", "-c", "gcc --version; python3 --version; objdump --version"]
    )
    assert out.exit_code == 0


def test_cli_reports_reuse(base_image: str) -> None:
    result = run_cli("base", "--suite", "bookworm", "--tag", base_image)
    assert result.returncode == 0, result.stderr
    assert "already there, reused" in result.stdout


def test_unknown_suite_is_a_usage_error(engine: Any) -> None:
    with pytest.raises(UsageError, match="unknown --suite 'buster-backports'"):
        make_base_image(engine, suite="buster-backports", tag="tfbuild-test/none:never")


def test_the_image_came_from_debootstrap_not_a_registry(engine: Any, base_image: str) -> None:
    labels = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", base_image],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert '"org.tfbuild.base":"bookworm"' in labels


def test_no_engine_is_one_line_and_exit_5() -> None:
    result = run_cli("base", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.returncode == 5, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "cannot reach the Docker engine at unix:///nonexistent/docker.sock" in lines[0]
    assert "Traceback" not in result.stderr


def test_plan_and_render_take_a_local_base_image(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    """--base-image names a `tfbuild base` image for plan and render too: looked up on the engine,
    its id pinned in the plan and the Dockerfile (a re-made base image rebuilds the toolchain)."""
    import json

    planned = run_cli("plan", "--canary", "--base-image", base_image, "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    image_id = engine.image_id(base_image)
    assert plan["base_image"]["reference"] == base_image
    assert plan["base_image"]["image_id"] == image_id
    assert plan["canary"] is True
    out = tmp_path / "ctx"
    rendered = run_cli("render", "--canary", "--base-image", base_image, "-o", str(out))
    assert rendered.returncode == 0, rendered.stderr
    assert image_id in (out / "Dockerfile").read_text()


def test_an_unknown_base_image_names_both_places_it_looked(engine: Any) -> None:
    result = run_cli("plan", "--base-image", "tfbuild/base:no-such-suite", "--json")
    assert result.returncode == 4, result.stderr
    assert "neither an entry of base-images.yaml" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("fixture", "suite", "python", "glibc"),
    [("old_base_image", "bullseye", "3.9", "2.31"), ("new_base_image", "trixie", "3.13", "2.41")],
)
def test_plan_takes_every_suite_tfbuild_base_makes_with_its_facts(
    request: pytest.FixtureRequest, engine: Any, fixture: str, suite: str, python: str, glibc: str
) -> None:
    """Not only the suites a recipe builds on: bullseye's facts come from its own entry."""
    import json

    image = request.getfixturevalue(fixture)
    planned = run_cli("plan", "--tf", "2.20", "--base-image", image, "--json")
    assert planned.returncode == 0, planned.stderr
    base = json.loads(planned.stdout)["base_image"]
    assert (base["suite"], base["python"], base["glibc"]) == (suite, python, glibc)
    assert base["image_id"] == engine.image_id(image)


def _can_debootstrap() -> None:
    import os
    import shutil

    from tests.docker.conftest import IN_CI

    if os.geteuid() == 0 and shutil.which("debootstrap"):
        return
    message = "tfbuild base needs root and debootstrap here"
    if IN_CI:
        pytest.fail(f"CI runs as root with debootstrap (.ci/run): {message}")
    pytest.skip(message)


def test_noble_is_prepared_on_this_host_and_an_unreachable_mirror_is_its_fault(
    engine: Any,
) -> None:
    """The script and keyring noble needs are found or brought before debootstrap runs; a mirror
    nobody answers at (the loopback's port 9) then fails in one line, exit 5, as the mirror's."""
    import os
    import uuid

    from tfbuild.build.base_images import debootstrap_scripts

    _can_debootstrap()
    tag = f"tfbuild-test/base:never-{uuid.uuid4().hex[:12]}"
    mirror = "http://127.0.0.1:9/ubuntu"
    result = run_cli("base", "--suite", "noble", "--mirror", mirror, "--tag", tag, timeout=300)
    assert result.returncode == 5, result.stderr
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("tfbuild: error:")]
    assert errors == [lines[-1]]
    assert lines[-1] == (
        f"tfbuild: error: cannot reach the Ubuntu mirror {mirror}: 127.0.0.1: connection refused. "
        "Pass --mirror URL of an Ubuntu mirror this machine reaches, or set http_proxy "
        "(debootstrap's wget uses it)."
    )
    own_script = (debootstrap_scripts(os.environ) / "noble").exists()
    assert any(line.startswith("[base] script: gutsy") for line in lines) is not own_script
    assert any(line.startswith("[base] keyring: ") for line in lines)
    assert "No such script" not in result.stderr and "Traceback" not in result.stderr
    assert not engine.image_exists(tag)


@pytest.mark.slow  # a real debootstrap from the Debian mirror: about a minute
def test_a_base_image_made_now_says_what_debootstrap_does_and_logs_its_lines(
    engine: Any, tmp_path: Path
) -> None:
    """On stderr, a few lines: debootstrap's stages and counts, the tar, the import; its own
    hundreds of lines (one per package and stage) in the log file the first line names."""
    import uuid

    _can_debootstrap()
    tag = f"tfbuild-test/base:progress-{uuid.uuid4().hex[:12]}"
    cache = tmp_path / "cache"
    try:
        result = run_cli(
            "base", "--suite", "bookworm", "--tag", tag,
            env={"TFBUILD_CACHE_DIR": str(cache)}, timeout=900,
        )  # fmt: skip
    finally:
        created = engine.image_exists(tag)
        engine.remove_image(tag)
    assert result.returncode == 0, result.stderr
    assert created and result.stdout.startswith(f"{tag} (") and "created in" in result.stdout
    lines = result.stderr.splitlines()
    assert all(line.startswith("[base] ") for line in lines), result.stderr
    assert len(lines) < 40, result.stderr
    (log,) = (cache / "logs").glob("base-bookworm-*.log")
    start = "[base] debootstrap bookworm from http://deb.debian.org/debian into a temporary "
    assert f"{start}directory; its output: {log}" in lines
    stages = [line.removeprefix("[base] debootstrap: ") for line in lines]
    expected = [
        "checking the release file",
        "resolving the packages' dependencies",
        "downloading packages",
        "unpacking the required packages",
        "configuring the base system",
        "the base system is installed",
    ]
    assert [stage for stage in stages if stage in expected] == expected
    assert any(stage.startswith("downloaded ") and stage.endswith(" packages") for stage in stages)
    packing = lines.index("[base] packing the bookworm root filesystem (tar)")
    importing = f"[base] importing it into the engine as {tag} ("
    assert lines[packing + 1].startswith(importing) or lines[packing + 1].startswith(
        "[base] packing the bookworm root filesystem (tar): "  # a slow disk: said again
    )
    assert lines[-1].startswith(importing)  # then, for a large image, how long it has taken
    kept = log.read_text().splitlines()
    assert sum(line.startswith("I: Retrieving ") for line in kept) > 100
    assert not [line for line in lines if "I: " in line]
