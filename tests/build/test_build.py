"""The pure parts of `tfbuild wheel`: OOM detection, retry plans, inputs, ids and keys."""

from __future__ import annotations

import re
import signal
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import recorded_host
from tfbuild.build.container import (
    _last_error,
    is_oom,
    output_base_volume,
    stopped_from_outside,
)
from tfbuild.build.run import ca_bundle_from, new_build_id, proxies_from
from tfbuild.core.engine import RunResult
from tfbuild.core.errors import InputError, Interrupted
from tfbuild.core.files import held_signals
from tfbuild.core.stopping import Stopped, stop_on_signals
from tfbuild.plan import PlanOptions, make_plan, with_jobs
from tfbuild.plan.bazel import bazel_command
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import load_recipes


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
    assert "--jobs=16" in bazel_command(plan).build
    retry = with_jobs(plan, 8, why="--jobs=16 ran out of memory (OOM kill)")
    assert retry.resources.jobs == 8
    assert retry.reasons[-1].why == "--jobs=16 ran out of memory (OOM kill)"
    assert plan.resources.jobs == 16  # the original plan is untouched (frozen)
    # Only the jobs changed: bazel's command made from the retry differs in --jobs alone.
    assert replace(retry, reasons=plan.reasons) == replace(plan, resources=retry.resources)
    before, after = bazel_command(plan), bazel_command(retry)
    assert after.startup == before.startup
    assert after.build == ("--jobs=8", *before.build[1:]) and "--jobs=16" not in after.build


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
    volume = output_base_volume("tfbuild-cache", a, "tfbuild/toolchain:1")
    assert volume == output_base_volume("tfbuild-cache", a, "tfbuild/toolchain:1")
    assert volume != output_base_volume("tfbuild-cache", b, "tfbuild/toolchain:1")
    assert volume != output_base_volume("tfbuild-cache", a, "tfbuild/toolchain:2")
    assert re.fullmatch(r"tfbuild-cache\.output-base\.[0-9a-f]{16}", volume)


def test_the_failure_line_is_the_last_error_in_the_tail() -> None:
    tail = [
        "INFO: Analyzed target //tensorflow/tools/pip_package:wheel",
        "tensorflow/core/kernels/foo.cc:12:3: error: use of undeclared identifier 'x'",
        "ERROR: /src/tensorflow/core/kernels/BUILD:40:1: Compiling foo.cc failed: (Exit 1)",
        "Target //tensorflow/tools/pip_package:wheel failed to build",
    ]
    assert _last_error(tail).startswith("ERROR: /src/tensorflow/core/kernels/BUILD:40:1")
    assert _last_error(["nothing useful"]) == "see the log"


def _signalled(signum: int) -> None:
    """Send ``signum`` to this process's main thread; its handler runs before the next call returns.

    To the main thread, not the process: once stopped the main thread blocks both signals, and a
    signal sent to the process then goes to another thread (pytest-xdist's), whose C handler may
    run at any later moment, after the test put its handlers back: a KeyboardInterrupt that
    crashed the xdist worker now and then. Sent to the main thread, a blocked signal stays pending
    there, and is discarded when stop_on_signals sets it ignored on the way out."""
    signal.pthread_kill(threading.main_thread().ident or 0, signum)


@pytest.mark.usefixtures("own_signals")
@pytest.mark.parametrize("first", [signal.SIGTERM, signal.SIGINT])
def test_the_first_signal_stops_and_later_ones_do_not_cut_the_clean_up_short(first: int) -> None:
    """Every build (wheel, doctor, verify) runs in stop_on_signals: the first SIGINT or SIGTERM is a
    KeyboardInterrupt (Stopped) where the build is, which no ``except Exception`` takes for a
    failure; the ones after it, of either kind, wait while the clean-up runs. Out of the outermost
    stop_on_signals comes one Interrupted (exit 130), and from then on both signals are ignored."""
    cleaned: list[str] = []
    with pytest.raises(Interrupted) as caught, stop_on_signals():
        try:
            try:
                _signalled(first)
                pytest.fail("the signal did not stop the build")
            except Exception as exc:  # what a build's own error handling catches
                pytest.fail(f"the stop was taken for a failure: {exc!r}")
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGINT):
                _signalled(signum)
                cleaned.append(signal.Signals(signum).name)
    assert caught.value.exit_code == 130
    assert caught.value.line() == (
        f"stopped by {signal.Signals(first).name}: the build container was stopped and removed, "
        "no partial files were left."
    )
    assert cleaned == ["SIGINT", "SIGTERM", "SIGINT"]
    assert signal.getsignal(signal.SIGINT) == signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    _signalled(signal.SIGTERM)  # ignored: the process says its one line and exits 130
    assert not {signal.SIGINT, signal.SIGTERM} & signal.pthread_sigmask(signal.SIG_BLOCK, ())


@pytest.mark.usefixtures("own_signals")
def test_a_signal_during_a_held_clean_up_stops_the_build_after_it() -> None:
    done: list[str] = []
    with stop_on_signals():
        with pytest.raises(Stopped, match="stopped by SIGTERM"):
            with held_signals():
                _signalled(signal.SIGTERM)
                done.append("removed")  # the signal waited
            pytest.fail("the held signal was lost")
        assert done == ["removed"]


@pytest.mark.usefixtures("own_signals")
def test_without_a_signal_the_handlers_and_mask_are_put_back() -> None:
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    with stop_on_signals(), stop_on_signals(), held_signals():  # nested: the outermost one restores
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert {s: signal.getsignal(s) for s in before} == before
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == mask


@pytest.mark.usefixtures("own_signals")
def test_an_ignored_sigint_stays_ignored() -> None:
    """A background job's SIGINT is ignored by its shell's choice: a build keeps it so."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with stop_on_signals():
        _signalled(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_receipt_is_updated_under_the_dist_lock(tmp_path: Path) -> None:
    """doctor adds its canary section under the same lock the build publishes under: while another
    build holds dist/'s lock, the update waits, then lands whole."""
    import fcntl
    import json
    import threading

    from tests.receipts import make_receipt
    from tfbuild.build.publish import update_receipt
    from tfbuild.core import serial
    from tfbuild.core.files import DIST_LOCK
    from tfbuild.wheel.receipt import CanaryCheck, InstructionCheck, SmokeOutcome, read_receipt

    section = CanaryCheck(  # a canary whose probe printed nothing
        isa=InstructionCheck(expected=("zmm",), found={}, ok=False),
        smoke={"host": SmokeOutcome(ok=False, exit_code=1), "baseline": SmokeOutcome(ok=False)},
        median_ms={},
        rounds=0,
        speedup=None,
        verdict=None,
    )

    wheel = tmp_path / "tensorflow_cpu-2.21.0-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"stand-in")
    receipt = tmp_path / "tensorflow_cpu-2.21.0-cp311-cp311-linux_x86_64.json"
    original = make_receipt(wheel)
    receipt.write_text(json.dumps(original))
    with (tmp_path / DIST_LOCK).open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        worker = threading.Thread(target=update_receipt, args=(receipt, section))
        worker.start()
        worker.join(timeout=0.5)
        assert worker.is_alive(), "the update did not wait for the lock"
        assert "canary" not in json.loads(receipt.read_text())
        fcntl.flock(held, fcntl.LOCK_UN)
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert json.loads(receipt.read_text()) == original | {"canary": serial.to_data(section)}
    assert read_receipt(receipt).canary == section
