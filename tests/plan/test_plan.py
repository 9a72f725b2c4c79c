"""The build plan: pure decisions over a recipe and recorded host facts, each with its reason."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import ROOT, recorded_host
from tfbuild.core import serial
from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.detect.host import HostFacts
from tfbuild.plan import GIB, PlanOptions, isolated, make_plan
from tfbuild.plan.bazel import bazel_command
from tfbuild.plan.decode import decode_plan
from tfbuild.plan.render import render_files
from tfbuild.recipes.images import BaseImage
from tfbuild.recipes.recipe import Recipe, load_recipes, parse_recipe

MODEL = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
IMAGES = {
    name: BaseImage(
        name=name,
        reference=f"docker.io/library/{distro}:{tag}@sha256:" + "ab" * 32,
        distro=distro,
        suite=suite,
        python=python,
        tcmalloc_package=package,
        packaged_compilers=packaged,
    )
    for name, distro, tag, suite, python, package, packaged in (
        ("ubuntu-22.04", "ubuntu", "22.04", "jammy", "3.10", "libgoogle-perftools4", ("clang-15",)),
        (
            "ubuntu-24.04",
            "ubuntu",
            "24.04",
            "noble",
            "3.12",
            "libgoogle-perftools4t64",
            ("clang-18",),
        ),
        ("debian-12", "debian", "12", "bookworm", "3.11", "libgoogle-perftools4", ("clang-16",)),
    )
}


def without_toolchain(text: str) -> str:
    """A recipe text without its toolchain route (the image's compiler compiles)."""
    return re.sub(r"^toolchain:\n(?:  .*\n)+", "", text, flags=re.M)


def recipe_221() -> Recipe:
    return parse_recipe(MODEL, path="recipes/tf-2.21.yaml")


def host(machine: str = "zen5-vm", **changes: object) -> HostFacts:
    return recorded_host(machine, memory_gib=24, disk_gib=100, **changes)


def plan(
    options: PlanOptions | None = None, recipe: Recipe | None = None, facts: HostFacts | None = None
):
    return make_plan(
        options or PlanOptions(variant="mkl"),
        recipe or recipe_221(),
        facts or host(),
        base_images=IMAGES,
    )


def reason(p, what: str) -> str:
    (found,) = [r for r in p.reasons if r.what == what]
    return f"{found.value} | {found.why}"


def test_mkl_plan_for_this_zen5_host() -> None:
    p = plan()
    assert p.bazel_configs == ("opt", "mkl_threadpool")
    assert p.cflags == (
        "-march=x86-64-v4",
        "-mtune=generic",
        "-mavx512vnni",
        "-mavx512bf16",
        "-mavxvnni",
    )
    assert "build:opt --copt=-mavxvnni" in p.rc_lines
    assert not any(line.startswith("build:opt --host_copt=-m") for line in p.rc_lines)
    assert p.python == "3.11"
    assert dict(p.runtime_env) == {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"}
    assert "build --repo_env=WHEEL_NAME=tensorflow_cpu" in p.rc_lines
    assert "build --repo_env=USE_PYWRAP_RULES=1" in p.rc_lines
    assert p.build_target == "//tensorflow/tools/pip_package:wheel"
    assert "Eigen thread pool" in reason(p, "bazel config")
    covered = {c.feature: c.flag for c in p.coverage}
    assert covered["AVX512_BF16"] == "-mavx512bf16"


def test_openmp_threading_adds_the_runtime_settings() -> None:
    p = plan(PlanOptions(variant="mkl", mkl_threading="openmp"), facts=host("sapphirerapids"))
    env = dict(p.runtime_env)
    assert p.bazel_configs == ("opt", "mkl")
    assert env["OMP_NUM_THREADS"] == "56"  # physical cores of that machine
    assert env["KMP_BLOCKTIME"] == "1"
    assert env["KMP_AFFINITY"] == "granularity=fine,compact,1,0"
    assert env["TF_NUM_INTRAOP_THREADS"] == "56"


def test_portable_target_never_takes_the_hosts_extras() -> None:
    p = plan(PlanOptions(variant="cpu", target="x86_64_v3"))
    assert p.cflags == ("-march=x86-64-v3", "-mtune=generic")
    assert p.target_kind == "portable"
    assert p.bazel_configs == ("opt",)


def test_plan_for_another_machine_spells_its_flags() -> None:
    facts = host("haswell", machine_is_build_host=False)
    p = plan(PlanOptions(variant="cpu"), facts=facts)
    assert p.cflags == ("-march=haswell", "-mtune=haswell")
    assert "linux-rhel7-haswell" in reason(p, "target")


def test_native_for_another_machine_is_refused() -> None:
    with pytest.raises(UsageError, match="-march=native would describe the build host"):
        plan(PlanOptions(native=True), facts=host("haswell", machine_is_build_host=False))
    native = plan(PlanOptions(native=True))
    assert native.cflags == ("-march=native",)
    assert native.label == "native"
    # What -march=native turns on is the build host's: recorded for tfbuild pick.
    features = [c.feature for c in native.coverage]  # the Zen 5 VM of host()
    assert {"AVX2", "FMA", "AVX512F", "AVX512_VNNI", "AVX512_BF16", "AVX_VNNI"} <= set(features)
    assert "AMX_TILE" not in features
    assert {c.flag for c in native.coverage} == {"-march=native"}


def test_python_choice() -> None:
    assert "this host's Python" in reason(plan(), "python")
    other = plan(facts=host(python="3.14"))
    assert other.python == "3.13"
    assert "outside recipes/tf-2.21.yaml" in reason(other, "python")
    with pytest.raises(UnsupportedError) as caught:
        plan(PlanOptions(python="3.9"))
    assert "recipes/tf-2.21.yaml:" in caught.value.line()
    assert "allows 3.10, 3.11, 3.12, 3.13" in caught.value.line()


@pytest.mark.parametrize(
    ("memory_gib", "cpus", "variant", "jobs", "jvm", "ram"),
    [
        (8, 2, "mkl", 2, 1024, 6144),
        (4, 2, "mkl", 1, 1024, 2048),
        (24, 2, "mkl", 2, 2457, 21095),
        (64, 32, "mkl", 23, 4096, 60416),
        (64, 32, "cuda", 14, 6144, 58368),
    ],
)
def test_resources_fit_memory(
    memory_gib: int, cpus: int, variant: str, jobs: int, jvm: int, ram: int
) -> None:
    facts = host(build_memory_bytes=memory_gib * GIB, build_cpus=cpus)
    p = plan(PlanOptions(variant=variant), facts=facts)  # type: ignore[arg-type]
    assert (p.resources.jobs, p.resources.jvm_heap_mb, p.resources.local_ram_mb) == (jobs, jvm, ram)
    # bazel gets them as options made from the resources, the plan's one record of them.
    command = bazel_command(p)
    assert command.build[:2] == (f"--jobs={jobs}", f"--local_ram_resources={ram}")
    assert command.startup[-1] == f"--host_jvm_args=-Xmx{jvm}m"
    held = (*p.build_options, *p.startup_options)
    assert not [o for o in held if o.startswith(("--jobs", "--local_ram", "--host_jvm"))]
    script = render_files(p)["build.sh"]
    for option in (*command.startup, *command.build):
        assert script.count(f"  {option} \\\n") == 1, option


def test_resource_overrides() -> None:
    p = plan(PlanOptions(jobs=7, local_ram_resources=3000, jvm_heap=900))
    assert (p.resources.jobs, p.resources.local_ram_mb, p.resources.jvm_heap_mb) == (7, 3000, 900)
    assert "asked for with --jobs" in reason(p, "jobs")


def test_a_plan_is_never_refused_for_disk() -> None:
    """A plan writes nothing: too little free disk is tfbuild wheel's refusal (tests/plan/
    test_plan_notes.py), never the planner's, with or without --skip-disk-check."""
    for options in (PlanOptions(variant="mkl"), PlanOptions(variant="cuda")):
        for skip in (False, True):
            asked = replace(options, skip_disk_check=skip)
            p = plan(asked, facts=host(build_disk_free_bytes=1 * GIB))
            assert p.resources.disk_needed_gib == (70 if options.variant == "cuda" else 40)
            assert not any("disk" in w for w in p.warnings), p.warnings


def test_the_plan_holds_no_fact_about_the_moment() -> None:
    """Free disk changes from one minute to the next: it is checked, never written into the plan,
    so two renders of the same inputs are byte-identical (the receipt records it instead)."""
    from tfbuild.plan.render import render_files

    files = [render_files(plan(facts=host(build_disk_free_bytes=free * GIB))) for free in (61, 900)]
    assert files[0] == files[1]
    assert "disk_free" not in files[0]["plan.json"]


def test_the_reproducible_measures_each_have_a_reason() -> None:
    p = plan()
    assert p.reproducible and dict(p.build_env) == {
        "TZ": "UTC",
        "LC_ALL": "C",
        "PYTHONHASHSEED": "0",
    }
    whats = {r.what for r in p.reasons}
    assert {
        "SOURCE_DATE_EPOCH",
        "build environment",
        "path prefix map",
        "wheel normalisation",
    } <= whats
    assert "--action_env=SOURCE_DATE_EPOCH" in p.build_options
    off = plan(PlanOptions(reproducible=False))
    assert not off.reproducible and off.build_env == {}
    assert not any(o.startswith("--action_env") for o in off.build_options)
    assert "asked for with --no-reproducible" in reason(off, "reproducible")


def test_a_plan_survives_its_json() -> None:
    """A rebuild reads the plan back from its receipt: the same value, field for field."""

    for options in (PlanOptions(), PlanOptions(variant="mkl", mkl_threading="openmp")):
        original = plan(options)
        assert decode_plan(serial.to_data(original)) == original


def test_caches_and_remote() -> None:
    p = plan(PlanOptions(remote_cache="grpcs://cache.example.org:443", cache_volume="team"))
    assert "--remote_cache=grpcs://cache.example.org:443" in p.build_options
    assert "--disk_cache=/cache/disk" in p.build_options
    assert "--repository_cache=/cache/repository" in p.build_options
    assert p.cache_volume == "team"
    assert "--disk_cache=/cache/disk" not in plan(PlanOptions(disk_cache=False)).build_options


def test_remote_execution_runs_as_tensorflows_rbe_config_in_the_pushed_image() -> None:
    p = plan(
        PlanOptions(
            remote_executor="grpcs://rbe.example.org",
            push_toolchain="registry.example.org:5000/ml",
            remote_instance="projects/p/instances/default_instance",
        )
    )
    options = p.build_options
    assert "--remote_executor=grpcs://rbe.example.org" in options
    assert "--remote_instance_name=projects/p/instances/default_instance" in options
    # TensorFlow's own build:rbe_base values (.bazelrc at 0071ad1d1f9e35ead7169c50dbe754ce5c27cae1).
    for option in (
        "--spawn_strategy=remote,worker,standalone,local",
        "--remote_timeout=3600",
        "--remote_download_toplevel",
    ):
        assert option in options
    assert p.resources.jobs == 800
    assert "--jobs=800" in bazel_command(p).build
    assert p.exec_image == "registry.example.org:5000/ml/tfbuild/toolchain"
    assert decode_plan(serial.to_data(p)) == p
    # The digest is the build's to know: build.sh takes it from the environment, by digest only.
    script = render_files(p)["build.sh"]
    assert '--remote_default_exec_properties=container-image="docker://$exec_image"' in script
    assert "TFBUILD_EXEC_IMAGE:?" in script
    # An explicit --jobs still wins, and a local plan has none of it.
    assert (
        plan(
            PlanOptions(
                remote_executor="grpcs://rbe.example.org",
                push_toolchain="registry.example.org",
                jobs=64,
            )
        ).resources.jobs
        == 64
    )
    local = plan(PlanOptions())
    assert local.exec_image is None
    assert not any("remote" in option for option in local.build_options)
    assert "container-image" not in render_files(local)["build.sh"]


def test_a_remote_cache_alone_is_given_up_on_in_bounded_time() -> None:
    """Issue 21, item 14: a cache that accepts and never answers held the build for bazel's 6 x 60 s
    (--remote_retries=5); a cache alone gets one retry, remote execution keeps TF's own timeout."""
    cache = plan(PlanOptions(remote_cache="grpcs://cache.example.org")).build_options
    assert [o for o in cache if o.startswith(("--remote_timeout=", "--remote_retries="))] == [
        "--remote_timeout=60",
        "--remote_retries=1",
    ]
    both = plan(
        PlanOptions(
            remote_cache="grpcs://cache.example.org",
            remote_executor="grpcs://rbe.example.org",
            push_toolchain="registry.example.org",
        )
    ).build_options
    assert [o for o in both if o.startswith(("--remote_timeout=", "--remote_retries="))] == [
        "--remote_timeout=3600"
    ]


def test_remote_timeout_sets_the_caches_wait_and_its_reason_says_the_bound() -> None:
    made = plan(PlanOptions(remote_cache="grpcs://cache.example.org", remote_timeout=10))
    waits = [
        o for o in made.build_options if o.startswith(("--remote_timeout=", "--remote_retries="))
    ]
    assert waits == ["--remote_timeout=10", "--remote_retries=1"]
    (reason,) = [r for r in made.reasons if r.what == "remote cache timeout"]
    assert reason.value == "10 s per call, 1 retries"
    assert "about 20 s" in reason.why and "--remote-timeout" in reason.why


@pytest.mark.parametrize(
    "options",
    [
        {},
        {
            "remote_cache": "grpcs://cache.example.org",
            "remote_executor": "grpcs://rbe.example.org",
            "push_toolchain": "registry.example.org",
        },
    ],
)
def test_remote_timeout_without_a_cache_alone_is_refused(options: dict[str, str]) -> None:
    with pytest.raises(UsageError, match="--remote-timeout without --remote-cache alone"):
        plan(PlanOptions(remote_timeout=10, **options))  # type: ignore[arg-type]


def test_a_read_only_remote_cache_uploads_nothing() -> None:
    p = plan(PlanOptions(remote_cache="grpcs://cache.example.org", remote_cache_read_only=True))
    assert "--noremote_upload_local_results" in p.build_options
    assert (
        "--noremote_upload_local_results"
        not in plan(PlanOptions(remote_cache="grpcs://cache.example.org")).build_options
    )


def test_verify_drops_every_remote_option() -> None:
    p = plan(
        PlanOptions(
            remote_cache="grpcs://cache.example.org",
            remote_executor="grpcs://rbe.example.org",
            push_toolchain="127.0.0.1:5000",
            remote_instance="main",
            remote_cache_read_only=True,
        )
    )
    alone = isolated(p, cache_volume="fresh")
    assert alone.exec_image is None
    assert not [o for o in alone.build_options if "remote" in o or "spawn_strategy" in o]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (PlanOptions(remote_executor="grpcs://rbe.example.org"), "without --push-toolchain"),
        (PlanOptions(push_toolchain="127.0.0.1:5000"), "without --remote-executor"),
        (
            PlanOptions(remote_cache_read_only=True),
            "--remote-cache-read-only without --remote-cache",
        ),
        (PlanOptions(remote_instance="main"), "--remote-instance without"),
        (
            PlanOptions(remote_executor="grpc://x:1", push_toolchain="Registry;rm -rf /"),
            "is not a registry",
        ),
        (PlanOptions(remote_cache="grpc://x:1", remote_instance="/main"), "not an instance name"),
        (PlanOptions(remote_cache="grpc://x:1", remote_instance="a b"), "not an instance name"),
    ],
)
def test_remote_options_that_make_no_sense_together_are_refused(
    options: PlanOptions, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        plan(options)


@pytest.mark.parametrize(
    "options",
    [
        PlanOptions(remote_cache="grpc://cache:9092; rm -rf /"),
        PlanOptions(remote_executor="http://x/$(id)"),
        PlanOptions(cache_volume="vol\nRUN x"),
    ],
)
def test_hostile_options_are_rejected(options: PlanOptions) -> None:
    with pytest.raises(UsageError):
        plan(options)


# --- CUDA ---------------------------------------------------------------------------------------------


def test_cuda_without_gpu_uses_the_release_defaults() -> None:
    p = plan(PlanOptions(variant="cuda"))
    assert p.cuda is not None
    assert (p.cuda.cuda, p.cuda.cudnn) == ("12.5.1", "9.3.0")
    assert p.cuda.capabilities == ("sm_60", "sm_70", "sm_80", "sm_89", "compute_90")
    assert p.bazel_configs == ("opt", "cuda_clang", "cuda_wheel")
    assert 'build:cuda --repo_env HERMETIC_CUDA_VERSION="12.5.1"' in p.rc_lines
    assert "build --repo_env=WHEEL_NAME=tensorflow" in p.rc_lines


def test_cuda_follows_the_driver_and_the_gpus() -> None:
    facts = host(
        driver_version="550.54.15", driver_cuda="12.4", gpu_capabilities=("8.9", "8.6", "8.9")
    )
    p = plan(PlanOptions(variant="cuda"), facts=facts)
    assert p.cuda is not None
    assert p.cuda.cuda == "12.4.1"
    assert p.cuda.capabilities == ("sm_86", "sm_89", "compute_89")
    assert "driver 550.54.15" in reason(p, "CUDA")


def test_driver_too_old_says_what_to_change() -> None:
    facts = host(driver_version="535.129.03", driver_cuda="12.2")
    with pytest.raises(UnsupportedError) as caught:
        plan(PlanOptions(variant="cuda", cuda_version="12.5.1"), facts=facts)
    line = caught.value.line()
    assert "NVIDIA driver 535.129.03 is too old for CUDA 12.5.1" in line
    assert "Upgrade the driver to 555.42.02 or newer" in line


def test_gpu_newer_than_the_toolkit_is_refused() -> None:
    facts = host(driver_version="575.51.03", driver_cuda="12.9", gpu_capabilities=("12.0",))
    with pytest.raises(UnsupportedError, match=r"cannot compile for compute capability 12\.0"):
        plan(PlanOptions(variant="cuda"), facts=facts)


def test_explicit_capabilities() -> None:
    p = plan(PlanOptions(variant="cuda", cuda_capabilities=("sm_80", "9.0")))
    assert p.cuda is not None
    assert p.cuda.capabilities == ("sm_80", "sm_90", "compute_90")
    with pytest.raises(UsageError, match="not a compute capability"):
        plan(PlanOptions(variant="cuda", cuda_capabilities=("ampere",)))


def test_cuda_for_a_recipe_without_a_cuda_row() -> None:
    text = MODEL[: MODEL.index("cuda:\n")]
    recipe = parse_recipe(text, path="recipes/tf-2.21.yaml")
    with pytest.raises(UnsupportedError, match="has no CUDA row"):
        plan(PlanOptions(variant="cuda"), recipe=recipe)


def test_a_config_missing_from_the_release_is_refused() -> None:
    text = MODEL.replace("mkl_threadpool,", "", 1)
    recipe = parse_recipe(text, path="recipes/tf-2.21.yaml")
    with pytest.raises(UnsupportedError, match="has no bazel config 'mkl_threadpool'"):
        plan(recipe=recipe)


def test_every_choice_has_a_reason() -> None:
    p = plan(PlanOptions(variant="cuda"))
    whats = {r.what for r in p.reasons}
    assert {
        "recipe",
        "python",
        "base image",
        "compiler",
        "target",
        "jobs",
        "TCMalloc",
        "CUDA",
    } <= whats
    assert all(r.why for r in p.reasons)


def test_plan_json_round_trips_through_the_cli(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    result = run_cli("plan", "--tf", "2.21", "--mkl", "--json", "--skip-disk-check")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["schema"] == "tfbuild.plan/4"
    assert data["bazel_configs"] == ["opt", "mkl_threadpool"]


def test_compiler_from_the_distribution_or_from_apt_llvm_org() -> None:
    image_compiler = PlanOptions(variant="mkl", portable=False)  # not 2.21's hermetic one
    packaged = plan(image_compiler)
    assert packaged.llvm_apt_suite is None
    assert "packaged by noble" in reason(packaged, "compiler")
    on_jammy = plan(
        image_compiler,
        recipe=parse_recipe(
            MODEL.replace("base_image: ubuntu-24.04", "base_image: ubuntu-22.04"), path="r.yaml"
        ),
    )
    assert on_jammy.llvm_apt_suite == "llvm-toolchain-jammy-18"
    assert on_jammy.compiler_path == "/usr/lib/llvm-18/bin/clang"
    gcc = parse_recipe(
        without_toolchain(MODEL).replace("compiler: clang-18.1.8", "compiler: gcc-13"),
        path="r.yaml",
    )
    with pytest.raises(UnsupportedError, match="does not package gcc-13"):
        plan(image_compiler, recipe=gcc)


def test_the_recipe_floor_is_the_goal_of_the_plan() -> None:
    """Each recipe aims no lower than its stock wheel: 2.27 for 2.21 (manylinux_2_27), 2.17 before."""
    assert plan().floor_goal == "2.27"
    assert "no worse than TensorFlow 2.21's stock wheel" in reason(plan(), "glibc floor")
    assert {r.short: r.floor for r in load_recipes().recipes} == {
        **{f"2.{minor}": "2.17" for minor in range(13, 21)},
        "2.21": "2.27",
    }


def test_a_wheel_that_misses_its_floor_is_said_so() -> None:
    from tfbuild.build.finish import missed_floor
    from tfbuild.wheel.receipt import WheelFloor

    portable = WheelFloor(
        glibc="2.27", libstdcxx="3.4.22", libgcc="3.3", policy="manylinux_2_27_x86_64"
    )
    assert missed_floor("2.27", portable) is None
    assert missed_floor("2.28", portable) is None  # older than the goal: better
    newer = WheelFloor(
        glibc="2.39", libstdcxx="3.4.32", libgcc="3.3", policy="manylinux_2_39_x86_64"
    )
    said = missed_floor("2.27", newer)
    assert said is not None and "needs glibc 2.39 and libstdc++ 3.4.32" in said
    none = WheelFloor(glibc=None, libstdcxx=None, libgcc=None, policy=None, too_new=("GLIBC_2.99",))
    assert "satisfies no manylinux policy: it needs GLIBC_2.99" in (
        missed_floor("2.27", none) or ""
    )
    assert missed_floor(None, newer) is None and missed_floor("2.27", None) is None
