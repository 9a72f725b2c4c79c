"""The build display: parsing bazel's output, and what each mode shows of a realistic build."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT
from tfbuild.build import progress
from tfbuild.build.progress import (
    BuildProgress,
    choose_mode,
    parse_phase,
    parse_progress,
    parse_step,
)

#: What build.sh and bazel 7 print for a TensorFlow wheel whose compile fails (shortened).
BAZEL_LOG = """\
[tfbuild] phase: configure
[tfbuild] tool: compiler gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
[tfbuild] tool: python Python 3.11.9
[tfbuild] tool: bazel bazel 7.4.1
[tfbuild] phase: compile
Extracting Bazel installation...
Starting local Bazel server and connecting to it...
INFO: Reading 'startup' options from /src/.bazelrc: --windows_enable_symlinks
INFO: Options provided by the client:
  Inherited 'common' options: --isatty=0 --terminal_columns=80
INFO: Found applicable config definition build:linux in file /src/.bazelrc: --host_copt=-w --copt=-Wno-all --copt=-Wno-extra
WARNING: The following configs were expanded more than once: [linux, opt]. For repeatable flags, repeats are counted twice and may lead to unexpected behavior.
Loading: 0 packages loaded
Analyzing: target //tensorflow/tools/pip_package:wheel (128 packages loaded, 1024 targets configured)
INFO: Analyzed target //tensorflow/tools/pip_package:wheel (824 packages loaded, 41205 targets configured).
[0 / 1] [Prepa] BazelWorkspaceStatusAction stable-status.txt
[512 / 5,678] Compiling tensorflow/core/framework/tensor.cc; 4s local ... (16 actions running)
[1,234 / 5,678] Compiling tensorflow/core/kernels/cwise_op_add_1.cc; 12s local ... (16 actions, 15 running)
INFO: From Compiling tensorflow/core/kernels/cwise_op_add_1.cc:
tensorflow/core/kernels/cwise_ops_common.h:88:7: warning: unused variable 'shape' [-Wunused-variable]
[2,001 / 5,678] Compiling tensorflow/core/kernels/matmul_op_fused.cc; 31s local ... (16 actions, 15 running)
ERROR: /src/tensorflow/core/kernels/BUILD:4567:18: Compiling tensorflow/core/kernels/matmul_op_fused.cc failed: (Exit 1): gcc failed: error executing CppCompile command (from target //tensorflow/core/kernels:matmul_op)
tensorflow/core/kernels/matmul_op_fused.cc:42:10: fatal error: unsupported/Eigen/CXX11/Tensor: No such file or directory
   42 | #include "unsupported/Eigen/CXX11/Tensor"
      |          ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
compilation terminated.
[2,016 / 5,678] Compiling tensorflow/core/kernels/conv_ops.cc; 33s local ... (15 actions running)
Target //tensorflow/tools/pip_package:wheel failed to build
Use --verbose_failures to see the command lines of failed build steps.
INFO: Elapsed time: 1843.412s, Critical Path: 612.33s
INFO: 2016 processes: 1102 internal, 914 local.
ERROR: Build did NOT complete successfully
FAILED: Build did NOT complete successfully
""".splitlines()

#: What Docker's image builder printed for a canary's toolchain image built afresh (recorded on the
#: project's VM; the apt lines of step 4 shortened to a few of their 960).
IMAGE_LOG = """\
Step 1/8 : FROM tfbuild-test/base:fresh-after
 ---> 16701f3c07c3
Step 2/8 : SHELL ["/bin/bash", "-o", "pipefail", "-c"]
 ---> Running in bc328c342597
Removing intermediate container bc328c342597
 ---> f11f34a08350
Step 3/8 : ENV DEBIAN_FRONTEND=noninteractive     LANG=C.UTF-8
 ---> Running in 4d2317fc765f
Removing intermediate container 4d2317fc765f
 ---> 5450d071887d
Step 4/8 : RUN apt-get update  && apt-get install -y --no-install-recommends       bazel-bootstrap       ca-certificates       curl       g++-12       gcc-12       git       libgoogle-perftools4       patchelf       python3       python3-dev       python3-pip       python3-setuptools       python3-venv       python3-wheel       unzip       zip  && rm -rf /var/lib/apt/lists/*
 ---> Running in a5846e438705
Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]
Fetched 15.8 MB in 2s (10.4 MB/s)
Reading package lists...
Get:134 http://deb.debian.org/debian-security bookworm-security/main amd64 zip amd64 3.0-13+deb12u1 [230 kB]
Setting up bazel-bootstrap (4.2.3+ds-9) ...
Removing intermediate container a5846e438705
 ---> 2d8e0c7f9a11
Step 5/8 : RUN bazel --version
 ---> Running in 9724526dbe17
bazel no_version
Removing intermediate container 9724526dbe17
 ---> cbe994608168
Step 6/8 : LABEL org.tfbuild.tensorflow="2.21.0"       org.tfbuild.compiler="gcc-12.2.0"       org.tfbuild.bazel="7.4.1"
 ---> Running in 713ef73d8523
Removing intermediate container 713ef73d8523
 ---> d056c52e02d7
Step 7/8 : LABEL org.tfbuild=1
 ---> Running in 57e37e67c953
Removing intermediate container 57e37e67c953
 ---> 9f74b9d5ccc9
Step 8/8 : LABEL org.tfbuild.input-hash=fb2bc5be1870dccb84c39a3ab87886759fbf737a0d62a8a818d0d665220fbd93
 ---> Running in b5a3ccabfd82
Removing intermediate container b5a3ccabfd82
 ---> b89075b86af4
Successfully built b89075b86af4
Successfully tagged tfbuild/toolchain:fb2bc5be1870dccb
""".splitlines()
#: The image builder's chatter and the steps' own output: in the log, not on the screen.
IMAGE_CHATTER = (" ---> ", "Removing intermediate", "Get:", "Fetched", "Setting up", "Successfully")

#: The lines a user must see even without --verbose.
ALERTS = [
    "WARNING: The following configs were expanded more than once: [linux, opt]. For repeatable flags, repeats are counted twice and may lead to unexpected behavior.",
    "ERROR: /src/tensorflow/core/kernels/BUILD:4567:18: Compiling tensorflow/core/kernels/matmul_op_fused.cc failed: (Exit 1): gcc failed: error executing CppCompile command (from target //tensorflow/core/kernels:matmul_op)",
    "tensorflow/core/kernels/matmul_op_fused.cc:42:10: fatal error: unsupported/Eigen/CXX11/Tensor: No such file or directory",
    "ERROR: Build did NOT complete successfully",
    "FAILED: Build did NOT complete successfully",
]
#: Lines that are neither, hidden without --verbose.
NOISE = [
    "INFO: Analyzed target //tensorflow/tools/pip_package:wheel (824 packages loaded, 41205 targets configured).",
    "tensorflow/core/kernels/cwise_ops_common.h:88:7: warning: unused variable 'shape' [-Wunused-variable]",
    "[tfbuild] tool: bazel bazel 7.4.1",
]
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[^\[]")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    """A captured stream that says it is a terminal."""

    def isatty(self) -> bool:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        return True


def run(display: BuildProgress, clock: Clock, lines: list[str], step: float = 1.0) -> None:
    """The orchestrator's calls for a build: the toolchain phase, then build.sh's output."""
    with display:
        display.phase("toolchain image")
        display.note("toolchain image tfbuild/toolchain:abc123: reused (unchanged)")
        for line in lines:
            clock.now += step
            display.line(line)


def plain(
    lines: list[str] = BAZEL_LOG, *, verbose: bool = False, github: bool | None = False
) -> str:
    """The plain output of a build (not on GitHub unless asked, whatever the environment)."""
    stream = io.StringIO()
    clock = Clock()
    display = BuildProgress(
        mode="plain", stream=stream, verbose=verbose, github=github, clock=clock
    )
    run(display, clock, lines)
    return stream.getvalue()


# --- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[1,234 / 5,678] Compiling foo.cc; 3s local", (1234, 5678)),
        ("[12 / 13] Linking libfoo.so", (12, 13)),
        ("  [0 / 1] [Prepa] BazelWorkspaceStatusAction stable-status.txt", (0, 1)),
        ("[1,234,567 / 2,000,000] Compiling", (1234567, 2000000)),
        ("[5,678 / 5,678] checking cached actions", (5678, 5678)),
        ("[1234 / 5678] no grouping", (1234, 5678)),
        ("[a / b] Compiling", None),
        ("[5 / 0] Compiling", None),
        ("[6 / 5] Compiling", None),
        ("[1,23 / 5,678] Compiling", None),
        ("INFO: [1 / 2] not at the start", None),
        ("Compiling [1 / 2]", None),
        ("[1 /] Compiling", None),
        ("[" + "9" * 5000 + " / 1] absurd", None),
        ("", None),
    ],
)
def test_parse_progress(line: str, expected: tuple[int, int] | None) -> None:
    assert parse_progress(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[tfbuild] phase: compile", "compile"),
        ("[tfbuild] phase: toolchain image  ", "toolchain image"),
        ("[tfbuild] phase: ", None),
        ("[tfbuild] tool: bazel bazel 7.4.1", None),
        ("INFO: [tfbuild] phase: compile", None),
        ("phase: compile", None),
        ("", None),
    ],
)
def test_parse_phase(line: str, expected: str | None) -> None:
    assert parse_phase(line) == expected


# --- choosing the mode -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quiet", "tty", "env", "expected"),
    [
        (True, True, {}, "quiet"),
        (True, False, {"CI": "true"}, "quiet"),
        (False, True, {}, "live"),
        (False, True, {"CI": ""}, "live"),
        (False, True, {"CI": "true"}, "plain"),
        (False, True, {"GITHUB_ACTIONS": "true"}, "plain"),
        (False, True, {"TERM": "dumb"}, "plain"),
        (False, False, {}, "plain"),
    ],
)
def test_choose_mode(quiet: bool, tty: bool, env: dict[str, str], expected: str) -> None:
    stream = Tty() if tty else io.StringIO()
    assert choose_mode(quiet=quiet, stream=stream, env=env) == expected


def test_choose_mode_closed_stream_is_plain() -> None:
    stream = Tty()
    stream.close()
    assert choose_mode(quiet=False, stream=stream, env={}) == "plain"


# --- plain mode ------------------------------------------------------------------------------


def test_plain_github_groups_open_and_close_in_turn() -> None:
    out = plain(github=True)
    markers = [line for line in out.splitlines() if line.startswith("::")]
    assert markers == [
        "::group::tfbuild: toolchain image",
        "::endgroup::",
        "::group::tfbuild: configure",
        "::endgroup::",
        "::group::tfbuild: compile",
        "::endgroup::",
    ]
    # Every build line is in the log, inside its group; the note too.
    for line in [*ALERTS, *NOISE, "[2,016 / 5,678] Compiling"]:
        assert line in out
    assert "[tfbuild] toolchain image tfbuild/toolchain:abc123: reused (unchanged)" in out


def test_plain_github_closes_group_on_error_and_neutralises_commands() -> None:
    stream = io.StringIO()
    with (
        pytest.raises(RuntimeError),
        BuildProgress(mode="plain", stream=stream, github=True, clock=Clock()) as display,
    ):
        display.phase("compile")
        display.line("::endgroup::")
        display.line("  ::error::not from us")
        raise RuntimeError("build failed")
    lines = stream.getvalue().splitlines()
    assert lines == [
        "::group::tfbuild: compile",
        "> ::endgroup::",
        ">   ::error::not from us",
        "::endgroup::",
    ]


def test_plain_github_default_reads_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert "::group::tfbuild: toolchain image" in plain(github=None)
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert "::group::" not in plain(github=None)


def test_plain_shows_headers_alerts_and_hides_the_rest() -> None:
    out = plain()
    lines = out.splitlines()
    assert lines[0] == "[tfbuild] toolchain image (0.0 s)"
    assert "[tfbuild] configure (1.0 s)" in lines
    assert "[tfbuild] compile (5.0 s)" in lines
    for line in ALERTS:
        assert line in lines
    for line in NOISE:
        assert line not in out
    assert "[tfbuild] phase:" not in out
    assert "\x1b" not in out
    assert "[tfbuild] compile: 0/1 actions (0%)" in lines
    assert "[tfbuild] compile: 2001/5678 actions (35%)" in lines


def test_plain_progress_at_most_every_ten_percent() -> None:
    counters = [
        f"[{done:,} / 5,678] Compiling foo_{done}.cc; 2s local" for done in range(0, 5679, 7)
    ]
    out = plain(["[tfbuild] phase: compile", *counters, "[5,678 / 5,678] checking cached actions"])
    reports = re.findall(r"^\[tfbuild\] compile: (\d+)/5678 actions \((\d+)%\)$", out, re.MULTILINE)
    percents = [int(percent) for _, percent in reports]
    assert percents[0] == 0
    assert percents[-1] == 100
    assert len(percents) == 11
    deciles = [percent // 10 for percent in percents]
    assert deciles == sorted(set(deciles))  # one report per tenth, in order
    assert all(int(done) * 100 // 5678 == int(percent) for done, percent in reports)


def test_plain_progress_restarts_in_each_phase() -> None:
    out = plain(
        [
            "[tfbuild] phase: compile",
            "[90 / 100] Compiling",
            "[tfbuild] phase: package",
            "[1 / 100] Copying",
        ]
    )
    assert "[tfbuild] compile: 90/100 actions (90%)" in out
    assert "[tfbuild] package: 1/100 actions (1%)" in out


def test_plain_verbose_prints_every_line() -> None:
    lines = plain(verbose=True).splitlines()
    for line in BAZEL_LOG:
        if not line.startswith("[tfbuild] phase:"):
            assert line in lines
    assert not any(
        line.startswith("[tfbuild] compile:") for line in lines
    )  # counters are already there


def test_plain_same_phase_twice_is_one_header() -> None:
    stream = io.StringIO()
    with BuildProgress(mode="plain", stream=stream, github=False, clock=Clock()) as display:
        display.phase("configure")
        display.line("[tfbuild] phase: configure")
    assert stream.getvalue().splitlines() == ["[tfbuild] configure (0.0 s)"]


def test_plain_odd_input_never_raises() -> None:
    stream = io.StringIO()
    with BuildProgress(mode="plain", stream=stream, github=False, clock=Clock()) as display:
        display.phase("compile")
        display.line("[3 / 10] Compiling")
        for odd in [
            "",
            "\x00\x07\x1b",
            "\r",
            "[6 / 5] Compiling",
            "[5 / 0] x",
            "ERROR\x1b[31m",
            "x" * 100_000,
        ]:
            display.line(odd)
        display.phase("\x1b[0m")
        display.note("")
    assert "\x1b" not in stream.getvalue()
    assert stream.getvalue().count(" s)\n") == 1  # the phase "\x1b[0m" is no phase
    assert "ERROR\n" in stream.getvalue()


# --- the image's steps, and a heartbeat when nothing else is said -------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Step 1/8 : FROM tfbuild/base:bookworm", (1, 8, "FROM tfbuild/base:bookworm")),
        ("Step 12/12 : LABEL org.tfbuild=1", (12, 12, "LABEL org.tfbuild=1")),
        ("Step 0/8 : FROM x", None),
        ("Step 9/8 : FROM x", None),
        (" ---> Running in 9724526dbe17", None),
        ("Removing intermediate container 9724526dbe17", None),
        ("echo Step 1/2 : not at the start", None),
    ],
)
def test_parse_step(line: str, expected: tuple[int, int, str] | None) -> None:
    assert parse_step(line) == expected


def image_build(*, verbose: bool = False, tag: str = "tfbuild") -> list[str]:
    stream = io.StringIO()
    clock = Clock()
    display = BuildProgress(
        mode="plain", stream=stream, verbose=verbose, github=False, clock=clock, tag=tag
    )
    with display:
        display.phase("toolchain image")
        for line in IMAGE_LOG:
            display.line(line)
        display.note("toolchain image tfbuild/toolchain:fb2bc5be1870dccb: built")
    return stream.getvalue().splitlines()


def test_plain_says_each_step_of_the_image_and_not_the_builders_chatter() -> None:
    lines = image_build()
    assert lines[:4] == [
        "[tfbuild] toolchain image (0.0 s)",
        "[tfbuild] toolchain image: step 1/8 FROM tfbuild-test/base:fresh-after",
        '[tfbuild] toolchain image: step 2/8 SHELL ["/bin/bash", "-o", "pipefail", "-c"]',
        "[tfbuild] toolchain image: step 3/8 ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8",
    ]
    # A long instruction is cut (whole in the log), on one line.
    assert lines[4] == (
        "[tfbuild] toolchain image: step 4/8 RUN apt-get update && apt-get install -y "
        "--no-install-recommends baze..."
    )
    assert lines[5] == "[tfbuild] toolchain image: step 5/8 RUN bazel --version"
    assert [line.split(":")[1].split()[1] for line in lines[1:9]] == [f"{n}/8" for n in range(1, 9)]
    assert lines[-1] == "[tfbuild] toolchain image tfbuild/toolchain:fb2bc5be1870dccb: built"
    assert len(lines) == 10
    assert not [line for line in lines for chatter in IMAGE_CHATTER if chatter in line]


def test_plain_verbose_shows_the_builders_own_lines() -> None:
    lines = image_build(verbose=True)
    assert [line for line in IMAGE_LOG if line not in lines] == []


def test_every_line_says_whose_it_is() -> None:
    lines = image_build(tag="verify")
    assert lines and all(line.startswith("[verify] ") for line in lines)
    assert "[verify] toolchain image: step 5/8 RUN bazel --version" in lines


def test_a_silent_while_is_said_with_where_the_phase_is_and_for_how_long() -> None:
    beat = progress.HEARTBEAT_S
    stream = io.StringIO()
    clock = Clock()
    display = BuildProgress(mode="plain", stream=stream, github=False, clock=clock)
    said = lambda: stream.getvalue().splitlines()  # noqa: E731
    display.phase("toolchain image")
    display.line(IMAGE_LOG[10])  # step 4/8, then apt's lines for a while, then nothing at all
    display.line("Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]")
    clock.now += beat - 1
    display.tick()
    assert len(said()) == 2  # the header and the step: less than HEARTBEAT_S since then
    clock.now += 1
    display.tick()
    assert said()[-1] == (
        "[tfbuild] toolchain image: step 4/8 RUN apt-get update && apt-get install -y "
        f"--no-install-recommends baze...; {beat:.0f} s so far"
    )
    display.tick()
    assert len(said()) == 3  # said: not again before another while
    clock.now += beat
    display.tick()
    assert len(said()) == 3  # the second time, after twice as long
    clock.now += beat
    display.tick()
    assert said()[-1].endswith(f"; {3 * beat:.0f} s so far")
    for _ in range(20):  # then less and less often, never less than every HEARTBEAT_MAX_S
        clock.now += progress.HEARTBEAT_MAX_S
        display.tick()
    assert said()[-1].endswith("so far") and len(said()) == 4 + 20

    display.phase("compile")
    display.line("Analyzing: target //tensorflow/tools/pip_package:wheel (128 packages loaded)")
    clock.now += beat
    display.tick()
    assert said()[-1] == (
        "[tfbuild] compile: Analyzing: target //tensorflow/tools/pip_package:wheel (128 "
        f"packages...; {beat:.0f} s so far"
    )
    display.line("[1,234 / 5,678] Compiling tensorflow/core/kernels/cwise_op_add_1.cc; 12s local")
    display.line("[1,240 / 5,678] Compiling tensorflow/core/kernels/cwise_op_add_2.cc; 3s local")
    clock.now += beat
    display.tick()
    assert said()[-2:] == [
        "[tfbuild] compile: 1234/5678 actions (21%)",  # a new tenth: said at once
        f"[tfbuild] compile: 1240/5678 actions (21%); {2 * beat:.0f} s so far",
    ]


def test_the_ticker_says_it_by_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain display's own thread says it: a tool that prints nothing (a package's postinst,
    bazel's analysis) cannot leave a silent minute."""
    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.2)
    monkeypatch.setattr(progress, "HEARTBEAT_MAX_S", 0.4)
    monkeypatch.setattr(progress, "_TICK_S", 0.05)
    stream = io.StringIO()
    with BuildProgress(mode="plain", stream=stream, github=False) as display:
        display.phase("toolchain image")
        display.line(IMAGE_LOG[10])
        time.sleep(1.0)
    heartbeats = [line for line in stream.getvalue().splitlines() if line.endswith("so far")]
    assert heartbeats and heartbeats[0].startswith("[tfbuild] toolchain image: step 4/8 RUN ")


def test_quiet_and_live_have_no_heartbeat() -> None:
    for mode in ("quiet", "live"):
        stream = Tty()
        clock = Clock()
        with BuildProgress(mode=mode, stream=stream, clock=clock) as display:
            display.phase("compile")
            clock.now += 300
            display.tick()
        assert "so far" not in stream.getvalue()


@pytest.mark.usefixtures("wide_terminal")
def test_live_shows_each_step_and_counts_them_on_the_bar() -> None:
    stream = Tty()
    clock = Clock()
    with BuildProgress(mode="live", stream=stream, clock=clock) as display:
        display.phase("toolchain image")
        for line in IMAGE_LOG[:11]:
            display.line(line)
    out = _ANSI.sub("", stream.getvalue())
    assert "[tfbuild] toolchain image: step 1/8 FROM tfbuild-test/base:fresh-after" in out
    assert "[tfbuild] toolchain image: step 4/8 RUN apt-get update" in out
    assert re.search(r"toolchain image ━+╺?━* step 4/8", out)
    assert not [chatter for chatter in IMAGE_CHATTER if chatter in out]


# --- quiet mode ------------------------------------------------------------------------------


def test_quiet_prints_nothing() -> None:
    stream = io.StringIO()
    clock = Clock()
    display = BuildProgress(mode="quiet", stream=stream, github=True, verbose=True, clock=clock)
    run(display, clock, BAZEL_LOG[:20])
    display.phase("package")
    assert stream.getvalue() == ""


def test_elapsed_counts_from_enter() -> None:
    clock = Clock(100.0)
    display = BuildProgress(mode="quiet", clock=clock)
    clock.now = 200.0
    with display:
        clock.now = 242.5
        assert display.elapsed() == 42.5


# --- live mode -------------------------------------------------------------------------------


@pytest.fixture
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A colour terminal wide enough that no line of the excerpt wraps, whatever the environment
    says (rich takes the width of a stream that is not a real terminal from COLUMNS)."""
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


def live(verbose: bool) -> str:
    stream = Tty()
    clock = Clock()
    run(BuildProgress(mode="live", stream=stream, verbose=verbose, clock=clock), clock, BAZEL_LOG)
    return _ANSI.sub("", stream.getvalue())


@pytest.mark.usefixtures("wide_terminal")
def test_live_shows_phase_bar_and_alerts() -> None:
    out = live(verbose=False)
    # The last frame: the phase, a bar more than a third full, bazel's counter, the phase's time.
    assert re.search(r"[\r\n]compile ━{14}╺━{25} 2,016/5,678 0:00:28\n\Z", out)
    assert "[tfbuild] compile (5.0 s)" in out
    for line in ALERTS:
        assert line in out
    assert "[tfbuild] toolchain image tfbuild/toolchain:abc123: reused" in out
    for line in NOISE:
        assert line not in out


@pytest.mark.usefixtures("wide_terminal")
def test_live_verbose_prints_every_line() -> None:
    out = live(verbose=True)
    for line in [*ALERTS, *NOISE]:
        assert line in out


@pytest.mark.usefixtures("wide_terminal")
def test_live_elapsed_uses_the_clock() -> None:
    stream = Tty()
    clock = Clock()
    with BuildProgress(mode="live", stream=stream, clock=clock) as display:
        display.phase("compile")
        clock.now += 75
        display.line("[10 / 20] Compiling")
    assert "0:01:15" in stream.getvalue()


def test_import_does_not_load_rich() -> None:
    code = "import sys, tfbuild.build.progress; print('rich' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stdout.strip() == "False"
