"""Recipes: one YAML file per TensorFlow release, validated against a schema and the version gates.

A recipe says what one release needs: its source, Python range, compiler, bazel, wheel flow, the
bazel configs its own ``.bazelrc`` defines, and its CUDA row. Loading is strict: an unknown key, a
wrong type, a value that could smuggle shell or Dockerfile syntax, or a combination the version
gates rule out is an :class:`InputError` naming the file, the line and what is allowed.

Users extend or override the shipped recipes with ``--recipes-dir DIR`` (or ``TFBUILD_RECIPES_DIR``):
a recipe there for the same TensorFlow version replaces the shipped one.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfbuild.core import serial
from tfbuild.core.errors import InputError, UsageError
from tfbuild.core.resources import data_dir
from tfbuild.recipes import tfversions
from tfbuild.recipes.strict_yaml import DataFile, Field, compose, read_text, validate

RECIPES_ENV = "TFBUILD_RECIPES_DIR"

#: How a release's wheel reaches its floor: TensorFlow's hermetic toolchain (rules_ml_toolchain, its
#: own clang and sysroot, 2.21+), or the image's clang against an old-glibc sysroot (TF_SYSROOT).
ROUTES = ("hermetic", "sysroot")
#: What makes a recipe's sysroot: TF's own builder.devtoolset script, from the release's source.
SYSROOT_BUILDERS = ("devtoolset-9",)
#: The parts of a recipe its ``verified:`` record speaks of.
VERIFIED_PARTS = ("source", "python", "bazel", "compiler", "wheel", "configs", "cuda", "toolchain")

SCHEMA: dict[str, Field] = {
    "tensorflow": Field("version3"),
    "source": Field(
        "map",
        children={
            "git": Field("url"),
            "tag": Field("token"),
            "commit": Field("hex40", nullable=True),
            "tarball": Field("url"),
            "sha256": Field("hex64", nullable=True),
        },
    ),
    "python": Field("list:version2"),
    "bazel": Field("version3"),
    "compiler": Field("compiler"),
    "base_image": Field("token"),
    "wheel": Field(
        "map",
        children={
            "flow": Field("token", choices=("build_pip_package", "wheel")),
            "hermetic_python": Field("bool"),
            "pywrap_rules": Field("bool"),
        },
    ),
    "configs": Field("list:token"),
    "copts": Field("list:flag", required=False),
    "defines": Field("list:define", required=False),
    "cuda": Field(
        "map",
        required=False,
        nullable=True,
        children={
            "hermetic": Field("bool"),
            "cuda": Field("version"),
            "cudnn": Field("version"),
            "cuda_versions": Field("list:version", required=False),
            "cudnn_versions": Field("list:version", required=False),
            "capabilities": Field("list:capability"),
            "base_image": Field("token", required=False),
        },
    ),
    "snapshot": Field("snapshot", required=False, nullable=True),
    "floor": Field("version2", required=False, nullable=True),
    "toolchain": Field(
        "map",
        required=False,
        nullable=True,
        children={
            "route": Field("token", choices=ROUTES),
            "sysroot": Field("sysroot"),
            "llvm": Field("token", required=False),
            "rules_ml_toolchain": Field("hex40", required=False),
            "builder": Field("token", required=False, choices=SYSROOT_BUILDERS),
            "builder_image": Field("token", required=False),
            "why": Field("text"),
        },
    ),
    "notes": Field("text", required=False),
    # How far the recipe is verified against the release's own files: a date and, per part of the
    # recipe, a statement whose first word says how (VERIFIED_LEVELS).
    "verified": Field(
        "map",
        required=False,
        nullable=True,  # an empty record: none
        children={
            "date": Field("date"),
            **{part: Field("verified", required=False) for part in VERIFIED_PARTS},
        },
    ),
}


# --- the recipe value -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CudaRow:
    hermetic: bool
    cuda: str  # default CUDA version (a full x.y.z HERMETIC key from 2.18)
    cudnn: str
    cuda_versions: tuple[str, ...]  # every version this release can use (default first if empty)
    cudnn_versions: tuple[str, ...]
    capabilities: tuple[str, ...]  # the release's default compute capabilities
    base_image: str | None  # pre-hermetic builds need CUDA in the toolchain image


@dataclass(frozen=True, kw_only=True)
class ToolchainRoute:
    """How the release's wheels reach the recipe's floor, and why (docs/toolchain-facts.md).

    ``hermetic``: TensorFlow's rules_ml_toolchain compiles with its own downloaded LLVM (``llvm``)
    against its own sysroot (``sysroot``, a SYSROOT_DIST name); the image's compiler is unused.
    ``sysroot``: the image's clang compiles through TF's ``@local_config_cuda`` crosstool with
    ``TF_SYSROOT``: the sysroot directory ``sysroot`` of the toolchain image, which ``builder``
    makes in a stage of the toolchain image on ``builder_image``.
    """

    route: str
    sysroot: str
    llvm: str | None = None
    #: The hermetic route's rules_ml_toolchain commit: the pin of the release's repository rule
    #: (``tf_http_archive(name = "rules_ml_toolchain", ...)``), which the preflight compares.
    rules_ml_toolchain: str | None = None
    builder: str | None = None
    builder_image: str | None = None
    why: str


#: How a part of a recipe is known, strongest first: ``read`` in the release's own files (its tarball
#: or tag); ``cited`` from another source about this release (TensorFlow's docs, a third party's pin,
#: a build log); ``not verified`` (inferred, or read in another commit's or release's files).
VERIFIED_LEVELS = ("read", "cited", "not verified")


@dataclass(frozen=True, kw_only=True)
class VerifiedPart:
    """How one part of a recipe was checked: its ``level`` (of :data:`VERIFIED_LEVELS`), and how."""

    part: str
    level: str
    how: str

    @staticmethod
    def read(part: str, statement: str) -> VerifiedPart:
        """The part from the recipe file's ``level: how`` statement."""
        level = next(level for level in VERIFIED_LEVELS if statement.startswith(f"{level}: "))
        return VerifiedPart(part=part, level=level, how=statement.split(": ", 1)[1])


@dataclass(frozen=True, kw_only=True)
class Verified:
    """A recipe's ``verified:`` record: when, and per part of the recipe how, it was checked."""

    date: str  # YYYY-MM-DD
    #: ``2026-11-22: read 0, cited 5, not verified 3`` (parts of the recipe).
    summary: str = field(init=False)
    parts: tuple[VerifiedPart, ...]  # in the file's order

    def __post_init__(self) -> None:
        counts = self.counts()
        summary = f"{self.date}: " + ", ".join(f"{lv} {counts[lv]}" for lv in VERIFIED_LEVELS)
        object.__setattr__(self, "summary", summary)

    def counts(self) -> dict[str, int]:
        levels = [part.level for part in self.parts]
        return {level: levels.count(level) for level in VERIFIED_LEVELS}

    @property
    def unread(self) -> tuple[str, ...]:
        """The parts the record names that were not read in the release's own files."""
        return tuple(part.part for part in self.parts if part.level != "read")

    @property
    def checked(self) -> str:
        """Whether the recipe was checked against its release's own files, in a word and how many
        of the parts the record names were read there: ``no (0 of 8)``, ``some (3 of 8)``,
        ``yes (8 of 8)``."""
        read, named = len(self.parts) - len(self.unread), len(self.parts)
        word = "no" if read == 0 else "yes" if read == named else "some"
        return f"{word} ({read} of {named})"


#: The fields of a recipe's source and wheel, which its file and its JSON group.
_SOURCE = ("git", "tag", "commit", "tarball", "sha256")
_WHEEL = ("wheel_flow", "hermetic_python", "pywrap_rules")


@dataclass(frozen=True, kw_only=True)
class Recipe:
    tensorflow: str
    path: str
    git: str
    tag: str
    commit: str | None
    tarball: str
    sha256: str | None
    python: tuple[str, ...]
    bazel: str
    compiler: str
    base_image: str
    wheel_flow: str
    hermetic_python: bool
    pywrap_rules: bool
    #: The distribution snapshot (UTC time) the toolchain's packages are installed from.
    snapshot: str | None = None
    #: The oldest glibc (X.Y) its wheels should load on: the stock wheel's, no worse.
    floor: str | None = None
    #: How the wheel reaches that floor (None: the image's compiler against the image's glibc).
    toolchain: ToolchainRoute | None = None
    configs: tuple[str, ...]
    copts: tuple[str, ...]
    defines: tuple[str, ...]
    cuda: CudaRow | None
    notes: str
    #: How far the recipe was checked against the release's own files (None: no record).
    verified: Verified | None = None
    lines: dict[str, int]  # "python", "cuda", ... -> line in the file, for messages
    #: The sha256 of the recipe file's text: its identity in a receipt (None for a derived recipe).
    file_sha256: str | None = None

    @property
    def version(self) -> tfversions.Version:
        return tfversions.parse_version(self.tensorflow)

    @property
    def short(self) -> str:
        return ".".join(self.tensorflow.split(".")[:2])

    def where(self, key: str) -> str:
        return f"{self.path}:{self.lines.get(key, 1)}"

    def to_json(self) -> dict[str, Any]:
        """Its fields in order, the source's and the wheel's grouped as in the recipe file (the
        wheel's flow as ``flow``), without ``lines`` and ``file_sha256``; empty notes as null."""
        data: dict[str, Any] = {}
        for name, value in serial.to_data(self).items():
            group = "source" if name in _SOURCE else "wheel" if name in _WHEEL else None
            if group is not None:
                data.setdefault(group, {})[name.removeprefix("wheel_")] = value
            elif name not in ("lines", "file_sha256"):
                data[name] = value
        return data | {"notes": self.notes or None}


def _gate(recipe: Recipe) -> None:
    """Refuse what the version gates rule out for this release: the first rule broken, in order."""

    def need(key: str, ok: bool, why: str) -> None:
        if not ok:
            raise InputError(
                f"invalid recipe {recipe.where(key)}",
                why=why,
                fix="Fix the recipe (see recipes/README.md for the schema).",
            )

    v, short = recipe.version, recipe.short
    need(
        "wheel",
        recipe.wheel_flow == tfversions.wheel_flow(v),
        f"TensorFlow {short} builds its wheel with '{tfversions.wheel_flow(v)}', "
        f"not '{recipe.wheel_flow}' (the :wheel target arrived in 2.17)",
    )
    need(
        "wheel",
        recipe.hermetic_python == tfversions.hermetic_python(v),
        f"hermetic_python is {str(tfversions.hermetic_python(v)).lower()} for TensorFlow "
        f"{short} (rules_python picks the interpreter from 2.14)",
    )
    need(
        "wheel",
        recipe.pywrap_rules == tfversions.pywrap_rules(v),
        f"pywrap_rules is {str(tfversions.pywrap_rules(v)).lower()} for TensorFlow "
        f"{short} (USE_PYWRAP_RULES from 2.20)",
    )
    tested = tfversions.TESTED_PYTHON.get(tfversions.minor(v))
    if tested is not None:
        low, high = (tfversions.parse_version(p) for p in tested)
        outside = [p for p in recipe.python if not low <= tfversions.parse_version(p) <= high]
        need(
            "python",
            not outside,
            f"Python {', '.join(outside)} is outside what TensorFlow {short} supports "
            f"({tested[0]} to {tested[1]})",
        )
    family, _, version = recipe.compiler.partition("-")
    conflict = tfversions.compiler_conflict(v, family, int(version.split(".")[0]))
    need("compiler", conflict is None, conflict or "")
    if recipe.cuda is not None:
        need(
            "cuda",
            recipe.cuda.hermetic == tfversions.hermetic_cuda(v),
            f"cuda.hermetic is {str(tfversions.hermetic_cuda(v)).lower()} for TensorFlow "
            f"{short} (hermetic CUDA from 2.18)",
        )
        if recipe.cuda.hermetic:
            bad = [x for x in (recipe.cuda.cuda, *recipe.cuda.cuda_versions) if x.count(".") != 2]
            need(
                "cuda",
                not bad,
                f"hermetic CUDA versions must be full x.y.z keys, not {', '.join(bad)} "
                "('12.5' does not work, '12.5.1' does)",
            )
        else:
            need(
                "cuda",
                recipe.cuda.base_image is not None,
                "a pre-hermetic CUDA row needs cuda.base_image (the toolchain image with "
                "CUDA and cuDNN installed)",
            )
    route = recipe.toolchain
    if route is not None and route.route == "hermetic":
        need(
            "toolchain",
            tfversions.hermetic_cc(v),
            f"TensorFlow {short} has no hermetic C++ toolchain to select (its "
            "rules_ml_toolchain compiles by default from 2.21)",
        )
        need("toolchain", route.llvm is not None, "a hermetic route names its llvm (e.g. 18)")
        need(
            "toolchain",
            route.rules_ml_toolchain is not None,
            "a hermetic route names the rules_ml_toolchain commit the release pins "
            "(rules_ml_toolchain: <40 hex digits>)",
        )
        need(
            "toolchain",
            not route.sysroot.startswith("/"),
            "a hermetic route's sysroot is a SYSROOT_DIST name, e.g. linux_glibc_2_27",
        )
        need(
            "toolchain",
            version.split(".")[0] == route.llvm,
            f"the hermetic LLVM {route.llvm} is what compiles, so compiler must be "
            f"clang-{route.llvm}.x (the flags are spelled for it), not {recipe.compiler}",
        )
    elif route is not None:
        need(
            "toolchain",
            family == "clang",
            f"a sysroot route compiles with clang through TF's crosstool, not {recipe.compiler}",
        )
        need(
            "toolchain",
            route.sysroot.startswith("/") and None not in (route.builder, route.builder_image),
            "a sysroot route names its sysroot's absolute path, its builder and builder_image",
        )
        need(
            "toolchain",
            route.builder != "devtoolset-9" or recipe.sha256 is not None,
            "the devtoolset-9 builder takes TF's script from the release's source tarball, "
            "which needs source.sha256 to be verified",
        )


def parse_recipe(text: str, *, path: str) -> Recipe:
    doc = DataFile(path=path)
    node = compose(text, doc)
    lines: dict[str, int] = {}
    data = validate(doc, node, SCHEMA, "", lines)
    source, wheel, cuda = data["source"], data["wheel"], data.get("cuda")
    route = data.get("toolchain")
    verified = data.get("verified")
    recipe = Recipe(
        tensorflow=data["tensorflow"],
        path=path,
        git=source["git"],
        tag=source["tag"],
        commit=source.get("commit"),
        tarball=source["tarball"],
        sha256=source.get("sha256"),
        python=tuple(data["python"]),
        bazel=data["bazel"],
        compiler=data["compiler"],
        base_image=data["base_image"],
        wheel_flow=wheel["flow"],
        hermetic_python=wheel["hermetic_python"],
        pywrap_rules=wheel["pywrap_rules"],
        configs=tuple(sorted(set(data["configs"]))),
        copts=tuple(data.get("copts") or ()),
        defines=tuple(data.get("defines") or ()),
        cuda=None
        if cuda is None
        else CudaRow(
            hermetic=cuda["hermetic"],
            cuda=cuda["cuda"],
            cudnn=cuda["cudnn"],
            cuda_versions=tuple(cuda.get("cuda_versions") or (cuda["cuda"],)),
            cudnn_versions=tuple(cuda.get("cudnn_versions") or (cuda["cudnn"],)),
            capabilities=tuple(cuda["capabilities"]),
            base_image=cuda.get("base_image"),
        ),
        notes=data.get("notes") or "",
        lines=lines,
        snapshot=data.get("snapshot"),
        floor=data.get("floor"),
        toolchain=None if route is None else ToolchainRoute(**route),
        verified=None
        if verified is None
        else Verified(
            date=verified["date"],
            parts=tuple(VerifiedPart.read(k, v) for k, v in verified.items() if k != "date"),
        ),
        file_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )
    _gate(recipe)
    return recipe


def read_recipe(path: Path, *, shown_as: str | None = None) -> Recipe:
    text = read_text(path, "recipe")
    return parse_recipe(text, path=shown_as or str(path))


# --- the set of recipes -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RecipeSet:
    recipes: tuple[Recipe, ...]  # sorted by TensorFlow version
    dirs: tuple[str, ...]  # where they were read, shipped first

    def versions(self) -> tuple[str, ...]:
        return tuple(r.tensorflow for r in self.recipes)

    def get(self, version: str) -> Recipe:
        """The recipe for ``2.21`` or ``2.21.0``; the newest patch release when only X.Y is given."""
        text = version.strip().removeprefix("v")
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", text):
            raise UsageError(
                f"--tf {version!r} is not a TensorFlow version",
                fix="Write it as X.Y or X.Y.Z, e.g. --tf 2.21.",
            )
        matches = [
            r
            for r in self.recipes
            if r.tensorflow == text or (text.count(".") == 1 and r.short == text)
        ]
        if not matches:
            raise UsageError(
                f"no recipe for TensorFlow {text}",
                why=f"recipes exist for {', '.join(self.versions()) or 'nothing'}",
                fix=f"Pick one of those, or add a recipe with --recipes-dir DIR (or ${RECIPES_ENV}).",
            )
        return max(matches, key=lambda r: r.version)


def recipe_dirs(extra_dirs: Sequence[Path]) -> list[Path]:
    """tfbuild's own recipes/, then ``$TFBUILD_RECIPES_DIR`` (os.pathsep-separated), then
    ``--recipes-dir``: later ones win.

    Each user directory must be one this process can list (an InputError otherwise, never a silent
    skip). They are checked first: a --recipes-dir that cannot be read is said as such, even where
    tfbuild's own recipes/ cannot be read either (then that is said next)."""
    env = os.environ.get(RECIPES_ENV, "")
    users = [*(Path(p) for p in env.split(os.pathsep) if p), *extra_dirs]
    for directory in users:
        _entries(directory)
    return [data_dir("recipes"), *users]


def _entries(directory: Path) -> list[str]:
    """The names in a recipes directory, or an InputError saying why it cannot be listed."""
    fix = f"Pass a readable directory to --recipes-dir (or ${RECIPES_ENV})."
    try:
        with os.scandir(directory) as entries:
            return sorted(entry.name for entry in entries)
    except OSError as exc:
        missing = isinstance(exc, NotADirectoryError | FileNotFoundError)
        why = "it is not a directory" if missing else exc.strerror or str(exc)
        raise InputError(f"cannot read recipes from {directory}", why=why, fix=fix) from None


def load_recipes(extra_dirs: Sequence[Path] = ()) -> RecipeSet:
    """The shipped recipes, extended or overridden by ``extra_dirs`` (and ``$TFBUILD_RECIPES_DIR``)."""
    dirs = recipe_dirs(extra_dirs)
    by_version: dict[str, Recipe] = {}
    for index, directory in enumerate(dirs):
        seen: dict[str, str] = {}
        # Recipes are tf-X.Y.yaml; other YAML beside them (base-images.yaml) is not a recipe. Every
        # entry so named is read: one that is not a readable file (a dangling link, a directory) is
        # an error, never silently dropped (an override that does not apply would go unnoticed).
        names = [n for n in _entries(directory) if fnmatch.fnmatchcase(n, "tf-*.yaml")]
        for path in (directory / n for n in names):
            # Shipped recipes are named as in the repository, so plans are the same on any machine.
            recipe = read_recipe(path, shown_as=f"recipes/{path.name}" if index == 0 else None)
            if recipe.tensorflow in seen:
                raise InputError(
                    f"two recipes for TensorFlow {recipe.tensorflow} in {directory}",
                    why=f"{seen[recipe.tensorflow]} and {path}",
                    fix="Keep one of them.",
                )
            seen[recipe.tensorflow] = str(path)
            by_version[recipe.tensorflow] = recipe  # later directories override
    recipes = tuple(sorted(by_version.values(), key=lambda r: r.version))
    return RecipeSet(recipes=recipes, dirs=tuple(str(d) for d in dirs))
