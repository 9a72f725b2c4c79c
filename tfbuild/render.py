"""Rendering a BuildPlan into a build context: Dockerfile, bazel rc file, build.sh, plan.json.

Pure and deterministic: the same plan gives byte-identical files on any machine (no timestamps,
sorted JSON, StrictUndefined templates). The templates only loop and print; every decision was made
in the plan. Values that reach a shell script pass the ``sh`` filter (shell quoting) on top of the
validation recipes and options already went through.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from tfbuild import __version__
from tfbuild.errors import InputError, UnsupportedError, UsageError
from tfbuild.files import write_text
from tfbuild.plan import CACHE_ROOT, OUTPUT_DIR, SOURCE_DIR, BuildPlan
from tfbuild.recipes import Recipe, load_tools
from tfbuild.resources import data_dir

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


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=False,
    )
    env.filters["sh"] = shlex.quote
    return env


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
        }
    )


def render_files(plan: BuildPlan) -> dict[str, str]:
    """The build context as file name -> text."""
    env = _environment()
    packages = toolchain_packages(plan)
    arch = "arm64" if plan.architecture == "aarch64" else "amd64"
    bazelisk = load_tools()["bazelisk"]
    pins = dict(plan.package_versions)
    missing = [p for p in packages if pins and p not in pins]
    if missing:
        raise UnsupportedError(
            f"the receipt pins no version of {', '.join(missing)}",
            why="a rebuild installs every toolchain package at the version the build recorded",
            fix="Rebuild from the receipt of a build made by this tfbuild version.",
        )
    context = {
        "plan": plan,
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
        "sysroot_packages": SYSROOT_BUILDER_PACKAGES.get(
            plan.sysroot.builder if plan.sysroot and plan.sysroot.builder else "", ()
        ),
        "devtoolset_dirs": DEVTOOLSET_DIRS,
    }
    files: dict[str, str] = {}
    for name, template in FILES.items():
        if template is None:
            files[name] = json.dumps(plan.to_json(), indent=2, sort_keys=True) + "\n"
        else:
            files[name] = env.get_template(template).render(**context)
    return files


_CONFIG_USE = re.compile(r"--config[= ]([A-Za-z0-9_.-]+)")
_CONFIG_DEF = re.compile(r"^(?:build|common|test|run):([A-Za-z0-9_.-]+)\s", re.MULTILINE)


def undefined_configs(files: dict[str, str], recipe: Recipe) -> list[str]:
    """``--config=X`` uses that neither the rendered rc file nor the release's .bazelrc define."""
    defined = set(_CONFIG_DEF.findall(files["tf_configure.bazelrc"])) | set(recipe.configs)
    used = set(_CONFIG_USE.findall(files["build.sh"] + files["tf_configure.bazelrc"]))
    return sorted(used - defined)


def check(files: dict[str, str], recipe: Recipe | None) -> None:
    """Every --config the files use is defined (no recipe: a rebuild's plan, checked when built)."""
    if recipe is None:
        return
    missing = undefined_configs(files, recipe)
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


def write_context(files: dict[str, str], out: Path) -> list[Path]:
    """Write the files into ``out``; each lands whole (temp name, then rename), build.sh executable."""
    fix = "Name a directory tfbuild may write into with -o DIR (it is made when missing)."
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create -o {out}", why=exc.strerror or str(exc), fix=fix) from None
    written = []
    for name, text in files.items():
        target = out / name
        try:
            write_text(target, text, mode=0o755 if name.endswith(".sh") else 0o644)
        except OSError as exc:
            raise InputError(
                f"cannot write {target}", why=exc.strerror or str(exc), fix=fix
            ) from None
        written.append(target)
    return written
