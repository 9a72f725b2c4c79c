"""What `tfbuild base` says while debootstrap works: its stages and counts in a few lines, the
tool's own hundreds of lines in the log file (on screen only with --verbose); read from a real
debootstrap's output (tests/fixtures/debootstrap/)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT
from tests.engine_fake import FakeEngine, recording
from tests.engine_recorder import stand_in_debootstrap
from tfbuild.build.base_images import PROGRESS_EVERY_S, DebootstrapProgress, make_base_image

RECORDED = ROOT / "tests" / "fixtures" / "debootstrap" / "bookworm-minbase.txt"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def replay(seconds_per_line: float) -> tuple[list[str], list[str]]:
    """The recorded output, a line every ``seconds_per_line``: (what was said, the output)."""
    lines = RECORDED.read_text(encoding="utf-8").splitlines()
    clock, said = Clock(), []
    progress = DebootstrapProgress(said.append, clock=clock)
    for line in lines:
        clock.now += seconds_per_line
        progress.line(line)
    return said, lines


def test_each_stage_is_said_once_in_order() -> None:
    said, lines = replay(0.0)  # instantly: no counts in between
    assert len(lines) == 697
    assert said == [
        "checking the release file",
        "the release file's signature is valid",
        "reading the package lists",
        "resolving the packages' dependencies",  # of the required packages, then the base ones
        "downloading packages",
        "downloaded 150 packages",
        "extracting the essential packages",
        "installing the core packages",
        "unpacking the required packages",
        "configuring the required packages",
        "unpacking the base system",
        "configuring the base system",
        "the base system is installed",
    ]


def test_a_long_stage_is_counted_at_most_every_few_seconds() -> None:
    """At the recorded pace (46 s for 697 lines) a stage that lasts is counted again, never more
    often than PROGRESS_EVERY_S, and the whole run is a few dozen lines, not hundreds."""
    pace = 46 / 697
    said, lines = replay(pace)
    counts = [line for line in said if line.endswith(" so far")]
    assert counts, said
    assert all(line.split(":")[0] in {"downloading packages"} | set(said) for line in counts)
    downloads = [int(line.split()[2]) for line in counts if line.startswith("downloading")]
    assert downloads == sorted(downloads) and downloads[-1] <= 150
    assert len(counts) <= len(lines) * pace / PROGRESS_EVERY_S + 1
    assert len(said) < 30
    assert not [line for line in said if line.startswith("I: ")]  # never debootstrap's own lines


def test_warnings_and_errors_are_said_as_they_are() -> None:
    said: list[str] = []
    progress = DebootstrapProgress(said.append)
    progress.line("I: Retrieving adduser 3.134")
    progress.line("W: Cannot check Release signature; keyring file not available")
    progress.line("E: Couldn't download packages: adduser")
    assert said[-2:] == [
        "debootstrap says: W: Cannot check Release signature; keyring file not available",
        "debootstrap says: E: Couldn't download packages: adduser",
    ]


def test_the_log_keeps_every_line_and_shows_them_only_when_verbose(tmp_path: Path) -> None:
    """tfbuild base with a stand-in debootstrap that prints the recorded output: the log file has
    every line of it; the screen has them only with verbose, else a few lines of its stages."""
    lines = RECORDED.read_text(encoding="utf-8").splitlines()
    stored = recording("base-image")
    ((tag, _image_id),) = stored.made.items()
    for verbose in (False, True):
        shown: list[str] = []
        where = tmp_path / str(verbose)
        with stand_in_debootstrap(where / "debootstrap"):
            (where / "debootstrap" / "bin" / "debootstrap").write_text(
                f'#!/bin/sh\ncat "{RECORDED}"\nmkdir -p "$5/etc/apt" "$5/tmp"\n'
            )
            make_base_image(
                FakeEngine.replaying(stored),
                suite="bookworm",
                tag=tag,
                on_line=shown.append,
                verbose=verbose,
                log_path=where / "logs" / "base.log",
            )
        assert (where / "logs" / "base.log").read_text(encoding="utf-8").splitlines() == lines
        tools = [line for line in shown if line in lines]
        if verbose:
            assert tools == lines
        else:
            debootstrap = [line for line in shown if line.startswith("debootstrap: ")]
            assert tools == [] and 10 < len(debootstrap) < 30


def test_a_stage_that_prints_nothing_is_said_by_the_ticker() -> None:
    """debootstrap prints nothing while it installs the core packages (9 s on the project's VM)
    or resolves dependencies on a slow mirror: the ticker says where it is and for how long."""
    clock, said = Clock(), []
    progress = DebootstrapProgress(said.append, clock=clock)
    progress.tick()
    assert said == []  # nothing started yet
    progress.line("I: Installing core packages...")
    clock.now += PROGRESS_EVERY_S - 1
    progress.tick()
    assert said == ["installing the core packages"]
    clock.now += 1
    progress.tick()
    assert said[-1] == f"installing the core packages: {PROGRESS_EVERY_S:.0f} s so far"
    progress.line("I: Unpacking required packages...")
    for name in ("adduser", "apt", "base-files"):
        progress.line(f"I: Unpacking {name}...")
    clock.now += PROGRESS_EVERY_S + 2
    progress.tick()
    assert said[-1] == f"unpacking the required packages: 3 so far, {PROGRESS_EVERY_S + 2:.0f} s"
    progress.tick()
    assert said.count(said[-1]) == 1  # not again before another PROGRESS_EVERY_S


def test_a_step_that_prints_nothing_is_said_again_with_its_time() -> None:
    """tar and docker import print nothing: importing a 360 MiB root filesystem took 26 s on the
    project's VM."""
    clock, said = Clock(), []
    steps = DebootstrapProgress(said.append, clock=clock)
    importing = "importing it into the engine as tfbuild/base:bookworm"
    steps.stage(importing)
    clock.now += PROGRESS_EVERY_S - 1
    steps.tick()
    assert said == [importing]
    clock.now += 1
    steps.tick()
    steps.tick()
    clock.now += PROGRESS_EVERY_S
    steps.tick()
    seconds = (PROGRESS_EVERY_S, 2 * PROGRESS_EVERY_S)
    assert said == [importing, *(f"{importing}: {s:.0f} s so far" for s in seconds)]


def test_a_failure_tfbuild_cannot_name_shows_debootstraps_last_lines_and_its_log() -> None:
    """Its lines were not on the screen: the error brings the last of them (``  | ...`` above the
    error line) and names the file that has them all."""
    from tfbuild.build.base_images import FAILURE_TAIL, Debootstrap, debootstrap_failure

    output = RECORDED.read_text(encoding="utf-8").splitlines()[:200]
    output += ["E: Tried to extract package, but file already exists."]
    boot = Debootstrap(
        suite="bookworm",
        distro="debian",
        mirror="http://deb.debian.org/debian",
        script=None,
        keyring=Path("/usr/share/keyrings/debian-archive-keyring.gpg"),
    )
    kept = Path("/root/.cache/tfbuild/logs/base-bookworm-20261127-101902-1.log")
    error = debootstrap_failure(boot, 1, output, [], kept=kept)
    assert error.exit_code == 6
    assert error.details == tuple(output[-FAILURE_TAIL:])
    assert f"all of them in {kept}" in error.line()
