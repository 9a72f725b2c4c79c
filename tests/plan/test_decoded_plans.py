"""A plan read back (a receipt's) holds only what tfbuild's planner writes (issue 21).

Two sides of one allowlist (tfbuild.plan.bazel for bazel's options, tfbuild.plan.decode for the
rest): every plan ``make_plan`` makes, for every recipe, variant, target and option that changes
what it writes, decodes back equal (the allowlist admits all of tfbuild's own output); and a plan
with a value changed is refused, naming the field, or renders files whose shell words are those
of the original (the value is data there, never code).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import recorded_host
from tfbuild.core import serial
from tfbuild.core.errors import TfbuildError
from tfbuild.detect.host import HostFacts
from tfbuild.plan import BuildPlan, PlanOptions, isolated, make_plan, with_jobs
from tfbuild.plan.bazel import bazel_command
from tfbuild.plan.decode import decode_plan
from tfbuild.plan.matrix import RUNNER
from tfbuild.plan.model import RefusedField
from tfbuild.plan.render import render_files, toolchain_packages
from tfbuild.recipes import canary
from tfbuild.recipes.images import BaseImage, load_base_images
from tfbuild.recipes.recipe import Recipe, load_recipes

#: The options that change what a plan writes (targets and variants aside).
EXTRAS: tuple[dict[str, Any], ...] = (
    {},
    {"mkl_threading": "openmp"},
    {"portable": False},
    {"sysroot_from": "ubuntu-22.04"},
    {"sysroot_from": "debian-11"},
    {"reproducible": False, "disk_cache": False, "label": False},
    {"remote_cache": "grpcs://cache.example.org:443", "remote_instance": "projects/p/i/default"},
    {"remote_cache": "http://127.0.0.1:9092/c", "remote_cache_read_only": True},
    {
        "remote_cache": "grpc://cache:1",
        "remote_executor": "grpc://exec:2",
        "push_toolchain": "127.0.0.1:5000/ml",
    },
    {"cuda_capabilities": ("8.9", "sm_90"), "cuda_version": None},
    {"jobs": 3, "local_ram_resources": 3000, "jvm_heap": 1024, "cache_volume": "mine"},
)
TARGETS = ("x86_64_v2", "x86_64_v3", "x86_64_v4", "zen4", "icelake", "nehalem")
LOCAL_IMAGE = "sha256:" + "ab" * 32


def _hosts() -> list[tuple[HostFacts, tuple[str | None, ...]]]:
    """Build hosts and the targets asked on each (None: the machine itself, --native too)."""
    return [
        (RUNNER, TARGETS),
        (recorded_host("zen5-vm", memory_gib=64, disk_gib=500), (None,)),
        (recorded_host("neoverse_v2", memory_gib=64, disk_gib=500), (None, "neoverse_v2")),
    ]


def _recipes(images: dict[str, BaseImage]) -> Iterator[tuple[Recipe, dict[str, Any]]]:
    recipes = load_recipes().recipes
    for recipe in recipes:
        yield recipe, {}
    # The canary (the STAND-IN the pipeline is tested with), on a local base image.
    yield canary.recipe(recipes[-1]), {"canary": True, "base_image": "tfbuild/base:bookworm"}
    clang = canary.for_sysroot(canary.recipe(recipes[-1]), images["debian-12"])
    yield clang, {"canary": True, "sysroot_from": "debian-11"}


@cache
def own_plans() -> tuple[BuildPlan, ...]:
    """Every plan make_plan makes for the recipes x variants x targets x options above, and the
    plans the build derives from them (an OOM retry's, verify's, a rebuild's with its pins)."""
    images = load_base_images()
    local = dataclasses.replace(
        images["debian-12"], name="tfbuild/base:bookworm", reference="tfbuild/base:bookworm"
    )
    images = {**images, local.name: dataclasses.replace(local, image_id=LOCAL_IMAGE)}
    plans: dict[str, BuildPlan] = {}
    for recipe, fixed in _recipes(images):
        for host, targets in _hosts():
            for variant in ("cpu", "mkl", "cuda"):
                for target in targets:
                    for extra in EXTRAS:
                        native = target is None and host is not RUNNER and not extra
                        for native_too in {False, native}:
                            options = {**extra, **fixed, "target": target, "native": native_too}
                            try:
                                plan = make_plan(
                                    PlanOptions(variant=variant, **options),  # type: ignore[arg-type]
                                    recipe,
                                    host,
                                    base_images=images,
                                )
                            except TfbuildError:
                                continue  # refused by the planner: nothing to decode
                            plans[json.dumps(serial.to_data(plan), sort_keys=True)] = plan
    derived = []
    for plan in plans.values():
        pins = {name.partition("=")[0]: "1:2.3~rc1-4+deb12u1" for name in toolchain_packages(plan)}
        derived += [
            with_jobs(plan, 1, why="the compiler was killed for memory"),
            isolated(plan, cache_volume="tfbuild-verify-0123"),
            dataclasses.replace(plan, package_versions=pins, warnings=(*plan.warnings, "x")),
        ]
    return (*plans.values(), *derived)


@pytest.mark.slow  # every plan of every recipe, each decoded: many seconds
def test_the_allowlist_admits_every_plan_tfbuild_makes() -> None:
    plans = own_plans()
    seen = {(p.tensorflow, p.variant, p.route, p.architecture, p.canary) for p in plans}
    assert len(plans) > 1000 and len(seen) > 40  # every recipe, variant, route, both machines
    for plan in plans:
        assert decode_plan(json.loads(json.dumps(serial.to_data(plan)))) == plan
        # As plan.json and a receipt hold it: keys sorted, so build_env and runtime_env too.
        written = json.dumps(serial.to_data(plan), sort_keys=True)
        assert (
            json.dumps(serial.to_data(decode_plan(json.loads(written))), sort_keys=True) == written
        )


# --- hostile plans ----------------------------------------------------------------------------


#: The templates' branches, one plan each (:func:`branches`).
BRANCH_NAMES = (
    "hermetic",
    "devtoolset",
    "image-sysroot",
    "llvm-apt",
    "cuda-cudnn",
    "canary",
    "openmp-rebuild",
    "remote",
)


@cache
def branches() -> dict[str, BuildPlan]:
    """A few plans that between them take every branch of the templates (made when first asked,
    not when the module is collected: in the one process that runs these tests)."""
    chosen: dict[str, BuildPlan] = {}
    for plan in own_plans():
        kinds = (
            ("hermetic", plan.route == "hermetic" and plan.variant == "cuda"),
            ("devtoolset", plan.sysroot is not None and plan.sysroot.builder == "devtoolset-9"),
            ("image-sysroot", plan.sysroot is not None and plan.sysroot.builder == "image"),
            ("llvm-apt", plan.llvm_apt_suite is not None and plan.snapshot is not None),
            ("cuda-cudnn", bool(plan.extra_packages)),
            ("canary", plan.canary and plan.base_image.image_id is not None),
            ("openmp-rebuild", len(plan.runtime_env) > 1 and bool(plan.package_versions)),
            ("remote", plan.exec_image is not None),
        )
        for name, fits in kinds:
            if fits and name not in chosen:
                chosen[name] = plan
    assert sorted(chosen) == sorted(BRANCH_NAMES), sorted(chosen)
    return chosen


def base() -> BuildPlan:
    return branches()["hermetic"]


def _with(path: tuple[str | int, ...], value: Any, plan: BuildPlan | None = None) -> dict[str, Any]:
    plan = plan or base()
    data = json.loads(json.dumps(serial.to_data(plan)))
    node = data
    for key in path[:-1]:
        node = node[key]
    if path[-1] == "+":
        node.append(value)
    else:
        node[path[-1]] = value
    return data


#: Options and rc lines that run, load or redirect something, each where a plan holds options.
HOSTILE_OPTIONS = [
    ("build_options", "--workspace_status_command=/bin/sh -c id", "--workspace_status_command"),
    ("build_options", "--run_under=/tmp/x", "--run_under"),
    ("build_options", "--script_path=/tmp/x", "--script_path"),
    ("build_options", "--credential_helper=/tmp/helper", "--credential_helper"),
    (
        "build_options",
        "--experimental_remote_downloader=grpc://x",
        "--experimental_remote_downloader",
    ),
    ("build_options", "--override_repository=org_tensorflow=/tmp", "--override_repository"),
    ("build_options", "--repo_env=BASH_ENV=/tmp/x", "--repo_env"),
    ("build_options", "--action_env=LD_PRELOAD=/tmp/x.so", "--action_env=LD_PRELOAD"),
    ("build_options", "--action_env=TZ=$(id)", "--action_env=TZ=$(id)"),
    ("build_options", "--host_jvm_args=-javaagent:/tmp/a.jar", "--host_jvm_args"),
    ("build_options", "--jobs=4 --run_under=/tmp/x", "--jobs=4 --run_under=/tmp/x"),
    ("build_options", "--disk_cache=/tmp/elsewhere", "--disk_cache=/tmp/elsewhere"),
    ("startup_options", "--bazelrc=/tmp/x.rc", "--bazelrc"),
    ("startup_options", "--output_base=/etc", "--output_base"),
    (
        "startup_options",
        "--host_jvm_args=-javaagent:/tmp/a.jar",
        "--host_jvm_args=-javaagent:/tmp/a.jar",
    ),
    ("startup_options", "--output_user_root=/tmp", "--output_user_root=/tmp"),
    ("rc_lines", "try-import /tmp/x.rc", "try-import"),
    ("rc_lines", "import /src/evil.rc", "import"),
    ("rc_lines", "common --workspace_status_command=/tmp/x", "common"),
    ("rc_lines", "build --workspace_status_command=/tmp/x", "--workspace_status_command"),
    ("rc_lines", "build:opt --copt=-fplugin=/tmp/x.so", "--copt=-fplugin=/tmp/x.so"),
    ("rc_lines", "build:opt --copt=-Wl,-plugin,/tmp/x.so", "--copt=-Wl,-plugin,/tmp/x.so"),
    ("rc_lines", "build --host_linkopt=-Wl,--wrap=main", "--host_linkopt"),
    ("rc_lines", 'build --action_env CC="/tmp/cc"', '--action_env CC="/tmp/cc"'),
    (
        "rc_lines",
        'build --action_env PYTHON_BIN_PATH="/usr/bin/python3" --run_under=x',
        "--action_env",
    ),
    ("rc_lines", "build --repo_env=TF_SYSROOT=/tmp", "--repo_env=TF_SYSROOT=/tmp"),
    (
        "rc_lines",
        "build --copt=-march=native --run_under=/x",
        "--copt=-march=native --run_under=/x",
    ),
    ("bazel_configs", "rbe_linux_cpu", "rbe_linux_cpu"),
]


@pytest.mark.parametrize(("field", "option", "named"), HOSTILE_OPTIONS)
def test_an_option_tfbuild_never_writes_is_refused_naming_field_and_option(
    field: str, option: str, named: str
) -> None:
    with pytest.raises(RefusedField) as caught:
        decode_plan(_with((field, "+"), option))
    assert caught.value.field.startswith(f"{field}[")
    assert caught.value.value.startswith(named)


#: Other values that reach a rendered file, each made hostile.
HOSTILE_VALUES = [
    (("compiler",), "clang-18$(id)", "compiler"),
    (("bazel",), '7.4.1" && id && echo "', "bazel"),
    (("tensorflow",), "2.21.0'; id; '", "tensorflow"),
    (("sysroot", "name"), "linux_glibc_2_27$(id)", "sysroot.name"),
    (("base_image", "reference"), "debian AS x", "base_image.reference"),
    (("base_image", "suite"), "jammy/ x main\nRUN id", None),
    (("compiler_path",), "/tmp/cc", "compiler_path"),
    (("build_target",), "//evil:target", "build_target"),
    (("runtime_env", "LD_PRELOAD"), "/tmp/evil.so", "runtime_env.LD_PRELOAD"),
    (("runtime_env", "BASH_ENV"), "/tmp/evil", "runtime_env"),
    (("build_env", "BASH_ENV"), "/tmp/evil", "build_env"),
    (("source", "sha256"), "0 /etc/passwd", "source.sha256"),
    (("exec_image",), "evil.example/x", "exec_image"),
    (("label",), "x86_64v4 && id", "label"),
    (("cuda",), {"hermetic": True, "cuda": "12;id", "cudnn": "9", "capabilities": []}, "cuda.cuda"),
]


@pytest.mark.parametrize(("path", "value", "field"), HOSTILE_VALUES)
def test_a_value_tfbuild_never_writes_is_refused_naming_its_field(
    path: tuple[str, ...], value: Any, field: str | None
) -> None:
    data = _with(path, value)
    with pytest.raises(ValueError) as caught:  # RefusedField, or the control-character check
        decode_plan(data)
    if field is not None:
        assert isinstance(caught.value, RefusedField) and caught.value.field == field


def test_apt_sources_other_than_the_snapshot_are_refused() -> None:
    plan = branches()["llvm-apt"]
    assert plan.snapshot is not None
    data = _with(
        ("snapshot", "sources", 0), "deb [trusted=yes] http://evil.example/ jammy main", plan
    )
    with pytest.raises(RefusedField, match="snapshot archive tfbuild uses") as caught:
        decode_plan(data)
    assert caught.value.field == "snapshot"


def test_the_stand_ins_wheel_name_is_its_own_and_only_a_stand_in_plans() -> None:
    """The canary's wheel is tfbuild_canary (so installing it never replaces a TensorFlow); a
    TensorFlow plan that names its wheel so is refused, and so is an rc line that gives bazel
    another name than the plan's. A stand-in's plan of before the name (tensorflow_cpu) reads."""
    standin = branches()["canary"]
    assert standin.wheel_name == "tfbuild_canary"
    assert "build --repo_env=WHEEL_NAME=tfbuild_canary" in standin.rc_lines
    with pytest.raises(RefusedField) as caught:
        decode_plan(_with(("wheel_name",), "tfbuild_canary"))
    assert caught.value.field == "wheel_name"
    line = f"build --repo_env=WHEEL_NAME={base().wheel_name}"
    index = base().rc_lines.index(line)
    with pytest.raises(RefusedField) as caught:
        decode_plan(_with(("rc_lines", index), "build --repo_env=WHEEL_NAME=tensorflow_cpu"))
    assert caught.value.field == f"rc_lines[{index}]"
    index = standin.rc_lines.index("build --repo_env=WHEEL_NAME=tfbuild_canary")
    before = _with(("rc_lines", index), "build --repo_env=WHEEL_NAME=tensorflow_cpu", standin)
    before["wheel_name"] = "tensorflow_cpu"
    assert decode_plan(before).wheel_name == "tensorflow_cpu"


# --- plans of before tfbuild.plan/4: the resource options in their lists as well -------------


def _as_before(plan: BuildPlan, schema: str = "tfbuild.plan/3") -> dict[str, Any]:
    """``plan`` as a tfbuild before /4 wrote it: bazel's resource options in its option lists as
    well as in its resources (jobs and memory first among the build options, the heap last among
    the startup options), kept in step; --canary's plan field under its old name, "standin"."""
    data = json.loads(json.dumps(serial.to_data(plan)))
    data["standin"] = data.pop("canary")
    made = bazel_command(plan)
    return {
        **data,
        "schema": schema,
        "build_options": list(made.build),
        "startup_options": list(made.startup),
    }


@pytest.mark.parametrize("schema", ["tfbuild.plan/2", "tfbuild.plan/3"])
@pytest.mark.parametrize("name", sorted(BRANCH_NAMES))
def test_an_older_plan_reads_with_its_resource_options_lifted_and_renders_the_same(
    name: str, schema: str
) -> None:
    plan = branches()[name]
    before = _as_before(plan, schema)
    assert before["build_options"][0].startswith("--jobs=")
    decoded = decode_plan(before)
    assert decoded == plan  # the options gone from the lists, their values in resources
    assert render_files(decoded) == render_files(plan)
    script = render_files(decoded)["build.sh"]
    for prefix in ("--jobs=", "--local_ram_resources=", "--host_jvm_args="):
        assert script.count(prefix) == 1, prefix


def test_an_older_plans_resource_options_say_what_its_build_ran_with() -> None:
    """Were an older plan's options and resources apart, the options are what its build.sh gave
    bazel: they are the values read."""
    before = _as_before(base())
    before["build_options"][0] = "--jobs=7"
    before["startup_options"][-1] = "--host_jvm_args=-Xmx3000m"
    decoded = decode_plan(before)
    assert (decoded.resources.jobs, decoded.resources.jvm_heap_mb) == (7, 3000)
    assert decoded.resources.local_ram_mb == base().resources.local_ram_mb
    assert bazel_command(decoded).build[0] == "--jobs=7"


@pytest.mark.parametrize(
    ("field", "index", "option", "why"),
    [
        ("build_options", 0, "--jobs=4 --run_under=/tmp/x", "not a value tfbuild writes"),
        ("build_options", 1, "--local_ram_resources=HOST_RAM*.9", "not a value tfbuild writes"),
        ("build_options", 0, "--jobs=0", "not a value tfbuild writes"),
        ("startup_options", -1, "--host_jvm_args=-javaagent:/tmp/a.jar", "not a value"),
        ("build_options", "+", "--jobs=3", "--jobs a second time"),
        ("build_options", "+", "--host_jvm_args=-Xmx1024m", "only from the plan's resources"),
        ("startup_options", "+", "--jobs=3", "only from the plan's resources"),
    ],
)
def test_an_older_plans_resource_option_off_its_grammar_is_refused(
    field: str, index: int | str, option: str, why: str
) -> None:
    before = _as_before(base())
    if index == "+":
        before[field].append(option)
    else:
        before[field][index] = option  # type: ignore[index]
    with pytest.raises(RefusedField, match=re.escape(why)) as caught:
        decode_plan(before)
    assert caught.value.field.startswith(f"{field}[") and caught.value.value == option


@pytest.mark.parametrize("field", ["build_options", "startup_options"])
@pytest.mark.parametrize(
    "option", ["--jobs=8", "--local_ram_resources=4096", "--host_jvm_args=-Xmx1024m"]
)
def test_a_current_plan_holds_no_resource_option_in_its_lists(field: str, option: str) -> None:
    """A tfbuild.plan/4 plan holds its resources once: a resource option in its lists would be
    rendered beside the one made from its resources, and is refused."""
    with pytest.raises(RefusedField, match="only from the plan's resources") as caught:
        decode_plan(_with((field, "+"), option))
    assert caught.value.field.startswith(f"{field}[")


@pytest.mark.parametrize(
    ("resource", "value"),
    [("jobs", 0), ("jobs", -4), ("local_ram_mb", 0), ("jvm_heap_mb", 10**7), ("jvm_heap_mb", -1)],
)
def test_a_resource_that_is_no_count_bazel_takes_is_refused(resource: str, value: int) -> None:
    with pytest.raises(RefusedField, match="not a count bazel takes") as caught:
        decode_plan(_with(("resources", resource), value))
    assert caught.value.field == f"resources.{resource}"


# --- any one value changed: refused, or data in the rendered files ----------------------------

#: Fragments with a meaning in the Dockerfile, in sh, in the rc file or in runtime.env.
FRAGMENTS = (
    "$(id)", "`id`", "${HOME}", "'", '"', "\\", ";", "&&", "|", ">", " ", "#", "=", "--run_under=/x",
    "try-import /x", "\\\n", " --config=x", "*", "~", "..", "/", ":", "@", ",", "-", "!", "%",
)  # fmt: skip


def _string_paths(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(data, str):
        yield path
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _string_paths(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _string_paths(value, (*path, i))


_ACTIVE = set("$`;&|<>()")


def shell_shape(text: str) -> list[tuple[int, str]]:
    """Per line, the number of shell words and the characters a shell acts on (outside single
    quotes and escapes; inside double quotes only ``$`` and the backtick): the same shape means
    the same commands, whatever data the words hold."""
    shape = []
    for line in text.splitlines():
        words, active, quote, in_word, escaped = 0, [], "", False, False
        for char in line:
            if escaped:
                escaped = False
                continue
            if quote == "'":
                quote = "" if char == "'" else quote
                continue
            if char == "\\":
                escaped = True
            elif quote == '"':
                if char == '"':
                    quote = ""
                elif char in "$`":
                    active.append(char)
                continue
            elif char in "'\"":
                quote = char
            elif char == "#" and not in_word:
                break  # a comment, to the end of the line
            elif char.isspace():
                in_word = False
                continue
            elif char in _ACTIVE:
                active.append(char)
            if not in_word:
                words += 1
                in_word = True
        shape.append((words, "".join(active)))
    return shape


def _shapes(files: dict[str, str]) -> dict[str, list[tuple[int, str]]]:
    return {name: shell_shape(text) for name, text in files.items() if name != "plan.json"}


@cache
def originals() -> dict[str, tuple[BuildPlan, dict[str, list[tuple[int, str]]]]]:
    """Each branch's plan and the shell shape of its rendered files."""
    return {name: (plan, _shapes(render_files(plan))) for name, plan in branches().items()}


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_one_value_changed_is_refused_or_stays_data(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(BRANCH_NAMES)))
    plan, shape = originals()[name]
    original = serial.to_data(plan)
    path = data.draw(st.sampled_from(sorted(_string_paths(original), key=repr)))
    node: Any = original
    for key in path:
        node = node[key]
    fragment = st.sampled_from(FRAGMENTS)
    value = data.draw(
        st.one_of(
            st.builds(lambda f: node + f, fragment),
            st.builds(lambda f, g: f + node + g, fragment, fragment),
            st.builds(lambda f: node.replace(node[:1], f, 1), fragment),
            st.text(alphabet=st.sampled_from("az09._-/=:,+@ $'\"`;|&()\\#*"), max_size=20),
        )
    )
    changed = _with(path, value, plan)
    try:
        decoded = decode_plan(changed)
        files = render_files(decoded)
    except (ValueError, KeyError, TfbuildError):
        return  # refused where it is decoded (or rendered)
    assert _shapes(files) == shape, f"{name}: {path} = {value!r} changed the files' shell words"


def test_the_shape_sees_a_substitution_inside_double_quotes() -> None:
    """The property's own check: a value pasted into an echo's double quotes would be caught."""
    assert shell_shape('echo "tool: clang"') != shell_shape('echo "tool: $(id)"')
    assert shell_shape("echo 'tool: $(id)'") == shell_shape("echo 'tool: clang'")
    assert shell_shape("a=x") != shell_shape("a=x y")
