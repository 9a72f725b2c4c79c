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
bytes (a file, an HTTP body), bounded in size, nesting and numbers, and :meth:`Receipt.from_json`
checks every field to its type and grammar (known keys only, sha256 hex, Debian package names and
versions, ...), so that no value read from a receipt reaches a shell, a path or a Docker call
unchecked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeVar

from tfbuild.core import serial
from tfbuild.core.controls import control_in
from tfbuild.core.errors import InputError
from tfbuild.core.files import read_input
from tfbuild.core.stats import LABELS, Verdict
from tfbuild.core.variants import Variant

SCHEMA: Final = "tfbuild.receipt/2"
#: Schemas this tfbuild can read. /1 receipts (tfbuild 0.1 before reproducible builds) lack the
#: inputs a rebuild needs.
READABLE = (SCHEMA,)


class InvalidReceipt(ValueError):
    """A receipt that cannot be used; the message says why, in a clause."""


def canonical_sha256(data: Any) -> str:
    """The sha256 of ``data`` as canonical JSON (sorted keys, no spaces): the same on any machine."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def receipt_path(wheel: Path) -> Path:
    """Where a wheel's receipt lives: beside it, ``<wheel stem>.json``."""
    return wheel.with_suffix(".json")


# --- the grammars of the values a receipt holds ---------------------------------------------------

_SHA256 = re.compile(r"[0-9a-f]{64}")
_IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")
_GIT_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: Debian policy 5.6.1: lower case letters, digits, + - . ; at least two, starting alphanumeric.
DEBIAN_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+")
#: deb-version(7): ``[epoch:]upstream_version[-debian_revision]``. The epoch is digits; the upstream
#: version starts with a digit and holds letters, digits and ``. + ~`` (``-`` only with a revision,
#: ``:`` only with an epoch); the revision holds letters, digits and ``. + ~``.
_DEBIAN_VERSION = re.compile(
    r"(?:(?P<epoch>[0-9]+):)?(?P<upstream>[0-9][A-Za-z0-9.+~:-]*?)(?:-(?P<revision>[A-Za-z0-9.+~]+))?"
)
#: A Docker image reference: ``[registry/]repository[:tag][@sha256:digest]`` (no spaces, no shell).
_IMAGE_REFERENCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:-]*(?:@sha256:[0-9a-f]{64})?")
_WHEEL_NAME = re.compile(r"[A-Za-z0-9_.+!-]+\.whl")
_FILE_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+!-]*")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")  # build ids, targets, tool names, versions
_LABEL = re.compile(r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*")  # a PEP 440 local version label
_CFLAG = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_=.,+/:-]*")
_DOTTED = re.compile(r"[0-9]+(?:\.[0-9]+)*")
MAX_TEXT = 4096  # characters of one text field
MAX_SIZE = 1 << 40  # bytes of a wheel (1 TiB); counts and seconds are bounded alike
MAX_COUNT = 1 << 53


def is_debian_version(text: str) -> bool:
    """Is ``text`` a Debian version (deb-version(7)), as apt takes it in ``name=version``?"""
    if not isinstance(text, str) or len(text) > 256:
        return False
    found = _DEBIAN_VERSION.fullmatch(text)
    if found is None:
        return False
    upstream = found.group("upstream")
    if found.group("epoch") is None and ":" in upstream:
        return False
    return found.group("revision") is not None or "-" not in upstream


def is_debian_package(text: str) -> bool:
    """Is ``text`` a Debian package name (policy 5.6.1)?"""
    return isinstance(text, str) and len(text) <= 256 and DEBIAN_PACKAGE.fullmatch(text) is not None


@dataclass(frozen=True, kw_only=True)
class WheelRecord:
    name: str
    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class SourceRecord:
    """Where the source tree came from, by content: a tarball's sha256, or a checkout's commit."""

    kind: Literal["tarball", "directory"]
    url: str | None = None  # the tarball's URL
    sha256: str | None = None  # the tarball's sha256
    pinned: bool = (
        False  # the sha256 was pinned (recipe, --source-sha256, a receipt), not first-seen
    )
    path: str | None = None  # a directory's path on the build host (informative only)
    commit: str | None = None  # a git checkout's HEAD
    dirty: bool | None = None  # a git checkout with uncommitted changes
    epoch: int | None = None  # SOURCE_DATE_EPOCH taken from the source

    @property
    def identity(self) -> str:
        """What names the content: ``sha256:<hex>``, ``git:<commit>``, or the path (no identity)."""
        if self.sha256:
            return f"sha256:{self.sha256}"
        if self.commit and not self.dirty:
            return f"git:{self.commit}"
        return f"path:{self.path}"


@dataclass(frozen=True, kw_only=True)
class Inputs:
    """Every input of the build, each by an identity that a rebuild can check."""

    tfbuild: str
    recipe: str  # the recipe file as the plan names it (recipes/tf-2.21.yaml)
    recipe_sha256: str | None  # None for the canary's derived recipe
    source: SourceRecord
    base_image: str  # image@sha256:digest, or a local tag
    base_image_id: str | None  # a local image's id (tfbuild base)
    toolchain_image: str  # tfbuild/toolchain:<hash>
    toolchain_image_id: str | None
    packages: dict[str, str] = field(default_factory=dict)  # name -> version in the toolchain
    tools: dict[str, str] = field(default_factory=dict)  # bazel, bazelisk, compiler, python
    snapshot: str | None = None  # the distribution snapshot the packages came from
    #: Where a remote executor ran the actions: the pushed toolchain image, registry/repo@sha256.
    exec_image: str | None = None

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

    glibc: str | None  # "2.27": the newest GLIBC_ symbol version needed; None when none is
    libstdcxx: str | None  # "3.4.22": the newest GLIBCXX_ version needed
    libgcc: str | None  # "7.0.0": the newest GCC_ (libgcc_s) version needed
    policy: str | None  # "manylinux_2_27_x86_64"; None: no manylinux policy allows the wheel
    #: With no policy, what keeps it out: symbol versions ("GLIBC_2.39"), libraries no policy
    #: allows (their soname), blacklisted symbols ("symbol (library)").
    too_new: tuple[str, ...] = ()
    tool: str = ""  # "auditwheel 6.8.2"

    @property
    def needs(self) -> str:
        """What it needs, for people: "glibc 2.27, libstdc++ 3.4.22" ("" when nothing versioned)."""
        parts = [f"glibc {self.glibc}"] if self.glibc else []
        if self.libstdcxx:
            parts.append(f"libstdc++ {self.libstdcxx}")
        return ", ".join(parts)


@dataclass(frozen=True, kw_only=True)
class BuildHost:
    """Facts about the machine at the moment of the build (none of them an input of the wheel).
    Each is None in a receipt that does not record it."""

    engine: str | None = None  # the container engine's endpoint
    toolchain_image_built: bool | None = None  # built by this build (False: reused)
    disk_free_gib: float | None = None  # free disk in dist/ after the build
    cpus: int | None = None
    user: str | None = None  # uid:gid the build ran as


@dataclass(frozen=True, kw_only=True)
class BuildAttempt:
    """One run of the build script: the build halves its jobs and runs again after an OOM kill."""

    jobs: int
    exit_code: int
    oom_killed: bool
    seconds: float


#: The canary's two builds (``tfbuild doctor``): for this machine, and for the x86_64 baseline.
CanaryBuildName = Literal["host", "baseline"]
CANARY_BUILDS: tuple[CanaryBuildName, ...] = ("host", "baseline")
#: The instructions the canary's probe counts in each build's library (objdump): 512-bit and
#: 256-bit vector registers, and fused multiply-adds.
Instruction = Literal["zmm", "ymm", "fma"]
INSTRUCTIONS: tuple[Instruction, ...] = ("zmm", "ymm", "fma")
#: The most characters of a canary wheel's errors a receipt may hold (doctor keeps the last 2000).
MAX_STDERR = 16384


@dataclass(frozen=True, kw_only=True)
class InstructionCheck:
    """The canary's instruction check: the host build holds what its plan enabled (``expected``),
    the baseline none of them."""

    expected: tuple[Instruction, ...]  # the widest vectors and FMA, when planned
    #: Each build's counts (an instruction not counted is absent); empty when none were counted.
    found: dict[CanaryBuildName, dict[Instruction, int]]
    ok: bool


@dataclass(frozen=True, kw_only=True)
class SmokeOutcome:
    """Whether a canary wheel installed, imported and ran; when it did not, its exit code and the
    last lines of its errors (keys absent when there is none to say)."""

    ok: bool
    exit_code: int | serial.Unset = serial.UNSET
    stderr: str | serial.Unset = serial.UNSET  # its last lines


@dataclass(frozen=True, kw_only=True)
class CanaryCheck:
    """doctor's canary section of the host build's receipt: its instruction check, both wheels'
    smoke, and their kernels timed side by side."""

    standin: bool = True  # the canary is a STAND-IN, not TensorFlow
    isa: InstructionCheck
    smoke: dict[CanaryBuildName, SmokeOutcome]
    median_ms: dict[CanaryBuildName, float]  # each kernel's median milliseconds per call
    rounds: int  # pairs timed
    speedup: float | None  # the verdict's ratio to two decimals; None: not timed
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


#: Sections other commands add to a published receipt (``update_receipt``): doctor's canary check.
SECTIONS = ("canary",)


@dataclass(frozen=True, kw_only=True)
class Receipt:
    """A wheel's receipt. ``canary`` is what another command adds later (doctor's check)."""

    schema: Literal["tfbuild.receipt/2"] = SCHEMA
    build_id: str
    created: str
    standin: bool
    wheel: WheelRecord
    target: str
    variant: str
    label: str | None
    cflags: tuple[str, ...]
    inputs: Inputs
    #: The canonical sha256 of ``inputs`` as the build wrote them (``Inputs.sha256``); None in a
    #: receipt written before tfbuild recorded it, whose inputs no hash covers.
    inputs_sha256: str | None = None
    host: BuildHost = field(default_factory=BuildHost)  # facts about the moment: disk, engine
    timings: dict[str, float] = field(default_factory=dict)
    attempts: tuple[BuildAttempt, ...] = ()
    runtime_env_file: str | None = None
    log: str | None = None
    #: The glibc/libstdc++/libgcc floor and manylinux policy (None: not inspected, e.g. the canary
    #: before tfbuild inspected wheels).
    floor: WheelFloor | None = None
    #: bazel's own summary of the build's processes (its ``INFO: N processes: 1 remote cache hit,
    #: 1 internal, 3 local.`` line: kind -> count, ``total`` the N); empty when none was printed.
    processes: dict[str, int] = field(default_factory=dict)
    #: bazel's count of actions taken from the remote cache (``--remote-cache``); None without one.
    remote_cache_hits: int | None = None
    plan_sha256: str
    #: The plan as the build wrote it (its JSON: this module sits below the planner, and the plan's
    #: hash is of this data); ``plan.decode.decode_plan`` reads it as a plan.
    plan: dict[str, Any]
    #: doctor's canary check (instruction sets found, speedup), added to the published receipt by
    #: ``update_receipt``; written only once added.
    canary: CanaryCheck | None = None

    @property
    def sections(self) -> dict[str, CanaryCheck]:
        """The sections other commands added, by name."""
        return {"canary": self.canary} if self.canary is not None else {}

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

    # hand-written: a section not added (None) is written as no key, not as null
    def to_json(self) -> dict[str, Any]:
        """The receipt as JSON data: its fields in order, the sections at the top level last."""
        data: dict[str, Any] = serial.to_data(self)
        for name in SECTIONS:
            if data[name] is None:  # not added: no key
                del data[name]
        return data

    # hand-written: untrusted input, every field checked to its grammar before it is a value
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
                f"its schema is {_short(shown)!r}; this tfbuild reads {', '.join(READABLE)}"
            )
        found = _known(data, "the receipt", tuple(f.name for f in dataclasses.fields(Receipt)))
        for key in ("wheel", "inputs", "build_id", "created", "target", "variant", "plan"):
            if key not in found:
                raise InvalidReceipt(f"it is malformed: it has no {key!r}")
        wheel = _fields(found["wheel"], "wheel", WheelRecord)
        for key in ("name", "sha256", "size"):
            if key not in wheel:
                raise InvalidReceipt(f"it is malformed: its wheel has no {key!r}")
        checked = _RECEIPT(found, "the receipt")
        try:
            return serial.from_data({**checked, "schema": SCHEMA}, Receipt)
        except serial.DecodeFailure as exc:  # every value was checked: a required key is absent
            raise InvalidReceipt(f"it is malformed: {exc}") from None


# --- decoding: bounded, typed ----------------------------------------------------------------------

#: Bounds on what a reader parses: a receipt is a few tens of KiB, nested about ten levels deep.
MAX_RECEIPT_BYTES = 16 << 20
MAX_RECEIPT_DEPTH = 64
#: The longest number a receipt holds (a size, a count, seconds): digits and signs, exponent.
MAX_NUMBER_CHARS = 32

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
            raise ValueError(f"it holds the key {_short(key)!r} twice in one object")
        found[key] = value
    return found


def _unicode(value: Any) -> None:
    """Every string (keys too) is text that encodes: no lone surrogate from a ``\\ud800`` escape."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(
                    "it holds a lone surrogate (\\ud800-\\udfff) in a string"
                ) from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


#: What to do about a receipt that cannot be read.
READ_FIX = "Rebuild the wheel with tfbuild wheel, which writes its receipt beside it."


def decode_receipt(
    raw: bytes, *, source: str, charset: str = "utf-8", fix: str = READ_FIX
) -> Receipt:
    """The receipt in ``raw`` (a file's bytes, an HTTP body), read from ``source`` (a path or URL,
    for the message): bounded in size, nesting and numbers, every field checked. Anything else is
    one :class:`InputError` (exit 3) saying why."""
    what = f"{source} is not a tfbuild receipt"
    if len(raw) > MAX_RECEIPT_BYTES:
        why = f"it is larger than {MAX_RECEIPT_BYTES >> 20} MiB"
        raise InputError(what, why=why, fix=fix)
    try:
        text = raw.decode(charset)
    except (UnicodeDecodeError, LookupError) as exc:
        raise InputError(what, why=str(exc), fix=fix) from None
    if json_depth(raw, limit=MAX_RECEIPT_DEPTH) > MAX_RECEIPT_DEPTH:
        why = f"it nests deeper than {MAX_RECEIPT_DEPTH} levels"
        raise InputError(what, why=why, fix=fix)
    try:
        data = json.loads(
            text,
            parse_int=lambda t: _number(t, int),
            parse_float=lambda t: _number(t, float),
            parse_constant=_constant,
            object_pairs_hook=_unique,
        )
        _unicode(data)
    except RecursionError:  # not reached after json_depth; kept so that it can never escape
        why = f"it nests deeper than {MAX_RECEIPT_DEPTH} levels"
        raise InputError(what, why=why, fix=fix) from None
    except ValueError as exc:  # json.JSONDecodeError too
        raise InputError(what, why=str(exc), fix=fix) from None
    try:
        return Receipt.from_json(data)
    except InvalidReceipt as exc:
        raise InputError(f"{source} is not a usable receipt", why=str(exc), fix=fix) from None


class _OfAWheel(Protocol):
    @property
    def wheel(self) -> WheelRecord: ...


_R = TypeVar("_R", bound=_OfAWheel)


def read_receipt_file(
    path: Path, *, wheel: Path | None, decode: Callable[[bytes, str], _R], fix: str
) -> _R:
    """The receipt at ``path``, read bounded and decoded by ``decode(raw, source)`` (a build's or an
    overlay's decoder), and of ``wheel`` when given; one InputError line for anything else."""
    try:
        # One byte over the bound is read, so that the decoder says "larger than" for every source.
        raw = read_input(path, limit=MAX_RECEIPT_BYTES + 1, what=f"the receipt {path}", fix=fix)
    except FileNotFoundError:
        what = f"{wheel.name} has no receipt" if wheel else f"no receipt at {path}"
        raise InputError(what, why=f"{path} does not exist", fix=fix) from None
    receipt = decode(raw, str(path))
    if wheel is not None and receipt.wheel.name != wheel.name:
        raise InputError(
            f"{path} is not the receipt of {wheel.name}",
            why=f"it describes {receipt.wheel.name}",
            fix=fix,
        )
    return receipt


def read_receipt(path: Path, *, wheel: Path | None = None) -> Receipt:
    """The receipt at ``path`` (of ``wheel``, when given); one InputError line for anything else."""
    return read_receipt_file(
        path,
        wheel=wheel,
        decode=lambda raw, source: decode_receipt(raw, source=source),
        fix=READ_FIX,
    )


# --- field readers: each checks one value to its type and grammar -----------------------------------


def _short(value: Any) -> Any:
    """A value as a message may quote it: text cut to 60 characters."""
    return value[:60] + "..." if isinstance(value, str) and len(value) > 60 else value


def _bad(name: str, value: Any, wanted: str) -> InvalidReceipt:
    if isinstance(value, dict | list):
        held = f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    else:
        held = repr(_short(value))
    return InvalidReceipt(f"its {name} holds {held}, not {wanted}")


def _text(value: Any, name: str) -> str:
    """One line of text for people: not empty, bounded, no control character (core.controls)."""
    if not isinstance(value, str) or not value:
        raise _bad(name, value, "text")
    if len(value) > MAX_TEXT or control_in(value) is not None:
        raise _bad(name, value, f"one line of text (at most {MAX_TEXT} characters, no controls)")
    return value


def _matching(pattern: re.Pattern[str], wanted: str) -> Callable[[Any, str], str]:
    def check(value: Any, name: str) -> str:
        if not isinstance(value, str) or len(value) > 1024 or not pattern.fullmatch(value):
            raise _bad(name, value, wanted)
        return value

    return check


_sha256 = _matching(_SHA256, "a sha256 (64 lowercase hex digits)")
_image_id = _matching(_IMAGE_ID, "an image id (sha256: and 64 lowercase hex digits)")
_commit = _matching(_GIT_COMMIT, "a git commit (40 or 64 lowercase hex digits)")
_image = _matching(_IMAGE_REFERENCE, "a Docker image reference")
_wheel_name = _matching(_WHEEL_NAME, "a wheel file name")
_file_name = _matching(_FILE_NAME, "a file name")
_word = _matching(_WORD, "a name (letters, digits, _ . + -)")
_label = _matching(_LABEL, "a local version label (letters and digits, separated by . _ -)")
_cflag = _matching(_CFLAG, "a compiler flag")
_dotted = _matching(_DOTTED, "a version (digits and dots)")


def _package(value: Any, name: str) -> str:
    if not is_debian_package(value):
        raise _bad(name, value, "a Debian package name")
    return str(value)


def _version(value: Any, name: str) -> str:
    if not is_debian_version(value):
        raise _bad(name, value, "a Debian version ([epoch:]upstream[-revision])")
    return str(value)


def _url(value: Any, name: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"https?://[!-~]+", value):
        raise _bad(name, value, "an http(s) URL")
    return _text(value, name)


def _timestamp(value: Any, name: str) -> str:
    text = _text(value, name)
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise _bad(name, value, "an ISO 8601 time") from None
    return text


def _variant(value: Any, name: str) -> str:
    if not isinstance(value, str) or value not in {v.value for v in Variant}:
        raise _bad(name, value, f"a variant ({', '.join(v.value for v in Variant)})")
    return str(value)


def _bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(name, value, "true or false")
    return value


def _integer(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > MAX_COUNT:
        raise _bad(name, value, "an integer")
    return value


def _count(value: Any, name: str) -> int:
    """A non-negative integer in a sane range (a size, a count, an epoch); a bool is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SIZE:
        raise _bad(name, value, f"a whole number from 0 to {MAX_SIZE}")
    return value


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(name, value, "a number")
    if not (math.isfinite(value) and 0 <= value <= MAX_COUNT):
        raise _bad(name, value, "a non-negative number")
    return float(value) if isinstance(value, float) else value


def _optional(value: Any, name: str, check: Callable[[Any, str], Any]) -> Any:
    return None if value is None else check(value, name)


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidReceipt(f"its {name} holds {type(value).__name__}, not an object")
    return value


def _list(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidReceipt(f"its {name} holds {type(value).__name__}, not a list")
    return value


def _known(value: Any, name: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """``value`` as an object whose every key is one of ``keys``; an unknown one is named."""
    found = _object(value, name)
    unknown = sorted(k for k in found if k not in keys)
    if unknown:
        listed = ", ".join(repr(_short(k)) for k in unknown[:3])
        raise InvalidReceipt(f"{name} has the unknown key {listed}: tfbuild writes no such key")
    return found


def _fields(value: Any, name: str, kind: type) -> dict[str, Any]:
    """An object with the fields of the dataclass ``kind`` only."""
    return _known(value, name, tuple(f.name for f in dataclasses.fields(kind)))


def _mapping(
    value: Any, name: str, key: Callable[[Any, str], str], item: Callable[[Any, str], Any]
) -> dict[str, Any]:
    return {
        key(k, f"{name} key"): item(v, f"{name}[{_short(k)!r}]")
        for k, v in _object(value, name).items()
    }


def _kind(value: Any) -> Literal["tarball", "directory"]:
    if value == "tarball":
        return "tarball"
    if value == "directory":
        return "directory"
    raise InvalidReceipt(f"the source kind is {_short(value)!r}, not tarball or directory")


Check = Callable[[Any, str], Any]


def _maybe(check: Check) -> Check:
    return lambda value, name: _optional(value, name, check)


def _each(check: Check) -> Check:
    """A list, each item checked (under the list's name)."""
    return lambda value, name: [check(item, name) for item in _list(value, name)]


def _pairs(key: Check, item: Check) -> Check:
    return lambda value, name: _mapping(value, name, key, item)


def _record(keys: dict[str, Check], *, required: tuple[str, ...] = (), top: bool = False) -> Check:
    """An object with ``keys`` only, each present one checked (a ``required`` one as None when it
    is absent, so that its check says what it should hold): the checked values, which
    :func:`tfbuild.core.serial.from_data` then builds into their type (absent: the default)."""

    def record(value: Any, name: str) -> dict[str, Any]:
        found = _known(value, name, tuple(keys))
        return {
            key: check(found.get(key), key if top else f"{name}.{key}")
            for key, check in keys.items()
            if key in found or key in required
        }

    return record


_SOURCE = _record(
    {
        "kind": lambda value, _: _kind(value),
        "url": _maybe(_url),
        "sha256": _maybe(_sha256),
        "pinned": _bool,
        "path": _maybe(_text),
        "commit": _maybe(_commit),
        "dirty": _maybe(_bool),
        "epoch": _maybe(_count),
    },
    required=("kind",),
)
_INPUTS = _record(
    {
        "tfbuild": _word,
        "recipe": _text,
        "recipe_sha256": _maybe(_sha256),
        "source": _SOURCE,
        "base_image": _image,
        "base_image_id": _maybe(_image_id),
        "toolchain_image": _image,
        "toolchain_image_id": _maybe(_image_id),
        "packages": _pairs(_package, _version),
        "tools": _pairs(_word, _text),
        "snapshot": _maybe(_word),
        "exec_image": _maybe(_image),
    },
    required=("tfbuild", "recipe", "source", "base_image", "toolchain_image"),
)
_FLOOR = _record(
    {
        "glibc": _maybe(_dotted),
        "libstdcxx": _maybe(_dotted),
        "libgcc": _maybe(_dotted),
        "policy": _maybe(_word),
        "too_new": _each(_text),
        "tool": lambda value, name: _text(value, name) if value else "",
    }
)
#: What ``host`` holds: facts about the moment of the build, each with its type.
_HOST = _record(
    {
        "engine": _maybe(_text),
        "toolchain_image_built": _maybe(_bool),
        "disk_free_gib": _maybe(_seconds),  # a non-negative finite number
        "cpus": _maybe(_count),
        "user": _maybe(_text),
    }
)
_ATTEMPT_KEYS: dict[str, Check] = {
    "jobs": _count,
    "exit_code": _integer,
    "oom_killed": _bool,
    "seconds": _seconds,
}
_ATTEMPT = _record(_ATTEMPT_KEYS, required=tuple(_ATTEMPT_KEYS))


# --- doctor's canary section -------------------------------------------------------------------------


def _one_of(values: tuple[str, ...], wanted: str) -> Check:
    def check(value: Any, name: str) -> str:
        if not isinstance(value, str) or value not in values:
            raise _bad(name, value, wanted)
        return value

    return check


_canary_build = _one_of(CANARY_BUILDS, "a canary build (host or baseline)")
_instruction = _one_of(INSTRUCTIONS, "an instruction (zmm, ymm or fma)")


def _instructions(value: Any, name: str) -> list[str]:
    found: list[str] = _each(_instruction)(value, name)
    if len(set(found)) != len(found):
        raise _bad(name, value, "instructions, each once")
    return found


def _stderr(value: Any, name: str) -> str:
    """The last lines of a program's errors: bounded text whose only controls are line breaks and
    tabs (core.controls)."""
    if not isinstance(value, str) or len(value) > MAX_STDERR:
        raise _bad(name, value, f"text (at most {MAX_STDERR} characters)")
    if control_in(value.replace("\n", " ").replace("\t", " ")) is not None:
        raise _bad(name, value, "lines of text (no controls but line breaks and tabs)")
    return value


def _interval(value: Any, name: str) -> list[float]:
    found: list[float] = _each(_seconds)(value, name)
    if len(found) != 2 or found[0] > found[1]:
        raise _bad(name, value, "an interval (two numbers, low then high)")
    return found


_VERDICT_KEYS: dict[str, Check] = {
    "label": _one_of(LABELS, f"a verdict ({', '.join(LABELS)})"),
    "ratio": _seconds,  # a non-negative finite number, as each figure here
    "interval": _interval,
    "confidence": _seconds,
    "margin": _seconds,
    "paired": _bool,
    "n_candidate": _count,
    "n_baseline": _count,
    "looks": _count,
    "cv_candidate": _seconds,
    "cv_baseline": _seconds,
    "spread": _seconds,  # computed again from the interval when the Verdict is made
}
_VERDICT = _record(_VERDICT_KEYS, required=tuple(_VERDICT_KEYS))

_SMOKE_OUTCOME = _record({"ok": _bool, "exit_code": _integer, "stderr": _stderr}, required=("ok",))
#: doctor's canary section (CanaryCheck); ``speedup`` has no default: its absence is refused by
#: the type.
_CANARY = _record(
    {
        "standin": _bool,
        "isa": _record(
            {
                "expected": _instructions,
                "found": _pairs(_canary_build, _pairs(_instruction, _count)),
                "ok": _bool,
            },
            required=("expected", "found", "ok"),
        ),
        "smoke": _pairs(_canary_build, _SMOKE_OUTCOME),
        "median_ms": _pairs(_canary_build, _seconds),
        "rounds": _count,
        "speedup": _maybe(_seconds),
        "verdict": _maybe(_VERDICT),
    },
    required=("isa", "smoke", "median_ms", "rounds"),
)
#: The receipt's keys, each with its check, in the order they are checked.
_RECEIPT = _record(
    {
        "schema": lambda value, _: value,  # checked first, by Receipt.from_json
        "build_id": _word,
        "created": _timestamp,
        "standin": _bool,
        "wheel": _record({"name": _wheel_name, "sha256": _sha256, "size": _count}),
        "target": _word,
        "variant": _variant,
        "label": _maybe(_label),
        "cflags": _each(_cflag),
        "plan": _object,
        "plan_sha256": _sha256,
        "inputs": _INPUTS,
        "inputs_sha256": _maybe(_sha256),
        "host": _HOST,
        "timings": _pairs(_word, _seconds),
        "attempts": _each(_ATTEMPT),
        "runtime_env_file": _maybe(_file_name),
        "log": _maybe(_text),
        "floor": _maybe(_FLOOR),
        "processes": _pairs(_text, _count),
        "remote_cache_hits": _maybe(_count),
        "canary": _CANARY,
    },
    required=("plan_sha256",),
    top=True,
)
