"""--remote-header-file: credentials reach bazel only through a private directory (a credential
helper where the bazel that runs has one, else an rc file), a bad file is one line (exit 3), and a
remote that cannot be reached is one line (exit 5).

The credential helper protocol is bazel's (the Credential Helper Specification,
github.com/EngFlow/credential-helper-spec spec.md): bazel runs the helper with ``get``, writes
``{"uri": ...}`` on its stdin and reads ``{"headers": {"Name": ["value"]}}`` from its stdout. The
tests below run the real helper script that way.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tfbuild.build.credentials import (
    HEADERS_NAME,
    HELPER_NAME,
    REMOTE_DIR,
    REMOTE_RC_NAME,
    credential_helper_flag,
    read_remote_headers,
    remote_header_rc,
    write_remote_credentials,
)
from tfbuild.build.remotes import check_remote_reachable, remote_failure, waiting_note
from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.plan import BuildPlan
from tfbuild.plan.bazel import REMOTE_CACHE, REMOTE_CACHE_RETRIES, REMOTE_CACHE_TIMEOUT_S
from tfbuild.plan.decode import decode_plan
from tfbuild.recipes.recipe import load_recipes

TOKEN = "s3cr3t-t0ken with spaces 'and quotes'"
#: How long bazel waits for a cache that never answers, by the plan's options.
BOUND = (REMOTE_CACHE_RETRIES + 1) * REMOTE_CACHE_TIMEOUT_S
GOLDEN = Path(__file__).parents[1] / "plan" / "golden_render"


def golden(case: str, *extra: str) -> BuildPlan:
    """A rendered plan of the golden cases, with ``extra`` build options (a remote URL)."""
    plan = decode_plan(json.loads((GOLDEN / case / "plan.json").read_text()))
    return dataclasses.replace(plan, build_options=(*plan.build_options, *extra))


def headers_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "headers"
    path.write_text(text)
    return path


# --- reading the file ---------------------------------------------------------------------------------


def test_each_header_is_read_and_none_is_shown_by_its_repr(tmp_path: Path) -> None:
    path = headers_file(
        tmp_path, f"# for the cache\nAuthorization: Bearer {TOKEN}\n\nx-buildbuddy-api-key: k\n"
    )
    headers = read_remote_headers(path)
    assert headers.pairs == (("Authorization", f"Bearer {TOKEN}"), ("x-buildbuddy-api-key", "k"))
    assert TOKEN not in repr(headers)


@pytest.mark.parametrize(
    "line",
    [f"Authorization Bearer {TOKEN}", f"Bad Name: {TOKEN}", "Empty:", f"Ctl: {TOKEN}\x1b[31m"],
)
def test_a_bad_line_is_named_by_number_without_its_value(tmp_path: Path, line: str) -> None:
    path = headers_file(tmp_path, f"Good: value\n{line}\n")
    with pytest.raises(InputError) as caught:
        read_remote_headers(path)
    said = caught.value.line()
    assert f"{path}:2 is not a 'Name: value' header" in said
    assert TOKEN not in said and "s3cr3t" not in said


def test_an_empty_missing_or_binary_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="holds no header"):
        read_remote_headers(headers_file(tmp_path, "# nothing\n"))
    with pytest.raises(InputError, match=r"cannot read --remote-header-file .*: no such file"):
        read_remote_headers(tmp_path / "missing")
    binary = tmp_path / "binary"
    binary.write_bytes(b"Authorization: \xff\xfe\n")
    with pytest.raises(InputError, match="not UTF-8"):
        read_remote_headers(binary)


def _refused(result_stderr: str, what: str) -> None:
    lines = [line for line in result_stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result_stderr
    assert what in lines[0]
    assert "Traceback" not in result_stderr


def test_dev_zero_and_a_fifo_are_one_line_exit_3_through_the_cli(tmp_path: Path) -> None:
    """Issue 21, item 15: ``--remote-header-file /dev/zero`` was a MemoryError and a FIFO hung.
    Both are refused before anything is planned, built or connected."""
    dist = tmp_path / "dist"
    device = run_cli("wheel", "--canary", "--dist", str(dist), "--remote-header-file", "/dev/zero")
    assert device.returncode == 3, device.stderr
    _refused(device.stderr, "--remote-header-file /dev/zero is not a file")
    fifo = tmp_path / "headers.fifo"
    os.mkfifo(fifo)  # no writer: opening it to read would block
    piped = run_cli("wheel", "--canary", "--dist", str(dist), "--remote-header-file", str(fifo))
    assert piped.returncode == 3, piped.stderr
    _refused(piped.stderr, f"--remote-header-file {fifo} is not a file")
    large = headers_file(tmp_path, f"Authorization: Bearer {'x' * (64 * 1024)}\n")
    big = run_cli("wheel", "--canary", "--dist", str(dist), "--remote-header-file", str(large))
    assert big.returncode == 3, big.stderr
    _refused(big.stderr, "is too large")
    assert not dist.exists()  # refused before anything was written


# --- which mechanism for which bazel ------------------------------------------------------------------


def test_every_recipes_bazel_gets_a_credential_helper_and_the_canary_an_rc_file() -> None:
    """5.3 to 6.2 spell it --experimental_credential_helper, 6.3 on --credential_helper; the
    canary's bazel (Debian's 4.2.3) has none."""
    plan = golden("tf2.21-mkl-zen5")
    flags = {
        recipe.bazel: credential_helper_flag(dataclasses.replace(plan, bazel=recipe.bazel))
        for recipe in load_recipes().recipes
    }
    assert flags == {
        "5.3.0": "--experimental_credential_helper",
        "6.1.0": "--experimental_credential_helper",
        "6.5.0": "--credential_helper",
        "7.4.1": "--credential_helper",
    }
    assert credential_helper_flag(dataclasses.replace(plan, canary=True)) is None
    assert credential_helper_flag(dataclasses.replace(plan, bazel="4.2.3")) is None


def _run_helper(directory: Path, *args: str, request: object) -> subprocess.CompletedProcess[str]:
    # bazel runs the helper itself (its #! line), in the workspace, with the request on stdin.
    return subprocess.run(
        [str(directory / HELPER_NAME), *args],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_the_credential_helper_answers_the_remotes_hosts_only(tmp_path: Path) -> None:
    plan = golden("tf2.21-mkl-zen5", "--remote_cache=grpc://127.0.0.1:50071")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    path = headers_file(
        tmp_path, f"Authorization: Bearer {TOKEN}\nx-cache-key: one\nx-cache-key: two\n"
    )
    credentials = write_remote_credentials(read_remote_headers(path), plan, private)
    assert credentials.helper_flag == "--credential_helper"
    assert sorted(p.name for p in private.iterdir()) == [HELPER_NAME, HEADERS_NAME]
    assert stat.S_IMODE((private / HEADERS_NAME).stat().st_mode) == 0o600
    assert stat.S_IMODE((private / HELPER_NAME).stat().st_mode) == 0o700
    # build.sh gets a path and a count, never a value.
    env = credentials.environment()
    assert env == {
        "TFBUILD_REMOTE_HEADERS": "3",
        "TFBUILD_CREDENTIAL_HELPER": f"--credential_helper={REMOTE_DIR}/{HELPER_NAME}",
    }
    # gRPC asks for the service's URI on the cache's authority (grpc-java's call credentials).
    asked = _run_helper(
        private,
        "get",
        request={"uri": "https://127.0.0.1:50071/build.bazel.remote.execution.v2.ActionCache"},
    )
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout) == {
        "headers": {"Authorization": [f"Bearer {TOKEN}"], "x-cache-key": ["one", "two"]}
    }
    # A repository download (bazel 6.3+ asks the helper for those too) gets no credential.
    download = _run_helper(
        private, "get", request={"uri": "https://github.com/tensorflow/tensorflow/archive/x.zip"}
    )
    assert download.returncode == 0, download.stderr
    assert json.loads(download.stdout) == {"headers": {}}
    # Anything but "get" is refused, per the protocol's usage rule.
    assert _run_helper(private, request={}).returncode != 0
    assert _run_helper(private, "store", request={}).returncode != 0


def test_without_a_credential_helper_the_rc_file_quotes_each_header(tmp_path: Path) -> None:
    plan = golden("tf2.18-cpu-haswell", "--remote_cache=grpc://127.0.0.1:50071")
    canary = dataclasses.replace(plan, canary=True)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    headers = read_remote_headers(
        headers_file(tmp_path, f"Authorization: Bearer {TOKEN}\nx-buildbuddy-api-key: k\n")
    )
    credentials = write_remote_credentials(headers, canary, private)
    assert credentials.helper_flag is None
    assert [p.name for p in private.iterdir()] == [REMOTE_RC_NAME]
    assert stat.S_IMODE((private / REMOTE_RC_NAME).stat().st_mode) == 0o600
    assert credentials.environment() == {
        "TFBUILD_REMOTE_HEADERS": "2",
        "TFBUILD_REMOTE_RC": f"{REMOTE_DIR}/{REMOTE_RC_NAME}",
    }
    lines = (private / REMOTE_RC_NAME).read_text().splitlines()
    assert lines == remote_header_rc(headers).splitlines()
    assert lines[-1] == "build --noannounce_rc"
    # bazel tokenizes rc lines like a shell: each header comes back whole, spaces and quotes kept.
    assert [shlex.split(line)[1] for line in lines[:-1]] == [
        f"--remote_header=Authorization=Bearer {TOKEN}",
        "--remote_header=x-buildbuddy-api-key=k",
    ]


# --- a remote that cannot be reached ----------------------------------------------------------------------


def test_a_closed_loopback_port_is_unreachable_before_the_build() -> None:
    """A bound socket that does not listen: the kernel refuses every connection to its port, and
    no other process can take the port while the test holds it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"grpc://127.0.0.1:{closed.getsockname()[1]}"
        with pytest.raises(EnvironmentProblem) as caught:
            check_remote_reachable(golden("tf2.18-cpu-haswell", f"--remote_cache={url}"))
    assert caught.value.exit_code == 5
    assert caught.value.line().startswith(f"the remote cache at {url} is unreachable: ")
    # A remote elsewhere is bazel's to reach (the host's network may not be the container's).
    check_remote_reachable(golden("tf2.18-cpu-haswell", "--remote_cache=grpcs://cache.invalid:1"))


@pytest.mark.parametrize(
    ("line", "said"),
    [
        # bazel 4.2.3's words, recorded against a closed port and a server that never answers.
        (
            "ERROR: Failed to query remote execution capabilities: Connection refused: "
            "/127.0.0.1:47999",
            "the remote cache at grpc://127.0.0.1:47999 is unreachable: Connection refused",
        ),
        (
            "ERROR: Failed to query remote execution capabilities: DEADLINE_EXCEEDED: deadline "
            "exceeded after 59.999591210s. [closed=[], open=[[buffered_nanos=60009076011, "
            "waiting_for_connection]]]",
            f"the remote cache at grpc://127.0.0.1:47999 did not answer (waited {BOUND} s): it "
            "accepts",
        ),
        (
            "ERROR: Failed to query remote execution capabilities: UNAUTHENTICATED: bad token",
            "the remote cache at grpc://127.0.0.1:47999 refused the build's credentials",
        ),
        ("ERROR: /src/BUILD:3:10: Compiling src/kernel.c failed: (Exit 1)", None),
    ],
)
def test_bazels_remote_failures_are_one_environment_line(line: str, said: str | None) -> None:
    plan = golden("tf2.18-cpu-haswell", "--remote_cache=grpc://127.0.0.1:47999", *REMOTE_CACHE)
    found = remote_failure(plan, ["INFO: Invocation ID: 7f94", line])
    if said is None:
        assert found is None
        return
    assert found is not None and found.exit_code == 5
    assert found.line().startswith(said), found.line()


def test_the_build_says_what_it_waits_for() -> None:
    plan = golden("tf2.18-cpu-haswell", "--remote_cache=grpc://127.0.0.1:47999", *REMOTE_CACHE)
    assert waiting_note(plan) == (
        "waiting for the remote cache at grpc://127.0.0.1:47999 "
        f"(bazel gives up after about {BOUND} s without an answer)"
    )
    assert waiting_note(golden("tf2.18-cpu-haswell")) is None
    # Remote execution: TensorFlow's own options, valueless ones among them.
    executing = golden(
        "tf2.18-cpu-haswell",
        "--remote_executor=grpc://127.0.0.1:47999",
        "--remote_timeout=3600",
        "--remote_download_toplevel",
    )
    assert waiting_note(executing) == (
        "waiting for the remote executor at grpc://127.0.0.1:47999 "
        "(bazel gives up after about 21600 s without an answer)"
    )
