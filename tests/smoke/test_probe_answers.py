"""What the import probe and the stand-in's probe make of answers a broken wheel could give: their
scripts' output replayed through the one runner's seam (the real scripts are run by
tests/smoke/test_smoke.py and tests/smoke/test_standin.py)."""

from __future__ import annotations

import os

import pytest

from tfbuild.core import commands
from tfbuild.smoke.probe import run_probe
from tfbuild.smoke.standin import _probe

GOOD = (
    '{"ok": true, "version": "2.21.0", "git_version": "v2.21.0-rc1", "build_info": '
    '{"is_cuda_build": false}, "tcmalloc_maps": [], "python": "3.11.2"}'
)


def answering(stdout: str, returncode: int = 0, stderr: str = "") -> commands.CommandRunner:
    def runner(call: commands.Command) -> commands.Finished:
        return commands.Finished(returncode=returncode, stdout=stdout, stderr=stderr)

    return runner


def test_a_probe_that_answers_is_read_into_its_fields() -> None:
    with commands.replaying(answering(f"noise\n{GOOD}\n")):
        found = run_probe("python3", env=dict(os.environ))
    assert found.ok and found.version == "2.21.0" and found.build_info == {"is_cuda_build": False}


@pytest.mark.parametrize(
    "stdout",
    [
        "",
        "{not json",
        GOOD.replace('"ok": true', '"ok": "yes"'),
        GOOD.replace('"python"', '"pyhton"'),
    ],
)
def test_an_answer_that_is_not_the_probes_fails_the_import_and_says_why(stdout: str) -> None:
    with commands.replaying(answering(stdout)):
        found = run_probe("python3", env=dict(os.environ))
    assert not found.ok and found.version is None
    assert found.failure is not None and "import_tf.py" in found.failure, found.failure


def test_a_wheel_killed_by_sigill_says_so() -> None:
    with commands.replaying(answering("", returncode=-4)):
        found = run_probe("python3", env=dict(os.environ))
    assert found.signal == "SIGILL" and found.failure is not None and "SIGILL" in found.failure


def test_the_standins_answer_is_typed_or_the_reason_it_is_not() -> None:
    good = '{"module": "m", "library": "/x/libcanary.so", "checksum": 1.5, "runtime": 7, "flags": null}'
    with commands.replaying(answering(good)):
        found, failure = _probe("python3")
    assert failure is None and found is not None and found.flags is None and found.runtime == 7
    with commands.replaying(answering(good.replace("1.5", '"1.5"'))):
        found, failure = _probe("python3")
    assert found is None and failure is not None and "standin_probe.py" in failure


def test_the_load_probes_answer_is_decoded_strictly() -> None:
    from tfbuild.smoke.loads import LoadReport

    answer = {
        "glibc": "2.31",
        "libraries": [{"path": "a/lib.so", "loads": True, "error": None}],
        "requirements": [
            {"requirement": "numpy", "name": "numpy", "state": "installed", "version": "1"}
        ],
    }
    report = LoadReport.from_probe("img", answer)
    assert report.loads and report.requirements[0].state == "installed"
    for hostile in (
        {**answer, "libraries": [{"path": "a/lib.so", "loads": "yes", "error": None}]},
        {**answer, "requirements": [{**answer["requirements"][0], "state": "stolen"}]},  # type: ignore[index]
        {**answer, "shell": "rm -rf /"},
        {k: v for k, v in answer.items() if k != "libraries"},
    ):
        with pytest.raises(ValueError):
            LoadReport.from_probe("img", hostile)
