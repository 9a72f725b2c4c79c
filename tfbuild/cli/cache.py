"""``tfbuild cache``: what tfbuild keeps on this machine (environments, forecasts, logs, sources,
images, volumes), its size and age, and removing what the user asks, never what a running tfbuild
uses."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

import typer

from tfbuild.cli.options import takes
from tfbuild.cli.output import indented, print_json, progress
from tfbuild.core.controls import printable
from tfbuild.core.errors import EnvironmentProblem, UsageError
from tfbuild.core.options import JSON, declared, option

if TYPE_CHECKING:
    from tfbuild.core.cache import CacheEntry
    from tfbuild.core.engine import DockerEngine

_DAY = 86400.0


def _kinds(values: list[str] | None) -> tuple[str, ...]:
    from tfbuild.core.cache import KINDS

    chosen = [k.strip() for v in values or () for k in v.split(",") if k.strip()]
    for kind in chosen:
        if kind not in KINDS:
            raise UsageError(
                f"unknown --kind {kind!r}",
                why=f"the kinds are {', '.join(KINDS)}",
                fix="Pass e.g. --kind environment,log.",
            )
    return tuple(k for k in KINDS if k in chosen) or KINDS


@dataclass(frozen=True, kw_only=True)
class CacheArgs:
    """What ``tfbuild cache`` was asked: which kinds, and what to remove."""

    prune: bool = declared(
        False,
        "--prune",
        help="Remove what nothing needs any more: environments whose wheel is gone or that "
        "were left half-made, images a newer build of their tag replaced; with --older-than "
        "or --all, more. Never what a running tfbuild uses.",
    )
    kinds: tuple[str, ...] = declared(
        (),
        "--kind",
        metavar="KIND",
        help="Only these: environment, forecast, log, source, image, volume (repeat, or "
        "separate with commas; default: all).",
        cli_type=list[str] | None,
        convert=_kinds,
    )
    older_than: float | None = declared(
        None,
        "--older-than",
        metavar="DAYS",
        help="With --prune: also what was not used for DAYS days.",
        min=0,
    )
    everything: bool = declared(
        False, "--all", help="With --prune: everything of the kinds chosen."
    )
    dry_run: bool = declared(
        False, "--dry-run", help="With --prune: say what would go, remove nothing."
    )
    as_json: bool = option(JSON, default=False)


@takes(CacheArgs)
def cache_command(args: CacheArgs) -> None:
    """What tfbuild keeps here, its size and when it was last used; --prune removes some."""
    from tfbuild.core import cache

    shaping = {
        "--older-than": args.older_than is not None,
        "--all": args.everything,
        "--dry-run": args.dry_run,
    }
    given = [flag for flag, value in shaping.items() if value]
    if given and not args.prune:
        raise UsageError(
            f"{' and '.join(given)} shape what --prune removes", fix="Add --prune, or drop them."
        )
    kinds = args.kinds or cache.KINDS
    say = progress("cache", quiet=args.as_json)
    say(f"measuring {cache.cache_root()}")
    kept = [k for k in cache.kept_files() if k.kind in (*kinds, "other")]
    engine, engine_note = _engine(kinds)
    try:
        if engine is not None:
            kept += _engine_kept(engine, kinds)
        gone: list[CacheEntry] = []
        busy: list[CacheEntry] = []
        if args.prune:
            older = None if args.older_than is None else args.older_than * _DAY
            chosen = cache.to_remove(
                kept, kinds=kinds, older_than=older, everything=args.everything
            )
            for entry in chosen:
                if args.dry_run or _remove(entry, engine):
                    gone.append(entry)
                else:
                    busy.append(replace(entry, in_use=True))
    finally:
        if engine is not None:
            engine.close()
    if args.as_json:
        data = {
            "schema": "tfbuild.cache/1",
            "root": str(cache.cache_root()),
            "engine": engine_note or "listed",
            "kept": [_entry(k) for k in kept],
            "removed" if not args.dry_run else "would_remove": [k.name for k in gone],
            "in_use": [k.name for k in busy],
        }
        print_json(data)
        return
    typer.echo(printable("\n".join(_lines(kept, gone, busy, args, engine_note))))


def _engine(kinds: tuple[str, ...]) -> tuple[DockerEngine | None, str]:
    """The engine when images or volumes are asked for and it answers; else why not, in words."""
    if not {"image", "volume"} & set(kinds):
        return None, "not asked"
    from tfbuild.core.engine import DockerEngine

    try:
        return DockerEngine.connect(timeout=10), ""
    except EnvironmentProblem as exc:
        return None, f"not reachable ({exc.what}): its images and volumes are not listed"


def _engine_kept(engine: DockerEngine, kinds: tuple[str, ...]) -> list[CacheEntry]:
    from tfbuild.core.cache import CacheEntry

    found: list[CacheEntry] = []
    if "image" in kinds:
        for image in sorted(engine.kept_images(), key=lambda i: (not i.tags, i.tags, i.id)):
            found.append(
                CacheEntry(
                    kind="image",
                    name=image.tags[0] if image.tags else image.id,
                    size=image.size,
                    used=image.created,
                    in_use=image.in_use,
                    orphan="" if image.tags else "replaced by a newer build of its tag",
                    what=" ".join(image.tags[1:]),
                )
            )
    if "volume" in kinds:
        found += [
            CacheEntry(kind="volume", name=v.name, size=v.size, used=v.created, in_use=v.in_use)
            for v in engine.kept_volumes()
        ]
    return found


def _remove(entry: CacheEntry, engine: DockerEngine | None) -> bool:
    """Remove one entry; False when something uses it after all."""
    from tfbuild.core.cache import remove_file

    if entry.kind == "image" and engine is not None:
        images = [i for i in engine.kept_images() if entry.name in (i.id, *i.tags)]
        return all(engine.remove_unused_image(i) for i in images)
    if entry.kind == "volume" and engine is not None:
        return engine.remove_unused_volume(entry.name)
    return remove_file(entry)


def _entry(k: CacheEntry) -> dict[str, object]:
    return asdict(k) | {
        "used": round(k.used, 1),
        "orphan": k.orphan or None,
        "what": k.what or None,
    }


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{max(seconds, 0) / 60:.0f} min"
    if seconds < 2 * _DAY:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / _DAY:.0f} d"


def _label(k: CacheEntry) -> tuple[str, str]:
    """A line's name (a file's own name, an image's tag or id, a volume's name) and what it holds
    (an environment's wheel or requirement, an image's other tags), or ""."""
    from pathlib import Path

    if k.kind == "environment":
        held = Path(k.what).name if k.what.endswith(".whl") else k.what or "(nothing yet)"
        return Path(k.name).name, held
    if k.kind in ("forecast", "log", "source", "other"):
        return Path(k.name).name, ""
    if k.name.startswith("sha256:"):
        return k.name[:19], ""
    return k.name, k.what


def _lines(
    kept: list[CacheEntry],
    gone: list[CacheEntry],
    busy: list[CacheEntry],
    args: CacheArgs,
    engine_note: str,
) -> list[str]:
    from tfbuild.core.cache import cache_root
    from tfbuild.core.files import human_size

    now = time.time()
    lines = indented(f"tfbuild keeps, in {cache_root()} and the Docker engine:", 80, rest=2)
    if engine_note and engine_note != "not asked":
        lines.append(f"  the engine: {engine_note}")
    lines.append(f"  {'kind':<12}{'size':>9}{'used':>8}  name, then what it holds")
    for k in kept:
        size = human_size(k.size) if k.size is not None else "?"
        state = ", IN USE" if k.in_use else ""
        name, held = _label(k)
        lines.append(f"  {k.kind:<12}{size:>9}{_age(now - k.used):>8}  {name}{state}")
        for note in (held, k.orphan):
            lines += indented(note, 80, first=6, rest=8)
    totals: dict[str, int] = {}
    for k in kept:
        totals[k.kind] = totals.get(k.kind, 0) + (k.size or 0)
    summary = ", ".join(f"{kind} {human_size(size)}" for kind, size in totals.items())
    lines += indented(f"in all: {summary}", 80, first=2, rest=4)
    freed = human_size(sum(k.size or 0 for k in gone))
    using = [k for k in kept if k.in_use]
    if using:
        lines.append(f"{len(using)} in use by a running tfbuild or a container: never removed")
    if args.prune:
        verb = "would remove" if args.dry_run else "removed"
        lines.append(f"{verb} {len(gone)} ({freed}):")
        lines += [f"  {k.kind:<12}{_label(k)[0]}" for k in gone]
        if busy:
            lines.append(f"kept {len(busy)} that a running tfbuild or a container uses:")
            lines += [f"  {k.kind:<12}{_label(k)[0]}" for k in busy]
    else:
        orphans = [k for k in kept if k.orphan and not k.in_use]
        if orphans:
            size = human_size(sum(k.size or 0 for k in orphans))
            lines.append(f"tfbuild cache --prune frees {size}: the {len(orphans)} nothing needs")
    return lines
