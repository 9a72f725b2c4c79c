"""A rebuild from a receipt, without an engine: the plan it takes, the pins, the source it needs."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import wheels
from tests.conftest import ROOT, CliResult, one_error_line, recorded_host, run_cli
from tests.receipts import make_receipt, write_receipt
from tfbuild.build.rebuild import (
    UNCOVERED,
    from_receipt,
    load_receipt,
    plan_from_receipt,
    rebuild_run,
    with_cache_volume,
)
from tfbuild.build.run import BuildRun
from tfbuild.core import serial
from tfbuild.core.errors import InputError, UnsupportedError
from tfbuild.plan import BuildPlan, PlanOptions, make_plan
from tfbuild.plan.bazel import bazel_command
from tfbuild.plan.decode import decode_plan
from tfbuild.plan.render import package_name, render_files, toolchain_packages
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import load_recipes
from tfbuild.wheel.receipt import Receipt, SourceRecord, canonical_sha256, receipt_path


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    path = tmp_path / "tensorflow_cpu-2.21.0+zen4-cp311-cp311-linux_x86_64.whl"
    path.write_bytes(b"a wheel")
    return path


def real_receipt(wheel: Path, options: PlanOptions | None = None, **changes: object) -> Receipt:
    """A receipt whose plan is a real plan (2.21, oneDNN unless ``options`` say otherwise, for a
    recorded Zen 4 on 64 cores)."""
    plan = make_plan(
        options or PlanOptions(variant="mkl"),
        load_recipes().get("2.21"),
        recorded_host("zen4", memory_gib=256, disk_gib=500, build_cpus=64),
        base_images=load_base_images(),
    )
    packages = {name: f"1.0-{name}" for name in toolchain_packages(plan)} | {"libc6": "2.39-0"}
    data = make_receipt(
        wheel, target=plan.target, variant="mkl", plan_overrides=serial.to_data(plan)
    )
    receipt = Receipt.from_json(data)
    inputs = dataclasses.replace(receipt.inputs, packages=packages)
    # The inputs' hash over the packages recorded, as the build writes it.
    sealed = dataclasses.replace(receipt, inputs=inputs, inputs_sha256=inputs.sha256)
    return dataclasses.replace(sealed, **changes)  # type: ignore[arg-type]


def test_the_rebuild_keeps_the_plan_and_fits_the_resources_to_this_machine(wheel: Path) -> None:
    receipt = real_receipt(wheel)
    here = recorded_host("haswell", memory_gib=16, disk_gib=100, build_cpus=2)
    planned = plan_from_receipt(receipt, host=here)
    plan = planned.plan
    assert planned.recipe is None
    original = receipt.plan
    # What is built is the receipt's: target, flags, configs, rc lines, base image, versions.
    for key in ("target", "cflags", "bazel_configs", "rc_lines", "base_image", "bazel"):
        assert serial.to_data(plan)[key] == original[key], key
    # How fast it runs is this machine's: 2 jobs, not 64, and bazel is told so once.
    assert original["resources"]["jobs"] == 64 and plan.resources.jobs == 2
    assert "--jobs=2" in bazel_command(plan).build
    assert render_files(plan)["build.sh"].count("--jobs=") == 1
    # Every toolchain package at the version the receipt records, and the Dockerfile says so.
    assert dict(plan.package_versions) == {name: f"1.0-{name}" for name in toolchain_packages(plan)}
    dockerfile = render_files(plan)["Dockerfile"]
    assert "python3-dev=1.0-python3-dev" in dockerfile and "libc6" not in dockerfile
    # 2.21's hermetic clang is bazel's download: the image installs no compiler.
    assert not [name for name in plan.package_versions if name.startswith(("clang", "lld"))]


#: Receipts earlier tfbuilds wrote (tfbuild.plan/3: the resource options in the plan's option
#: lists as well as in its resources).
OLDER_RECEIPTS = [
    *sorted((ROOT / "tests" / "wheel" / "receipt_samples").glob("*.json")),
    *sorted((ROOT / "tests" / "fixtures" / "receipts").glob("*.json")),
]


@pytest.mark.parametrize("path", OLDER_RECEIPTS, ids=[p.name for p in OLDER_RECEIPTS])
def test_an_older_receipt_rebuilds_with_the_bazel_command_it_planned_before(path: Path) -> None:
    """verify and --from-receipt of a receipt written before the plan held its resources once:
    bazel's options are the receipt's own, in their order, with this machine's jobs, memory and
    heap where the receipt had its build's (what the rebuild planned before), each named once."""
    receipt = load_receipt(None, path)
    assert receipt.plan["schema"] == "tfbuild.plan/3"
    # A sample records only some packages: the others recorded too, as a build records them (the
    # plan, what this is about, stays the receipt's, byte for byte).
    wanted = {package_name(spec) for spec in toolchain_packages(decode_plan(receipt.plan))}
    inputs = dataclasses.replace(
        receipt.inputs, packages=dict.fromkeys(wanted, "1.0") | receipt.inputs.packages
    )
    receipt = dataclasses.replace(receipt, inputs=inputs, inputs_sha256=inputs.sha256)
    here = recorded_host("haswell", memory_gib=16, disk_gib=100, build_cpus=3)
    plan = plan_from_receipt(receipt, host=here).plan
    jobs, ram, heap = (plan.resources.jobs, plan.resources.local_ram_mb, plan.resources.jvm_heap_mb)
    assert (jobs, ram, heap) == (3, 13722, 1638)  # this machine's, not the receipt's
    here_now = {
        "--jobs=": f"--jobs={jobs}",
        "--local_ram_resources=": f"--local_ram_resources={ram}",
        "--host_jvm_args=-Xmx": f"--host_jvm_args=-Xmx{heap}m",
    }

    def planned_before(options: list[str]) -> tuple[str, ...]:
        return tuple(
            next((new for old, new in here_now.items() if o.startswith(old)), o) for o in options
        )

    command = bazel_command(plan)
    assert command.build == planned_before(receipt.plan["build_options"])
    assert command.startup == planned_before(receipt.plan["startup_options"])
    script = render_files(plan)["build.sh"]
    for option in here_now.values():
        assert script.count(f"  {option} \\\n") == 1, option
    assert script.count("--jobs=") == script.count("--local_ram_resources=") == 1


def test_a_receipt_without_a_package_version_is_refused(wheel: Path) -> None:
    receipt = real_receipt(wheel)
    packages = dict(receipt.inputs.packages)
    del packages["zip"]
    spoilt = dataclasses.replace(
        receipt, inputs=dataclasses.replace(receipt.inputs, packages=packages)
    )
    with pytest.raises(InputError, match="records no version of zip"):
        plan_from_receipt(spoilt, host=recorded_host("haswell", memory_gib=16, disk_gib=100))


def test_an_edited_plan_is_refused(wheel: Path) -> None:
    data = real_receipt(wheel).to_json()
    data["plan"]["cflags"] = ["-march=native"]
    receipt_path(wheel).write_text(json.dumps(data))
    with pytest.raises(InputError, match="was changed after the build"):
        load_receipt(wheel, None)


def test_a_tarball_receipt_pins_the_source(wheel: Path, tmp_path: Path) -> None:
    receipt = real_receipt(wheel)
    run = rebuild_run(receipt, BuildRun(dist=tmp_path / "dist"))
    assert run.source_sha256 == receipt.inputs.source.sha256
    assert run.recipe_sha256 == receipt.inputs.recipe_sha256


def _git(tree: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(
        ["git", "-C", str(tree), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def test_a_checkout_receipt_needs_the_same_commit(wheel: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tensorflow"
    (tree / "tensorflow" / "tools" / "pip_package").mkdir(parents=True)
    (tree / "README").write_text("one\n")
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "one")
    built_at = _git(tree, "rev-parse", "HEAD")
    source = SourceRecord(kind="directory", path=str(tree), commit=built_at, dirty=False)
    receipt = real_receipt(wheel)
    receipt = dataclasses.replace(
        receipt, inputs=dataclasses.replace(receipt.inputs, source=source)
    )
    with pytest.raises(InputError, match="Pass it with --source DIR"):
        rebuild_run(receipt, BuildRun(dist=tmp_path / "dist"))
    assert rebuild_run(receipt, BuildRun(dist=tmp_path / "dist", source=tree)).source == tree
    (tree / "README").write_text("two\n")
    with pytest.raises(InputError, match="uncommitted changes"):
        rebuild_run(receipt, BuildRun(dist=tmp_path / "dist", source=tree))
    _git(tree, "commit", "-q", "-am", "two")
    with pytest.raises(InputError, match=f"the receipt names commit {built_at}"):
        rebuild_run(receipt, BuildRun(dist=tmp_path / "dist", source=tree))


def test_a_rebuild_on_another_architecture_is_refused(wheel: Path) -> None:
    """The receipt's plan is for x86_64; a real aarch64 machine (a recorded Neoverse V2) cannot run
    its toolchain image, compiler or flags, and is told so before anything is built."""
    receipt = real_receipt(wheel)
    arm = recorded_host("neoverse_v2", memory_gib=64, disk_gib=500)
    assert arm.build_host_architecture == "aarch64"
    with pytest.raises(
        UnsupportedError, match="was built on x86_64, and this build host is aarch64"
    ):
        plan_from_receipt(receipt, host=arm)


def test_verify_refuses_a_wheel_that_is_not_the_one_its_receipt_describes(tmp_path: Path) -> None:
    """Issue 21, item 3: one flipped byte in a member's compressed data. verify checks the wheel's
    sha256 and size against its receipt before any build: one line naming both hashes, exit 3."""
    wheel = wheels.make_wheel(tmp_path, "canary-1.0-py3-none-any.whl")
    write_receipt(wheel)
    built = hashlib.sha256(wheel.read_bytes()).hexdigest()
    wheels.flip_compressed_byte(wheel, "canary/__init__.py")
    now = hashlib.sha256(wheel.read_bytes()).hexdigest()
    size = wheel.stat().st_size
    result = run_cli("verify", str(wheel), timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines() == [
        f"tfbuild: error: {wheel.name} is not the wheel its receipt describes: its sha256 is {now} "
        f"({size} bytes), and {receipt_path(wheel)} records {built} ({size} bytes); nothing was "
        "rebuilt. Verify the wheel that build wrote (fetch it again), or pass its own receipt "
        "with --receipt FILE."
    ]


# --- a receipt is untrusted (issue 21) ----------------------------------------------------------------

HERE = {"memory_gib": 16, "disk_gib": 100}
#: A receipt tfbuild wrote before it recorded inputs_sha256 (a canary build, kept as a fixture).
OLD = ROOT / "tests" / "fixtures" / "receipts"
OLD_RECEIPT = (
    OLD / "tensorflow_cpu-0.0.0+tfbuild.canary.x86_64v4-py3-none-manylinux_2_34_x86_64.json"
)


def test_an_edited_input_is_refused_as_changed_after_the_build(wheel: Path) -> None:
    data = real_receipt(wheel).to_json()
    data["inputs"]["packages"]["zip"] = "3.0-12"  # a version apt could install, not the one built
    receipt_path(wheel).write_text(json.dumps(data))
    with pytest.raises(InputError, match="was changed after the build: its inputs") as caught:
        load_receipt(wheel, None)
    assert "inputs_sha256" in caught.value.line()


def test_a_receipt_without_inputs_sha256_rebuilds_and_says_nothing_covers_its_inputs() -> None:
    receipt = load_receipt(None, OLD_RECEIPT)
    assert receipt.inputs_intact() is None
    plan = plan_from_receipt(receipt, host=recorded_host("haswell", **HERE)).plan
    assert UNCOVERED.format(version="0.1.0") in plan.warnings
    assert dict(plan.package_versions) == {
        name: receipt.inputs.packages[name] for name in toolchain_packages(plan)
    }
    sealed = dataclasses.replace(receipt, inputs_sha256=receipt.inputs.sha256)
    plan = plan_from_receipt(sealed, host=recorded_host("haswell", **HERE)).plan
    assert not [w for w in plan.warnings if "inputs_sha256" in w]


#: Pins from the issue's reproduction and its kin: shell, a newline for a Dockerfile line, an
#: apt option, a base64 wrapper (the chained attack's), nothing at all.
HOSTILE_PINS = [
    "3.0-13+deb12u1 && echo INJECTED-$(id -u) | tee /etc/x && echo",
    "3.0-13+deb12u1;id",
    "3.0-13+deb12u1`id`",
    "3.0-13+deb12u1\nRUN id",
    "3.0-13+deb12u1 -o APT::Get::AllowUnauthenticated=1",
    "3.0-13+deb12u1 && echo IyEvYmluL3NoCg== | base64 -d > /usr/local/bin/bazel",
    "",
]


@pytest.mark.parametrize("pin", HOSTILE_PINS)
def test_a_hostile_pin_is_refused_where_the_plan_is_made_and_where_it_is_rendered(
    wheel: Path, pin: str
) -> None:
    receipt = real_receipt(wheel)  # its pins bypass read_receipt's check: made in memory
    packages = {**receipt.inputs.packages, "zip": pin}
    spoilt = dataclasses.replace(
        receipt, inputs=dataclasses.replace(receipt.inputs, packages=packages)
    )
    with pytest.raises(InputError, match="pins a package apt cannot be given"):
        plan_from_receipt(spoilt, host=recorded_host("haswell", **HERE))
    plan = plan_from_receipt(receipt, host=recorded_host("haswell", **HERE)).plan
    hostile = dataclasses.replace(plan, package_versions={**plan.package_versions, "zip": pin})
    with pytest.raises(InputError, match="the plan installs a package apt cannot be given"):
        render_files(hostile)
    # A plan read back from JSON (a receipt's) refuses it too.
    data = serial.to_data(plan)
    data["package_versions"] = {**data["package_versions"], "zip": pin}
    with pytest.raises(ValueError, match=r"is not a Debian version|holds a control character"):
        decode_plan(data)


def _install_words(dockerfile: str) -> list[str]:
    """The words of the Dockerfile's pinned apt-get install, as the shell splits them."""
    start = dockerfile.index("# A rebuild from a receipt")
    command = dockerfile[start:].split("RUN ", 1)[1].split("\n\n", 1)[0]
    return shlex.split(command.replace("\\\n", " "))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(version=st.text(max_size=40))
def test_a_pin_reaches_the_dockerfile_as_one_word_or_not_at_all(version: str) -> None:
    plan = BASE_PLAN
    pins = {name: version if name == "zip" else v for name, v in plan.package_versions.items()}
    try:
        files = render_files(dataclasses.replace(plan, package_versions=pins))
    except InputError:
        return
    words = _install_words(files["Dockerfile"])
    assert f"zip={version}" in words
    assert words[: words.index("install")] == ["apt-get", "update", "&&", "apt-get"]
    assert [w for w in words if "=" in w] == [f"{n}={v}" for n, v in pins.items()]


def _base_plan() -> BuildPlan:
    plan = make_plan(
        PlanOptions(variant="mkl"),
        load_recipes().get("2.21"),
        recorded_host("zen4", memory_gib=256, disk_gib=500, build_cpus=64),
        base_images=load_base_images(),
    )
    pins = {name: f"1.0-{name}" for name in toolchain_packages(plan)}
    return dataclasses.replace(plan, package_versions=pins)


BASE_PLAN = _base_plan()


def test_a_rebuild_never_takes_the_cache_volume_its_receipt_names(wheel: Path) -> None:
    receipt = real_receipt(wheel)
    plan = dict(receipt.plan, cache_volume="/etc")
    named = dataclasses.replace(receipt, plan=plan, plan_sha256=canonical_sha256(plan))
    rebuilt = plan_from_receipt(named, host=recorded_host("haswell", **HERE)).plan
    mine = with_cache_volume(rebuilt, "tfbuild-cache")
    assert mine.cache_volume == "tfbuild-cache"
    assert mine.reasons[-1].what == "cache volume" and mine.reasons[-1].value == "tfbuild-cache"


def test_a_rebuild_from_a_receipt_uses_no_remote_cache_or_executor_it_names(wheel: Path) -> None:
    """A receipt could send the rebuild to a cache or executor of its writer's choosing, whose
    results would shape the wheel, and have the toolchain image pushed to its registry: the rebuild
    drops them all, and its plan says why."""
    options = PlanOptions(
        variant="mkl",
        remote_cache="grpcs://cache.example:443",
        remote_executor="grpcs://exec.example:443",
        remote_instance="main",
        push_toolchain="registry.example/tfbuild",
    )
    receipt = real_receipt(wheel, options)
    assert receipt.plan["exec_image"] and any("remote" in o for o in receipt.plan["build_options"])
    receipt_path(wheel).write_text(json.dumps(receipt.to_json()), encoding="utf-8")
    planned, _run = from_receipt(receipt_path(wheel), PlanOptions(), BuildRun(dist=wheel.parent))
    plan = planned.plan
    assert plan.exec_image is None
    assert not [o for o in plan.build_options if "remote" in o or "spawn_strategy" in o]
    script = render_files(plan)["build.sh"]
    assert "example" not in script and "--remote_cache=" not in script
    reason = next(r for r in plan.reasons if r.what == "remote")
    assert reason.why.startswith(
        "a rebuild from a receipt sends nothing to, and takes nothing from"
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("base_image", "reference"), "debian:bookworm\nRUN id"),  # a Dockerfile line of its own
        (("rc_lines", 0), "build --config=x\nbuild --workspace_status_command=/tmp/x"),
        (("compiler",), "gcc\r"),
    ],
)
def test_a_plan_with_a_line_break_in_its_text_is_not_read(
    wheel: Path, path: tuple[str | int, ...], value: str
) -> None:
    """Even with its plan_sha256 recomputed (a hash is not a signature), a receipt's plan cannot
    start a line of its own in the files rendered from it."""
    receipt = real_receipt(wheel)
    plan = json.loads(json.dumps(receipt.plan))
    node = plan
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    resealed = dataclasses.replace(receipt, plan=plan, plan_sha256=canonical_sha256(plan))
    with pytest.raises(InputError, match="holds a control character") as caught:
        plan_from_receipt(resealed, host=recorded_host("haswell", **HERE))
    assert "cannot be read" in caught.value.line()


def test_whether_a_rebuild_needs_the_source_is_the_plans_word(wheel: Path, tmp_path: Path) -> None:
    """``standin`` outside the plan (the receipt's word for its wheel) is not covered by plan_sha256: a receipt that says so there
    alone still needs --source for a tree that was not the canary's."""
    source = SourceRecord(kind="directory", path="/elsewhere", commit=None, dirty=None)
    receipt = real_receipt(wheel, standin=True)
    receipt = dataclasses.replace(
        receipt, inputs=dataclasses.replace(receipt.inputs, source=source)
    )
    assert receipt.plan["canary"] is False
    with pytest.raises(InputError, match="Pass it with --source DIR"):
        rebuild_run(receipt, BuildRun(dist=tmp_path / "dist"))


def test_a_cuda_receipt_rebuilds_with_every_package_pinned_by_its_name(wheel: Path) -> None:
    """TensorFlow 2.16's CUDA image lacks cuDNN: the plan installs the series ``libcudnn8=8.9.*``,
    and the build records ``libcudnn8`` at the version it installed. The rebuild pins that name
    (it once looked up the whole ``libcudnn8=8.9.*`` and refused every CUDA receipt)."""
    plan = make_plan(
        PlanOptions(variant="cuda", target="x86_64_v3"),
        load_recipes().get("2.16"),
        recorded_host("zen4", memory_gib=64, disk_gib=500),
        base_images=load_base_images(),
    )
    assert "libcudnn8=8.9.*" in toolchain_packages(plan)
    names = sorted({spec.partition("=")[0] for spec in toolchain_packages(plan)})
    packages = {name: f"1.0-{name}" for name in names} | {
        "libcudnn8": "8.9.7.29-1+cuda12.2",
        "libcudnn8-dev": "8.9.7.29-1+cuda12.2",
    }
    data = make_receipt(
        wheel,
        target=plan.target,
        variant="cuda",
        label=plan.label,
        plan_overrides=serial.to_data(plan),
    )
    receipt = Receipt.from_json(data)
    inputs = dataclasses.replace(receipt.inputs, packages=packages)
    sealed = dataclasses.replace(receipt, inputs=inputs, inputs_sha256=inputs.sha256)
    rebuilt = plan_from_receipt(sealed, host=recorded_host("haswell", **HERE)).plan
    assert dict(rebuilt.package_versions) == packages
    words = _install_words(render_files(rebuilt)["Dockerfile"])
    assert "libcudnn8=8.9.7.29-1+cuda12.2" in words
    assert "libcudnn8-dev=8.9.7.29-1+cuda12.2" in words
    assert not [w for w in words if w.endswith(".*")]  # the series gave way to the version
    assert [w for w in words if "=" in w] == [f"{n}={v}" for n, v in sorted(packages.items())]


#: An engine that is not there: whatever needs Docker fails with exit 5.
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


def _rebuild_cli(command: str, wheel: Path, receipt: Path, tmp_path: Path) -> CliResult:
    if command == "verify":
        return run_cli("verify", str(wheel), "--receipt", str(receipt), env=NO_ENGINE)
    dist = str(tmp_path / "out")
    return run_cli("wheel", "--from-receipt", str(receipt), "--dist", dist, env=NO_ENGINE)


@pytest.mark.parametrize("command", ["verify", "from-receipt"])
@pytest.mark.parametrize(
    ("field", "option", "named"),
    [
        ("build_options", "--workspace_status_command=/bin/sh", "--workspace_status_command"),
        ("startup_options", "--bazelrc=/tmp/x.rc", "--bazelrc"),
        ("rc_lines", "try-import /tmp/x.rc", "try-import"),
        ("rc_lines", "build --run_under=/tmp/x", "--run_under"),
    ],
)
def test_a_receipt_whose_plan_runs_commands_is_refused_without_an_engine(
    wheel: Path, tmp_path: Path, command: str, field: str, option: str, named: str
) -> None:
    """The hole issue 21 left: bazel options in a receipt's plan, plan_sha256 recomputed. Refused
    in one line naming the field and the option (exit 3) before Docker is connected to: with no
    engine at all, the refusal is still the receipt's own."""
    receipt = real_receipt(wheel)
    plan = json.loads(json.dumps(receipt.plan))
    plan[field].append(option)
    resealed = dataclasses.replace(receipt, plan=plan, plan_sha256=canonical_sha256(plan))
    path = write_receipt(wheel, resealed.to_json())
    result = _rebuild_cli(command, wheel, path, tmp_path)
    assert result.returncode == 3, result.stderr
    line = one_error_line(result)
    assert f"is refused: its {field}[{len(plan[field]) - 1}] holds {named!r}" in line, line
    assert "could run commands" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["verify", "from-receipt"])
def test_a_whole_receipt_gets_as_far_as_the_engine(
    wheel: Path, tmp_path: Path, command: str
) -> None:
    """The contrast: the same receipt unedited passes every check, and only then is the engine
    asked for (exit 5, it is not there)."""
    path = write_receipt(wheel, real_receipt(wheel).to_json())
    result = _rebuild_cli(command, wheel, path, tmp_path)
    assert result.returncode == 5, result.stderr
    assert "cannot reach the Docker engine at unix:///nonexistent/docker.sock" in one_error_line(
        result
    )
