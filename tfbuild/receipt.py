"""The receipt: what a wheel is, and every input that made it (``<wheel>.json`` beside the wheel).

One frozen type with a schema version, written by ``tfbuild wheel`` and read by every command that
looks at a wheel (``smoke``, ``index``, ``pick``, ``verify``, ``wheel --from-receipt``, ``doctor``).
The plan travels as its JSON (this module sits below the planner, so that the reading side needs no
planner) together with its sha256, so a receipt whose plan was edited after the build is refused.

Every input has an identity here: the source (tarball sha256 or git commit), the recipe file's
sha256, the base image (digest or id), the toolchain image's id, every package installed in it with
its exact version, bazel, bazelisk, the compiler, and tfbuild itself. Facts about the moment of the
build (free disk, the engine, timings) are kept apart from the plan, under ``host`` and ``timings``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tfbuild.errors import InputError
from tfbuild.files import read_input

SCHEMA = "tfbuild.receipt/2"
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


@dataclass(frozen=True, kw_only=True)
class WheelRecord:
    name: str
    sha256: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "size": self.size}


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

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "url": self.url,
            "sha256": self.sha256,
            "pinned": self.pinned,
            "path": self.path,
            "commit": self.commit,
            "dirty": self.dirty,
            "epoch": self.epoch,
        }

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

    def to_json(self) -> dict[str, Any]:
        return {
            "tfbuild": self.tfbuild,
            "recipe": self.recipe,
            "recipe_sha256": self.recipe_sha256,
            "source": self.source.to_json(),
            "base_image": self.base_image,
            "base_image_id": self.base_image_id,
            "toolchain_image": self.toolchain_image,
            "toolchain_image_id": self.toolchain_image_id,
            "packages": dict(sorted(self.packages.items())),
            "tools": dict(sorted(self.tools.items())),
            "snapshot": self.snapshot,
            "exec_image": self.exec_image,
        }


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

    def to_json(self) -> dict[str, Any]:
        return {
            "glibc": self.glibc,
            "libstdcxx": self.libstdcxx,
            "libgcc": self.libgcc,
            "policy": self.policy,
            "too_new": list(self.too_new),
            "tool": self.tool,
        }

    @staticmethod
    def from_json(data: Any) -> WheelFloor:
        found = _object(data, "floor")
        return WheelFloor(
            glibc=_optional(found.get("glibc"), "floor.glibc"),
            libstdcxx=_optional(found.get("libstdcxx"), "floor.libstdcxx"),
            libgcc=_optional(found.get("libgcc"), "floor.libgcc"),
            policy=_optional(found.get("policy"), "floor.policy"),
            too_new=tuple(_text(t, "floor.too_new") for t in found.get("too_new") or ()),
            tool=str(found.get("tool") or ""),
        )


@dataclass(frozen=True, kw_only=True)
class Receipt:
    """A wheel's receipt. ``sections`` holds what other commands add later (doctor's ``canary``)."""

    build_id: str
    created: str
    standin: bool
    wheel: WheelRecord
    target: str
    variant: str
    label: str | None
    cflags: tuple[str, ...]
    plan: dict[str, Any]
    plan_sha256: str
    inputs: Inputs
    host: dict[str, Any] = field(default_factory=dict)  # facts about the moment: disk, engine
    timings: dict[str, float] = field(default_factory=dict)
    attempts: tuple[dict[str, Any], ...] = ()
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
    sections: dict[str, Any] = field(default_factory=dict)

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

    # --- JSON ---------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "build_id": self.build_id,
            "created": self.created,
            "standin": self.standin,
            "wheel": self.wheel.to_json(),
            "target": self.target,
            "variant": self.variant,
            "label": self.label,
            "cflags": list(self.cflags),
            "inputs": self.inputs.to_json(),
            "host": self.host,
            "timings": self.timings,
            "attempts": list(self.attempts),
            "runtime_env_file": self.runtime_env_file,
            "log": self.log,
            "floor": self.floor.to_json() if self.floor else None,
            "processes": self.processes,
            "remote_cache_hits": self.remote_cache_hits,
            "plan_sha256": self.plan_sha256,
            "plan": self.plan,
            **self.sections,
        }

    @staticmethod
    def from_json(data: Any) -> Receipt:
        """A receipt from its JSON; :class:`InvalidReceipt` says why it is not one."""
        if not isinstance(data, dict):
            raise InvalidReceipt("it is not a JSON object")
        schema = data.get("schema")
        if schema not in READABLE:
            raise InvalidReceipt(
                f"its schema is {schema!r}; this tfbuild reads {', '.join(READABLE)}"
            )
        try:
            wheel = data["wheel"]
            inputs = data["inputs"]
            source = inputs["source"]
            known = {
                "schema", "build_id", "created", "standin", "wheel", "target", "variant",
                "label", "cflags", "inputs", "host", "timings", "attempts",
                "runtime_env_file", "log", "floor", "plan_sha256", "plan",
                "processes", "remote_cache_hits",
            }  # fmt: skip
            return Receipt(
                build_id=_text(data["build_id"], "build_id"),
                created=_text(data["created"], "created"),
                standin=bool(data.get("standin", False)),
                wheel=WheelRecord(
                    name=_text(wheel["name"], "name"),
                    sha256=_text(wheel["sha256"], "sha256"),
                    size=int(wheel["size"]),
                ),
                target=_text(data["target"], "target"),
                variant=_text(data["variant"], "variant"),
                label=_optional(data.get("label"), "label"),
                cflags=tuple(_text(f, "cflags") for f in data.get("cflags") or ()),
                plan=_object(data["plan"], "plan"),
                plan_sha256=_text(data["plan_sha256"], "plan_sha256"),
                inputs=Inputs(
                    tfbuild=_text(inputs["tfbuild"], "tfbuild"),
                    recipe=_text(inputs["recipe"], "recipe"),
                    recipe_sha256=_optional(inputs.get("recipe_sha256"), "recipe_sha256"),
                    source=SourceRecord(
                        kind=_kind(source["kind"]),
                        url=_optional(source.get("url"), "url"),
                        sha256=_optional(source.get("sha256"), "sha256"),
                        pinned=bool(source.get("pinned", False)),
                        path=_optional(source.get("path"), "path"),
                        commit=_optional(source.get("commit"), "commit"),
                        dirty=source.get("dirty")
                        if isinstance(source.get("dirty"), bool)
                        else None,
                        epoch=int(source["epoch"]) if source.get("epoch") is not None else None,
                    ),
                    base_image=_text(inputs["base_image"], "base_image"),
                    base_image_id=_optional(inputs.get("base_image_id"), "base_image_id"),
                    toolchain_image=_text(inputs["toolchain_image"], "toolchain_image"),
                    toolchain_image_id=_optional(
                        inputs.get("toolchain_image_id"), "toolchain_image_id"
                    ),
                    packages=_strings(inputs.get("packages") or {}, "packages"),
                    tools=_strings(inputs.get("tools") or {}, "tools"),
                    snapshot=_optional(inputs.get("snapshot"), "snapshot"),
                    exec_image=_optional(inputs.get("exec_image"), "exec_image"),
                ),
                host=_object(data.get("host") or {}, "host"),
                timings={
                    str(k): float(v)
                    for k, v in _object(data.get("timings") or {}, "timings").items()
                },
                attempts=tuple(_object(a, "attempts") for a in data.get("attempts") or ()),
                runtime_env_file=_optional(data.get("runtime_env_file"), "runtime_env_file"),
                log=_optional(data.get("log"), "log"),
                floor=WheelFloor.from_json(data["floor"]) if data.get("floor") else None,
                processes={
                    str(k): int(v)
                    for k, v in _object(data.get("processes") or {}, "processes").items()
                },
                remote_cache_hits=int(data["remote_cache_hits"])
                if data.get("remote_cache_hits") is not None
                else None,
                sections={k: v for k, v in data.items() if k not in known},
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, InvalidReceipt):
                raise
            missing = f"it has no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise InvalidReceipt(f"it is malformed: {missing}") from None


#: Bounds on what a reader parses: a receipt is a few tens of KiB, nested about ten levels deep.
MAX_RECEIPT_BYTES = 16 << 20
MAX_RECEIPT_DEPTH = 64


def _depth(value: Any) -> int:
    """How deeply JSON ``value`` nests (a scalar is 0), walked without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level + 1)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def read_receipt(path: Path, *, wheel: Path | None = None) -> Receipt:
    """The receipt at ``path`` (of ``wheel``, when given); one InputError line for anything else."""
    fix = "Rebuild the wheel with tfbuild wheel, which writes its receipt beside it."
    try:
        raw = read_input(path, limit=MAX_RECEIPT_BYTES, what=f"the receipt {path}", fix=fix)
    except FileNotFoundError:
        what = f"{wheel.name} has no receipt" if wheel else f"no receipt at {path}"
        raise InputError(what, why=f"{path} does not exist", fix=fix) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not a tfbuild receipt", why=str(exc), fix=fix) from None
    deep = f"it nests deeper than {MAX_RECEIPT_DEPTH} levels"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not a tfbuild receipt", why=str(exc), fix=fix) from None
    except RecursionError:  # the decoder's own limit, far deeper than MAX_RECEIPT_DEPTH
        raise InputError(f"{path} is not a tfbuild receipt", why=deep, fix=fix) from None
    if _depth(data) > MAX_RECEIPT_DEPTH:
        raise InputError(f"{path} is not a tfbuild receipt", why=deep, fix=fix)
    try:
        receipt = Receipt.from_json(data)
    except InvalidReceipt as exc:
        raise InputError(f"{path} is not a usable receipt", why=str(exc), fix=fix) from None
    if wheel is not None and receipt.wheel.name != wheel.name:
        raise InputError(
            f"{path} is not the receipt of {wheel.name}",
            why=f"it describes {receipt.wheel.name}",
            fix=fix,
        )
    return receipt


# --- field readers -------------------------------------------------------------------------------


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidReceipt(f"its {name!r} holds {value!r}, not text")
    return value


def _optional(value: Any, name: str) -> str | None:
    return None if value is None else _text(value, name)


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidReceipt(f"its {name!r} holds {type(value).__name__}, not an object")
    return value


def _strings(value: Any, name: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in _object(value, name).items()}


def _kind(value: Any) -> Literal["tarball", "directory"]:
    if value == "tarball":
        return "tarball"
    if value == "directory":
        return "directory"
    raise InvalidReceipt(f"the source kind is {value!r}, not tarball or directory")
