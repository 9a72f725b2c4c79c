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
bytes (a file, an HTTP body), bounded in size, nesting and numbers
(:func:`tfbuild.wheel.receipt_types.load_json`). Every field's grammar is its type (known keys only,
sha256 hex, Debian package names and versions, ...: :mod:`tfbuild.wheel.receipt_types`), which
:meth:`Receipt.from_json` decodes through :func:`tfbuild.core.serial.from_data`, then holds to the
few rules no type says (:func:`_grammar`), so that no value read from a receipt reaches a shell, a
path or a Docker call unchecked.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from tfbuild.core import serial
from tfbuild.core.errors import InputError
from tfbuild.core.stats import LABELS, Verdict
from tfbuild.core.variants import Variant
from tfbuild.wheel.receipt_types import (
    DEBIAN_PACKAGE,
    LINE_CHAR,
    MAX_COUNT,
    MAX_NUMBER_CHARS,
    MAX_RECEIPT_BYTES,
    MAX_RECEIPT_DEPTH,
    MAX_SIZE,
    MAX_TEXT,
    Count,
    DebianPackage,
    DebianVersion,
    ImageId,
    Sha256,
    Text,
    WheelRecord,
    explain,
    grammar,
    holds,
    is_debian_package,
    is_debian_version,
    json_depth,
    load_json,
    read_receipt_file,
    short,
)

__all__ = [
    "CANARY_BUILDS",
    "DEBIAN_PACKAGE",
    "INSTRUCTIONS",
    "MAX_COUNT",
    "MAX_NUMBER_CHARS",
    "MAX_RECEIPT_BYTES",
    "MAX_RECEIPT_DEPTH",
    "MAX_SIZE",
    "MAX_STDERR",
    "MAX_TEXT",
    "READABLE",
    "READ_FIX",
    "SCHEMA",
    "SECTIONS",
    "BuildAttempt",
    "BuildHost",
    "CanaryBuildName",
    "CanaryCheck",
    "Inputs",
    "Instruction",
    "InstructionCheck",
    "InvalidReceipt",
    "Receipt",
    "SmokeOutcome",
    "SourceRecord",
    "WheelFloor",
    "WheelRecord",
    "canonical_sha256",
    "decode_receipt",
    "is_debian_package",
    "is_debian_version",
    "json_depth",
    "read_receipt",
    "read_receipt_file",
    "receipt_path",
]

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


# --- the grammars of the values only a build's receipt holds (receipt_types has the shared ones) ---

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
_TextOrEmpty = Annotated[
    str,
    grammar(
        f"one line of text (at most {MAX_TEXT} characters, no controls)",
        f"{LINE_CHAR}*",
        max_length=MAX_TEXT,
    ),
]


@dataclass(frozen=True, kw_only=True)
class SourceRecord:
    """Where the source tree came from, by content: a tarball's sha256, or a checkout's commit."""

    kind: Literal["tarball", "directory"]
    url: _Url | None = None  # the tarball's URL
    sha256: Sha256 | None = None  # the tarball's sha256
    pinned: bool = (
        False  # the sha256 was pinned (recipe, --source-sha256, a receipt), not first-seen
    )
    path: Text | None = None  # a directory's path on the build host (informative only)
    commit: _GitCommit | None = None  # a git checkout's HEAD
    dirty: bool | None = None  # a git checkout with uncommitted changes
    epoch: Count | None = None  # SOURCE_DATE_EPOCH taken from the source

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
        parts = [f"glibc {self.glibc}"] if self.glibc else []
        if self.libstdcxx:
            parts.append(f"libstdc++ {self.libstdcxx}")
        return ", ".join(parts)


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


#: Sections other commands add to a published receipt (``update_receipt``): doctor's canary check.
SECTIONS = ("canary",)


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
            why = explain(data, Receipt, instead=_CHECKED_AS)
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
    for name in SECTIONS:  # a section not added is no key, never null
        if name in data and data[name] is None:
            return f"its {name} holds NoneType, not an object"
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


def decode_receipt(
    raw: bytes, *, source: str, charset: str = "utf-8", fix: str = READ_FIX
) -> Receipt:
    """The receipt in ``raw`` (a file's bytes, an HTTP body), read from ``source`` (a path or URL,
    for the message): bounded in size, nesting and numbers, every field checked. Anything else is
    one :class:`InputError` (exit 3) saying why."""
    try:
        data = load_json(raw, charset=charset)
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError too
        raise InputError(f"{source} is not a tfbuild receipt", why=str(exc), fix=fix) from None
    try:
        return Receipt.from_json(data)
    except InvalidReceipt as exc:
        raise InputError(f"{source} is not a usable receipt", why=str(exc), fix=fix) from None


def read_receipt(path: Path, *, wheel: Path | None = None) -> Receipt:
    """The receipt at ``path`` (of ``wheel``, when given); one InputError line for anything else."""
    return read_receipt_file(
        path,
        wheel=wheel,
        decode=lambda raw, source: decode_receipt(raw, source=source),
        fix=READ_FIX,
    )
