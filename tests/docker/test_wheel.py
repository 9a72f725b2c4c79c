"""`tfbuild wheel` end to end against the real engine, on the canary STAND-IN source (not TensorFlow).

The same code path as a TensorFlow build: plan, rendered context, toolchain image tagged by its
input hash, build container as the calling user with the source, output, context and cache volume
mounted, wheel + receipt + env file published into dist/. The stand-in compiles a real native kernel
with the planned flags, so the machine code can be checked with objdump.

Every build here runs with its own cache volume, removed afterwards; the toolchain image is shared
(built once, reused by hash, which is itself under test).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import as_a_process
from tests.conftest import CliResult, this_run_label
from tests.recipes.test_canary import assert_planned_isa, disassembly
from tfbuild.build.progress import parse_progress
from tfbuild.core.files import sha256_file
from tfbuild.detect import cpu
from tfbuild.recipes import canary
from tfbuild.wheel.labels import cpu_label
from tfbuild.wheel.receipt import Receipt

pytestmark = pytest.mark.docker


@pytest.fixture(autouse=True)
def no_leftover_containers(engine: Any, volume: str) -> Iterator[None]:
    """No test may leave a build container behind (the kept-container test removes its own). Only
    this test's: those that mount its cache volume, not those of builds other runs make meanwhile."""

    def builds() -> set[str]:
        filters = {"label": ["org.tfbuild.build", this_run_label()], "volume": volume}
        return {str(c["Id"]) for c in engine._client.api.containers(all=True, filters=filters)}

    before = builds()
    yield
    after = builds() - before
    for container_id in after:
        engine.remove_container(container_id)
    assert not after, f"build containers left behind: {after}"


def wheel_args(
    dist: Path, volume: str, *args: str, base: str = "tfbuild/base:bookworm"
) -> list[str]:
    """`tfbuild wheel` on the canary, on the test base image (or ``base``), with the test's own
    cache volume: tfbuild's arguments."""
    return [
        "wheel",
        "--canary",
        "--base-image",
        base,
        "--dist",
        str(dist),
        "--cache-volume",
        volume,
        "--skip-disk-check",
        *args,
    ]


def wheel_argv(
    dist: Path, volume: str, *args: str, base: str = "tfbuild/base:bookworm"
) -> list[str]:
    """The same as a process's command line, for the tests that need a process: a signal sent to
    it, a container stopped while it runs, two at once."""
    return [sys.executable, "-m", "tfbuild", *wheel_args(dist, volume, *args, base=base)]


def wheel_cli(
    dist: Path,
    volume: str,
    *args: str,
    timeout: float = 600,
    env: dict[str, str] | None = None,
    base: str = "tfbuild/base:bookworm",
) -> CliResult:
    """`tfbuild wheel` (:func:`wheel_args`) run in this process as a process would run it, with this
    environment and ``env``."""
    argv = wheel_args(dist, volume, *args, base=base)
    return as_a_process(argv, {**os.environ, **(env or {})}, timeout=timeout)


def standin_source(tmp_path: Path, name: str = "src") -> Path:
    return canary.copy_tree(tmp_path / name)


def library(wheel: Path, into: Path) -> Path:
    into.write_bytes(zipfile.ZipFile(wheel).read(canary.LIBRARY))
    return into


def leftovers(dist: Path) -> list[str]:
    return sorted(p.name for p in dist.iterdir() if p.name.startswith(".tfbuild-"))


def test_canary_wheel_lands_with_receipt_and_the_planned_instructions(
    base_image: str, volume: str, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    host = wheel_cli(dist / "host", volume, "--json")
    assert host.returncode == 0, host.stderr
    baseline = wheel_cli(dist / "base", volume, "--target", "x86_64", "--json")
    assert baseline.returncode == 0, baseline.stderr

    result = json.loads(host.stdout)
    wheel = Path(result["wheel"])
    assert wheel.parent == (dist / "host").resolve()
    receipt = json.loads(wheel.with_suffix(".json").read_text())
    # The wheel's version carries the target: the host's microarchitecture, named by archspec.
    host_target = str(cpu.identify(cpu.host_cpuinfo()).name)
    assert receipt["target"] == host_target
    assert receipt["label"] == cpu_label(host_target)
    # Its own name: installing it never replaces a TensorFlow.
    assert wheel.name.startswith(f"tfbuild_canary-0.0.0+tfbuild.canary.{receipt['label']}-")
    base_wheel = Path(json.loads(baseline.stdout)["wheel"])
    assert base_wheel.name.startswith("tfbuild_canary-0.0.0+tfbuild.canary.x86_64-")
    assert receipt["plan"]["wheel_name"] == "tfbuild_canary"
    assert receipt["schema"] == "tfbuild.receipt/2"
    assert receipt["standin"] is True
    assert receipt["wheel"]["sha256"] == sha256_file(wheel) == result["sha256"]
    inputs = receipt["inputs"]
    assert inputs["toolchain_image"].startswith("tfbuild/toolchain:")
    assert inputs["toolchain_image_id"].startswith("sha256:")
    assert inputs["base_image"] == "tfbuild/base:bookworm" and inputs["base_image_id"]
    assert inputs["tools"]["compiler"].startswith("gcc-12")
    # Every package of the toolchain image, with its exact version (dpkg-query in the image).
    assert inputs["packages"]["gcc-12"].startswith("12.2.0")
    assert {"python3", "libgoogle-perftools4", "ca-certificates"} <= set(inputs["packages"])
    assert inputs["source"]["kind"] == "directory"
    assert inputs["source"]["epoch"] == canary.EPOCH
    assert receipt["plan"]["cflags"] == receipt["cflags"]
    assert Receipt.from_json(receipt).plan_intact()
    assert Path(receipt["log"]).is_file()
    assert "[tfbuild] phase: compile" in Path(receipt["log"]).read_text()
    env_file = wheel.with_suffix(".env").read_text()
    assert "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4" in env_file
    assert leftovers(dist / "host") == []

    # The planned flags reached the compiler: the host build uses the host's vector instructions,
    # the x86_64 baseline build of the same source none of them.
    host_asm = disassembly(library(wheel, tmp_path / "host.so"))
    base_asm = disassembly(library(base_wheel, tmp_path / "base.so"))
    assert_planned_isa(host_asm, base_asm)


def test_a_second_run_reuses_the_toolchain_image(
    base_image: str, volume: str, tmp_path: Path
) -> None:
    first = wheel_cli(tmp_path / "dist", volume, "--json")
    assert first.returncode == 0, first.stderr
    second = wheel_cli(tmp_path / "dist", volume, "--json")
    assert second.returncode == 0, second.stderr
    first_data, second_data = json.loads(first.stdout), json.loads(second.stdout)
    assert second_data["image_built"] is False
    first_inputs = first_data["receipt_data"]["inputs"]
    assert (
        second_data["receipt_data"]["inputs"]["toolchain_image_id"]
        == (first_inputs["toolchain_image_id"])
    )
    assert second_data["receipt_data"]["host"]["toolchain_image_built"] is False
    assert second_data["replaced"] is True
    assert len(list((tmp_path / "dist" / "logs").glob("*.log"))) == 2


def test_the_build_runs_as_the_calling_user(
    engine: Any, base_image: str, volume: str, tmp_path: Path
) -> None:
    """Run as another uid:gid than the test's own: every file the build writes is theirs."""
    from tfbuild.build.run import BuildRun
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.options import PlanOptions

    source = standin_source(tmp_path)
    for path in (source, *source.rglob("*")):
        os.lchown(path, 4321, 4321)
    dist = tmp_path / "dist"
    dist.mkdir()
    os.chown(dist, 4321, 4321)  # the user's own dist/
    args = PlanOptions(
        canary=True, base_image=base_image, cache_volume=volume, skip_disk_check=True
    )
    run = BuildRun(dist=dist, source=source, quiet=True, user="4321:4321")
    result = run.execute(plan_here(args, engine), engine=engine)
    assert result.wheel.stat().st_uid == 4321
    assert (source / "bazel-bin").lstat().st_uid == 4321  # bazel's convenience link
    assert (source / ".tf_configure.bazelrc").stat().st_uid == 4321


def test_a_failed_build_shows_its_last_lines_and_leaves_no_wheel(
    base_image: str, volume: str, tmp_path: Path
) -> None:
    source = standin_source(tmp_path)
    kernel = source / "src" / "kernel.c"
    kernel.write_text(kernel.read_text() + "\nthis is not C;\n")
    dist = tmp_path / "dist"
    result = wheel_cli(dist, volume, "--source", str(source))
    assert result.returncode == 6, result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("tfbuild: error: the build failed (exit code 1)")
    assert str(dist.resolve() / "logs") in error
    shown = [line for line in result.stderr.splitlines() if line.startswith("  | ")]
    assert 0 < len(shown) <= 40
    assert any("this is not C" in line or "error:" in line for line in shown)
    assert not list(dist.glob("*.whl"))
    assert leftovers(dist) == []
    (log,) = (dist / "logs").glob("*.log")
    assert "ERROR: compiling src/kernel.c failed" in log.read_text()
    assert "Traceback" not in result.stderr


def test_keep_container_leaves_the_failed_container(
    engine: Any, base_image: str, volume: str, tmp_path: Path
) -> None:
    """The container the build names is kept, and this test removes that one only: never one it
    did not make (another build on the engine carries the same label)."""
    source = standin_source(tmp_path)
    (source / "src" / "kernel.c").write_text("not C at all\n")
    result = wheel_cli(tmp_path / "dist", volume, "--source", str(source), "--keep-container")
    named = re.findall(r"container kept for a post-mortem: ([0-9a-f]{12})", result.stderr)
    ours = [
        c for c in engine.containers(label=this_run_label()) if named and c.startswith(named[0])
    ]
    try:
        assert result.returncode == 6
        assert len(named) == 1 and len(ours) == 1, (named, ours)
    finally:
        for container_id in ours:
            engine.remove_container(container_id)


def add_generated_sources(source: Path, count: int, command: str, message: str) -> None:
    """Real bazel actions in the canary's tree: ``count`` genrules, each running ``command`` and
    then writing a C file that the library compiles, so the wheel's build runs them."""
    build = source / "src" / "BUILD"
    text = build.read_text().replace(
        '"runtime.cc",\n    ]',
        f'"runtime.cc",\n    ] + [":generated_%d.c" % i for i in range({count})]',
    )
    assert "generated_" in text
    build.write_text(
        text
        + f"""
[genrule(
    name = "generated_%d" % i,
    outs = ["generated_%d.c" % i],
    cmd = {command!r} + " && echo 'int generated_%d;' > $@" % i,
    message = {message!r},
) for i in range({count})]
"""
    )


#: Like a compile action, each job holds 400 MB (touched, so really resident) for a few seconds.
HUNGRY = (
    "python3 -c 'import time; b = bytearray(400 << 20);"
    ' b[::4096] = b"x" * len(b[::4096]); time.sleep(4)\''
)


def test_an_oom_killed_build_is_retried_with_half_the_jobs(
    base_image: str, volume: str, tmp_path: Path
) -> None:
    """A real OOM kill under a container memory limit: bazel's server and 2 actions of 400 MB each
    do not fit in 800 MB, 1 does (bazel resumes with what the first attempt finished). Two jobs,
    not more: bazel runs no more local actions at once than the machine has cores (2 here)."""
    source = standin_source(tmp_path)
    add_generated_sources(source, 4, HUNGRY, "Holding 400 MB")
    dist = tmp_path / "dist"
    result = wheel_cli(
        dist, volume, "--source", str(source), "--memory", "800m", "--jobs", "2", "--json"
    )
    assert result.returncode == 0, result.stderr
    attempts = json.loads(result.stdout)["attempts"]
    assert [a["jobs"] for a in attempts] == [2, 1]
    assert attempts[0]["exit_code"] != 0
    assert attempts[1]["exit_code"] == 0
    receipt = json.loads(next(dist.glob("*.json")).read_text())
    assert receipt["plan"]["resources"]["jobs"] == 1  # the plan's one record of the jobs
    assert any(
        r["what"] == "jobs" and "out of memory" in r["why"] for r in receipt["plan"]["reasons"]
    )


class Running:
    """tfbuild started as from a terminal, its stderr read line by line as it comes.

    SIGINT is not ignored in it: a test run in the background of a non-interactive shell (nohup
    make test &) inherits SIGINT ignored, and so would tfbuild: a handler that is not SIG_IGN here
    becomes SIG_DFL in the child at exec, where Python makes it KeyboardInterrupt. With
    faulthandler, should tfbuild ever not stop, SIGABRT prints where each thread is."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            self.proc = subprocess.Popen(
                [argv[0], "-X", "faulthandler", *argv[1:]],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, **(env or {})},
            )
        finally:
            signal.signal(signal.SIGINT, ignored)
        self.seen: list[str] = []
        self._wanted = ""
        self._found = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.seen.append(line)
            if self._wanted and self._wanted in line:
                self._found.set()

    def wait_for(self, text: str, timeout: float = 300) -> None:
        """Until tfbuild says ``text`` (its stderr; --verbose shows the build's lines)."""
        self._wanted = text
        if not any(text in line for line in self.seen):
            assert self._found.wait(timeout), "".join(self.seen[-80:])

    def signal(self, *signums: int, gap: float = 0.01) -> None:
        """``signums`` one after another, ``gap`` seconds apart."""
        for number, signum in enumerate(signums):
            if number:
                time.sleep(gap)
            self.proc.send_signal(signum)

    def wait(self, timeout: float = 120) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)
            self.proc.wait(30)
            self._reader.join(5)
            pytest.fail(f"tfbuild did not end within {timeout} s:\n" + "".join(self.seen[-80:]))

    @property
    def stderr(self) -> str:
        self._reader.join(30)
        return "".join(self.seen)

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            assert stream is not None
            stream.close()


def build_container(
    engine: Any, root: Path, logs: str = "logs/*.log", timeout: float = 300
) -> tuple[str, str]:
    """``(build id, container id)`` of the one build whose log is ``root``/``logs`` (a glob), once
    its build container runs; by the build's own label, not another build's of the same engine."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for log in root.glob(logs):
            running = engine.containers(label=f"org.tfbuild.build={log.stem}", all=False)
            if running:
                return log.stem, running[0]
        time.sleep(0.1)
    pytest.fail(f"no build container ran within {timeout} s")


def volumes_of(engine: Any, container_id: str) -> set[str]:
    """The named volumes a container has mounted (the cache and its output base)."""
    mounts = engine._client.api.inspect_container(container_id)["Mounts"]
    return {m["Name"] for m in mounts if m["Type"] == "volume"}


def stopped_line(signum: int) -> str:
    """What tfbuild says, once, when a signal stopped it (exit 130)."""
    return (
        f"tfbuild: error: stopped by {signal.Signals(signum).name}: the build container was "
        "stopped and removed, no partial files were left."
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_and_removes_the_build(
    engine: Any, base_image: str, volume: str, tmp_path: Path, signum: int
) -> None:
    source = standin_source(tmp_path)
    add_generated_sources(source, 1, "sleep 600", "Compiling for a long time")
    dist = tmp_path / "dist"
    with Running(wheel_argv(dist, volume, "--source", str(source), "--verbose")) as run:
        run.wait_for("Compiling for a long time")
        build_id, _container = build_container(engine, dist)
        run.signal(signum)
        code = run.wait()
        assert code == 130, run.stderr
    assert engine.containers(label=f"org.tfbuild.build={build_id}") == []
    assert leftovers(dist) == []
    assert not list(dist.glob("*.whl"))
    assert "Traceback" not in run.stderr
    assert run.stderr.splitlines()[-1] == stopped_line(signum)


@pytest.mark.parametrize(
    ("outside", "message"),
    [
        (["kill"], "the build container was stopped from outside (docker kill or docker stop?)"),
        (["rm", "-f"], "the build container was removed from outside (docker rm -f?)"),
    ],
)
def test_a_build_container_stopped_from_outside_is_one_line_and_no_retry(
    engine: Any, base_image: str, volume: str, tmp_path: Path, outside: list[str], message: str
) -> None:
    """docker kill ends the container with 137 like the OOM killer, but the engine recorded no OOM
    kill: no retry with fewer jobs, no "ran out of memory". docker rm -f is no internal error."""
    source = standin_source(tmp_path)
    add_generated_sources(source, 1, "sleep 600", "Compiling for a long time")
    dist = tmp_path / "dist"
    argv = wheel_argv(dist, volume, "--source", str(source), "--verbose", "--jobs", "2")
    with Running(argv) as run:
        run.wait_for("Compiling for a long time")
        build_id, container = build_container(engine, dist)
        subprocess.run(["docker", *outside, container], capture_output=True, check=True)
        code = run.wait()
    assert code == 6, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("tfbuild: ")]
    assert len(errors) == 1 and errors[0].startswith(f"tfbuild: error: {message}: "), errors
    assert "Traceback" not in run.stderr and "ran out of memory" not in errors[0]
    log = (dist / "logs" / f"{build_id}.log").read_text()
    assert log.count("[tfbuild] phase: configure") == 1  # one attempt: build.sh ran once
    assert "retrying" not in log
    assert engine.containers(label=f"org.tfbuild.build={build_id}") == []
    assert leftovers(dist) == []


@pytest.mark.parametrize(
    "signals",
    [
        (signal.SIGINT, signal.SIGINT),
        (signal.SIGTERM, signal.SIGTERM, signal.SIGINT),
    ],
    ids=["SIGINT-SIGINT", "SIGTERM-SIGTERM-SIGINT"],
)
def test_a_second_signal_does_not_cut_the_clean_up_short(
    engine: Any, base_image: str, volume: str, tmp_path: Path, signals: tuple[int, ...]
) -> None:
    """The canary's own copy (no --source): its output base is a volume of this build alone, removed
    with the container and the work directories however many signals follow the first, 10 ms
    apart. The build container is paused first, so that it is still there when they come."""
    dist = tmp_path / "dist"
    with Running(wheel_argv(dist, volume, "--verbose")) as run:
        build_id, container = build_container(engine, dist)
        made = volumes_of(engine, container) - {volume}  # the cache volume is the user's to keep
        assert len(made) == 1 and next(iter(made)).startswith(f"{volume}.output-base.")
        subprocess.run(["docker", "pause", container], capture_output=True, check=True)
        run.signal(*signals)
        code = run.wait()
    assert code == 130, run.stderr
    said = [line for line in run.stderr.splitlines() if line.startswith("tfbuild: ")]
    assert said == [stopped_line(signals[0])], run.stderr
    assert "Traceback" not in run.stderr
    assert engine.containers(label=f"org.tfbuild.build={build_id}") == []
    assert engine.volumes(f"org.tfbuild.part-of={volume}") == []
    assert leftovers(dist) == []  # the work directory and the canary's copy


def test_a_second_signal_during_verify_leaves_neither_of_its_volumes(
    engine: Any, base_image: str, volume: str, tmp_path: Path
) -> None:
    """tfbuild verify rebuilds in a cache volume of its own, with its output base a second volume:
    a SIGINT and a SIGTERM 10 ms later leave neither, nor its temporary directory."""
    built = wheel_cli(tmp_path / "dist", volume, "--json")
    assert built.returncode == 0, built.stderr
    wheel = Path(json.loads(built.stdout)["wheel"])
    temp = tmp_path / "tmp"  # where verify makes its temporary directory
    temp.mkdir()
    argv = [sys.executable, "-m", "tfbuild", "verify", str(wheel), "--verbose"]
    with Running(argv, env={"TMPDIR": str(temp)}) as run:
        build_id, container = build_container(engine, temp, "tfbuild-verify-*/dist/logs/*.log")
        made = volumes_of(engine, container)
        assert len(made) == 2 and all(v.startswith("tfbuild-verify-") for v in made), made
        subprocess.run(["docker", "pause", container], capture_output=True, check=True)
        run.signal(signal.SIGINT, signal.SIGTERM)
        code = run.wait()
    assert code == 130, run.stderr
    said = [line for line in run.stderr.splitlines() if line.startswith("tfbuild: ")]
    assert said == [stopped_line(signal.SIGINT)], run.stderr
    assert "Traceback" not in run.stderr
    assert engine.containers(label=f"org.tfbuild.build={build_id}") == []
    assert made & set(engine.volumes(this_run_label())) == set()
    assert not list(temp.glob("tfbuild-verify-*"))


def test_two_builds_at_once_into_one_dist(base_image: str, volume: str, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    procs = [
        subprocess.Popen(
            wheel_argv(dist, volume, "--target", target, "--json"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for target in ("x86_64", "x86_64_v2")
    ]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    results = [json.loads(out) for out, _err in outputs]
    assert len({r["log"] for r in results}) == 2
    for result in results:
        assert Path(result["log"]).read_text().count("[tfbuild] phase: package") == 1
    # Each wheel carries its target in its name: both land in dist/, whole, with their receipts.
    wheels = sorted(dist.glob("*.whl"))
    assert [w.name.split("-")[1] for w in wheels] == [
        "0.0.0+tfbuild.canary.x86_64",
        "0.0.0+tfbuild.canary.x86_64v2",
    ]
    for wheel in wheels:
        receipt = json.loads(wheel.with_suffix(".json").read_text())
        assert receipt["wheel"]["sha256"] == sha256_file(wheel)
        assert receipt["label"] == wheel.name.split("-")[1].removeprefix("0.0.0+tfbuild.canary.")
    assert leftovers(dist) == []


def test_a_missing_base_image_is_one_line(volume: str, tmp_path: Path, engine: Any) -> None:
    result = wheel_cli(tmp_path / "dist", volume, "--base-image", "tfbuild/base:no-such-suite")
    assert result.returncode == 4
    assert result.stderr.count("\n") == 1
    assert "unknown base image 'tfbuild/base:no-such-suite'" in result.stderr


def test_no_engine_is_one_line_naming_the_socket(tmp_path: Path) -> None:
    result = wheel_cli(
        tmp_path / "dist",
        "unused",
        env={"DOCKER_HOST": f"unix://{tmp_path}/nothing.sock"},
    )
    assert result.returncode == 5
    assert result.stderr.count("\n") == 1
    assert f"unix://{tmp_path}/nothing.sock" in result.stderr
    assert not (tmp_path / "dist").exists() or leftovers(tmp_path / "dist") == []


def test_the_summary_and_github_folding(base_image: str, volume: str, tmp_path: Path) -> None:
    """On GitHub Actions (no tty): plain lines folded per phase; at the end the wheel and its files."""
    result = wheel_cli(tmp_path / "dist", volume, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 0, result.stderr
    groups = [line for line in result.stderr.splitlines() if line.startswith("::")]
    opened = [g.removeprefix("::group::tfbuild: ") for g in groups if g.startswith("::group::")]
    assert opened[:2] == ["toolchain image", "configure"]
    assert "compile" in opened and "publish" in opened
    assert groups.count("::endgroup::") == len(opened)  # every group is closed
    assert "\x1b[" not in result.stderr  # no terminal control codes in a CI log
    lines = result.stdout.splitlines()
    # One value a line, under its name; a line that goes on the one above is indented.
    summary = {line[:10].strip(): line[10:] for line in lines if not line.startswith(" ")}
    wheel = Path(summary["wheel"])
    assert wheel.is_file()
    assert lines[lines.index(f"wheel     {wheel}") + 1].strip() == "STAND-IN canary, not TensorFlow"
    env_file = lines.index(f"env file  {summary['env file']}")
    assert lines[env_file + 1].strip() == f"set -a; . {summary['env file']}; set +a"
    assert summary["size"].endswith(("bytes", "KiB", "MiB"))
    assert summary["sha256"] == sha256_file(wheel)
    assert Path(summary["receipt"]) == wheel.with_suffix(".json")
    # Last, the next command; for the stand-in too, which smoke tests as what it is.
    assert lines[-1] == f"next      tfbuild smoke {wheel}"
    smoke = as_a_process([*lines[-1].split()[2:], "--no-bench"], dict(os.environ), timeout=300)
    assert smoke.returncode == 0, smoke.stderr
    assert "STAND-IN" in smoke.stdout and "PASSED" in smoke.stdout
    assert "No module named" not in smoke.stdout + smoke.stderr


def test_a_new_toolchain_image_says_its_steps_and_keeps_the_tools_lines_in_the_log(
    engine: Any, base_image: str, volume: str, tmp_path: Path
) -> None:
    """A toolchain image built now (its base image under a tag of its own, so a Dockerfile no
    other build has): each step of it on stderr as it starts, then bazel's actions; the image
    builder's and bazel's own lines only in the build's log."""
    import uuid

    base = f"tfbuild-test/base:steps-{uuid.uuid4().hex[:12]}"
    engine._client.api.tag(base_image, *base.split(":"))
    try:
        result = wheel_cli(tmp_path / "dist", volume, base=base)  # as a person (or CI) sees it
        assert result.returncode == 0, result.stderr
    finally:
        engine.remove_image(base)
    summary = {line[:10].strip(): line[10:] for line in result.stdout.splitlines()}
    receipt = json.loads(Path(summary["receipt"]).read_text())
    engine.remove_image(receipt["inputs"]["toolchain_image"])  # a tag of the shared layers
    assert receipt["host"]["toolchain_image_built"] is True
    lines = result.stderr.splitlines()
    steps = [line for line in lines if line.startswith("[tfbuild] toolchain image: step ")]
    total = int(steps[0].split()[4].split("/")[1])
    assert [line.split()[4] for line in steps] == [f"{n}/{total}" for n in range(1, total + 1)]
    assert steps[0] == f"[tfbuild] toolchain image: step 1/{total} FROM {base}"
    assert any(" RUN apt-get update " in line for line in steps)
    assert all(len(line) <= 120 for line in steps)
    assert all(line.startswith("[tfbuild] ") for line in lines), result.stderr
    log = Path(summary["log"]).read_text()
    if any(parse_progress(line) for line in log.splitlines()):  # bazel said its actions
        assert any(line.startswith("[tfbuild] compile: ") for line in lines)
    for chatter in (" ---> ", "Successfully tagged", "Starting local Bazel server", "INFO: "):
        assert chatter not in result.stderr
        assert chatter in log
    assert f"Step 1/{total} : FROM {base}" in log


def test_labelled_wheels_through_index_and_pick(
    base_image: str, volume: str, tmp_path: Path
) -> None:
    """Built, labelled, indexed, picked and installed: the CI matrix's path for three targets."""
    from tests.conftest import cpuinfo_fixture, run_cli

    dist = tmp_path / "dist"
    for target in ("x86_64_v2", "x86_64_v3", "x86_64_v4"):
        result = wheel_cli(dist, volume, "--target", target, "--json")
        assert result.returncode == 0, result.stderr
    indexed = run_cli("index", str(dist), "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert (dist / "index.html").is_file() and (dist / "SHA256SUMS").is_file()

    def chosen(*args: str) -> str:
        result = run_cli("pick", str(dist), "--python", "3.11", "--json", *args)
        assert result.returncode == 0, result.stderr
        return str(result.json()["chosen"]["filename"])

    # Haswell has AVX2 and FMA but no AVX-512: the v3 wheel; Skylake-SP: the v4 wheel.
    assert "+tfbuild.canary.x86_64v3-" in chosen("--cpuinfo", str(cpuinfo_fixture("haswell")))
    assert "+tfbuild.canary.x86_64v4-" in chosen(
        "--cpuinfo", str(cpuinfo_fixture("skylake_avx512"))
    )
    refused = run_cli(
        "pick", str(dist), "--python", "3.11", "--json", "--cpuinfo", str(cpuinfo_fixture("k10"))
    )
    assert refused.returncode == 4  # K10 predates x86-64-v2: nothing here runs on it
    assert "Illegal instruction" in refused.stderr

    # On this machine: the best wheel it runs, installed with pip into a fresh venv, and run.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    installed = run_cli(
        "pick", str(dist), "--install", "--python", str(venv / "bin" / "python"),
        "--pip-arg=--no-index", "--pip-arg=--no-deps", "--json",
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    name = installed.json()["chosen"]["filename"]
    have = set(cpu.guard_features(cpu.host_cpuinfo()))
    expected = "x86_64v4" if "AVX512F" in have else "x86_64v3" if "AVX2" in have else "x86_64v2"
    assert f"+tfbuild.canary.{expected}-" in name
    # Installed under its own name: a TensorFlow in that environment would have stayed.
    owners = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "tfbuild_canary==0.0.0+tfbuild.canary." in owners.replace("-", "_")
    assert "tensorflow" not in owners.replace("tfbuild_canary", "")
    ran = subprocess.run(
        [venv / "bin" / "python", "-c", "import tfbuild_canary as c; print(c.run(1024, 2))"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert float(ran.stdout) != 0.0
