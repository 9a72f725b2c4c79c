"""What a plan read back from a file may hold: the values tfbuild's own planner writes, and no other.

A plan that comes from a receipt (``tfbuild verify``, ``wheel --from-receipt``) is untrusted: its
``plan_sha256`` shows that it is whole, not who wrote it, and anyone can recompute it. Its values
become a Dockerfile, a shell script, bazel's options and an rc file, so :func:`check_plan` (which
:func:`decode_plan` runs on every plan it decodes) holds each value that reaches a rendered
file to the grammar of what the planner writes there: bazel's options to the allowlist of
:mod:`tfbuild.plan.bazel`, the rest below. The renderer shell-quotes plan text as well; this is
the other half: a value that would mean something else in any of those languages is refused with a
:class:`RefusedField` naming its field, before anything is rendered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from tfbuild.core import serial
from tfbuild.core.defaults import TOOLCHAIN_REPOSITORY
from tfbuild.plan.bazel import (
    BUILD_OPTIONS,
    BUILD_RESOURCES,
    STANDIN_WHEEL_NAMES,
    STARTUP_OPTIONS,
    STARTUP_RESOURCES,
    SYSROOT_DIST,
    SYSROOT_NAME,
    WHEEL_NAMES,
    WHEEL_TARGETS,
    check_configs,
    check_options,
    check_rc_lines,
    check_resources,
)
from tfbuild.plan.model import (
    PLAN_SCHEMA,
    BuildPlan,
    RefusedField,
    check_package_versions,
    check_single_lines,
)
from tfbuild.plan.reproducible import BUILD_ENV, SNAPSHOT_URLS, snapshot_for
from tfbuild.recipes.images import BaseImage

__all__ = ["check_plan", "decode_plan"]

#: Older plans a receipt may carry, still read (a /2 plan compiled with the image's compiler).
READABLE_SCHEMAS = ("tfbuild.plan/2", "tfbuild.plan/3", PLAN_SCHEMA)
#: The schemas whose plans held bazel's resource options in their option lists as well as in
#: ``resources`` (the planner kept the two in step); read back, those options are lifted out.
RESOURCES_AMONG_OPTIONS = ("tfbuild.plan/2", "tfbuild.plan/3")

_VERSION3 = r"[0-9]+\.[0-9]+\.[0-9]+"
_VERSION2 = r"[0-9]+\.[0-9]+"
_RELEASE = r"[0-9]+(?:\.[0-9]+){0,3}"
_SHA256 = r"[0-9a-f]{64}"
_PACKAGE = r"[a-z0-9][a-z0-9+.-]+"
_WHEEL_NAME_LINE = re.compile(r"build --repo_env[= ]WHEEL_NAME=(.*)")
_SUITE = r"[a-z][a-z0-9-]*"
#: A Docker image reference as a receipt holds one (no spaces, no shell, no Dockerfile variable).
_IMAGE_REFERENCE = r"[A-Za-z0-9][A-Za-z0-9._/:-]*(?:@sha256:[0-9a-f]{64})?"
_COMPILER = r"(?:gcc|clang)-[0-9]+(?:\.[0-9]+){0,2}"
_COMPILER_PATH = r"/usr/lib/llvm-[0-9]{1,3}/bin/clang|/usr/bin/gcc-[0-9]{1,3}"
_HTTPS_URL = r"https://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~%/+=-]*)?"
_REGISTRY = r"[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
_EXEC_IMAGE = rf"{_REGISTRY}/{re.escape(TOOLCHAIN_REPOSITORY)}"  # --push-toolchain's repository
_LABEL = r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*"
_CAPABILITY = r"(?:sm|compute)_[0-9]{2,3}[a-z]?"
#: The runtime settings the planner writes into runtime.env (the wheel's users source it): the
#: TCMalloc preload (make._tcmalloc) and the OpenMP settings (bazel.choose_variant).
RUNTIME_ENV = {
    "LD_PRELOAD": r"/usr/lib/(?:x86_64|aarch64)-linux-gnu/libtcmalloc\.so\.4",
    "OMP_NUM_THREADS": r"[1-9][0-9]{0,4}",
    "KMP_BLOCKTIME": r"[0-9]{1,4}",
    "KMP_AFFINITY": r"granularity=fine,compact,1,0",
    "TF_NUM_INTRAOP_THREADS": r"[1-9][0-9]{0,4}",
    "TF_NUM_INTEROP_THREADS": r"[1-9][0-9]{0,4}",
}
SYSROOT_BUILDERS = ("devtoolset-9", "image")


def _text(field: str, value: str | None, pattern: str, what: str) -> None:
    if value is not None and re.fullmatch(pattern, value) is None:
        raise RefusedField(field, value, f"not {what}")


def _each(field: str, values: Iterable[str], pattern: str, what: str) -> None:
    for i, value in enumerate(values):
        _text(f"{field}[{i}]", value, pattern, what)


def _image(field: str, image: BaseImage) -> None:
    _text(f"{field}.name", image.name, _IMAGE_REFERENCE, "an image name")
    _text(f"{field}.reference", image.reference, _IMAGE_REFERENCE, "a Docker image reference")
    _text(f"{field}.image_id", image.image_id, f"sha256:{_SHA256}", "an image id")
    _text(f"{field}.distro", image.distro, r"[a-z]+", "a distribution")
    _text(f"{field}.suite", image.suite, _SUITE, "a suite")
    _text(f"{field}.python", image.python, _VERSION2, "a Python version")
    _text(f"{field}.tcmalloc_package", image.tcmalloc_package, _PACKAGE, "a package name")
    _each(f"{field}.packaged_compilers", image.packaged_compilers, _COMPILER, "a compiler")
    _text(f"{field}.cuda", image.cuda, _RELEASE, "a version")
    _text(f"{field}.cudnn", image.cudnn, _RELEASE, "a version")
    _text(f"{field}.glibc", image.glibc, _VERSION2, "a glibc version")


def _environment(plan: BuildPlan) -> None:
    for name, value in plan.runtime_env.items():
        if name not in RUNTIME_ENV:
            raise RefusedField("runtime_env", name, "tfbuild never sets that variable")
        _text(f"runtime_env.{name}", value, RUNTIME_ENV[name], "a value tfbuild writes there")
    if plan.build_env not in ({}, dict(BUILD_ENV)):  # in any order (a JSON object's)
        shown = " ".join(f"{k}={v}" for k, v in plan.build_env.items())
        raise RefusedField("build_env", shown, "not the reproducible measures tfbuild exports")


def _snapshot(plan: BuildPlan) -> None:
    snapshot = plan.snapshot
    if snapshot is None:
        return
    _text("snapshot.time", snapshot.time, r"[0-9]{8}T[0-9]{6}Z", "a snapshot time")
    if plan.base_image.distro not in SNAPSHOT_URLS or snapshot != snapshot_for(
        plan.base_image, snapshot.time
    ):
        shown = next(iter(snapshot.sources), snapshot.url)
        raise RefusedField(
            "snapshot", shown, f"not the {plan.base_image.distro} snapshot archive tfbuild uses"
        )


def _sysroot(plan: BuildPlan) -> None:
    sysroot = plan.sysroot
    if sysroot is None:
        return
    if sysroot.builder is not None and sysroot.builder not in SYSROOT_BUILDERS:
        raise RefusedField("sysroot.builder", sysroot.builder, "not a sysroot builder tfbuild has")
    if sysroot.builder is None:
        _text("sysroot.name", sysroot.name, SYSROOT_DIST, "a SYSROOT_DIST name")
    else:
        _text("sysroot.name", sysroot.name, SYSROOT_NAME, "an absolute path without . or ..")
    _text("sysroot.glibc", sysroot.glibc, _VERSION2, "a glibc version")
    if sysroot.image is not None:
        _image("sysroot.image", sysroot.image)


def check_plan(plan: BuildPlan) -> None:
    """Every value of ``plan`` that reaches a rendered file is one tfbuild's planner writes: a
    :class:`RefusedField` names the first that is not."""
    _text("tensorflow", plan.tensorflow, _VERSION3, "a TensorFlow version X.Y.Z")
    _text("source.tarball", plan.source.tarball, _HTTPS_URL, "an https:// URL")
    _text("source.sha256", plan.source.sha256, _SHA256, "a sha256")
    _text("architecture", plan.architecture, r"[a-z0-9_]+", "an architecture")
    _text("python", plan.python, _VERSION2, "a Python version")
    _text("compiler", plan.compiler, _COMPILER, "a compiler (clang-N.N.N, gcc-N)")
    _text("compiler_path", plan.compiler_path, _COMPILER_PATH, "a compiler's path")
    _each("compiler_packages", plan.compiler_packages, _PACKAGE, "a package name")
    _text("llvm_apt_suite", plan.llvm_apt_suite, r"llvm-toolchain-[a-z]+-[0-9]{1,3}", "a suite")
    extra = rf"{_PACKAGE}(?:=[0-9][0-9.]*(?:\.\*)?)?"
    _each("extra_packages", plan.extra_packages, extra, "a package (name or name=X.Y.*)")
    _text("target", plan.target, r"[A-Za-z0-9_.-]+", "a target name")
    _image("base_image", plan.base_image)
    _text("bazel", plan.bazel, _VERSION3, "a bazel version X.Y.Z")
    check_configs(plan.bazel_configs)
    check_rc_lines(plan.rc_lines)
    check_options("build_options", plan.build_options, BUILD_OPTIONS)
    check_options("startup_options", plan.startup_options, STARTUP_OPTIONS)
    check_resources(plan.resources)
    if WHEEL_TARGETS.get(plan.wheel_flow) != plan.build_target:
        raise RefusedField("build_target", plan.build_target, "not the wheel target tfbuild builds")
    if plan.wheel_name not in (STANDIN_WHEEL_NAMES if plan.canary else WHEEL_NAMES):
        raise RefusedField("wheel_name", plan.wheel_name, "not a wheel tfbuild builds")
    for i, line in enumerate(plan.rc_lines):  # the wheel bazel names is the one the plan says
        named = _WHEEL_NAME_LINE.fullmatch(line)
        if named is not None and named.group(1) != plan.wheel_name:
            raise RefusedField(f"rc_lines[{i}]", line, f"the plan's wheel is {plan.wheel_name}")
    # cache_volume is not checked: no file renders it, and a rebuild never mounts the one a
    # receipt names (rebuild.with_cache_volume, plan.isolated).
    _environment(plan)
    if plan.cuda is not None:
        _text("cuda.cuda", plan.cuda.cuda, _RELEASE, "a CUDA version")
        _text("cuda.cudnn", plan.cuda.cudnn, _RELEASE, "a cuDNN version")
        _each("cuda.capabilities", plan.cuda.capabilities, _CAPABILITY, "a compute capability")
    _text("label", plan.label, _LABEL, "a local version label")
    _snapshot(plan)
    _text("floor_goal", plan.floor_goal, _VERSION2, "a glibc version")
    _sysroot(plan)
    _text("exec_image", plan.exec_image, _EXEC_IMAGE, "a repository")


def _lift_resources(plan: BuildPlan) -> BuildPlan:
    """A plan of before tfbuild.plan/4, whose option lists held bazel's resource options as well,
    as this version holds it: each such option's value moved into ``resources``, so that the
    command made from the plan (plan.bazel.bazel_command) names each once. A value off its grammar,
    or an option given twice, is a :class:`RefusedField`; any other option stays, for
    :func:`check_plan` to judge."""
    lifted: dict[str, int] = {}

    def kept(
        field: str, options: tuple[str, ...], table: dict[str, tuple[str, str]]
    ) -> tuple[str, ...]:
        keep = []
        for i, option in enumerate(options):
            name, _, value = option.partition("=")
            if name not in table:
                keep.append(option)
                continue
            resource, grammar = table[name]
            found = re.fullmatch(grammar, value)
            if found is None:
                raise RefusedField(
                    f"{field}[{i}]", option, f"not a value tfbuild writes for {name}"
                )
            if resource in lifted:
                raise RefusedField(f"{field}[{i}]", option, f"{name} a second time")
            lifted[resource] = int(found.group(1))
        return tuple(keep)

    build = kept("build_options", plan.build_options, BUILD_RESOURCES)
    startup = kept("startup_options", plan.startup_options, STARTUP_RESOURCES)
    return replace(
        plan,
        build_options=build,
        startup_options=startup,
        resources=replace(plan.resources, **lifted),
    )


# hand-written: a receipt's plan is untrusted; the planner's grammar checks run on it
def decode_plan(data: dict[str, Any]) -> BuildPlan:
    """The plan a receipt carries, back as a value (a ValueError if it is not one; a
    :class:`RefusedField` if it holds a value tfbuild's planner never writes). Kept by hand for the
    checks around the decoding: the readable schemas and the planner's grammar."""
    if not isinstance(data, dict) or data.get("schema") not in READABLE_SCHEMAS:
        shown = data.get("schema") if isinstance(data, dict) else None
        raise ValueError(f"plan schema {shown!r}, not {PLAN_SCHEMA}")
    check_single_lines(data)
    # An older schema reads as this one (it is written as this one again): its resource options
    # lifted into its resources, its "standin" (the word before --canary's) read as "canary".
    current = {**data, "schema": PLAN_SCHEMA}
    if data["schema"] != PLAN_SCHEMA and "standin" in current and "canary" not in current:
        current["canary"] = current.pop("standin")
    plan = serial.from_data(current, BuildPlan)
    if data["schema"] in RESOURCES_AMONG_OPTIONS:
        plan = _lift_resources(plan)
    check_package_versions(tuple(plan.package_versions.items()))
    check_plan(plan)
    return plan
