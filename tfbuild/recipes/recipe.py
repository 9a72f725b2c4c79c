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
import fnmatch
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tfbuild.core.errors import InputError, UsageError
from tfbuild.core.files import read_input
from tfbuild.core.resources import data_dir
from tfbuild.recipes import tfversions

RECIPES_ENV = "TFBUILD_RECIPES_DIR"

# --- value checks: each returns None when fine, or a description of what is allowed ----------------

# Every pattern is matched whole (re.fullmatch): with re.match, '$' also matches before a final
# newline, so "2.21.0\n" passed as a version and "clang-18\n" reached the Dockerfile.
_SAFE_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_HTTPS_URL = re.compile(r"https://[A-Za-z0-9.-]+(:\d+)?(/[A-Za-z0-9._~%/+=-]*)?")
_FLAG = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_=.,+:-]*")
_DEFINE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.-]+")
_CAPABILITY = re.compile(r"(sm|compute)_\d{2,3}[a-z]?")
#: A registry/repository reference (docker.io/nvidia/cuda): the one kind of field with a '/'.
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(:\d+)?(/[A-Za-z0-9][A-Za-z0-9._-]*)*")
#: A Docker tag (the grammar of docker/distribution's reference package).
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _pattern(regex: re.Pattern[str], allowed: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, str) and regex.fullmatch(value):
            return None
        return allowed

    return check


_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "version3": _pattern(re.compile(r"\d+\.\d+\.\d+"), "a version X.Y.Z, e.g. 2.21.0"),
    "version2": _pattern(re.compile(r"\d+\.\d+"), "a version X.Y, e.g. 3.11"),
    "version": _pattern(re.compile(r"\d+(\.\d+){1,3}"), "a dotted version, e.g. 12.5.1"),
    "token": _pattern(_SAFE_TOKEN, "letters, digits and . _ + - only"),
    "url": _pattern(_HTTPS_URL, "an https:// URL without spaces, quotes or shell characters"),
    "hex40": _pattern(re.compile(r"[0-9a-f]{40}"), "a full 40-digit git commit hash"),
    "hex64": _pattern(re.compile(r"[0-9a-f]{64}"), "a 64-digit sha256 in lower-case hex"),
    "snapshot": _pattern(
        re.compile(r"[0-9]{8}T[0-9]{6}Z"), "a UTC snapshot time like 20261115T000000Z"
    ),
    "compiler": _pattern(
        re.compile(r"(gcc|clang)-\d+(\.\d+){0,2}"), "gcc-N[.N[.N]] or clang-N[.N[.N]]"
    ),
    "flag": _pattern(_FLAG, "a compiler flag like -Wno-sign-compare (no spaces or quotes)"),
    "define": _pattern(_DEFINE, "a bazel define NAME=value"),
    "capability": _pattern(_CAPABILITY, "sm_XY or compute_XY, e.g. sm_89"),
    "sysroot": _pattern(
        re.compile(r"(/[A-Za-z0-9._-]+)+|[A-Za-z0-9][A-Za-z0-9._-]*"),
        "a SYSROOT_DIST name (linux_glibc_2_27) or an absolute path (/dt9)",
    ),
    "text": lambda v: None if isinstance(v, str) else "text",
    "release": _pattern(re.compile(r"\d+(\.\d+){0,3}"), "a version, e.g. 12.5.1 or 9"),
    "image": _pattern(_IMAGE, "a registry/repository like docker.io/library/debian"),
    "tag": _pattern(_TAG, "a Docker tag: letters, digits and _ . - (up to 128)"),
    "digest": _pattern(_DIGEST, "sha256: and 64 lower-case hex digits"),
    "bool": lambda v: (
        None
        if isinstance(v, bool)
        else "true or false (write true or false: yes, no, on and off are not booleans here)"
    ),
    "date": _pattern(re.compile(r"\d{4}-\d{2}-\d{2}"), "a date YYYY-MM-DD"),
    "verified": _pattern(
        re.compile(r"(read|cited|not verified): \S.*", re.DOTALL),
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


@dataclass(frozen=True, kw_only=True)
class _Doc:
    """The data file being validated, as its messages name it."""

    path: str
    noun: str = "recipe"  # "invalid recipe PATH:LINE", "invalid base image file PATH:LINE"
    fix: str = "Fix the recipe (see recipes/README.md for the schema)."


def _fail(doc: _Doc, node: yaml.Node | yaml.Mark | None, message: str) -> InputError:
    mark = node.start_mark if isinstance(node, yaml.Node) else node
    line = mark.line + 1 if mark is not None else 1
    return InputError(f"invalid {doc.noun} {doc.path}:{line}", why=message, fix=doc.fix)


class _Refused(yaml.YAMLError):
    """What :class:`_DataLoader` refuses to compose, and where."""

    def __init__(self, mark: yaml.Mark, why: str) -> None:
        super().__init__(why)
        self.mark = mark
        self.why = why


#: How deep a data file may nest (the recipe schema needs 3 levels). PyYAML composes recursively,
#: so a few kilobytes of '[' would otherwise end in a RecursionError.
MAX_DEPTH = 32


class _DataLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses anchors (``&a``), aliases (``*a``) and deep nesting while
    composing.

    The data files have no use for anchors, and a few hundred bytes of nested aliases (a "billion
    laughs") expand to gigabytes when a tree is walked or constructed. The node tree is composed,
    never constructed: values are typed by :func:`_scalar`."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(
                event.start_mark,
                "it uses a YAML anchor or alias (& or *), which tfbuild's data files refuse "
                "(a few of them can expand to gigabytes); write each value out",
            )
        if self.depth >= MAX_DEPTH:
            raise _Refused(event.start_mark, f"it nests lists or mappings over {MAX_DEPTH} deep")
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _compose(text: str, doc: _Doc) -> yaml.Node:
    """The YAML node tree of a data file (one document, no anchors or aliases), or an InputError."""
    try:
        node = yaml.compose(text, Loader=_DataLoader)
    except _Refused as exc:
        raise _fail(doc, exc.mark, exc.why) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            f"invalid {doc.noun} {doc.path}:{mark.line + 1 if mark is not None else 1}",
            why=f"it is not valid YAML ({getattr(exc, 'problem', None) or exc})",
            fix="Fix the YAML syntax.",
        ) from None
    if node is None:
        raise _fail(doc, None, "the file is empty")
    return node


#: YAML 1.2's booleans; PyYAML (YAML 1.1) also reads yes/no/on/off/y/n as booleans.
_BOOLEANS = {"true": True, "false": False}


def _scalar(node: yaml.Node) -> Any:
    """A scalar node's value with YAML 1.2-like typing: true/false, null, everything else text.

    Versions stay text (``3.10`` must not become the float 3.1), and YAML 1.1's ``yes``/``on``
    stay text too, so a boolean field refuses them with "write true or false"."""
    value = node.value
    if node.tag.endswith(":bool") and value.lower() in _BOOLEANS:
        return _BOOLEANS[value.lower()]
    if node.tag.endswith(":null"):
        return None
    return value


def _key(doc: _Doc, key_node: yaml.Node, prefix: str) -> str:
    if not isinstance(key_node, yaml.ScalarNode) or not isinstance(_scalar(key_node), str):
        raise _fail(
            doc,
            key_node,
            f"a key under {prefix.rstrip('.') or 'the top level'} is a list or mapping (? [a, b]), "
            "not a plain name",
        )
    return str(key_node.value)


def _validate(
    doc: _Doc,
    node: yaml.Node,
    schema: dict[str, Field],
    prefix: str,
    lines: dict[str, int],
) -> dict[str, Any]:
    if not isinstance(node, yaml.MappingNode):
        raise _fail(
            doc,
            node,
            f"{prefix.rstrip('.') or 'the ' + doc.noun} must be a mapping of keys to values",
        )
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = _key(doc, key_node, prefix)
        dotted = f"{prefix}{key}"
        if key not in schema:
            close = difflib.get_close_matches(key, list(schema), n=1)
            hint = f", did you mean '{prefix}{close[0]}'?" if close else ""
            line = key_node.start_mark.line + 1
            raise InputError(
                f"unknown key {dotted!r} at {doc.path}:{line}{hint}",
                fix=f"Allowed keys here: {', '.join(prefix + k for k in sorted(schema))}.",
            )
        if key in result:
            raise _fail(doc, key_node, f"key '{dotted}' appears twice")
        lines[dotted] = key_node.start_mark.line + 1
        result[key] = _value(doc, value_node, schema[key], dotted, lines)
    for key, field in schema.items():
        if field.required and key not in result:
            raise _fail(doc, node, f"missing key '{prefix}{key}'")
    return result


def _value(doc: _Doc, node: yaml.Node, field: Field, dotted: str, lines: dict[str, int]) -> Any:
    if isinstance(node, yaml.ScalarNode) and _scalar(node) is None:
        if field.nullable:
            return None
        raise _fail(doc, node, f"'{dotted}' must not be empty")
    if field.kind == "map":
        assert field.children is not None
        return _validate(doc, node, field.children, f"{dotted}.", lines)
    if field.kind.startswith("list:"):
        if not isinstance(node, yaml.SequenceNode):
            raise _fail(doc, node, f"'{dotted}' must be a list")
        item = Field(field.kind.removeprefix("list:"))
        return [
            _value(doc, child, item, f"{dotted}[{i}]", lines) for i, child in enumerate(node.value)
        ]
    if not isinstance(node, yaml.ScalarNode):
        raise _fail(doc, node, f"'{dotted}' must be a single value, not a list or mapping")
    value = _scalar(node)
    problem = _CHECKS[field.kind](value)
    if problem is None and field.choices and value not in field.choices:
        problem = " or ".join(field.choices)
    if problem is not None:
        shown = value if isinstance(value, bool) else repr(value)
        raise _fail(doc, node, f"'{dotted}' is {shown}; expected {problem}")
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
    doc = _Doc(path=path)
    node = _compose(text, doc)
    lines: dict[str, int] = {}
    data = _validate(doc, node, SCHEMA, "", lines)
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


#: The most of one recipe, base image or tools file read: each is a few kB.
MAX_DATA_FILE_BYTES = 1 << 20


def _read_text(path: Path, noun: str) -> str:
    """A data file's text, or an InputError (a dangling link, a directory, a FIFO or a device, too
    large, not UTF-8, ...); read by :func:`read_input`, so a FIFO is refused, never waited on."""
    try:
        return read_input(path, limit=MAX_DATA_FILE_BYTES, what=f"{noun} {path}").decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"it is not UTF-8 text ({exc.reason} at byte {exc.start})"
    except InputError as exc:
        why = "it is a directory" if path.is_dir() else exc.why
    except FileNotFoundError:
        why = (
            "it does not exist (a dangling symbolic link?)"
            if path.is_symlink()
            else "it does not exist"
        )
    except OSError as exc:
        why = exc.strerror or str(exc)
    raise InputError(
        f"cannot read {noun} {path}", why=why, fix="Make it a readable file, or remove it."
    )


def read_recipe(path: Path, *, shown_as: str | None = None) -> Recipe:
    text = _read_text(path, "recipe")
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
    """``$TFBUILD_RECIPES_DIR`` (os.pathsep-separated), then ``--recipes-dir``: later ones win.

    Each must be a directory this process can list (an InputError otherwise, never a silent skip)."""
    env = os.environ.get(RECIPES_ENV, "")
    dirs = [*(Path(p) for p in env.split(os.pathsep) if p), *extra_dirs]
    for directory in dirs:
        _entries(directory)
    return dirs


def _entries(directory: Path) -> list[str]:
    """The names in a recipes directory, or an InputError saying why it cannot be listed."""
    fix = f"Pass a readable directory to --recipes-dir (or ${RECIPES_ENV})."
    try:
        with os.scandir(directory) as entries:
            return sorted(entry.name for entry in entries)
    except NotADirectoryError:
        raise InputError(
            f"cannot read recipes from {directory}", why="it is not a directory", fix=fix
        ) from None
    except FileNotFoundError:
        raise InputError(
            f"cannot read recipes from {directory}", why="it is not a directory", fix=fix
        ) from None
    except OSError as exc:
        raise InputError(
            f"cannot read recipes from {directory}", why=exc.strerror or str(exc), fix=fix
        ) from None


def _recipe_files(directory: Path) -> Iterable[Path]:
    # Recipes are tf-X.Y.yaml; other YAML beside them (base-images.yaml) is not a recipe. Every
    # entry so named is read: one that is not a readable file (a dangling link, a directory) is an
    # error, never silently dropped (an override that does not apply would go unnoticed).
    return [directory / n for n in _entries(directory) if fnmatch.fnmatchcase(n, "tf-*.yaml")]


def load_recipes(extra_dirs: Sequence[Path] = ()) -> RecipeSet:
    """The shipped recipes, extended or overridden by ``extra_dirs`` (and ``$TFBUILD_RECIPES_DIR``)."""
    dirs = [data_dir("recipes"), *_user_dirs(extra_dirs)]
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


@dataclass(frozen=True, kw_only=True)
class BaseImage:
    """An image a toolchain image is built on: pinned by digest in base-images.yaml, or a local
    image made by ``tfbuild base`` (then ``image_id`` pins it, as its reference is a tag)."""

    name: str
    reference: str  # image@sha256:digest
    image_id: str | None = None  # a local image (tfbuild base): its id, as the reference is a tag
    distro: str
    suite: str
    python: str  # the distribution's python3 (X.Y)
    tcmalloc_package: str
    packaged_compilers: tuple[str, ...] = ()  # "clang-16", "gcc-12": what apt installs as is
    cuda: str | None = None  # NVIDIA images: the CUDA toolkit inside
    cudnn: str | None = None  # NVIDIA images: the cuDNN major inside (None: none)
    glibc: str | None = None  # the distribution's glibc (X.Y)


#: One entry of base-images.yaml (its header comment documents each field).
BASE_IMAGE_SCHEMA: dict[str, Field] = {
    "image": Field("image"),
    "tag": Field("tag"),
    "digest": Field("digest"),
    "read": Field("date", required=False),
    "source": Field("text", required=False),
    "distro": Field("token"),
    "suite": Field("token"),
    "glibc": Field("version2", required=False, nullable=True),
    "python": Field("version2"),
    "tcmalloc_package": Field("token"),
    "packaged_compilers": Field("list:compiler", required=False, nullable=True),
    "cuda": Field("release", required=False, nullable=True),
    "cudnn": Field("release", required=False, nullable=True),
}


def _entries_of(doc: _Doc, node: yaml.Node, what: str) -> Iterable[tuple[str, yaml.Node]]:
    """The (name, value node) pairs of a top-level mapping of free names (each a token, once)."""
    if not isinstance(node, yaml.MappingNode):
        raise _fail(doc, node, f"it must map {what}")
    seen: set[str] = set()
    for key_node, value_node in node.value:
        name = _key(doc, key_node, "")
        if _SAFE_TOKEN.fullmatch(name) is None:
            raise _fail(doc, key_node, f"the name {name!r} is not letters, digits and . _ + -")
        if name in seen:
            raise _fail(doc, key_node, f"'{name}' appears twice")
        seen.add(name)
        yield name, value_node


def parse_base_images(text: str, *, path: str) -> dict[str, BaseImage]:
    """The text of a ``base-images.yaml``: name -> BaseImage, validated like a recipe."""
    doc = _Doc(
        path=path,
        noun="base image file",
        fix="Fix the file (its header comment documents each field).",
    )
    images: dict[str, BaseImage] = {}
    for name, value_node in _entries_of(doc, _compose(text, doc), "image names to their pins"):
        entry = _validate(doc, value_node, BASE_IMAGE_SCHEMA, f"{name}.", {})
        images[name] = BaseImage(
            name=name,
            reference=f"{entry['image']}:{entry['tag']}@{entry['digest']}",
            distro=entry["distro"],
            suite=entry["suite"],
            python=entry["python"],
            tcmalloc_package=entry["tcmalloc_package"],
            packaged_compilers=tuple(entry.get("packaged_compilers") or ()),
            cuda=entry.get("cuda"),
            cudnn=entry.get("cudnn"),
            glibc=entry.get("glibc"),
        )
    return images


def load_base_images(extra_dirs: Sequence[Path] = ()) -> dict[str, BaseImage]:
    """``base-images.yaml``: name -> BaseImage (pinned by digest). A user recipes directory may
    carry its own file, whose entries add to or replace the shipped ones."""
    dirs = [data_dir("recipes"), *_user_dirs(extra_dirs)]
    images: dict[str, BaseImage] = {}
    for index, directory in enumerate(dirs):
        path = directory / BASE_IMAGES_FILE
        if not os.path.lexists(path):
            continue  # a link that leads nowhere is not absent: reading it says so
        shown = f"recipes/{BASE_IMAGES_FILE}" if index == 0 else str(path)
        images.update(parse_base_images(_read_text(path, "base image file"), path=shown))
    return images


# --- pinned tools ---------------------------------------------------------------------------------

TOOLS_FILE = "tools.yaml"


@dataclass(frozen=True, kw_only=True)
class ToolPin:
    """A tool the toolchain image downloads: its version and the sha256 of each architecture's file."""

    name: str
    version: str
    sha256: dict[str, str]  # Debian architecture name (amd64, arm64) -> sha256


#: Debian's architecture names (dpkg-architecture -L, the release architectures).
DEBIAN_ARCHITECTURES = ("amd64", "arm64", "armel", "armhf", "i386", "ppc64el", "riscv64", "s390x")

TOOL_SCHEMA: dict[str, Field] = {
    "version": Field("token"),
    "sha256": Field(
        "map",
        children={arch: Field("hex64", required=False) for arch in DEBIAN_ARCHITECTURES},
    ),
}


def parse_tools(text: str, *, path: str) -> dict[str, ToolPin]:
    """The text of a ``tools.yaml``: name -> ToolPin, validated like a recipe."""
    doc = _Doc(path=path, noun="tools file", fix="Fix the file (its header comment documents it).")
    tools: dict[str, ToolPin] = {}
    for name, value_node in _entries_of(doc, _compose(text, doc), "tool names to their pins"):
        entry = _validate(doc, value_node, TOOL_SCHEMA, f"{name}.", {})
        if not entry["sha256"]:
            raise _fail(doc, value_node, f"'{name}.sha256' names no architecture")
        tools[name] = ToolPin(name=name, version=entry["version"], sha256=entry["sha256"])
    return tools


def load_tools() -> dict[str, ToolPin]:
    """``tools.yaml`` (shipped only: pins are reviewed with tfbuild, not overridden per site)."""
    path = data_dir("recipes") / TOOLS_FILE
    return parse_tools(_read_text(path, "tools file"), path=f"recipes/{TOOLS_FILE}")
