"""What tfbuild's objects on the Docker engine carry, and how tfbuild cache sees them: no docker here.

- Labels: ``org.tfbuild=1`` on every container, image and volume tfbuild makes, the keys under it
  that tfbuild sets, and the user's own (``$TFBUILD_LABELS``, read strictly by :func:`own_labels`).
- :func:`input_hash`: the sha256 of an image's build context, which tags it and its label holds.
- :class:`KeptImage`, :class:`KeptVolume`: what ``tfbuild cache`` lists of the engine's.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core.defaults import BASE_LABEL
from tfbuild.core.errors import InputError, UsageError
from tfbuild.core.files import sha256_file

LABEL = "org.tfbuild"  # every container, image and volume tfbuild makes: org.tfbuild=1
INPUT_HASH_LABEL = "org.tfbuild.input-hash"
PART_OF_LABEL = "org.tfbuild.part-of"  # a volume that belongs to another (an output base: a cache)
RUN_LABEL = "org.tfbuild.run"  # one per run() call, to find its container even without an id
#: Labels of the user's own for every container, image and volume tfbuild makes, as
#: ``key=value`` pairs separated by commas: a CI job's id, to find and remove its own objects on an
#: engine other jobs share (the tests give every object of a run one: tests/conftest.py).
LABELS_VARIABLE = "TFBUILD_LABELS"
_LABEL_KEY = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_LABEL_VALUE = re.compile(r"[A-Za-z0-9._:/@+-]{0,256}")


def own_labels(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The labels ``$TFBUILD_LABELS`` names; one UsageError line for a malformed one, or for a
    key of tfbuild's own (``org.tfbuild`` and the keys under it that tfbuild sets)."""
    text = env.get(LABELS_VARIABLE, "").strip()
    found: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sign, value = pair.partition("=")
        if not sign or not _LABEL_KEY.fullmatch(key) or not _LABEL_VALUE.fullmatch(value):
            raise UsageError(
                f"{LABELS_VARIABLE} holds {pair[:80]!r}, which is no label",
                why="each label is key=value: a key of lower-case letters, digits, dots, dashes "
                "and underscores, a value without spaces or quotes",
                fix=f"Set {LABELS_VARIABLE} like ci.job=1234,ci.runner=a (commas between).",
            )
        if key in (LABEL, INPUT_HASH_LABEL, PART_OF_LABEL, RUN_LABEL, BASE_LABEL) or key in (
            "org.tfbuild.build",
        ):
            raise UsageError(
                f"{LABELS_VARIABLE} sets {key}, a label of tfbuild's own",
                fix="Choose another key (ci.job=..., or one under your own domain).",
            )
        found[key] = value
    return found


_HASH_FORMAT = b"tfbuild.input-hash/1\0"  # bump when the hashed fields change


def input_hash(context: Path) -> str:
    """A sha256 over a build context: each entry's relative path, kind, executable bit and content.

    Sorted by path so the walk order of the filesystem does not matter; symlinks count by their
    target (never followed). Ownership and timestamps are left out on purpose: a fresh checkout
    must hash like the old one. Callers tag images by it and skip building an unchanged context.
    """
    if not context.is_dir():
        raise InputError(
            f"cannot hash build context {context}",
            why="it is not a directory",
            fix="Pass the directory that holds the Dockerfile.",
        )
    digest = hashlib.sha256(_HASH_FORMAT)
    for relative, kind, payload in sorted(_context_entries(context)):
        # NUL cannot occur in a path or a hex digest, so the fields cannot run into each other.
        digest.update(f"{relative}\0{kind}\0{payload}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _context_entries(context: Path) -> Iterator[tuple[str, str, str]]:
    for directory, dirnames, filenames in os.walk(context):
        for name in (*dirnames, *filenames):
            path = Path(directory, name)
            relative = path.relative_to(context).as_posix()
            if path.is_symlink():
                yield relative, "link", str(path.readlink())
            elif path.is_dir():
                yield relative, "dir", ""  # an empty directory can still be COPYed
            elif path.is_file():
                kind = "exec" if path.stat().st_mode & 0o111 else "file"
                yield relative, kind, sha256_file(path)
            # Sockets and FIFOs cannot be part of an image; the build would skip them too.


@dataclass(frozen=True, kw_only=True)
class KeptImage:
    """An image tfbuild made (``org.tfbuild=1``): its id, its tags (none: replaced by a newer
    build of its tag), size, when it was made (epoch seconds), and whether a running container
    uses it."""

    id: str
    tags: tuple[str, ...]
    size: int
    created: float
    in_use: bool


@dataclass(frozen=True, kw_only=True)
class KeptVolume:
    """A volume tfbuild made (bazel's caches): its name, size (None: the engine did not say), when
    it was made, and whether a running container mounts it."""

    name: str
    size: int | None
    created: float
    in_use: bool


def engine_time(stamp: str) -> float:
    """An engine's RFC 3339 time (``2026-11-28T17:59:49Z``, or with an offset) as epoch seconds;
    0 when it says none the standard library reads."""
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
