"""The receipt: what a wheel is, and every input that made it (``<wheel>.json`` beside the wheel).

One frozen type with a schema version, written by ``tfbuild wheel`` and read by every command that
looks at a wheel (``smoke``, ``index``, ``pick``, ``verify``, ``wheel --from-receipt``, ``doctor``).
The plan travels as its JSON (this module sits below the planner, so that the reading side needs no
planner) together with its sha256, so a receipt whose plan was edited after the build is refused;
the inputs travel with theirs (``inputs_sha256``), so are the package versions, the source and the
images a rebuild takes from them.

Every input has an identity here: the source (tarball sha256 or git commit), the recipe file's
sha256, the base image (digest or id), the toolchain image's id, every package installed in it with
its exact version, bazel, bazelisk, the compiler, and tfbuild itself. Facts about the moment of the
build (free disk, the engine, timings) are kept apart from the plan, under ``host`` and ``timings``.

A receipt is untrusted input until it is read: :func:`decode_receipt` is the one decoder for its
bytes (a file, an HTTP body), bounded in size, nesting and numbers by :func:`load_json` (no NaN, no
key twice, no lone surrogate). Each value's grammar is a constraint on its type
(``Sha256 = Annotated[str, grammar(...)]``: known keys only, sha256 hex, Debian package names and
versions, ...), so that :func:`tfbuild.core.serial.from_data` refuses what does not fit and
:func:`tfbuild.core.serial.schema` publishes it; :func:`explain` then says for people which field
and why, in one clause: ``its wheel.size holds -1, not a whole number from 0 to 1099511627776``.
:meth:`Receipt.from_json` then holds a receipt to the few rules no type says (:func:`_grammar`), so
that no value read from a receipt reaches a shell, a path or a Docker call unchecked. An overlay's
receipt (:mod:`tfbuild.wheel.overlay_receipt`) shares the bounded read, the grammars and the wheel
record.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Protocol, TypeVar

import msgspec

from tfbuild.core import serial
from tfbuild.core.controls import CONTROL
from tfbuild.core.errors import InputError
from tfbuild.core.files import read_input
from tfbuild.core.stats import LABELS, Verdict
from tfbuild.core.variants import Variant

MAX_TEXT = 4096  # characters of one text field
MAX_SIZE = 1 << 40  # bytes of a wheel (1 TiB); counts and seconds are bounded alike
MAX_COUNT = 1 << 53
#: Bounds on what a reader parses: a receipt is a few tens of KiB, nested about ten levels deep.
MAX_RECEIPT_BYTES = 16 << 20
MAX_RECEIPT_DEPTH = 64
#: The longest number a receipt holds (a size, a count, seconds): digits and signs, exponent.
MAX_NUMBER_CHARS = 32


def grammar(
    wanted: str, pattern: str | re.Pattern[str] | None = None, **bounds: Any
) -> msgspec.Meta:
    """A type's constraints (``msgspec.Meta``: a pattern the whole value matches, ``ge``, ``le``,
    ``max_length``), with ``wanted``: what a message says the value should be."""
    if pattern is not None:
        text = pattern if isinstance(pattern, str) else pattern.pattern
        # Python's $ also matches before a last newline (JSON Schema's does not): (?!\n) refuses it.
        bounds = {"max_length": 1024, **bounds, "pattern": f"^(?:{text})$(?!\\n)"}
    return msgspec.Meta(**bounds, extra={"wanted": wanted})


# --- the grammars both receipts hold ----------------------------------------------------------------

SHA256 = re.compile(r"[0-9a-f]{64}")
IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")
#: Debian policy 5.6.1: lower case letters, digits, + - . ; at least two, starting alphanumeric.
DEBIAN_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+")
#: deb-version(7): ``[epoch:]upstream_version[-debian_revision]``. The epoch is digits; the upstream
#: version starts with a digit and holds letters, digits and ``. + ~`` (``-`` only with a revision,
#: ``:`` only with an epoch); the revision holds letters, digits and ``. + ~``.
DEBIAN_VERSION = re.compile(
    r"[0-9]+:[0-9][A-Za-z0-9.+~:-]*-[A-Za-z0-9.+~]+"
    r"|[0-9]+:[0-9][A-Za-z0-9.+~:]*"
    r"|[0-9][A-Za-z0-9.+~-]*-[A-Za-z0-9.+~]+"
    r"|[0-9][A-Za-z0-9.+~]*"
)
#: A character one line of text may hold: none of core.controls' CONTROL.
LINE_CHAR = f"[^{CONTROL.pattern[1:-1]}]"

Sha256 = Annotated[str, grammar("a sha256 (64 lowercase hex digits)", SHA256)]
ImageId = Annotated[str, grammar("an image id (sha256: and 64 lowercase hex digits)", IMAGE_ID)]
Count = Annotated[int, grammar(f"a whole number from 0 to {MAX_SIZE}", ge=0, le=MAX_SIZE)]


def _line(repeat: str) -> msgspec.Meta:
    """One line of text for people: bounded, no control character (core.controls)."""
    wanted = f"one line of text (at most {MAX_TEXT} characters, no controls)"
    return grammar(wanted, f"{LINE_CHAR}{repeat}", max_length=MAX_TEXT)


Text = Annotated[str, _line("+")]  # not empty
DebianPackage = Annotated[str, grammar("a Debian package name", DEBIAN_PACKAGE, max_length=256)]
DebianVersion = Annotated[
    str, grammar("a Debian version ([epoch:]upstream[-revision])", DEBIAN_VERSION, max_length=256)
]


def is_debian_version(text: str) -> bool:
    """Is ``text`` a Debian version (deb-version(7)), as apt takes it in ``name=version``?"""
    return isinstance(text, str) and len(text) <= 256 and bool(DEBIAN_VERSION.fullmatch(text))


def is_debian_package(text: str) -> bool:
    """Is ``text`` a Debian package name (policy 5.6.1)?"""
    return isinstance(text, str) and len(text) <= 256 and bool(DEBIAN_PACKAGE.fullmatch(text))


#: The wheel a receipt describes (a build's or an overlay's): its file name, sha256 and size.
@dataclass(frozen=True, kw_only=True)
class WheelRecord:
    name: Annotated[str, grammar("a wheel file name", r"[A-Za-z0-9_.+!-]+\.whl")]
    sha256: Sha256
    size: Count


# --- why data does not fit its type, in one clause ------------------------------------------------


def short(value: Any) -> Any:
    """A value as a message may quote it: text cut to 60 characters."""
    return value[:60] + "..." if isinstance(value, str) and len(value) > 60 else value


def holds(name: str, value: Any, wanted: str) -> str:
    """``its NAME holds VALUE, not WANTED``: a JSON object or array by its kind, text quoted short."""
    if isinstance(value, dict | list):
        held = f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    else:
        held = repr(short(value))
    return f"its {name} holds {held}, not {wanted}"


_PLAIN = {bool: "true or false", int: "an integer", float: "a number", str: "text"}


def _wanted(kind: Any) -> str:
    for meta in typing.get_args(kind)[1:] if typing.get_origin(kind) is Annotated else ():
        if isinstance(meta, msgspec.Meta) and meta.extra and "wanted" in meta.extra:
            return str(meta.extra["wanted"])
    if typing.get_origin(kind) is typing.Literal:
        *most, last = map(str, typing.get_args(kind))
        return f"{', '.join(most)} or {last}" if most else last
    return _PLAIN.get(kind, f"a {getattr(kind, '__name__', kind)}")


def explain(data: Any, kind: Any, name: str = "") -> str | None:
    """Why ``data`` (parsed JSON) does not fit ``kind``, in one clause naming the field (``name``
    is the path to it, "" for the whole receipt), or None when it fits. Each value is checked by
    :func:`tfbuild.core.serial.from_data` against its own type, so that this says what msgspec
    refused. A type of :data:`_CHECKED_AS` is checked as another: one whose fields say their
    grammar."""
    kind = _CHECKED_AS.get(kind, kind) if isinstance(kind, type) else kind
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return None
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        options = [a for a in args if a not in (type(None), serial.Unset)]
        return explain(data, options[0], name) if len(options) == 1 else None
    if (dataclasses.is_dataclass(kind) or origin is dict) and not isinstance(data, dict):
        return f"its {name} holds {type(data).__name__}, not an object"
    if dataclasses.is_dataclass(kind):
        fields = {f.name: f for f in dataclasses.fields(kind)}
        unknown = sorted(key for key in data if key not in fields)
        if unknown:
            listed = ", ".join(repr(short(key)) for key in unknown[:3])
            where = name or "the receipt"
            return f"{where} has the unknown key {listed}: tfbuild writes no such key"
        for key, declared in fields.items():
            required = declared.default is MISSING and declared.default_factory is MISSING
            if required and key not in data:
                return f"it is malformed: {f'its {name}' if name else 'it'} has no {key!r}"
        hints = typing.get_type_hints(kind, include_extras=True)
        for key in fields:
            at = f"{name}.{key}" if name else key
            if key in data and (why := explain(data[key], hints[key], at)):
                return why
        return None
    if origin is dict:
        for key, value in data.items():
            at = f"{name}[{short(key)!r}]"
            why = explain(key, args[0], f"{name} key")
            if why or (why := explain(value, args[1], at)):
                return why
        return None
    if origin is list or (origin is tuple and args[-1:] == (...,)):
        if not isinstance(data, list):
            return f"its {name} holds {type(data).__name__}, not a list"
        items = (explain(v, args[0], f"{name}[{i}]") for i, v in enumerate(data))
        return next((why for why in items if why), None)
    try:  # a value checked whole: a plain type, a Literal, an Annotated one
        serial.from_data(data, kind)
    except serial.DecodeFailure:
        return holds(name, data, _wanted(kind))
    return None


# --- reading the bytes: bounded -------------------------------------------------------------------

#: A JSON string (or an unterminated one, to the end): taken out before brackets are counted.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_SAME_BRACKETS = bytes.maketrans(b"{}", b"[]")


def json_depth(raw: bytes, *, limit: int) -> int:
    """How deeply the JSON text ``raw`` nests (strings skipped), counted up to ``limit + 1``
    without recursion and in a bounded number of passes over the brackets alone: each pass takes
    out the innermost pairs. Brackets that do not pair count as deeper than ``limit``."""
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", raw)).translate(_SAME_BRACKETS)
    depth = 0
    while brackets:
        if depth > limit:
            return depth
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):  # unpaired: the parser would recurse into it
            return limit + 1
        brackets, depth = shorter, depth + 1
    return depth


def _number(text: str, kind: Callable[[str], Any]) -> Any:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(
            f"it holds a number of {len(text)} characters (at most {MAX_NUMBER_CHARS})"
        )
    value = kind(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"it holds the number {text}, which is out of range")
    return value


def _constant(text: str) -> Any:
    raise ValueError(f"it holds {text}, which is not JSON")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"it holds the key {short(key)!r} twice in one object")
        found[key] = value
    return found


def load_json(raw: bytes, *, charset: str = "utf-8") -> Any:
    """The JSON in ``raw`` (a file's bytes, an HTTP body in ``charset``), read bounded in size,
    nesting and numbers; a ValueError whose message is one clause for anything else: too large or
    deep, not text or not JSON, a key twice, NaN or infinity, a lone surrogate."""
    if len(raw) > MAX_RECEIPT_BYTES:
        raise ValueError(f"it is larger than {MAX_RECEIPT_BYTES >> 20} MiB")
    try:
        text = raw.decode(charset)
    except LookupError as exc:  # no such charset
        raise ValueError(str(exc)) from None
    deeper = f"it nests deeper than {MAX_RECEIPT_DEPTH} levels"
    if json_depth(raw, limit=MAX_RECEIPT_DEPTH) > MAX_RECEIPT_DEPTH:
        raise ValueError(deeper)
    try:
        data = json.loads(
            text,
            parse_int=lambda t: _number(t, int),
            parse_float=lambda t: _number(t, float),
            parse_constant=_constant,
            object_pairs_hook=_unique,
        )
    except RecursionError:  # not reached after json_depth; kept so that it can never escape
        raise ValueError(deeper) from None
    try:  # every string (keys too) is text that encodes: no lone surrogate from a \ud800 escape
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("it holds a lone surrogate (\\ud800-\\udfff) in a string") from None
    return data


class _OfAWheel(Protocol):
    @property
    def wheel(self) -> WheelRecord: ...


_R = TypeVar("_R", bound=_OfAWheel)


def read_receipt_file(path: Path, *, wheel: Path | None, decode: Callable[..., _R], fix: str) -> _R:
    """The receipt at ``path``, read bounded and decoded by ``decode(raw, source=...)`` (a build's or
    an overlay's decoder), and of ``wheel`` when given; one InputError line for anything else."""
    try:
        # One byte over the bound is read, so that the decoder says "larger than" for every source.
        raw = read_input(path, limit=MAX_RECEIPT_BYTES + 1, what=f"the receipt {path}", fix=fix)
    except FileNotFoundError:
        what = f"{wheel.name} has no receipt" if wheel else f"no receipt at {path}"
        raise InputError(what, why=f"{path} does not exist", fix=fix) from None
    receipt = decode(raw, source=str(path))
    if wheel is not None and receipt.wheel.name != wheel.name:
        raise InputError(
            f"{path} is not the receipt of {wheel.name}",
            why=f"it describes {receipt.wheel.name}",
            fix=fix,
        )
    return receipt


SCHEMA: Final = "tfbuild.receipt/2"
#: Schemas this tfbuild can read. /1 receipts (tfbuild 0.1 before reproducible builds) lack the
#: inputs a rebuild needs.
READABLE = (SCHEMA,)
#: What to do about a receipt that cannot be read.
READ_FIX = "Rebuild the wheel with tfbuild wheel, which writes its receipt beside it."


class InvalidReceipt(ValueError):
    """A receipt that cannot be used; the message says why, in a clause."""


def canonical_sha256(data: Any) -> str:
    """The sha256 of ``data`` as canonical JSON (sorted keys, no spaces): the same on any machine."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def receipt_path(wheel: Path) -> Path:
    """Where a wheel's receipt lives: beside it, ``<wheel stem>.json``."""
    return wheel.with_suffix(".json")


# --- the grammars of the values only a build's receipt holds ---------------------------------------

_GitCommit = Annotated[
    str, grammar("a git commit (40 or 64 lowercase hex digits)", "[0-9a-f]{40}|[0-9a-f]{64}")
]
#: A Docker image reference: ``[registry/]repository[:tag][@sha256:digest]`` (no spaces, no shell).
_ImageReference = Annotated[
    str,
    grammar("a Docker image reference", r"[A-Za-z0-9][A-Za-z0-9._/:-]*(?:@sha256:[0-9a-f]{64})?"),
]
_FileName = Annotated[str, grammar("a file name", r"[A-Za-z0-9_+-][A-Za-z0-9_.+!-]*")]
#: Build ids, targets, tool names, versions.
_Word = Annotated[
    str, grammar("a name (letters, digits, _ . + -)", r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
]
_Label = Annotated[  # a PEP 440 local version label
    str,
    grammar(
        "a local version label (letters and digits, separated by . _ -)",
        r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*",
    ),
]
_Cflag = Annotated[str, grammar("a compiler flag", r"-[A-Za-z0-9][A-Za-z0-9_=.,+/:-]*")]
_Dotted = Annotated[str, grammar("a version (digits and dots)", r"[0-9]+(?:\.[0-9]+)*")]
_Url = Annotated[str, grammar("an http(s) URL", r"https?://[!-~]+", max_length=MAX_TEXT)]
_Variant = Annotated[
    str,
    grammar(
        f"a variant ({', '.join(v.value for v in Variant)})", "|".join(v.value for v in Variant)
    ),
]
#: Seconds, GiB, milliseconds, ratios: a non-negative (finite) number.
_Figure = Annotated[float, grammar("a non-negative number", ge=0, le=MAX_COUNT)]
_Integer = Annotated[int, grammar("an integer", ge=-MAX_COUNT, le=MAX_COUNT)]
_TextOrEmpty = Annotated[str, _line("*")]


@dataclass(frozen=True, kw_only=True)
class SourceRecord:
    """Where the source tree came from, by content: a tarball's sha256, or a checkout's commit."""

    kind: Literal["tarball", "directory"]
    url: _Url | None = None  # the tarball's URL
    sha256: Sha256 | None = None  # the tarball's sha256
    #: The sha256 was pinned (recipe, --source-sha256, a receipt), not first-seen.
    pinned: bool = False
    path: Text | None = None  # a directory's path on the build host (informative only)
    commit: _GitCommit | None = None  # a git checkout's HEAD
    dirty: bool | None = None  # a git checkout with uncommitted changes
    epoch: Count | None = None  # SOURCE_DATE_EPOCH taken from the source


@dataclass(frozen=True, kw_only=True)
class Inputs:
    """Every input of the build, each by an identity that a rebuild can check."""

    tfbuild: _Word
    recipe: Text  # the recipe file as the plan names it (recipes/tf-2.21.yaml)
    recipe_sha256: Sha256 | None  # None for the canary's derived recipe
    source: SourceRecord
    base_image: _ImageReference  # image@sha256:digest, or a local tag
    base_image_id: ImageId | None  # a local image's id (tfbuild base)
    toolchain_image: _ImageReference  # tfbuild/toolchain:<hash>
    toolchain_image_id: ImageId | None
    #: name -> version in the toolchain
    packages: dict[DebianPackage, DebianVersion] = field(default_factory=dict)
    tools: dict[_Word, Text] = field(default_factory=dict)  # bazel, bazelisk, compiler, python
    snapshot: _Word | None = None  # the distribution snapshot the packages came from
    #: Where a remote executor ran the actions: the pushed toolchain image, registry/repo@sha256.
    exec_image: _ImageReference | None = None

    def __post_init__(self) -> None:
        # Written in name order, as a reader compares them.
        object.__setattr__(self, "packages", dict(sorted(self.packages.items())))
        object.__setattr__(self, "tools", dict(sorted(self.tools.items())))

    @property
    def sha256(self) -> str:
        """What the writer records as ``inputs_sha256``: the canonical hash of these inputs."""
        return canonical_sha256(serial.to_data(self))


@dataclass(frozen=True, kw_only=True)
class WheelFloor:
    """The oldest system a wheel loads on: the newest symbol versions its ELF files need (found by
    auditwheel after the build), and the best manylinux policy that allows them."""

    glibc: _Dotted | None  # "2.27": the newest GLIBC_ symbol version needed; None when none is
    libstdcxx: _Dotted | None  # "3.4.22": the newest GLIBCXX_ version needed
    libgcc: _Dotted | None  # "7.0.0": the newest GCC_ (libgcc_s) version needed
    policy: _Word | None  # "manylinux_2_27_x86_64"; None: no manylinux policy allows the wheel
    #: With no policy, what keeps it out: symbol versions ("GLIBC_2.39"), libraries no policy
    #: allows (their soname), blacklisted symbols ("symbol (library)").
    too_new: tuple[Text, ...] = ()
    tool: _TextOrEmpty = ""  # "auditwheel 6.8.2"

    @property
    def needs(self) -> str:
        """What it needs, for people: "glibc 2.27, libstdc++ 3.4.22" ("" when nothing versioned)."""
        parts = (("glibc", self.glibc), ("libstdc++", self.libstdcxx))
        return ", ".join(f"{library} {version}" for library, version in parts if version)


@dataclass(frozen=True, kw_only=True)
class BuildHost:
    """Facts about the machine at the moment of the build (none of them an input of the wheel).
    Each is None in a receipt that does not record it."""

    engine: Text | None = None  # the container engine's endpoint
    toolchain_image_built: bool | None = None  # built by this build (False: reused)
    disk_free_gib: _Figure | None = None  # free disk in dist/ after the build
    cpus: Count | None = None
    user: Text | None = None  # uid:gid the build ran as


@dataclass(frozen=True, kw_only=True)
class BuildAttempt:
    """One run of the build script: the build halves its jobs and runs again after an OOM kill."""

    jobs: Count
    exit_code: _Integer
    oom_killed: bool
    seconds: _Figure


#: The canary's two builds (``tfbuild doctor``): for this machine, and for the x86_64 baseline.
CanaryBuildName = Literal["host", "baseline"]
CANARY_BUILDS: tuple[CanaryBuildName, ...] = ("host", "baseline")
#: The instructions the canary's probe counts in each build's library (objdump): 512-bit and
#: 256-bit vector registers, and fused multiply-adds.
Instruction = Literal["zmm", "ymm", "fma"]
INSTRUCTIONS: tuple[Instruction, ...] = ("zmm", "ymm", "fma")
#: The most characters of a canary wheel's errors a receipt may hold (doctor keeps the last 2000).
MAX_STDERR = 16384
_Build = Annotated[CanaryBuildName, grammar("a canary build (host or baseline)")]
_Instruction = Annotated[Instruction, grammar("an instruction (zmm, ymm or fma)")]
#: The last lines of a program's errors: bounded text whose only controls are line breaks and tabs.
_Lines = Annotated[
    str,
    grammar(
        f"lines of text (at most {MAX_STDERR} characters, no controls but line breaks and tabs)",
        f"(?:[\\t\\n]|{LINE_CHAR})*",
        max_length=MAX_STDERR,
    ),
]


@dataclass(frozen=True, kw_only=True)
class InstructionCheck:
    """The canary's instruction check: the host build holds what its plan enabled (``expected``),
    the baseline none of them."""

    expected: tuple[_Instruction, ...]  # the widest vectors and FMA, when planned
    #: Each build's counts (an instruction not counted is absent); empty when none were counted.
    found: dict[_Build, dict[_Instruction, Count]]
    ok: bool


@dataclass(frozen=True, kw_only=True)
class SmokeOutcome:
    """Whether a canary wheel installed, imported and ran; when it did not, its exit code and the
    last lines of its errors (keys absent when there is none to say)."""

    ok: bool
    exit_code: _Integer | serial.Unset = serial.UNSET
    stderr: _Lines | serial.Unset = serial.UNSET  # its last lines


@dataclass(frozen=True, kw_only=True)
class CanaryCheck:
    """doctor's canary section of the host build's receipt: its instruction check, both wheels'
    smoke, and their kernels timed side by side."""

    standin: bool = True  # the canary is a STAND-IN, not TensorFlow
    isa: InstructionCheck
    smoke: dict[_Build, SmokeOutcome]
    median_ms: dict[_Build, _Figure]  # each kernel's median milliseconds per call
    rounds: Count  # pairs timed
    speedup: _Figure | None  # the verdict's ratio to two decimals; None: not timed
    #: core.stats' verdict over the pairs (None: not timed); no key in a receipt written before
    #: tfbuild kept it, and none written back.
    verdict: Verdict | serial.Unset | None = serial.UNSET

    @property
    def judged(self) -> Verdict | None:
        """The timing's verdict, None when there is none."""
        return self.verdict if isinstance(self.verdict, Verdict) else None

    @property
    def smoke_ok(self) -> bool:
        """Both wheels installed, imported and ran."""
        return all(self.smoke.get(name, SmokeOutcome(ok=False)).ok for name in CANARY_BUILDS)


@dataclass(frozen=True, kw_only=True)
class Receipt:
    """A wheel's receipt. ``canary`` is what another command adds later (doctor's check)."""

    schema: Literal["tfbuild.receipt/2"] = SCHEMA
    build_id: _Word
    created: Text  # an ISO 8601 time
    standin: bool
    wheel: WheelRecord
    target: _Word
    variant: _Variant
    label: _Label | None
    cflags: tuple[_Cflag, ...]
    inputs: Inputs
    #: The canonical sha256 of ``inputs`` as the build wrote them (``Inputs.sha256``); None in a
    #: receipt written before tfbuild recorded it, whose inputs no hash covers.
    inputs_sha256: Sha256 | None = None
    host: BuildHost = field(default_factory=BuildHost)  # facts about the moment: disk, engine
    timings: dict[_Word, _Figure] = field(default_factory=dict)
    attempts: tuple[BuildAttempt, ...] = ()
    runtime_env_file: _FileName | None = None
    log: Text | None = None
    #: The glibc/libstdc++/libgcc floor and manylinux policy (None: not inspected, e.g. the canary
    #: before tfbuild inspected wheels).
    floor: WheelFloor | None = None
    #: bazel's own summary of the build's processes (its ``INFO: N processes: 1 remote cache hit,
    #: 1 internal, 3 local.`` line: kind -> count, ``total`` the N); empty when none was printed.
    processes: dict[Text, Count] = field(default_factory=dict)
    #: bazel's count of actions taken from the remote cache (``--remote-cache``); None without one.
    remote_cache_hits: Count | None = None
    plan_sha256: Sha256
    #: The plan as the build wrote it (its JSON: this module sits below the planner, and the plan's
    #: hash is of this data); ``plan.decode.decode_plan`` reads it as a plan.
    plan: dict[str, Any]
    #: doctor's canary check (instruction sets found, speedup), added to the published receipt by
    #: ``update_receipt``; written only once added.
    canary: CanaryCheck | None = None

    # --- what readers ask ---------------------------------------------------------------------

    @property
    def architecture(self) -> str | None:
        value = self.plan.get("architecture")
        return str(value) if value else None

    @property
    def covered(self) -> tuple[str, ...]:
        """Guard features a flag turned on: instructions the binary may use."""
        coverage = self.plan.get("coverage")
        return tuple(
            str(item["feature"])
            for item in (coverage if isinstance(coverage, list) else [])
            if isinstance(item, dict) and item.get("feature") and item.get("flag")
        )

    @property
    def cuda(self) -> str | None:
        cuda = self.plan.get("cuda")
        version = cuda.get("cuda") if isinstance(cuda, dict) else None
        return version if isinstance(version, str) and version else None

    @property
    def built_for(self) -> str:
        """``x86_64_v4 (-march=x86-64-v4 ...)``: the target and its flags, for people."""
        flags = " ".join(self.cflags)
        return f"{self.target} ({flags})" if flags else self.target

    def plan_intact(self) -> bool:
        """Does the plan still hash to what the build recorded (no edit since)?"""
        return canonical_sha256(self.plan) == self.plan_sha256

    def inputs_intact(self) -> bool | None:
        """Do the inputs still hash to what the build recorded? None: the receipt records no
        ``inputs_sha256`` (written before tfbuild did), so no hash covers them."""
        if self.inputs_sha256 is None:
            return None
        return self.inputs.sha256 == self.inputs_sha256

    # --- JSON ---------------------------------------------------------------------------------

    # hand-written: the canary section not added (None) is written as no key, not as null
    def to_json(self) -> dict[str, Any]:
        """The receipt as JSON data: its fields in order, the canary section last."""
        data: dict[str, Any] = serial.to_data(self)
        if data["canary"] is None:
            del data["canary"]
        return data

    # hand-written: untrusted input, its schema first, then every field to its type and grammar
    @staticmethod
    def from_json(data: Any) -> Receipt:
        """A receipt from its JSON, every field checked to its type and grammar and no key
        unknown; :class:`InvalidReceipt` says why it is not one."""
        if not isinstance(data, dict):
            raise InvalidReceipt("it is not a JSON object")
        schema = data.get("schema")
        if schema not in READABLE:
            shown = schema if isinstance(schema, str | None) else type(schema).__name__
            raise InvalidReceipt(
                f"its schema is {short(shown)!r}; this tfbuild reads {', '.join(READABLE)}"
            )
        try:
            receipt = serial.from_data(data, Receipt)
        except serial.DecodeFailure as exc:  # said again for people: which field, and why
            why = explain(data, Receipt)
            raise InvalidReceipt(why or f"it is malformed: {exc}") from None
        why = _grammar(receipt, data)
        if why:
            raise InvalidReceipt(why)
        return receipt


# --- what no type says ---------------------------------------------------------------------------


_INTERVAL = "an interval (two numbers, low then high)"


@dataclass(frozen=True, kw_only=True)
class _VerdictData:
    """A canary verdict's JSON (:class:`tfbuild.core.stats.Verdict`, whose fields say no grammar):
    each figure non-negative, each count whole, the label one of core.stats' verdicts."""

    label: Annotated[
        str, grammar(f"a verdict ({', '.join(LABELS)})", "|".join(map(re.escape, LABELS)))
    ]
    ratio: _Figure
    interval: Annotated[tuple[_Figure, _Figure], grammar(_INTERVAL)]  # low <= high: _grammar
    confidence: _Figure
    margin: _Figure
    paired: bool
    n_candidate: Count
    n_baseline: Count
    looks: Count
    cv_candidate: _Figure
    cv_baseline: _Figure
    spread: _Figure  # computed again from the interval when the Verdict is made


#: Types read as others that say their grammar, where a message explains a refusal.
_CHECKED_AS: dict[type, type] = {Verdict: _VerdictData}


def _grammar(receipt: Receipt, data: dict[str, Any]) -> str | None:
    """Why a receipt whose every field fits its type breaks a rule no type says, or None."""
    try:
        datetime.fromisoformat(receipt.created)
    except ValueError:
        return holds("created", receipt.created, "an ISO 8601 time")
    if "canary" in data and data["canary"] is None:  # a section not added is no key, never null
        return "its canary holds NoneType, not an object"
    canary = receipt.canary
    if canary is None:
        return None
    if len(set(canary.isa.expected)) != len(canary.isa.expected):
        return holds(
            "canary.isa.expected", data["canary"]["isa"]["expected"], "instructions, each once"
        )
    if canary.judged is None:
        return None
    written = data["canary"]["verdict"]
    why = explain(written, _VerdictData, "canary.verdict")
    low, high = canary.judged.interval
    if why is None and low > high:
        why = holds("canary.verdict.interval", written["interval"], _INTERVAL)
    return why


# --- decoding: bounded, typed ---------------------------------------------------------------------


def decode_receipt(raw: bytes, *, source: str, charset: str = "utf-8") -> Receipt:
    """The receipt in ``raw`` (a file's bytes, an HTTP body), read from ``source`` (a path or URL,
    for the message): bounded in size, nesting and numbers, every field checked. Anything else is
    one :class:`InputError` (exit 3) saying why."""
    try:
        data = load_json(raw, charset=charset)
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError too
        raise InputError(f"{source} is not a tfbuild receipt", why=str(exc), fix=READ_FIX) from None
    try:
        return Receipt.from_json(data)
    except InvalidReceipt as exc:
        raise InputError(f"{source} is not a usable receipt", why=str(exc), fix=READ_FIX) from None


def read_receipt(path: Path, *, wheel: Path | None = None) -> Receipt:
    """The receipt at ``path`` (of ``wheel``, when given); one InputError line for anything else."""
    return read_receipt_file(path, wheel=wheel, decode=decode_receipt, fix=READ_FIX)
