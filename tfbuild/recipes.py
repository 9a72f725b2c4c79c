"""Recipes: one YAML file per TensorFlow release, validated against a schema and the version gates.

A recipe says what one release needs: its source, Python range, compiler, bazel, wheel flow, the
bazel configs its own ``.bazelrc`` defines, and its CUDA row. Loading is strict: an unknown key, a
wrong type, a value that could smuggle shell or Dockerfile syntax, or a combination the version
gates rule out is an :class:`InputError` naming the file, the line and what is allowed.

Users extend or override the shipped recipes with ``--recipes-dir DIR`` (or ``TFBUILD_RECIPES_DIR``):
a recipe there for the same TensorFlow version replaces the shipped one.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tfbuild import tfversions
from tfbuild.errors import InputError, UsageError
from tfbuild.resources import data_dir

RECIPES_ENV = "TFBUILD_RECIPES_DIR"

# --- value checks: each returns None when fine, or a description of what is allowed ----------------

_SAFE_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_HTTPS_URL = re.compile(r"^https://[A-Za-z0-9.-]+(:\d+)?(/[A-Za-z0-9._~%/+=-]*)?$")
_FLAG = re.compile(r"^-[A-Za-z0-9][A-Za-z0-9_=.,+:-]*$")
_DEFINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.-]+$")
_CAPABILITY = re.compile(r"^(sm|compute)_\d{2,3}[a-z]?$")


def _pattern(regex: re.Pattern[str], allowed: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, str) and regex.match(value):
            return None
        return allowed

    return check


_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "version3": _pattern(re.compile(r"^\d+\.\d+\.\d+$"), "a version X.Y.Z, e.g. 2.21.0"),
    "version2": _pattern(re.compile(r"^\d+\.\d+$"), "a version X.Y, e.g. 3.11"),
    "version": _pattern(re.compile(r"^\d+(\.\d+){1,3}$"), "a dotted version, e.g. 12.5.1"),
    "token": _pattern(_SAFE_TOKEN, "letters, digits and . _ + - only"),
    "url": _pattern(_HTTPS_URL, "an https:// URL without spaces, quotes or shell characters"),
    "hex40": _pattern(re.compile(r"^[0-9a-f]{40}$"), "a full 40-digit git commit hash"),
    "hex64": _pattern(re.compile(r"^[0-9a-f]{64}$"), "a 64-digit sha256 in lower-case hex"),
    "snapshot": _pattern(
        re.compile(r"^[0-9]{8}T[0-9]{6}Z$"), "a UTC snapshot time like 20261115T000000Z"
    ),
    "compiler": _pattern(
        re.compile(r"^(gcc|clang)-\d+(\.\d+){0,2}$"), "gcc-N[.N[.N]] or clang-N[.N[.N]]"
    ),
    "flag": _pattern(_FLAG, "a compiler flag like -Wno-sign-compare (no spaces or quotes)"),
    "define": _pattern(_DEFINE, "a bazel define NAME=value"),
    "capability": _pattern(_CAPABILITY, "sm_XY or compute_XY, e.g. sm_89"),
    "sysroot": _pattern(
        re.compile(r"^(/[A-Za-z0-9._-]+)+$|^[A-Za-z0-9][A-Za-z0-9._-]*$"),
        "a SYSROOT_DIST name (linux_glibc_2_27) or an absolute path (/dt9)",
    ),
    "text": lambda v: None if isinstance(v, str) else "text",
    "bool": lambda v: None if isinstance(v, bool) else "true or false",
    "date": _pattern(re.compile(r"^\d{4}-\d{2}-\d{2}$"), "a date YYYY-MM-DD"),
    "verified": _pattern(
        re.compile(r"^(read|cited|not verified): \S"),
        "a statement starting 'read: ', 'cited: ' or 'not verified: ' (see recipes/README.md)",
    ),
}


@dataclass(frozen=True)
class Field:
    kind: str  # a key of _CHECKS, "list:<kind>", or "map"
    required: bool = True
    nullable: bool = False
    children: dict[str, Field] | None = None
    choices: tuple[str, ...] = ()


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
    why: str
    llvm: str | None = None
    builder: str | None = None
    builder_image: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "sysroot": self.sysroot,
            "llvm": self.llvm,
            "builder": self.builder,
            "builder_image": self.builder_image,
            "why": self.why,
        }


#: How a part of a recipe is known, strongest first: ``read`` in the release's own files (its tarball
#: or tag); ``cited`` from another source about this release (TensorFlow's docs, a third party's pin,
#: a build log); ``not verified`` (inferred, or read in another commit's or release's files).
VERIFIED_LEVELS = ("read", "cited", "not verified")


@dataclass(frozen=True, kw_only=True)
class Verified:
    """A recipe's ``verified:`` record: when, and per part of the recipe how, it was checked."""

    date: str  # YYYY-MM-DD
    parts: tuple[tuple[str, str], ...]  # (part, statement), in the file's order

    def level(self, statement: str) -> str:
        return next(level for level in VERIFIED_LEVELS if statement.startswith(f"{level}: "))

    def counts(self) -> dict[str, int]:
        levels = [self.level(statement) for _, statement in self.parts]
        return {level: levels.count(level) for level in VERIFIED_LEVELS}

    def summary(self) -> str:
        """``2026-11-22: read 0, cited 5, not verified 3`` (parts of the recipe)."""
        counts = self.counts()
        return f"{self.date}: " + ", ".join(f"{level} {counts[level]}" for level in VERIFIED_LEVELS)

    def to_json(self) -> dict[str, Any]:
        return {
            "date": self.date,
            "summary": self.summary(),
            "parts": [
                {
                    "part": part,
                    "level": self.level(statement),
                    "how": statement.split(": ", 1)[1],
                }
                for part, statement in self.parts
            ],
        }


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
    configs: tuple[str, ...]
    copts: tuple[str, ...]
    defines: tuple[str, ...]
    cuda: CudaRow | None
    notes: str
    lines: dict[str, int]  # "python", "cuda", ... -> line in the file, for messages
    #: The distribution snapshot (UTC time) the toolchain's packages are installed from.
    snapshot: str | None = None
    #: The sha256 of the recipe file's text: its identity in a receipt (None for a derived recipe).
    file_sha256: str | None = None
    #: The oldest glibc (X.Y) its wheels should load on: the stock wheel's, no worse.
    floor: str | None = None
    #: How the wheel reaches that floor (None: the image's compiler against the image's glibc).
    toolchain: ToolchainRoute | None = None
    #: How far the recipe was checked against the release's own files (None: no record).
    verified: Verified | None = None

    @property
    def version(self) -> tfversions.Version:
        return tfversions.parse_version(self.tensorflow)

    @property
    def short(self) -> str:
        return ".".join(self.tensorflow.split(".")[:2])

    def where(self, key: str) -> str:
        return f"{self.path}:{self.lines.get(key, 1)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "tensorflow": self.tensorflow,
            "path": self.path,
            "source": {
                "git": self.git,
                "tag": self.tag,
                "commit": self.commit,
                "tarball": self.tarball,
                "sha256": self.sha256,
            },
            "python": list(self.python),
            "bazel": self.bazel,
            "compiler": self.compiler,
            "base_image": self.base_image,
            "wheel": {
                "flow": self.wheel_flow,
                "hermetic_python": self.hermetic_python,
                "pywrap_rules": self.pywrap_rules,
            },
            "snapshot": self.snapshot,
            "floor": self.floor,
            "toolchain": self.toolchain.to_json() if self.toolchain else None,
            "configs": list(self.configs),
            "copts": list(self.copts),
            "defines": list(self.defines),
            "cuda": None
            if self.cuda is None
            else {
                "hermetic": self.cuda.hermetic,
                "cuda": self.cuda.cuda,
                "cudnn": self.cuda.cudnn,
                "cuda_versions": list(self.cuda.cuda_versions),
                "cudnn_versions": list(self.cuda.cudnn_versions),
                "capabilities": list(self.cuda.capabilities),
                "base_image": self.cuda.base_image,
            },
            "notes": self.notes or None,
            "verified": self.verified.to_json() if self.verified else None,
        }


# --- validation over the YAML node tree (it keeps line numbers) -----------------------------------


def _fail(path: str, node: yaml.Node | None, message: str) -> InputError:
    line = node.start_mark.line + 1 if node is not None else 1
    return InputError(
        f"invalid recipe {path}:{line}",
        why=message,
        fix="Fix the recipe (see recipes/README.md for the schema).",
    )


def _scalar(node: yaml.Node) -> Any:
    """A scalar node's value with YAML 1.2-like typing: true/false, null, everything else text.

    Versions stay text (``3.10`` must not become the float 3.1)."""
    value = node.value
    if node.tag.endswith(":bool"):
        return value.lower() == "true"
    if node.tag.endswith(":null"):
        return None
    return value


def _validate(
    path: str,
    node: yaml.Node,
    schema: dict[str, Field],
    prefix: str,
    lines: dict[str, int],
) -> dict[str, Any]:
    if not isinstance(node, yaml.MappingNode):
        raise _fail(path, node, f"{prefix or 'the recipe'} must be a mapping of keys to values")
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = key_node.value
        dotted = f"{prefix}{key}"
        if key not in schema:
            close = difflib.get_close_matches(key, list(schema), n=1)
            hint = f", did you mean '{prefix}{close[0]}'?" if close else ""
            line = key_node.start_mark.line + 1
            raise InputError(
                f"unknown key '{dotted}' at {path}:{line}{hint}",
                fix=f"Allowed keys here: {', '.join(prefix + k for k in sorted(schema))}.",
            )
        if key in result:
            raise _fail(path, key_node, f"key '{dotted}' appears twice")
        lines[dotted] = key_node.start_mark.line + 1
        result[key] = _value(path, value_node, schema[key], dotted, lines)
    for key, field in schema.items():
        if field.required and key not in result:
            raise _fail(path, node, f"missing key '{prefix}{key}'")
    return result


def _value(path: str, node: yaml.Node, field: Field, dotted: str, lines: dict[str, int]) -> Any:
    if isinstance(node, yaml.ScalarNode) and _scalar(node) is None:
        if field.nullable:
            return None
        raise _fail(path, node, f"'{dotted}' must not be empty")
    if field.kind == "map":
        assert field.children is not None
        return _validate(path, node, field.children, f"{dotted}.", lines)
    if field.kind.startswith("list:"):
        if not isinstance(node, yaml.SequenceNode):
            raise _fail(path, node, f"'{dotted}' must be a list")
        item = Field(field.kind.removeprefix("list:"))
        return [
            _value(path, child, item, f"{dotted}[{i}]", lines) for i, child in enumerate(node.value)
        ]
    if not isinstance(node, yaml.ScalarNode):
        raise _fail(path, node, f"'{dotted}' must be a single value, not a list or mapping")
    value = _scalar(node)
    problem = _CHECKS[field.kind](value)
    if problem is None and field.choices and value not in field.choices:
        problem = " or ".join(field.choices)
    if problem is not None:
        shown = value if isinstance(value, bool) else repr(value)
        raise _fail(path, node, f"'{dotted}' is {shown}; expected {problem}")
    return value


def _gate(recipe: Recipe) -> None:
    """Refuse what the version gates rule out for this release."""
    v = recipe.version
    checks: list[tuple[str, bool, str]] = [
        (
            "wheel",
            recipe.wheel_flow == tfversions.wheel_flow(v),
            f"TensorFlow {recipe.short} builds its wheel with '{tfversions.wheel_flow(v)}', "
            f"not '{recipe.wheel_flow}' (the :wheel target arrived in 2.17)",
        ),
        (
            "wheel",
            recipe.hermetic_python == tfversions.hermetic_python(v),
            f"hermetic_python is {str(tfversions.hermetic_python(v)).lower()} for TensorFlow "
            f"{recipe.short} (rules_python picks the interpreter from 2.14)",
        ),
        (
            "wheel",
            recipe.pywrap_rules == tfversions.pywrap_rules(v),
            f"pywrap_rules is {str(tfversions.pywrap_rules(v)).lower()} for TensorFlow "
            f"{recipe.short} (USE_PYWRAP_RULES from 2.20)",
        ),
    ]
    tested = tfversions.TESTED.get(tfversions.minor(v))
    if tested is not None:
        low, high = (tfversions.parse_version(p) for p in tested.python)
        outside = [p for p in recipe.python if not low <= tfversions.parse_version(p) <= high]
        checks.append(
            (
                "python",
                not outside,
                f"Python {', '.join(outside)} is outside what TensorFlow {recipe.short} supports "
                f"({tested.python[0]} to {tested.python[1]})",
            )
        )
    family, _, version = recipe.compiler.partition("-")
    conflict = tfversions.compiler_conflict(v, family, int(version.split(".")[0]))
    checks.append(("compiler", conflict is None, conflict or ""))
    if recipe.cuda is not None:
        checks.append(
            (
                "cuda",
                recipe.cuda.hermetic == tfversions.hermetic_cuda(v),
                f"cuda.hermetic is {str(tfversions.hermetic_cuda(v)).lower()} for TensorFlow "
                f"{recipe.short} (hermetic CUDA from 2.18)",
            )
        )
        if recipe.cuda.hermetic:
            bad = [x for x in (recipe.cuda.cuda, *recipe.cuda.cuda_versions) if x.count(".") != 2]
            checks.append(
                (
                    "cuda",
                    not bad,
                    f"hermetic CUDA versions must be full x.y.z keys, not {', '.join(bad)} "
                    "('12.5' does not work, '12.5.1' does)",
                )
            )
        else:
            checks.append(
                (
                    "cuda",
                    recipe.cuda.base_image is not None,
                    "a pre-hermetic CUDA row needs cuda.base_image (the toolchain image with "
                    "CUDA and cuDNN installed)",
                )
            )
    route = recipe.toolchain
    if route is not None and route.route == "hermetic":
        checks += [
            (
                "toolchain",
                tfversions.hermetic_cc(v),
                f"TensorFlow {recipe.short} has no hermetic C++ toolchain to select (its "
                "rules_ml_toolchain compiles by default from 2.21)",
            ),
            ("toolchain", route.llvm is not None, "a hermetic route names its llvm (e.g. 18)"),
            (
                "toolchain",
                not route.sysroot.startswith("/"),
                "a hermetic route's sysroot is a SYSROOT_DIST name, e.g. linux_glibc_2_27",
            ),
            (
                "toolchain",
                route.llvm is not None and version.split(".")[0] == route.llvm,
                f"the hermetic LLVM {route.llvm} is what compiles, so compiler must be "
                f"clang-{route.llvm}.x (the flags are spelled for it), not {recipe.compiler}",
            ),
        ]
    elif route is not None:
        checks += [
            (
                "toolchain",
                family == "clang",
                "a sysroot route compiles with clang through TF's crosstool, not "
                f"{recipe.compiler}",
            ),
            (
                "toolchain",
                route.sysroot.startswith("/") and None not in (route.builder, route.builder_image),
                "a sysroot route names its sysroot's absolute path, its builder and builder_image",
            ),
            (
                "toolchain",
                route.builder != "devtoolset-9" or recipe.sha256 is not None,
                "the devtoolset-9 builder takes TF's script from the release's source tarball, "
                "which needs source.sha256 to be verified",
            ),
        ]
    for key, ok, message in checks:
        if not ok:
            raise InputError(
                f"invalid recipe {recipe.where(key)}",
                why=message,
                fix="Fix the recipe (see recipes/README.md for the schema).",
            )


def parse_recipe(text: str, *, path: str) -> Recipe:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise InputError(
            f"invalid recipe {path}:{line}",
            why=f"it is not valid YAML ({getattr(exc, 'problem', None) or exc})",
            fix="Fix the YAML syntax.",
        ) from None
    if node is None:
        raise _fail(path, None, "the file is empty")
    lines: dict[str, int] = {}
    data = _validate(path, node, SCHEMA, "", lines)
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
            parts=tuple((k, v) for k, v in verified.items() if k != "date"),
        ),
        file_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )
    _gate(recipe)
    return recipe


def read_recipe(path: Path, *, shown_as: str | None = None) -> Recipe:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read recipe {path}", why=str(exc)) from None
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


def _user_dirs(extra_dirs: Sequence[Path]) -> list[Path]:
    """``$TFBUILD_RECIPES_DIR`` (os.pathsep-separated), then ``--recipes-dir``: later ones win."""
    env = os.environ.get(RECIPES_ENV, "")
    return [*(Path(p) for p in env.split(os.pathsep) if p), *extra_dirs]


def _recipe_files(directory: Path) -> Iterable[Path]:
    # Recipes are tf-X.Y.yaml; other YAML beside them (base-images.yaml) is not a recipe.
    return sorted(p for p in directory.glob("tf-*.yaml") if p.is_file())


def load_recipes(extra_dirs: Sequence[Path] = ()) -> RecipeSet:
    """The shipped recipes, extended or overridden by ``extra_dirs`` (and ``$TFBUILD_RECIPES_DIR``)."""
    dirs = [data_dir("recipes")]
    user_dirs = _user_dirs(extra_dirs)
    for directory in user_dirs:
        if not directory.is_dir():
            raise InputError(
                f"cannot read recipes from {directory}",
                why="it is not a directory",
                fix=f"Pass an existing directory to --recipes-dir (or ${RECIPES_ENV}).",
            )
    dirs.extend(user_dirs)
    by_version: dict[str, Recipe] = {}
    for index, directory in enumerate(dirs):
        seen: dict[str, str] = {}
        for path in _recipe_files(directory):
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


# --- base images ----------------------------------------------------------------------------------

BASE_IMAGES_FILE = "base-images.yaml"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True, kw_only=True)
class BaseImage:
    """An image a toolchain image is built on: pinned by digest in base-images.yaml, or a local
    image made by ``tfbuild base`` (then ``image_id`` pins it, as its reference is a tag)."""

    name: str
    reference: str  # image@sha256:digest
    distro: str
    suite: str
    python: str  # the distribution's python3 (X.Y)
    tcmalloc_package: str
    packaged_compilers: tuple[str, ...] = ()  # "clang-16", "gcc-12": what apt installs as is
    cuda: str | None = None  # NVIDIA images: the CUDA toolkit inside
    cudnn: str | None = None  # NVIDIA images: the cuDNN major inside (None: none)
    image_id: str | None = None  # a local image (tfbuild base): its id, as the reference is a tag
    glibc: str | None = None  # the distribution's glibc (X.Y)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "reference": self.reference,
            "image_id": self.image_id,
            "distro": self.distro,
            "suite": self.suite,
            "python": self.python,
            "tcmalloc_package": self.tcmalloc_package,
            "packaged_compilers": list(self.packaged_compilers),
            "cuda": self.cuda,
            "cudnn": self.cudnn,
            "glibc": self.glibc,
        }

    @staticmethod
    def from_json(image: dict[str, Any]) -> BaseImage:
        """The image a plan or receipt names, back as a value (KeyError if it is not one)."""
        return BaseImage(
            name=str(image["name"]),
            reference=str(image["reference"]),
            distro=str(image["distro"]),
            suite=str(image["suite"]),
            python=str(image["python"]),
            tcmalloc_package=str(image["tcmalloc_package"]),
            packaged_compilers=tuple(image["packaged_compilers"]),
            cuda=image["cuda"],
            cudnn=image["cudnn"],
            image_id=image["image_id"],
            glibc=image.get("glibc"),
        )


def load_base_images(extra_dirs: Sequence[Path] = ()) -> dict[str, BaseImage]:
    """``base-images.yaml``: name -> BaseImage (pinned by digest). A user recipes directory may
    carry its own file, whose entries add to or replace the shipped ones."""
    dirs = [data_dir("recipes"), *_user_dirs(extra_dirs)]
    images: dict[str, BaseImage] = {}
    for directory in dirs:
        path = directory / BASE_IMAGES_FILE
        if not path.is_file():
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"cannot read {path}", why=str(exc).splitlines()[0]) from None
        if not isinstance(data, dict):
            raise InputError(f"invalid {path}", why="it must map image names to their pins")
        for name, entry in data.items():
            fields = ("image", "tag", "digest", "distro", "suite", "python", "tcmalloc_package")
            missing = [f for f in fields if not isinstance(entry, dict) or not entry.get(f)]
            if missing:
                raise InputError(
                    f"invalid {path}: entry {name!r}", why=f"missing {', '.join(missing)}"
                )
            values = {f: str(entry[f]) for f in fields}
            bad = [
                f
                for f, v in values.items()
                if f != "digest" and not _SAFE_TOKEN.match(v.replace("/", "-"))
            ]
            if not _DIGEST.match(values["digest"]) or bad:
                raise InputError(
                    f"invalid {path}: entry {name!r}",
                    why=f"unsafe or malformed {', '.join(bad) or 'digest'}",
                )
            packaged = entry.get("packaged_compilers") or []
            if not isinstance(packaged, list) or not all(
                isinstance(c, str) and _CHECKS["compiler"](c) is None for c in packaged
            ):
                raise InputError(
                    f"invalid {path}: entry {name!r}",
                    why="packaged_compilers must be a list like [gcc-12, clang-16]",
                )
            glibc = entry.get("glibc")
            if glibc is not None and _CHECKS["version2"](str(glibc)) is not None:
                raise InputError(f"invalid {path}: entry {name!r}", why="glibc must be X.Y")
            extras = {k: entry.get(k) for k in ("cuda", "cudnn")}
            for key, value in extras.items():
                if (
                    value is not None
                    and _CHECKS["version"](str(value)) is not None
                    and not str(value).isdigit()
                ):
                    raise InputError(
                        f"invalid {path}: entry {name!r}", why=f"{key} must be a version"
                    )
            images[str(name)] = BaseImage(
                name=str(name),
                reference=f"{values['image']}:{values['tag']}@{values['digest']}",
                distro=values["distro"],
                suite=values["suite"],
                python=values["python"],
                tcmalloc_package=values["tcmalloc_package"],
                packaged_compilers=tuple(packaged),
                cuda=None if extras["cuda"] is None else str(extras["cuda"]),
                cudnn=None if extras["cudnn"] is None else str(extras["cudnn"]),
                glibc=None if glibc is None else str(glibc),
            )
    return images


# --- pinned tools ---------------------------------------------------------------------------------

TOOLS_FILE = "tools.yaml"


@dataclass(frozen=True, kw_only=True)
class ToolPin:
    """A tool the toolchain image downloads: its version and the sha256 of each architecture's file."""

    name: str
    version: str
    sha256: dict[str, str]  # Debian architecture name (amd64, arm64) -> sha256


def load_tools() -> dict[str, ToolPin]:
    """``tools.yaml`` (shipped only: pins are reviewed with tfbuild, not overridden per site)."""
    path = data_dir("recipes") / TOOLS_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read {path}", why=str(exc).splitlines()[0]) from None
    tools: dict[str, ToolPin] = {}
    for name, entry in (data or {}).items():
        version = entry.get("version") if isinstance(entry, dict) else None
        sums = entry.get("sha256") if isinstance(entry, dict) else None
        if (
            not isinstance(version, str)
            or _SAFE_TOKEN.fullmatch(version) is None
            or not isinstance(sums, dict)
            or not sums
            or not all(isinstance(v, str) and _CHECKS["hex64"](v) is None for v in sums.values())
        ):
            raise InputError(
                f"invalid {path}: entry {name!r}",
                why="each tool needs a version and a sha256 per architecture (64 hex digits)",
            )
        tools[str(name)] = ToolPin(
            name=str(name), version=version, sha256={str(k): v for k, v in sums.items()}
        )
    return tools
