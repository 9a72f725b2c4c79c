"""The pure parts of `tfbuild wheel`: OOM detection, retry plans, inputs, ids and keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import recorded_host
from tfbuild.build import (
    _last_error,
    build_key,
    ca_bundle_from,
    is_oom,
    new_build_id,
    proxies_from,
    stopped_from_outside,
)
from tfbuild.engine import RunResult
from tfbuild.errors import InputError
from tfbuild.plan import PlanOptions, make_plan, with_jobs
from tfbuild.recipes import load_base_images, load_recipes


def ended(exit_code: int, *, oom: bool = False) -> RunResult:
    return RunResult(exit_code=exit_code, oom_killed=oom, container_id="c" * 64, duration_s=1.0)


@pytest.mark.parametrize(
    ("result", "tail", "expected"),
    [
        # The engine saw an OOM kill in the container: the cgroup's OOM killer, whatever the code.
        (ended(137, oom=True), [], True),
        (ended(1, oom=True), [], True),
        # SIGKILL without an OOM kill: docker kill (or docker stop), never a reason to retry.
        (ended(137), [], False),
        (ended(137), ["Killed"], False),
        # gcc and clang when the kernel kills the compiler proper (bazel then fails the action)
        (ended(1), ["c++: fatal error: Killed signal terminated program cc1plus"], True),
        (ended(1), ["foo.cc:1:1: internal compiler error: Killed (program cc1plus)"], True),
        (ended(1), ["clang: error: unable to execute command: Killed"], True),
        (ended(1), ["ERROR: /src/tensorflow/BUILD:12:1: Compiling x.cc failed: (Exit 137)"], True),
        (ended(1), ["src/kernel.c:3:1: error: expected ';' before '}' token"], False),
        (ended(0), ["Killed"], False),  # a successful build is never an OOM
    ],
)
def test_oom_kills_are_told_from_other_failures(
    result: RunResult, tail: list[str], expected: bool
) -> None:
    assert is_oom(result, tail) is expected


def test_a_kill_from_outside_is_told_from_an_oom_kill() -> None:
    assert stopped_from_outside(ended(137))
    assert not stopped_from_outside(ended(137, oom=True))
    assert not stopped_from_outside(ended(1))
    assert not stopped_from_outside(ended(0))


def test_a_retry_plan_halves_the_jobs_and_says_why() -> None:
    recipe = load_recipes().get("2.21")
    host = recorded_host("zen4", memory_gib=64, disk_gib=200, build_cpus=16)
    plan = make_plan(PlanOptions(), recipe, host, base_images=load_base_images())
    assert "--jobs=16" in plan.build_options
    retry = with_jobs(plan, 8, why="--jobs=16 ran out of memory (OOM kill)")
    assert "--jobs=8" in retry.build_options and "--jobs=16" not in retry.build_options
    assert retry.resources.jobs == 8
    assert retry.reasons[-1].why == "--jobs=16 ran out of memory (OOM kill)"
    assert plan.resources.jobs == 16  # the original plan is untouched (frozen)
    assert [o for o in retry.build_options if not o.startswith("--jobs=")] == [
        o for o in plan.build_options if not o.startswith("--jobs=")
    ]


def test_proxies_pass_through_in_both_spellings_and_empty_ones_do_not() -> None:
    env = {"HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost", "HTTP_PROXY": "", "X": "y"}
    assert proxies_from(env) == (("HTTPS_PROXY", "http://proxy:3128"), ("no_proxy", "localhost"))


def test_the_ca_bundle_comes_from_the_option_or_the_environment(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    assert ca_bundle_from(None, {}) is None
    assert ca_bundle_from(None, {"REQUESTS_CA_BUNDLE": str(bundle)}) == bundle.resolve()
    assert ca_bundle_from(bundle, {"SSL_CERT_FILE": "/nowhere"}) == bundle.resolve()
    with pytest.raises(InputError, match=r"from SSL_CERT_FILE\) is not a readable file"):
        ca_bundle_from(None, {"SSL_CERT_FILE": str(tmp_path / "missing.pem")})
    with pytest.raises(InputError, match="from --ca-bundle"):
        ca_bundle_from(tmp_path, {})  # a directory is not a bundle


def test_build_ids_sort_by_time_and_differ() -> None:
    ids = {new_build_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", i) for i in ids)


def test_one_output_base_per_source_and_toolchain(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    key = build_key(a, "tfbuild/toolchain:1")
    assert key == build_key(a, "tfbuild/toolchain:1")
    assert key != build_key(b, "tfbuild/toolchain:1")
    assert key != build_key(a, "tfbuild/toolchain:2")
    assert re.fullmatch(r"[0-9a-f]{16}", key)


def test_the_failure_line_is_the_last_error_in_the_tail() -> None:
    tail = [
        "INFO: Analyzed target //tensorflow/tools/pip_package:wheel",
        "tensorflow/core/kernels/foo.cc:12:3: error: use of undeclared identifier 'x'",
        "ERROR: /src/tensorflow/core/kernels/BUILD:40:1: Compiling foo.cc failed: (Exit 1)",
        "Target //tensorflow/tools/pip_package:wheel failed to build",
    ]
    assert _last_error(tail).startswith("ERROR: /src/tensorflow/core/kernels/BUILD:40:1")
    assert _last_error(["nothing useful"]) == "see the log"


def test_sigterm_in_a_build_run_is_an_interrupt_that_cleans_up() -> None:
    """Every command that builds (wheel, doctor) goes through BuildRun, which turns SIGTERM into
    the same Interrupted as Ctrl-C, and puts the previous handler back afterwards."""
    import os
    import signal

    from tfbuild.build import _sigterm_interrupts
    from tfbuild.errors import Interrupted

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted, match="stopped by SIGTERM") as caught, _sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
    assert caught.value.exit_code == 130
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_receipt_is_updated_under_the_dist_lock(tmp_path: Path) -> None:
    """doctor adds its canary section under the same lock the build publishes under: while another
    build holds dist/'s lock, the update waits, then lands whole."""
    import fcntl
    import json
    import threading

    from tests.receipts import make_receipt
    from tfbuild.build import DIST_LOCK, update_receipt

    wheel = tmp_path / "tensorflow_cpu-2.21.0-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"stand-in")
    receipt = tmp_path / "tensorflow_cpu-2.21.0-cp311-cp311-linux_x86_64.json"
    original = make_receipt(wheel)
    receipt.write_text(json.dumps(original))
    with (tmp_path / DIST_LOCK).open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        worker = threading.Thread(target=update_receipt, args=(receipt, "canary", {"ok": True}))
        worker.start()
        worker.join(timeout=0.5)
        assert worker.is_alive(), "the update did not wait for the lock"
        assert "canary" not in json.loads(receipt.read_text())
        fcntl.flock(held, fcntl.LOCK_UN)
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert json.loads(receipt.read_text()) == original | {"canary": {"ok": True}}
    # A section never overwrites a field of the receipt.
    with pytest.raises(ValueError, match="'plan' is a field"):
        update_receipt(receipt, "plan", {})
