"""The benchmark worker: its protocol against a real TensorFlow, and its timing logic without one.

The real tests run the stock tensorflow-cpu wheel, in the environment the ``stock_python`` fixture
makes (tests/overlays.py, shared by tests/conftest.py).
"""

from __future__ import annotations

import ast
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tfbuild.core import commands
from tfbuild.scripts import worker

WORKER = Path(worker.__file__)
PROFILER = WORKER.with_name("profile_tf.py")
TF_PYTHON_ENV = "TFBUILD_TEST_TF_PYTHON"
TF_PYTHON_FALLBACK = "/tmp/tfvenv/bin/python"

ALL_OPS = {
    "matmul_256": "matmul",
    "matmul_1024": "matmul",
    "matmul_2048": "matmul",
    "matmul_bf16_1024": "matmul",
    "conv2d_nhwc": "conv",
    "conv2d_nchw": "conv",
    "exp": "elementwise",
    "tanh": "elementwise",
    "sigmoid": "elementwise",
    "erf": "elementwise",
    "gelu": "elementwise",
    "log1p": "elementwise",
    "softmax": "elementwise",
    "log_softmax": "elementwise",
    "layer_norm": "elementwise",
    "cast_f32_bf16": "cast",
    "cast_f32_f16": "cast",
    "add": "control",
    "relu": "control",
    "reduce_sum": "control",
}
OPTIONAL_OPS = {"matmul_bf16_1024", "conv2d_nchw"}


# --- finding TensorFlow and driving a worker --------------------------------------------------------


@pytest.fixture(scope="session")
def tf_python(stock_python: str) -> str:
    """The stock wheel's interpreter, from the environment the smoke tests make (conftest)."""
    return stock_python


def worker_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    return {**env, **extra}


class WorkerProcess:
    """A worker under test: requests in, replies out, with a timeout on every reply."""

    def __init__(self, python: str, *args: str, env: dict[str, str] | None = None) -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            list(commands.in_python(python, WORKER, *args)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env if env is not None else worker_env(),
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read_all, daemon=True)
        self._reader.start()
        self.ready = self.reply(timeout=120)

    def _read_all(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put("")  # end of output

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()

    def reply(self, timeout: float = 120) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no reply within {timeout} s; stderr:\n{self.stderr()[-3000:]}"
            ) from None
        assert line, (
            f"the worker closed stdout (exit {self.proc.poll()}); stderr:\n{self.stderr()[-3000:]}"
        )
        message: dict[str, Any] = json.loads(line)
        return message

    def send_line(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def request(self, message: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
        self.send_line(json.dumps(message))
        return self.reply(timeout)

    def run(self, op: str, reps: int = 3, min_rep_seconds: float = 0.005) -> dict[str, Any]:
        return self.request({"op": op, "reps": reps, "min_rep_seconds": min_rep_seconds})

    def close(self) -> int:
        """Quit (or kill after 30 s); the exit code."""
        if self.proc.poll() is None:
            try:
                self.send_line(json.dumps({"quit": True}))
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self._reader.join(timeout=10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._stderr.close()
        return self.proc.returncode

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture(scope="module")
def one_thread(tf_python: str) -> Iterator[WorkerProcess]:
    with WorkerProcess(tf_python, "--intra", "1", "--inter", "1") as proc:
        yield proc


# --- the file itself ---------------------------------------------------------------------------------


def test_worker_imports_only_stdlib_numpy_tensorflow_and_parses_as_python_3_9() -> None:
    tree = ast.parse(WORKER.read_text(encoding="utf-8"), feature_version=(3, 9))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports: the worker runs as a plain script"
            assert node.module is not None
            imported.add(node.module.split(".")[0])
    # the profiler beside it is loaded by its path (checked below)
    allowed = {"numpy", "tensorflow"}
    foreign = {m for m in imported if m not in sys.stdlib_module_names and m not in allowed}
    assert not foreign, f"the worker must not import {sorted(foreign)}"


def test_the_profiler_beside_it_imports_only_the_standard_library() -> None:
    tree = ast.parse(PROFILER.read_text(encoding="utf-8"), feature_version=(3, 9))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module is not None
            imported.add(node.module.split(".")[0])
    # tensorflow: the profiler's protos, imported where used, from the interpreter it runs in
    assert imported - {"tensorflow", "tsl"} <= set(sys.stdlib_module_names), imported


def test_worker_without_tensorflow_says_not_ready_and_exits_1() -> None:
    if (
        subprocess.run(
            [sys.executable, "-c", "import tensorflow"], capture_output=True, check=False
        ).returncode
        == 0
    ):
        pytest.skip("this interpreter has TensorFlow")
    proc = subprocess.run(
        list(commands.in_python(sys.executable, WORKER, "--intra", "1", "--inter", "1")),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    ready = json.loads(lines[0])
    assert ready["ready"] is False
    assert "ModuleNotFoundError" in ready["error"]
    assert "Traceback" in proc.stderr


# --- timing and request handling, with fake ops (no TensorFlow) ---------------------------------------


class Counter:
    def __init__(self, seconds: float = 0.0) -> None:
        self.calls = 0
        self.seconds = seconds

    def __call__(self) -> object:
        self.calls += 1
        if self.seconds:
            deadline = time.perf_counter() + self.seconds
            while time.perf_counter() < deadline:
                pass
        return object()


def test_measure_warms_up_calibrates_and_times_each_repetition() -> None:
    fn = Counter(0.0005)
    op = worker.Op("busy", "control", "Gelem/s", 1000, fn)
    reply = worker.measure(op, reps=4, min_rep_seconds=0.01)
    for _ in range(2):  # a call preempted by other work on the machine can outlast 10 ms alone
        if reply["inner"] >= 2:
            break
        fn.calls = 0
        reply = worker.measure(op, reps=4, min_rep_seconds=0.01)
    assert reply["op"] == "busy"
    assert reply["work"] == 1000
    assert reply["unit"] == "Gelem/s"
    assert len(reply["seconds_per_call"]) == 4
    inner = reply["inner"]
    assert inner >= 2  # 0.5 ms per call cannot fill 10 ms in one call
    assert all(0.0004 < s < 0.05 for s in reply["seconds_per_call"])
    assert inner * max(reply["seconds_per_call"]) >= 0.01 * 0.5
    assert fn.calls >= worker.WARMUP_CALLS + inner + 4 * inner


def test_calibrate_grows_fast_for_tiny_ops_and_keeps_one_for_slow_ones() -> None:
    assert worker.calibrate(Counter(0.02), 0.01) == 1
    tiny = worker.calibrate(Counter(), 0.005)
    assert 10 <= tiny <= worker.MAX_INNER


def test_handle_replies_with_errors_and_goes_on() -> None:
    def broken() -> object:
        raise RuntimeError("no kernel\nfor this")

    ops = {
        "ok": worker.Op("ok", "control", "Gelem/s", 1, Counter()),
        "broken": worker.Op("broken", "control", "Gelem/s", 1, broken),
    }
    assert worker.handle('{"quit": true}', ops) is None
    not_json = worker.handle("not json", ops)
    assert not_json is not None
    assert set(not_json) == {"error"}
    assert worker.handle('{"op": "broken", "reps": 2, "min_rep_seconds": 0}', ops) == {
        "op": "broken",
        "error": "RuntimeError: no kernel for this",
    }
    unknown = worker.handle('{"op": "nope"}', ops)
    assert unknown is not None
    assert unknown["op"] == "nope"
    assert "unknown op" in unknown["error"]
    for bad in (
        '{"op": "ok", "reps": 0}',
        '{"op": "ok", "reps": 1.5}',
        '{"op": "ok", "min_rep_seconds": "x"}',
    ):
        reply = worker.handle(bad, ops)
        assert reply is not None
        assert set(reply) == {"op", "error"}
    good = worker.handle('{"op": "ok", "reps": 2, "min_rep_seconds": 0.001}', ops)
    assert good is not None
    assert len(good["seconds_per_call"]) == 2


# --- a real worker ----------------------------------------------------------------------------------


def test_ready_line_lists_the_ops_with_work_unit_and_group(one_thread: WorkerProcess) -> None:
    ready = one_thread.ready
    assert ready["ready"] is True
    assert ready["tensorflow"][0].isdigit()
    assert "git_version" in ready
    assert (ready["intra"], ready["inter"]) == (1, 1)
    ops = ready["ops"]
    assert set(ALL_OPS) - OPTIONAL_OPS <= set(ops) <= set(ALL_OPS)
    assert "matmul_bf16_1024" not in ops  # only with --bf16
    for name, meta in ops.items():
        assert meta["group"] == ALL_OPS[name]
        assert meta["unit"] == ("GFLOP/s" if meta["group"] in {"matmul", "conv"} else "Gelem/s")
        assert meta["dtype"] == "float32"
    assert ops["matmul_256"]["work"] == 2 * 256**3
    assert ops["matmul_2048"]["work"] == 2 * 2048**3
    assert ops["conv2d_nhwc"]["work"] == pytest.approx(7.40e9, rel=1e-3)
    assert {ops[n]["work"] for n in ops if ALL_OPS[n] not in {"matmul", "conv"}} == {262_144}


@pytest.mark.parametrize("op", ["exp", "softmax", "layer_norm", "cast_f32_f16", "matmul_256"])
def test_an_op_request_returns_reps_timings(one_thread: WorkerProcess, op: str) -> None:
    reply = one_thread.run(op, reps=3, min_rep_seconds=0.005)
    assert reply["op"] == op
    assert "error" not in reply
    times = reply["seconds_per_call"]
    assert len(times) == 3
    assert all(isinstance(t, float) and 0 < t < 1 for t in times)
    # calibrated (the count whose loop reached min_rep_seconds once: how long the repetitions
    # then take is the machine's load's, and calibrate() is tested apart, on a known clock)
    assert isinstance(reply["inner"], int) and reply["inner"] >= 1
    assert reply["work"] == one_thread.ready["ops"][op]["work"]
    assert reply["unit"] == one_thread.ready["ops"][op]["unit"]


def test_bad_requests_get_error_replies_and_the_worker_goes_on(one_thread: WorkerProcess) -> None:
    one_thread.send_line("this is not json")
    assert "error" in one_thread.reply()
    unknown = one_thread.request({"op": "no_such_op", "reps": 1, "min_rep_seconds": 0})
    assert unknown["op"] == "no_such_op"
    assert "unknown op" in unknown["error"]
    assert "error" in one_thread.request({"op": "exp", "reps": 0, "min_rep_seconds": 0})
    assert len(one_thread.run("relu", reps=2)["seconds_per_call"]) == 2


def test_quit_exits_0_and_stdout_holds_only_protocol_lines(tf_python: str) -> None:
    requests = [
        {
            "op": "cast_f32_f16",
            "reps": 2,
            "min_rep_seconds": 0.001,
        },  # oneDNN logs an E0000 line here
        {"op": "add", "reps": 2, "min_rep_seconds": 0.001},
        {"quit": True},
        {"op": "exp", "reps": 2, "min_rep_seconds": 0.001},  # never read
    ]
    proc = subprocess.run(
        list(commands.in_python(tf_python, WORKER, "--intra", "0", "--inter", "0")),
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=120,
        env=worker_env(TF_CPP_MIN_LOG_LEVEL="0"),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r.get("op") for r in replies] == [None, "cast_f32_f16", "add"]
    assert replies[0]["ready"] is True
    assert (replies[0]["intra"], replies[0]["inter"]) == (0, 0)
    assert "cpu_feature_guard" in proc.stderr or "oneDNN" in proc.stderr  # TF's logs: on stderr


def test_eof_exits_0_and_unsupported_ops_are_left_out(tf_python: str) -> None:
    """Without oneDNN's layout pass, stock TensorFlow refuses NCHW conv on the CPU."""
    proc = subprocess.run(
        list(commands.in_python(tf_python, WORKER, "--intra", "1", "--inter", "1", "--bf16")),
        input=json.dumps({"op": "reduce_sum", "reps": 1, "min_rep_seconds": 0}) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=worker_env(TF_ENABLE_ONEDNN_OPTS="0"),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ready, reply = (json.loads(line) for line in proc.stdout.splitlines())
    assert "conv2d_nchw" not in ready["ops"]
    assert "NHWC" in ready["dropped"]["conv2d_nchw"]
    assert ready["env"]["TF_ENABLE_ONEDNN_OPTS"] == "0"  # recorded
    assert ("matmul_bf16_1024" in ready["ops"]) != ("matmul_bf16_1024" in ready["dropped"])
    if "matmul_bf16_1024" in ready["ops"]:
        assert ready["ops"]["matmul_bf16_1024"]["dtype"] == "bfloat16"
    assert len(reply["seconds_per_call"]) == 1
