"""A real remote cache: BuildGrid (PyPI ``buildgrid``, a dev dependency) serving bazel's action cache
and CAS on this machine's loopback, and two canary builds through it with the real engine and the
canary's real bazel (Debian's 4.2.3).

The first build fills the cache; the second, from a fresh output base (another fresh cache volume,
no disk cache), takes every action from it, by bazel's own count ("N remote cache hit"), which the
receipt records. Both build the same checkout: a git repository at one path, so its epoch
(SOURCE_DATE_EPOCH, the commit's time) and its output base path (named by the reproducible
plans' ``-ffile-prefix-map``) are the same, and so are the actions' keys. The build container
shares the host's network to reach 127.0.0.1 (``tfbuild.build.host_network``); all traffic stays
on this machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import tempfile
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docker.test_wheel import wheel_argv
from tests.remote.services import start_buildgrid, stop
from tfbuild import canary
from tfbuild.build import bazel_processes, build_key, host_network, output_base_volume
from tfbuild.engine import PART_OF_LABEL
from tfbuild.plan import BuildPlan

#: A rendered plan (no remote cache in it) to add remote URLs to.
GOLDEN_PLAN = Path(__file__).parents[1] / "render" / "golden" / "tf2.18-cpu-haswell" / "plan.json"


@pytest.fixture(scope="module")
def buildgrid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A BuildGrid cache on 127.0.0.1 for this module's builds; stopped afterwards."""
    server, url = start_buildgrid(tmp_path_factory.mktemp("buildgrid"))
    yield url
    stop(server)


def git_checkout(tmp_path: Path) -> Path:
    """The canary as a git checkout with a fixed commit time, as a TensorFlow clone would be."""
    source = canary.copy_tree(tmp_path / "checkout")
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": f"{canary.EPOCH} +0000",
        "GIT_COMMITTER_DATE": f"{canary.EPOCH} +0000",
        "GIT_AUTHOR_NAME": "tfbuild test",
        "GIT_AUTHOR_EMAIL": "test@tfbuild.invalid",
        "GIT_COMMITTER_NAME": "tfbuild test",
        "GIT_COMMITTER_EMAIL": "test@tfbuild.invalid",
    }
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "canary"]):
        subprocess.run(["git", *command], cwd=source, env=env, check=True, capture_output=True)
    return source


def wheel(
    source: Path, dist: Path, volume: str, *args: str
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    built = subprocess.run(
        wheel_argv(dist, volume, "--source", str(source), "--json", *args),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    receipt: dict[str, Any] = json.loads(built.stdout)["receipt_data"]
    return receipt, built


@pytest.mark.docker
def test_a_second_build_from_a_fresh_output_base_takes_every_action_from_the_cache(
    engine: Any, base_image: str, buildgrid: str, tmp_path: Path
) -> None:
    """The second build is another clone of the same commit, at another path, as on another
    machine or CI runner: the output base is one fixed path in every build container, so the
    compile commands (which name it in -ffile-prefix-map) and their cache keys are the same."""
    source = git_checkout(tmp_path)
    clone = tmp_path / "elsewhere" / "clone"
    subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
    volumes = [f"tfbuild-test-remote-{uuid.uuid4().hex[:10]}" for _ in range(2)]
    remote = ("--no-disk-cache", "--remote-cache", buildgrid)
    try:
        first, _ = wheel(source, tmp_path / "first", volumes[0], *remote)
        second, _ = wheel(clone, tmp_path / "second", volumes[1], *remote)
        # Each cache volume's output base is a volume of its own, removed with it.
        assert engine.volumes(f"{PART_OF_LABEL}={volumes[0]}") == [
            output_base_volume(volumes[0], build_key(source, first["inputs"]["toolchain_image"]))
        ]
    finally:
        for volume in volumes:
            engine.remove_volume(volume)
    for volume in volumes:
        assert not engine.volumes(f"{PART_OF_LABEL}={volume}")
    assert first["inputs"]["source"]["path"] != second["inputs"]["source"]["path"]
    assert f"--remote_cache={buildgrid}" in first["plan"]["build_options"]
    assert not any(o.startswith("--disk_cache=") for o in first["plan"]["build_options"])
    # The first build ran its four actions (two compiles, the link, the wheel) itself.
    assert first["remote_cache_hits"] == 0
    assert first["processes"]["local"] == 4, first["processes"]
    # The second ran none of them: bazel's own summary line in its log says so.
    assert second["remote_cache_hits"] == 4, second["processes"]
    assert "local" not in second["processes"]
    log = Path(second["log"]).read_text()
    assert "INFO: 5 processes: 4 remote cache hit, 1 internal." in log
    # The same wheel, byte for byte (the cache's outputs, normalised by tfbuild as always).
    assert first["wheel"]["sha256"] == second["wheel"]["sha256"]


@pytest.mark.docker
def test_remote_credentials_reach_bazel_and_nothing_else(
    engine: Any, base_image: str, buildgrid: str, tmp_path: Path
) -> None:
    """A token planted in --remote-header-file reaches bazel (through build.sh's --bazelrc; the
    build with it succeeds against the real cache) and appears in none of tfbuild's outputs: stdout,
    stderr, the wheel, its receipt (with the plan), env file and log."""
    token = f"tfbuild-planted-{uuid.uuid4().hex}"
    headers = tmp_path / "headers"
    headers.write_text(f"Authorization: Bearer {token}\nx-cache-key: {token}\n")
    volume = f"tfbuild-test-remote-{uuid.uuid4().hex[:10]}"
    dist = tmp_path / "dist"
    try:
        receipt, built = wheel(
            git_checkout(tmp_path),
            dist,
            volume,
            "--no-disk-cache",
            "--remote-cache",
            buildgrid,
            "--remote-header-file",
            str(headers),
        )
    finally:
        engine.remove_volume(volume)
    log = Path(receipt["log"]).read_text()
    assert "[tfbuild] remote headers: 2 (from --remote-header-file; values not shown)" in log
    assert token not in built.stdout + built.stderr
    written = [path for path in dist.rglob("*") if path.is_file()]
    assert {p.suffix for p in written} >= {".whl", ".json", ".env", ".log"}
    for path in written:
        data = path.read_bytes()
        assert token.encode() not in data, path
        if path.suffix == ".whl":  # and not inside the wheel's members either
            with zipfile.ZipFile(path) as archive:
                assert not [n for n in archive.namelist() if token.encode() in archive.read(n)]
    assert not list(Path(tempfile.gettempdir()).glob("tfbuild-remote-*"))  # the private rc is gone


# --- the pure parts: bazel's summary line, the network a remote URL needs ---------------------------


@pytest.mark.parametrize(
    ("line", "counts"),
    [
        (
            "INFO: 5 processes: 4 remote cache hit, 1 internal.",
            {"total": 5, "remote cache hit": 4, "internal": 1},
        ),
        (
            "INFO: 2 processes: 1 internal, 1 linux-sandbox.",
            {"total": 2, "internal": 1, "linux-sandbox": 1},
        ),
        ("INFO: 1 process: 1 internal.", {"total": 1, "internal": 1}),
        ("INFO: Build completed successfully, 5 total actions", None),
        ("[2 / 5] Compiling src/runtime.cc; 0s remote-cache, local", None),
    ],
)
def test_bazels_process_summary_is_read_as_counts(line: str, counts: dict[str, int] | None) -> None:
    # Lines as bazel 4.2.3 printed them in this module's builds and the reference runs.
    assert bazel_processes(line) == counts


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("grpc://127.0.0.1:50071", True),
        ("grpc://localhost:9092", True),
        ("grpcs://[::1]:443", True),
        ("grpcs://cache.example.com:443", False),
        (None, False),
    ],
)
def test_only_a_loopback_remote_needs_the_hosts_network(url: str | None, host: bool) -> None:
    plan = BuildPlan.from_json(json.loads(GOLDEN_PLAN.read_text()))
    assert not any(o.startswith("--remote") for o in plan.build_options)
    options = (*plan.build_options, *((f"--remote_cache={url}",) if url else ()))
    assert host_network(dataclasses.replace(plan, build_options=options)) is host


def test_the_receipt_keeps_the_counts_and_reads_receipts_without_them(tmp_path: Path) -> None:
    from tests import wheels
    from tests.receipts import make_receipt
    from tfbuild.receipt import Receipt

    data = make_receipt(
        wheels.make_wheel(tmp_path, "tensorflow_cpu-2.21.0-cp311-cp311-linux_x86_64.whl")
    )
    older = Receipt.from_json(data)  # written before the counts existed
    assert (older.processes, older.remote_cache_hits) == ({}, None)
    counts = {"total": 5, "remote cache hit": 4, "internal": 1}
    newer = dataclasses.replace(older, processes=counts, remote_cache_hits=4)
    text = json.dumps(newer.to_json())
    assert Receipt.from_json(json.loads(text)) == newer
    assert json.loads(text)["remote_cache_hits"] == 4
    assert "processes" not in newer.sections
