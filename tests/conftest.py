"""Shared test helpers: the recorded cpuinfo dumps, running the real CLI (in this process as a process
runs it, or as a process where a test needs one) and reading its one error line; the real overlay
fixtures (tests/overlays.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import locale
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.http_server import Server, serve

# The real stock TensorFlow and a real overlay built against it, one per session for every
# directory: tests/overlay, tests/wheel and tests/pick use them.
from tests.overlays import built_overlay, stock_python  # noqa: F401 (fixtures)
from tests.user_models import user_models  # noqa: F401 (a fixture)
from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.detect.host import HostFacts
from tfbuild.plan import GIB

ROOT = Path(__file__).resolve().parent.parent
#: Real /proc/cpuinfo dumps, kept with the tests (see fixtures/cpuinfo/README.md).
CPUINFO_DIR = ROOT / "tests" / "fixtures" / "cpuinfo"


def cpuinfo_fixtures() -> list[Path]:
    """Every recorded machine's dump (the ``linux-*`` files), in name order."""
    return sorted(p for p in CPUINFO_DIR.iterdir() if p.name.startswith("linux-"))


def cpuinfo_fixture(suffix: str) -> Path:
    """The dump whose name ends with ``suffix`` (e.g. ``haswell``)."""
    matches = [p for p in cpuinfo_fixtures() if p.name.endswith(suffix)]
    assert len(matches) == 1, f"expected one dump ending in {suffix!r}, found {matches}"
    return matches[0]


def in_json(path: Path) -> str:
    """``path`` as JSON text writes it inside a string: what a golden test replaces in a command's
    ``--json`` output (a checkout's path with a letter not ASCII, a quote or a backslash is escaped
    there, so the path itself is not found)."""
    return json.dumps(str(path))[1:-1]


#: What a Python repr looks like in a line written for people: a dict, list, set or tuple of
#: strings, an empty container, None, True or False.
_REPR = re.compile(r"\{'|\['|\('|\{\}|\[\]|\(\)|\bNone\b|\bTrue\b|\bFalse\b")


def reprs_in(text: str) -> list[str]:
    """The lines of ``text`` (human output) that show a Python repr; [] when there is none."""
    return [line for line in text.splitlines() if _REPR.search(line)]


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def process_env(env: dict[str, str] | None) -> dict[str, str]:
    """The environment the CLI runs with: this one, 200 columns, no TFBUILD_DEBUG, then ``env``."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    full_env.pop("TFBUILD_DEBUG", None)
    return full_env


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
    input: bytes = b"",
) -> CliResult:
    """Run ``tfbuild ARGS`` in this process as ``python -m tfbuild ARGS`` would run, and capture
    everything: tests/cli_process.py gives it what a new process has (its streams and file
    descriptors, environment, signal handlers, logging, warnings, tfbuild's own state) and puts
    everything back after. ``input``: its standard input (empty by default). ``cwd``: a test whose
    output holds a path it passes, laid out to a width, runs where a relative path is enough, so
    that the layout does not depend on where the checkout is. ``timeout``: a hang guard.

    With ``TFBUILD_TESTS_CLI=process`` in the environment, every run is :func:`run_cli_process`
    instead: to compare the two runners, or to time them."""
    if os.environ.get(CLI_RUNNER) == "process":
        return run_cli_process(*args, env=env, timeout=timeout, cwd=cwd, input=input)
    from tests.cli_process import as_a_process

    return as_a_process(args, process_env(env), timeout=timeout, cwd=cwd, stdin=input)


#: The variable that makes every run_cli a process (``process``).
CLI_RUNNER = "TFBUILD_TESTS_CLI"


def run_cli_process(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
    input: bytes = b"",
) -> CliResult:
    """Run ``python -m tfbuild ARGS`` as a process of its own, exactly as a user would, and capture
    everything: for what only a process shows (a signal, the console script, ``sys.modules`` after
    one command, another interpreter or user). Every other test runs :func:`run_cli`, in-process;
    tests/cli/test_cli_runs.py counts the tests that come here."""
    proc = subprocess.run(
        [sys.executable, "-m", "tfbuild", *args],
        input=input,  # then the end: stdin is empty by default
        capture_output=True,
        env=process_env(env),
        timeout=timeout,  # a hang guard, never a speed check: generous on a busy 2-core machine
        check=False,
        cwd=cwd,
    )
    return CliResult(proc.returncode, as_text(proc.stdout), as_text(proc.stderr))


def as_text(data: bytes) -> str:
    """A process's output as ``subprocess.run(text=True)`` gives it: decoded, newlines translated."""
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


ERROR_PREFIX = "tfbuild: error: "


class Ran(Protocol):
    """A finished command: a CliResult or a subprocess.CompletedProcess[str]."""

    @property
    def returncode(self) -> int: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...


def one_error_line(
    result: Ran,
    code: int | None = None,
    *fragments: str,
    report: bool = False,
    among_others: bool = False,
) -> str:
    """The one ``tfbuild: error: ...`` line of a refused command, checked: no traceback, exactly one
    error line, the exit ``code`` and each of ``fragments`` in the line when given. By default the
    line is all there is: stderr is that line and its newline, stdout is empty. ``report``: stdout
    holds a report (``--json``) beside the refusal and is not looked at. ``among_others``: other
    stderr lines (a build's progress, a report's) surround the error line, and stdout is not looked
    at either."""
    stderr = result.stderr
    if code is not None:
        assert result.returncode == code, (result.returncode, stderr)
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.startswith(ERROR_PREFIX)]
    assert len(lines) == 1, stderr
    (line,) = lines
    if not among_others:
        assert stderr == line + "\n", stderr
        if not report:
            assert result.stdout == "", result.stdout
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


def recorded_host(machine: str, *, memory_gib: int, disk_gib: int, **changes: object) -> HostFacts:
    """Planner input from a recorded cpuinfo dump and fixed resources: the same on any machine."""
    facts = HostFacts(
        machine=read_cpuinfo(cpuinfo_fixture(machine)),
        machine_is_build_host=True,
        build_cpus=2,
        build_memory_bytes=memory_gib * GIB,
        build_disk_path="/cache",
        build_disk_free_bytes=disk_gib * GIB,
        python="3.11",
    )
    return dataclasses.replace(facts, **changes)  # type: ignore[arg-type]


@pytest.fixture
def own_signals() -> Iterator[None]:
    """SIGINT and SIGTERM as a terminal gives them (Ctrl-C raises KeyboardInterrupt, SIGTERM's
    default action), whatever this pytest inherited: started in the background of a non-interactive
    shell (``nohup .ci/run &``) it has SIGINT ignored, which tfbuild rightly keeps ignored. The
    handlers and the signal mask are put back afterwards, whatever the test did."""
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@pytest.fixture
def http_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """The loopback HTTP server of tests/http_server.py, serving ``tmp_path / "www"``. The loopback
    address is kept out of any proxy the environment names (NO_PROXY), here and in the CLI's
    subprocesses."""
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    with serve(tmp_path / "www") as server:
        yield server


@pytest.fixture
def other_http_server(tmp_path: Path, http_server: Server) -> Iterator[Server]:
    """A second server, serving ``tmp_path / "other"``: another origin (another port)."""
    with serve(tmp_path / "other") as server:
        yield server


#: The inputs that are no file: a FIFO with no writer (reading it would wait forever) and a link to
#: /dev/zero (reading it would never end). tfbuild's one reader refuses both (files.read_input).
NO_FILE_KINDS = ("fifo", "dev-zero")


def plant_no_file(path: Path, kind: str) -> str:
    """Put a FIFO (``kind`` "fifo") or a link to /dev/zero ("dev-zero") at ``path``; return what
    tfbuild's reader calls it ("a FIFO", "a character device")."""
    if kind == "fifo":
        os.mkfifo(path)
        return "a FIFO"
    path.symlink_to("/dev/zero")
    return "a character device"


@contextlib.contextmanager
def mounted_tmpfs(where: Path, *, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (mount's spelling: ``1m``) made at ``where`` (root only), unmounted after."""
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


#: The xdist group of the tests on the real engine (``make test`` runs in two processes with
#: ``--dist loadgroup``): they share the engine's images, volumes and caches by name, so they run
#: one at a time, in one process, as they were written to; the other tests share the other one.
ENGINE_GROUP = "engine"


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups to schedule them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that run the stock TensorFlow are slow (``make quick`` leaves them out); the real
    engine's tests are one xdist group (when xdist runs them: ``-p no:xdist`` knows no groups)."""
    grouped = config.pluginmanager.hasplugin("xdist")
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "stock_python" in names or "built_overlay" in names:
            item.add_marker(pytest.mark.slow)
        if grouped and item.get_closest_marker("docker") is not None:
            item.add_marker(pytest.mark.xdist_group(ENGINE_GROUP))


class _NodeIdGroups:
    """After xdist's own hook (trylast), which means to do what :func:`_group_the_node_ids` does."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        _group_the_node_ids(config, items)


#: The label key every engine object of a test run carries (tfbuild's TFBUILD_LABELS, set once
#: by the run's first process, so its xdist workers share it): a test lists, finds and removes
#: the objects it made by it, or by their own ids, never by the label every tfbuild object has.
TEST_RUN_KEY = "org.tfbuild.test-run"


def this_run_label() -> str:
    """``org.tfbuild.test-run=<this run's id>``, as ``docker ps --filter label=`` takes it."""
    pairs = os.environ.get("TFBUILD_LABELS", "").split(",")
    return next(p for p in pairs if p.startswith(f"{TEST_RUN_KEY}="))


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_NodeIdGroups(), "tfbuild-node-id-groups")
    labels = [p for p in os.environ.get("TFBUILD_LABELS", "").split(",") if p]
    if not any(p.startswith(f"{TEST_RUN_KEY}=") for p in labels):  # a worker keeps the run's
        import uuid

        labels.append(f"{TEST_RUN_KEY}={uuid.uuid4().hex[:12]}")
        os.environ["TFBUILD_LABELS"] = ",".join(labels)


def _group_the_node_ids(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give each grouped test the node id ``ID@GROUP`` that xdist's loadgroup schedules by. xdist
    3.8 sets ``item._nodeid`` for it, which pytest 9.2 no longer reads (a node's id is its
    ``_id``), so without this the group never reaches the scheduler and the engine's tests are
    spread over both processes (the lock below still keeps them apart, but one process then
    waits). Where xdist's own rewrite took, the id already ends with its group and is left."""
    if not getattr(config.option, "loadgroup", False):  # set in xdist's workers alone
        return
    from _pytest.nodeid import coerce_node_id

    for item in items:
        groups = sorted({str(m.args[0]) for m in item.iter_markers("xdist_group") if m.args})
        suffix = "@" + "_".join(groups)
        if groups and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            item._id = coerce_node_id(item.nodeid + suffix)


@pytest.fixture(autouse=True)
def one_engine_test_at_a_time(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The real engine's tests run one at a time, wherever xdist puts them: each holds a lock that
    every process of the run shares (tests/engine_lock.py). Their xdist group alone does not hold
    them apart (pytest 9.2 derives a node's id from another attribute than the one xdist 3.8's
    loadgroup rewrites, so the group never reaches the scheduler)."""
    if request.node.get_closest_marker("docker") is None:
        yield
        return
    from tests.engine_lock import engine_lock

    # the run's directory, above each xdist worker's own (popen-gwN)
    shared = tmp_path_factory.getbasetemp()
    if shared.name.startswith("popen-gw"):
        shared = shared.parent
    with engine_lock(shared):
        yield
