"""Rendering a BuildPlan into a build context: Dockerfile, bazel rc file, build.sh, plan.json.

Pure and deterministic: the same plan gives byte-identical files on any machine (no timestamps,
sorted JSON, StrictUndefined templates). The templates only loop and print; every decision was made
in the plan. Values that reach a shell script pass the ``sh`` filter (shell quoting) on top of the
validation recipes and options already went through.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Any

from tfbuild import __version__
from tfbuild.core import serial
from tfbuild.core.errors import InputError, UnsupportedError, UsageError
from tfbuild.core.files import TEMP_PREFIX, sha256_file, shown, write_files
from tfbuild.core.resources import data_dir
from tfbuild.plan import CACHE_ROOT, OUTPUT_BASE, OUTPUT_DIR, SOURCE_DIR, BuildPlan
from tfbuild.plan.bazel import bazel_command
from tfbuild.plan.model import check_package_versions
from tfbuild.recipes.recipe import Recipe
from tfbuild.recipes.tools import load_tools

#: apt.llvm.org's signing key ("Sylvestre Ledru - Debian LLVM packages"), as many public build
#: scripts pin it; a key that does not match stops the image build.
LLVM_APT_FINGERPRINT = "6084F3CF814B57C1CF12EFD515CF4D18AF4F7421"

#: Where the rendered context is mounted in the build container.
CONTEXT_DIR = "/tfbuild"

#: The files a build context holds, and the template each comes from (None: written directly).
FILES = {
    "Dockerfile": "Dockerfile.j2",
    "tf_configure.bazelrc": "tf_configure.bazelrc.j2",
    "build.sh": "build.sh.j2",
    "runtime.env": "runtime.env.j2",
    "plan.json": None,
}

#: Packages every toolchain image gets, besides the compiler.
BASE_PACKAGES = (
    "ca-certificates",
    "curl",
    "git",
    "patchelf",
    "python3",
    "python3-dev",
    "python3-pip",
    "python3-setuptools",
    "python3-venv",
    "python3-wheel",
    "unzip",
    "zip",
)


@functools.cache  # one environment per process: each template is parsed and compiled once
def template_environment() -> Any:
    """jinja2 over the package's templates (the build's context, the overlay's image)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["sh"] = shlex.quote
    env.filters["dq"] = dockerfile_string
    return env


def dockerfile_string(value: str) -> str:
    """``value`` as one double-quoted Dockerfile word (LABEL, ENV): its quotes, backslashes and
    ``$`` escaped, so that the Dockerfile neither ends the word nor substitutes a variable."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'"{escaped}"'


#: What a sysroot builder stage installs: TensorFlow's builder.devtoolset needs (ml_build's
#: builder.packages.txt, "Packages needed to build devtoolset", plus what fetches and unpacks the
#: release's source); a sysroot from another distribution's image is its libc6-dev and libstdc++.
SYSROOT_BUILDER_PACKAGES = {
    "devtoolset-9": (
        "bzip2",
        "ca-certificates",
        "cpio",
        "curl",
        "file",
        "flex",
        "g++",
        "linux-libc-dev",
        "make",
        "patch",
        "rpm2cpio",
        "unar",
        "wget",
        "xz-utils",
    ),
    "image": ("g++", "libc6-dev"),
}
#: Where TensorFlow's source keeps the builder.devtoolset directory, newest layout first
#: (ci/official/containers/ml_build from about 2.16, tf_sig_build_dockerfiles before).
DEVTOOLSET_DIRS = (
    "ci/official/containers/ml_build/builder.devtoolset",
    "tensorflow/tools/tf_sig_build_dockerfiles/builder.devtoolset",
)


#: The canary's (STAND-IN) bazel: Debian's own build of bazel 4.2.3, which builds offline.
STANDIN_BAZEL_PACKAGE = "bazel-bootstrap"


def toolchain_packages(plan: BuildPlan) -> list[str]:
    """The distribution packages the toolchain image installs, sorted. A devtoolset sysroot links
    the image's kernel headers (build_devtoolset.sh), so the image keeps linux-libc-dev."""
    devtoolset = plan.sysroot is not None and plan.sysroot.builder == "devtoolset-9"
    return sorted(
        {
            *BASE_PACKAGES,
            *plan.compiler_packages,
            *plan.extra_packages,
            plan.base_image.tcmalloc_package,
            *(("linux-libc-dev",) if devtoolset else ()),
            # The canary builds with Debian's bazel (4.2.3), not bazelisk: see tfbuild/canary.
            *((STANDIN_BAZEL_PACKAGE,) if plan.canary else ()),
        }
    )


#: A package as the plan may name it without a receipt's pin: ``name`` or ``name=VERSION`` with
#: apt's ``*`` (``libcudnn8=8.9.*``).
_APT_VERSION = re.compile(r"[0-9][A-Za-z0-9.+~:*-]*")


def package_name(spec: str) -> str:
    """The package a spec installs: ``libcudnn8`` of ``libcudnn8=8.9.*``. A receipt pins names, so
    a rebuild looks a package up by this, never by the whole spec."""
    return spec.partition("=")[0]


def _apt_spec(spec: str) -> None:
    """A ValueError unless ``spec`` is a package apt can be given (the Dockerfile quotes it too)."""
    name, sep, version = spec.partition("=")
    check_package_versions(((name, "0"),))
    if sep and not _APT_VERSION.fullmatch(version):
        raise ValueError(f"packages: {spec[:60]!r} is not a Debian package name and version")


def render_files(plan: BuildPlan) -> dict[str, str]:
    """The build context as file name -> text."""
    env = template_environment()
    packages = toolchain_packages(plan)
    arch = "arm64" if plan.architecture == "aarch64" else "amd64"
    bazelisk = load_tools()["bazelisk"]
    try:  # the plan checked them when made; checked again where they become shell words
        check_package_versions(tuple(plan.package_versions.items()))
        for spec in packages:
            _apt_spec(spec)
    except ValueError as exc:
        raise InputError(
            "the plan installs a package apt cannot be given",
            why=str(exc),
            fix="Use the receipt (or plan) tfbuild wrote, unedited.",
        ) from None
    pins = dict(plan.package_versions)
    if pins:  # a rebuild: each package by its name, at the version the receipt records
        packages = sorted({package_name(spec) for spec in packages})
    missing = [p for p in packages if pins and p not in pins]
    if missing:
        raise UnsupportedError(
            f"the receipt pins no version of {', '.join(missing)}",
            why="a rebuild installs every toolchain package at the version the build recorded",
            fix="Rebuild from the receipt of a build made by this tfbuild version.",
        )
    context = {
        "plan": plan,
        "bazel_command": bazel_command(plan),  # the plan's options with its resources'
        "packages": packages,
        "package_pins": pins,
        "tfbuild_version": __version__,
        "bazelisk_version": bazelisk.version,
        "bazelisk_arch": arch,
        "bazelisk_sha256": bazelisk.sha256[arch],
        "llvm_fingerprint": LLVM_APT_FINGERPRINT,
        "source_dir": SOURCE_DIR,
        "output_dir": OUTPUT_DIR,
        "context_dir": CONTEXT_DIR,
        "cache_root": CACHE_ROOT,
        "output_base": OUTPUT_BASE,
        "sysroot_packages": SYSROOT_BUILDER_PACKAGES.get(
            plan.sysroot.builder if plan.sysroot and plan.sysroot.builder else "", ()
        ),
        "devtoolset_dirs": DEVTOOLSET_DIRS,
    }
    files: dict[str, str] = {}
    for name, template in FILES.items():
        if template is None:
            files[name] = json.dumps(serial.to_data(plan), indent=2, sort_keys=True) + "\n"
        else:
            files[name] = env.get_template(template).render(**context)
    return files


_CONFIG_USE = re.compile(r"--config[= ]([A-Za-z0-9_.-]+)")
_CONFIG_DEF = re.compile(r"^(?:build|common|test|run):([A-Za-z0-9_.-]+)\s", re.MULTILINE)


def check(files: dict[str, str], recipe: Recipe | None) -> None:
    """Every --config the files use is defined by the rendered rc file or the release's .bazelrc
    (no recipe: a rebuild's plan, checked when built)."""
    if recipe is None:
        return
    defined = set(_CONFIG_DEF.findall(files["tf_configure.bazelrc"])) | set(recipe.configs)
    used = set(_CONFIG_USE.findall(files["build.sh"] + files["tf_configure.bazelrc"]))
    missing = sorted(used - defined)
    if missing:
        raise UnsupportedError(
            f"the build would use undefined bazel config(s) {', '.join(missing)}",
            why=f"neither the rendered rc file nor {recipe.where('configs')} defines them",
            fix="Add them to the recipe's configs list if that release's .bazelrc has them.",
        )


def output_dir(text: str, *, option: str) -> Path:
    """The directory an option names for tfbuild to write into (``render -o``, ``wheel --dist``),
    checked before any work: made when missing, so its nearest existing ancestor must be a directory
    that takes a new file.

    An empty value is a usage error (2): it would quietly mean the current directory. A path that
    is a file, lies inside one, or cannot be written is an input error (3), the exit code of a file
    the user named that is not what it should be. The write test creates and removes an unnamed temp
    file, so it holds for root too, where permission bits do not stop writes (/proc, a read-only
    mount)."""
    import tempfile

    if not text.strip():
        raise UsageError(
            f"{option} is empty",
            why="an empty path would quietly mean the current directory",
            fix=f"Name a directory ({option} . for the current one).",
        )
    path = Path(text)
    what = f"cannot write into {option} {text}"
    fix = f"Name a directory tfbuild may write into with {option} DIR (it is made when missing)."
    existing = path
    try:
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
        if not existing.is_dir():
            where = "it is" if existing == path else f"{existing} is"
            raise InputError(what, why=f"{where} a file, not a directory", fix=fix)
    except OSError as exc:
        raise InputError(what, why=exc.strerror or str(exc), fix=fix) from None
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        why = f"no file can be created in {existing} ({exc.strerror or exc})"
        raise InputError(what, why=why, fix=fix) from None
    return path


#: What ``render -o`` writes last into its directory: ``sha256sum`` lines of the files it put there,
#: so that a later ``render -o`` knows which files are tfbuild's and whether anyone changed them.
MANIFEST = ".tfbuild-context"


def write_context(files: dict[str, str], out: Path) -> None:
    """Write the files into ``out`` as one set (:func:`tfbuild.core.files.write_files`: every place
    checked, all written under temp names, then renamed), build.sh executable. For tfbuild's own
    work directories; ``render -o`` goes through :func:`publish_context`."""
    fix = "Name a directory tfbuild may write into with -o DIR (it is made when missing)."
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create -o {out}", why=exc.strerror or str(exc), fix=fix) from None
    try:
        write_files(out, {n: (t, 0o755 if n.endswith(".sh") else 0o644) for n, t in files.items()})
    except OSError as exc:
        where = shown(exc.filename) if isinstance(exc.filename, str) else str(out)
        if isinstance(exc, IsADirectoryError):
            fix = f"Remove or rename {where}, or name another directory with -o DIR."
        raise InputError(
            f"cannot write {where}", why=f"{exc.strerror or exc}; nothing was written", fix=fix
        ) from None


#: A name a manifest may list: a plain file directly in the directory (never a path, never hidden).
_PLAIN = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*")


def _recorded(out: Path) -> dict[str, str] | None:
    """The manifest's name -> sha256, or None when there is no readable, well-formed one."""
    manifest = out / MANIFEST
    if manifest.is_symlink() or not manifest.is_file():
        return None
    try:
        text = manifest.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    recorded = {}
    for line in text.splitlines():
        digest, sep, name = line.partition("  ")
        if not (sep and re.fullmatch(r"[0-9a-f]{64}", digest) and _PLAIN.fullmatch(name)):
            return None
        recorded[name] = digest
    return recorded


def check_owned(out: Path, *, force: bool = False) -> None:
    """``out`` may be written: missing, empty, or holding only files a previous ``render -o`` wrote
    there, unchanged since (its :data:`MANIFEST`). Anything else is refused (exit 3) unless
    ``force``: tfbuild never overwrites a file it did not write."""
    if force or not out.is_dir():
        return
    what = f"refusing to write into -o {shown(str(out))}"
    fix = (
        "Render into an empty or new directory, or pass --force to overwrite tfbuild's files "
        "there anyway."
    )
    try:
        entries = sorted(
            p
            for p in out.iterdir()
            if p.name != MANIFEST and not p.name.startswith(TEMP_PREFIX)  # a killed run's temp
        )
        if not entries:
            return
        recorded = _recorded(out) or {}
        for path in entries:
            name = shown(path.name)
            if path.is_symlink() or not path.is_file():
                kind = (
                    "link"
                    if path.is_symlink()
                    else "directory"
                    if path.is_dir()
                    else "special file"
                )
                why = f"it holds the {kind} {name}, and tfbuild writes only plain files there"
                raise InputError(what, why=why, fix=fix)
            if path.name not in recorded:
                why = f"it holds {name}, which tfbuild did not write there (not in its {MANIFEST})"
                raise InputError(what, why=why, fix=fix)
            if sha256_file(path) != recorded[path.name]:
                why = f"{name} was changed since tfbuild wrote it (its sha256 is not the one in {MANIFEST})"
                raise InputError(what, why=why, fix=fix)
    except OSError as exc:
        raise InputError(what, why=exc.strerror or str(exc), fix=fix) from None


def publish_context(files: dict[str, str], out: Path, *, force: bool = False) -> list[Path]:
    """``render -o``: :func:`check_owned`, then the files and, last, their :data:`MANIFEST`, as one
    set: a failure (a directory where a file goes, a full disk) leaves the previous context whole.
    A file a previous render wrote that this one does not (an older tfbuild's) is removed."""
    check_owned(out, force=force)
    previous = (_recorded(out) or {}) if out.is_dir() else {}
    manifest = "".join(
        f"{hashlib.sha256(files[n].encode()).hexdigest()}  {n}\n" for n in sorted(files)
    )
    write_context({**files, MANIFEST: manifest}, out)  # the manifest is no script: 0644
    if not force:
        for stale in sorted(set(previous) - set(files)):
            (out / stale).unlink(missing_ok=True)
    return [out / name for name in files]
