"""A real remote cache: BuildGrid (PyPI ``buildgrid``, a dev dependency) serving bazel's action cache
and CAS on this machine's loopback, and two canary builds through it with the real engine and the
canary's real bazel (Debian's 4.2.3).

The first build fills the cache; the second, from a fresh output base (another fresh cache volume,
no disk cache), takes every action from it, by bazel's own count ("N remote cache hit"), which the
receipt records. Both build the same checkout: a git repository at one path, so its epoch
(SOURCE_DATE_EPOCH, the commit's time) and its output base path (named by the reproducible
plans' ``-ffile-prefix-map``) are the same, and so are the actions' keys. The build container
shares the host's network to reach 127.0.0.1 (``tfbuild.build.remotes.host_network``); all traffic stays
on this machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.docker.test_wheel import wheel_argv, wheel_cli
from tests.remote.services import start_buildgrid, stop
from tfbuild.build.container import output_base_volume
from tfbuild.build.log import bazel_processes
from tfbuild.build.remotes import host_network
from tfbuild.core.engine import PART_OF_LABEL, Mount
from tfbuild.plan.bazel import REMOTE_CACHE_RETRIES
from tfbuild.plan.decode import decode_plan
from tfbuild.recipes import canary

#: A rendered plan (no remote cache in it) to add remote URLs to.
GOLDEN_PLAN = (
    Path(__file__).parents[1] / "plan" / "golden_render" / "tf2.18-cpu-haswell" / "plan.json"
)


@pytest.fixture(scope="module")
def buildgrid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A BuildGrid cache on 127.0.0.1 for this module's builds; stopped afterwards."""
    server, url = start_buildgrid(tmp_path_factory.mktemp("buildgrid"))
    yield url
    stop(server)


def git_checkout(tmp_path: Path, *rc_lines: str) -> Path:
    """The canary as a git checkout with a fixed commit time, as a TensorFlow clone would be; its
    .bazelrc ends with ``rc_lines``."""
    source = canary.copy_tree(tmp_path / "checkout")
    if rc_lines:
        rc = source / ".bazelrc"
        rc.write_text(rc.read_text() + "\n".join(rc_lines) + "\n")
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
    source: Path, dist: Path, volume: str, *args: str, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], CliResult]:
    built = wheel_cli(dist, volume, "--source", str(source), "--json", *args, timeout=900, env=env)
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
            output_base_volume(volumes[0], source, first["inputs"]["toolchain_image"])
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


#: A source tree's rc lines that would print or record every rc option, the remote headers' too
#: (issue 21, item 6: ``build:opt --announce_rc`` expands after tfbuild's ``--noannounce_rc``).
HOSTILE_RC = (
    "common --announce_rc",
    "build:opt --announce_rc",
    "build --build_event_json_file=bep.json",
    "build:opt --build_event_text_file=bep.txt",
)


def scan_volumes(engine: Any, image: str, volume: str, output_base: str, token: str) -> str:
    """The files of the cache volume and the output base that hold ``token`` (grep in a throwaway
    container), and the output base's top-level names, as one text: ``found: ...`` then ``top: ...``."""
    lines: list[str] = []
    result = engine.run(
        image,
        [
            "sh",
            "-c",
            f"grep -rlF -- {token} /cache /output-base | sed 's/^/found: /'; "
            "ls -A /output-base | sed 's/^/top: /'; "
            "if grep -rlqF -- tfbuild_canary /output-base; then echo 'control: seen'; fi",
        ],
        mounts=[
            Mount(volume, "/cache", kind="volume"),
            Mount(output_base, "/output-base", kind="volume"),
        ],
        user="0:0",
        on_line=lines.append,
    )
    assert result.exit_code == 0, lines
    return "\n".join(lines)


@pytest.mark.docker
def test_remote_credentials_reach_bazel_and_nothing_else(
    engine: Any, base_image: str, buildgrid: str, tmp_path: Path
) -> None:
    """A token planted in --remote-header-file reaches bazel (the build against the real cache
    succeeds) and appears in none of tfbuild's outputs, even from a tree whose rc files turn
    --announce_rc and the build event files on (issue 21, items 5 and 6): not on stdout or stderr,
    not in the wheel, its receipt (with the plan), env file or log, not in the tree, and in no file
    of the cache volume or the output base after the build: bazel's server logs (java.log, which
    held the rc options as --default_override) are gone."""
    token = f"tfbuild-planted-{uuid.uuid4().hex}"
    headers = tmp_path / "headers"
    headers.write_text(f"Authorization: Bearer {token}\nx-cache-key: {token}\n")
    volume = f"tfbuild-test-remote-{uuid.uuid4().hex[:10]}"
    dist = tmp_path / "dist"
    source = git_checkout(tmp_path, *HOSTILE_RC)
    # The build's temporary directories in one of this test's own: another test running beside it
    # (make test runs two processes) makes and removes its own in the system's.
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    made = temporary.stat().st_mtime_ns
    try:
        receipt, built = wheel(
            source,
            dist,
            volume,
            "--no-disk-cache",
            "--remote-cache",
            buildgrid,
            "--remote-header-file",
            str(headers),
            env={"TMPDIR": str(temporary)},
        )
        output_base = output_base_volume(volume, source, receipt["inputs"]["toolchain_image"])
        scanned = scan_volumes(engine, base_image, volume, output_base, token)
    finally:
        engine.remove_volume(volume)
    log = Path(receipt["log"]).read_text()
    assert (
        "[tfbuild] remote headers: 2 (from --remote-header-file, through a private rc file; "
        "values not shown)" in log
    )
    assert "INFO: Reading rc options" not in log  # the tree's --announce_rc was overruled
    assert token not in built.stdout + built.stderr
    written = [path for path in dist.rglob("*") if path.is_file()]
    assert {p.suffix for p in written} >= {".whl", ".json", ".env", ".log"}
    for path in [*written, *(p for p in source.rglob("*") if p.is_file())]:
        data = path.read_bytes()
        assert token.encode() not in data, path
        if path.suffix == ".whl":  # and not inside the wheel's members either
            with zipfile.ZipFile(path) as archive:
                assert not [n for n in archive.namelist() if token.encode() in archive.read(n)]
    assert not (source / "bep.json").exists() and not (source / "bep.txt").exists()
    # The scan saw the output base (the canary's outputs are there), and no file in it or the cache
    # volume holds the token; bazel's server logs are gone, its command log too.
    assert "control: seen" in scanned, scanned
    assert "found:" not in scanned, scanned
    top = {line.removeprefix("top: ") for line in scanned.splitlines() if line.startswith("top: ")}
    assert "execroot" in top and not [n for n in top if n.startswith(("java.log", "command.log"))]
    # This build's private directory was made in its TMPDIR (the directory changed), and is gone.
    assert temporary.stat().st_mtime_ns != made
    assert not list(temporary.glob("tfbuild-remote-*"))


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers (issue 21, item
    14's cache): the connections stay open until ``close``."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.url = f"grpc://127.0.0.1:{self.socket.getsockname()[1]}"
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:  # closed
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.accepted:
            connection.close()


#: --remote-timeout for the silent cache: the build's bound is 2 x 10 s, not the default 2 x 60 s
#: (bazel 4.2.3 gives up after 2 x 10 s, measured; plan.bazel's comment).
SILENT_TIMEOUT_S = 10


def failed_wheel(dist: Path, volume: str, *args: str) -> CliResult:
    # timeout: a hang guard, never a speed check
    return wheel_cli(dist, volume, "--no-disk-cache", *args, timeout=900)


@pytest.mark.docker
def test_a_cache_that_accepts_and_never_answers_fails_in_bounded_time_as_one_line(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    """Issue 21, item 14: such a cache held the build for 365 s and failed it as a build failure
    (exit 6), silently. bazel now gives up after its planned --remote_timeout (here the user's
    --remote-timeout) and retries, the log says what the build waits for, and the failure is one
    line, exit 5. The build was a credentialed one: its failure leaves no server log and no token
    in the output base either."""
    token = f"tfbuild-planted-{uuid.uuid4().hex}"
    headers = tmp_path / "headers"
    headers.write_text(f"Authorization: Bearer {token}\n")
    source = git_checkout(tmp_path)
    server = SilentServer()
    volume = f"tfbuild-test-remote-{uuid.uuid4().hex[:10]}"
    dist = tmp_path / "dist"
    try:
        failed = failed_wheel(
            dist,
            volume,
            "--source",
            str(source),
            "--remote-cache",
            server.url,
            "--remote-header-file",
            str(headers),
            "--remote-timeout",
            str(SILENT_TIMEOUT_S),
        )
        (output_base,) = engine.volumes(f"{PART_OF_LABEL}={volume}")  # the tree's own
        scanned = scan_volumes(engine, base_image, volume, output_base, token)
    finally:
        server.close()
        engine.remove_volume(volume)
    assert failed.returncode == 5, failed.stderr
    assert server.accepted, "bazel never connected"
    bound = (REMOTE_CACHE_RETRIES + 1) * SILENT_TIMEOUT_S
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"tfbuild: error: the remote cache at {server.url} did not answer (waited {bound} s): "
    ), failed.stderr
    assert "Traceback" not in failed.stderr and token not in failed.stderr
    (log,) = (dist / "logs").glob("*.log")
    assert f"[tfbuild] waiting for the remote cache at {server.url} (bazel gives up after" in (
        log.read_text()
    )
    assert not list(dist.glob("*.whl"))
    assert "found:" not in scanned, scanned
    top = {line.removeprefix("top: ") for line in scanned.splitlines() if line.startswith("top: ")}
    assert "server" in top and not [n for n in top if n.startswith(("java.log", "command.log"))]


@pytest.mark.docker
def test_an_interrupted_credentialed_build_leaves_no_server_log(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    """SIGTERM while bazel waits for a cache that never answers: the build stops as an interruption
    (exit 130), and the output base it keeps (a --source tree's) holds no server log and no file
    with the token afterwards. bazel's server buffers java.log (it is empty while this build
    waits; a long build's fills and reaches the disk), so the test puts there what such a server
    leaves: a java.log.* and a command.log holding the token, written while the build runs."""
    token = f"tfbuild-planted-{uuid.uuid4().hex}"
    headers = tmp_path / "headers"
    headers.write_text(f"Authorization: Bearer {token}\n")
    source = git_checkout(tmp_path)
    server = SilentServer()
    volume = f"tfbuild-test-remote-{uuid.uuid4().hex[:10]}"
    dist = tmp_path / "dist"
    argv = wheel_argv(dist, volume, "--source", str(source), "--no-disk-cache")
    argv += ["--remote-cache", server.url, "--remote-header-file", str(headers)]
    try:
        with subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as run:
            waiting = _wait_for_line(dist / "logs", "Starting local Bazel server", run)
            (output_base,) = engine.volumes(f"{PART_OF_LABEL}={volume}")  # the tree's own
            planted = engine.run(
                base_image,
                [
                    "sh",
                    "-c",
                    f"echo '--remote_header=Authorization=Bearer {token}' "
                    "| tee /output-base/java.log.planted > /output-base/command.log",
                ],
                mounts=[Mount(output_base, "/output-base", kind="volume")],
                user="0:0",
            )
            still_running = run.poll() is None
            run.send_signal(signal.SIGTERM)
            _, stderr = run.communicate(timeout=300)
        assert waiting and planted.exit_code == 0 and still_running, stderr
        assert run.returncode == 130, stderr
        scanned = scan_volumes(engine, base_image, volume, output_base, token)
    finally:
        server.close()
        engine.remove_volume(volume)
    assert token not in stderr
    assert "found:" not in scanned, scanned
    top = {line.removeprefix("top: ") for line in scanned.splitlines() if line.startswith("top: ")}
    assert "server" in top, scanned  # bazel's server had run in this output base
    assert not [n for n in top if n.startswith(("java.log", "command.log"))], scanned


def _wait_for_line(logs: Path, text: str, run: subprocess.Popen[str]) -> bool:
    """Until the build's log has a line with ``text`` (True), or the build ended (False). A hang
    guard of 3000 looks, never a speed check."""
    for _ in range(3000):
        if run.poll() is not None:
            return False
        if any(text in log.read_text(errors="replace") for log in logs.glob("*.log")):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.docker
def test_a_closed_port_is_unreachable_exit_5_before_the_toolchain_image(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    """A bound socket that does not listen: every connection to its port is refused, and no other
    process can take the port while the test holds it."""
    volume = f"tfbuild-test-remote-{uuid.uuid4().hex[:10]}"
    dist = tmp_path / "dist"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"grpc://127.0.0.1:{closed.getsockname()[1]}"
        try:
            failed = failed_wheel(dist, volume, "--remote-cache", url)
        finally:
            engine.remove_volume(volume)
    assert failed.returncode == 5, failed.stderr
    # The build's first note (what it builds), then the one error line.
    assert failed.stderr.strip().splitlines()[1:] == [
        f"tfbuild: error: the remote cache at {url} is unreachable: Connection refused. Start the "
        "remote cache or correct its URL, or build without it (drop the option)."
    ]
    (log,) = (dist / "logs").glob("*.log")
    assert "phase: toolchain image" not in log.read_text()  # refused before any image or container


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
    plan = decode_plan(json.loads(GOLDEN_PLAN.read_text()))
    assert not any(o.startswith("--remote") for o in plan.build_options)
    options = (*plan.build_options, *((f"--remote_cache={url}",) if url else ()))
    assert host_network(dataclasses.replace(plan, build_options=options)) is host


def test_the_receipt_keeps_the_counts_and_reads_receipts_without_them(tmp_path: Path) -> None:
    from tests import wheels
    from tests.receipts import make_receipt
    from tfbuild.wheel.receipt import Receipt

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
    assert json.loads(text)["processes"] == counts  # a field of the receipt, not an added section
