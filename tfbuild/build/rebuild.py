"""Building a wheel again from its receipt: ``tfbuild wheel --from-receipt`` and ``tfbuild verify``.

A rebuild uses the receipt's plan (target and flags, versions, digests, the source's hash) on any
machine; only the resources (jobs, memory) and the cache volume are this machine's, since they
decide how fast a build runs, never what it builds (a receipt never names a volume to mount). Every
toolchain package is installed at the exact version the receipt records. An input that can no
longer be had identically is refused with one line naming it.

A receipt is untrusted: it is read by :func:`tfbuild.wheel.receipt.read_receipt` (every field checked
to its grammar), its plan must hash to its ``plan_sha256`` and its inputs to its ``inputs_sha256``
(a receipt written before tfbuild recorded that hash is rebuilt with a warning that nothing covers
its inputs), and the package pins are checked again where the plan is made and where it is
rendered. The hashes are not a signature: they show that a receipt is whole, not who wrote it.

``verify`` rebuilds in isolation (a fresh cache volume, so a fresh output base and repository cache;
no disk or remote cache) into a temporary directory, then compares the two wheels member by member
(:mod:`tfbuild.wheel.wheeldiff`). Nothing is written to ``dist/``.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tfbuild.build.run import BuildRun, WheelResult, new_build_id
from tfbuild.build.source_tree import local_source
from tfbuild.core.defaults import CACHE_VOLUME
from tfbuild.core.errors import (
    EnvironmentProblem,
    InputError,
    NotReproducible,
    UnsupportedError,
    UsageError,
)
from tfbuild.core.files import held_signals, sha256_file
from tfbuild.core.rounded import round_fields
from tfbuild.core.stopping import stop_on_signals
from tfbuild.detect.cpu import family_root
from tfbuild.plan import BuildPlan, PlanOptions, Reason, with_resources
from tfbuild.plan.decode import decode_plan
from tfbuild.plan.make import isolated, without_remote
from tfbuild.plan.model import RefusedField, check_package_versions
from tfbuild.plan.render import package_name, toolchain_packages
from tfbuild.plan.request import Planned
from tfbuild.plan.resources import choose_resources
from tfbuild.wheel.receipt import Receipt, read_receipt, receipt_path
from tfbuild.wheel.wheeldiff import WheelDiff, compare

if TYPE_CHECKING:
    from tfbuild.core.engine_protocol import Engine
    from tfbuild.detect.host import HostFacts


def load_receipt(wheel: Path | None, receipt: Path | None) -> Receipt:
    """The receipt given, or the one beside the wheel; its plan must hash to what it recorded."""
    if receipt is None:
        if wheel is None:
            raise InputError(
                "no receipt to build from", fix="Name a wheel, or pass --receipt FILE."
            )
        receipt = receipt_path(wheel)
    found = read_receipt(receipt, wheel=wheel)
    if not found.plan_intact():
        raise InputError(
            f"{receipt} was changed after the build",
            why="its plan no longer matches its plan_sha256, so it does not say what was built",
            fix="Use the receipt the build wrote, unedited.",
        )
    if found.inputs_intact() is False:
        raise InputError(
            f"{receipt} was changed after the build",
            why="its inputs (packages, source, images, tools) no longer match its inputs_sha256, "
            "so they do not say what was built",
            fix="Use the receipt the build wrote, unedited.",
        )
    return found


#: What a rebuild from a receipt that records no ``inputs_sha256`` says (plan.warnings).
UNCOVERED = (
    "the receipt records no inputs_sha256 (written by tfbuild {version}): its package versions, "
    "source and images were checked to their grammar, but no hash shows they are the ones the "
    "build recorded"
)


def plan_from_receipt(receipt: Receipt, *, host: HostFacts | None = None) -> Planned:
    """The receipt's plan, with every toolchain package pinned and this machine's resources."""
    try:
        plan = decode_plan(receipt.plan)
    except RefusedField as exc:
        raise InputError(
            f"the plan in the receipt of {receipt.wheel.name} is refused: its {exc}",
            why="a receipt's plan may hold only what tfbuild's planner writes (a hash is no "
            "signature: anyone can recompute plan_sha256), and other values could run commands "
            "in the build",
            fix="Rebuild only from a receipt tfbuild wrote, unedited.",
        ) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(
            f"the plan in the receipt of {receipt.wheel.name} cannot be read",
            why=f"{type(exc).__name__}: {exc}",
            fix=f"Rebuild it with the tfbuild version that wrote it ({receipt.inputs.tfbuild}).",
        ) from None
    # A package is pinned by its name: the plan may name a series (libcudnn8=8.9.*), and the
    # receipt records the version of libcudnn8 the build installed.
    wanted = sorted({package_name(spec) for spec in toolchain_packages(plan)})
    missing = [name for name in wanted if name not in receipt.inputs.packages]
    if missing:
        raise InputError(
            f"the receipt of {receipt.wheel.name} records no version of {', '.join(missing)}",
            why="a rebuild installs every toolchain package at the version the build recorded",
            fix="Rebuild from a receipt written by a tfbuild that records packages (0.2 or newer).",
        )
    pins = tuple((name, receipt.inputs.packages[name]) for name in wanted)
    try:
        check_package_versions(pins)  # read_receipt checked them; checked again where they are used
    except ValueError as exc:
        raise InputError(
            f"the receipt of {receipt.wheel.name} pins a package apt cannot be given",
            why=str(exc),
            fix="Use the receipt the build wrote, unedited.",
        ) from None
    plan = replace(plan, package_versions=dict(pins))
    if receipt.inputs_intact() is None:
        warning = UNCOVERED.format(version=receipt.inputs.tfbuild)
        plan = replace(plan, warnings=(*plan.warnings, warning))
    if host is None:
        from tfbuild.detect.host import host_facts

        host = host_facts()
    here = host.build_host_architecture
    if family_root(plan.architecture) != family_root(here):
        raise UnsupportedError(
            f"{receipt.wheel.name} was built on {plan.architecture}, and this build host is {here}",
            why="a rebuild runs the receipt's toolchain image, compiler and flags, which are for "
            f"{plan.architecture}; tfbuild builds natively",
            fix=f"Rebuild it on a machine of that architecture ({plan.architecture}).",
        )
    resources, _ = choose_resources(PlanOptions(variant=plan.variant, skip_disk_check=True), host)
    plan = with_resources(
        plan, resources, why="this machine's cores and memory (a rebuild keeps everything else)"
    )
    return Planned(plan=plan, recipe=None)


def check_base_image(engine: Engine, plan: BuildPlan) -> None:
    """A local base image (tfbuild base) must be the very image the build used, by id; so must a
    local image the sysroot was made from (--sysroot-from)."""
    images = [("base image", plan.base_image)]
    if plan.sysroot is not None and plan.sysroot.image is not None:
        images.append(("sysroot image", plan.sysroot.image))
    for role, image in images:
        if image.image_id is None:
            continue  # pinned by digest in the reference itself
        here = engine.image_id(image.reference)
        if here != image.image_id:
            raise EnvironmentProblem(
                f"the {role} {image.reference} ({image.image_id[:19]}) is not on this engine",
                why=f"{image.reference} is {here[:19] if here else 'missing'} here",
                fix="Import the same image (docker save / docker load), or build with an image "
                "pinned by digest.",
            )


def rebuild_run(receipt: Receipt, run: BuildRun) -> BuildRun:
    """The run settings of a rebuild: the receipt's source hash pins the tarball."""
    source = receipt.inputs.source
    # The plan's word, which plan_sha256 covers ("standin" in plans before tfbuild.plan/4).
    canary = receipt.plan.get("canary", receipt.plan.get("standin")) is True
    if source.kind == "directory" and run.source is None and not canary:
        raise InputError(
            f"{receipt.wheel.name} was built from a local directory ({source.path})",
            why="a rebuild needs the same tree"
            + (f" at commit {source.commit}" if source.commit else ""),
            fix="Pass it with --source DIR.",
        )
    if source.kind == "directory" and run.source is not None and source.commit:
        given = local_source(run.source)
        if given.git_commit != source.commit or given.git_dirty:
            state = f"commit {given.git_commit}" if given.git_commit else "no git commit"
            raise InputError(
                f"{run.source} is not the tree {receipt.wheel.name} was built from",
                why=f"the receipt names commit {source.commit}; this tree is at {state}"
                + (" with uncommitted changes" if given.git_dirty else ""),
                fix=f"Check out {source.commit} (with no changes) and pass that tree.",
            )
    return replace(
        run,
        source_sha256=run.source_sha256 or source.sha256,
        recipe_sha256=receipt.inputs.recipe_sha256,
    )


@dataclass(frozen=True, kw_only=True)
class VerifyResult:
    """``tfbuild verify``'s verdict; its JSON form is ``tfbuild.verify/1``."""

    schema: Literal["tfbuild.verify/1"] = "tfbuild.verify/1"
    wheel: Path
    sha256: str  # of the wheel checked
    receipt_sha256: str  # what the receipt says the wheel's sha256 is
    rebuilt_sha256: str
    reproducible: bool
    rebuild_seconds: float  # written to the millisecond
    diff: WheelDiff
    #: No inputs_sha256 in the receipt: its inputs were checked to their grammar, not by a hash.
    inputs_covered: bool = True
    warnings: tuple[str, ...] = ()  # the rebuild's (its plan's: UNCOVERED, ...)

    def __post_init__(self) -> None:
        round_fields(self, "rebuild_seconds")

    def error(self) -> NotReproducible | None:
        """The error ``tfbuild verify`` ends with when the rebuild differs (what differs, counted),
        else None."""
        if self.reproducible:
            return None
        diff = self.diff
        return NotReproducible(
            f"{self.wheel.name} is not reproducible: the rebuild is {self.rebuilt_sha256}",
            why="".join(f"{corrupt}; " for corrupt in diff.corrupt)
            + f"{len(diff.changed)} member(s) differ"
            + (
                f", {len(diff.only_in_a) + len(diff.only_in_b)} are in one wheel only"
                if diff.only_in_a or diff.only_in_b
                else ""
            )
            + (", the zip entries differ" if diff.same_contents else ""),
            fix="See the table above (or --json); build with the measures on (--reproducible).",
        )


def check_against_receipt(wheel: Path, receipt: Receipt, path: Path) -> None:
    """Refuse a wheel whose sha256 or size is not what ``receipt`` (read from ``path``) records.

    Such a wheel is not the file that build wrote (damaged, tampered with, or another receipt's),
    and rebuilding would only say what is already known: exit 3, both hashes named, nothing
    built. Not 8: "not reproducible" is a verdict about the build, and none was tried."""
    sha256, size = sha256_file(wheel), wheel.stat().st_size
    recorded = receipt.wheel
    if (sha256, size) != (recorded.sha256, recorded.size):
        raise InputError(
            f"{wheel.name} is not the wheel its receipt describes",
            why=f"its sha256 is {sha256} ({size} bytes), and {path} records {recorded.sha256} "
            f"({recorded.size} bytes); nothing was rebuilt",
            fix="Verify the wheel that build wrote (fetch it again), or pass its own receipt "
            "with --receipt FILE.",
        )


@dataclass(frozen=True, kw_only=True)
class VerifyRequest:
    """What ``verify`` rebuilds, read and checked before any engine is connected to: the wheel, the
    receipt it matches and the isolated plan made from it (on a cache volume of its own)."""

    wheel: Path
    receipt: Receipt
    planned: Planned


def prepare_verify(wheel: Path, *, receipt: Path | None = None) -> VerifyRequest:
    """The receipt read and checked (every field, its hashes, its plan), the wheel checked against
    it, and the isolated rebuild's plan: a hostile receipt or a wrong wheel is refused here, with
    no engine (``tfbuild verify`` connects to Docker only after this)."""
    if not wheel.is_file():
        raise InputError(f"no wheel at {wheel}", fix="Name a .whl file built by tfbuild wheel.")
    found = load_receipt(wheel, receipt)
    check_against_receipt(wheel, found, receipt or receipt_path(wheel))
    planned = plan_from_receipt(found)
    volume = f"tfbuild-verify-{new_build_id()}"
    planned = replace(planned, plan=isolated(planned.plan, cache_volume=volume))
    return VerifyRequest(wheel=wheel, receipt=found, planned=planned)


def verify(
    request: VerifyRequest,
    *,
    engine: Engine,
    source: Path | None = None,
    quiet: bool = True,
    verbose: bool = False,
) -> VerifyResult:
    """Rebuild the wheel of ``request`` (:func:`prepare_verify`) in isolation and compare the two."""
    wheel, found, planned = request.wheel, request.receipt, request.planned
    check_base_image(engine, planned.plan)
    # SIGINT and SIGTERM stop the rebuild once; the clean-up below then runs to the end.
    with stop_on_signals(), contextlib.ExitStack() as cleanup:
        with held_signals():  # no signal between making these and registering their removal
            holder = Path(tempfile.mkdtemp(prefix="tfbuild-verify-"))
            cleanup.callback(_remove_verify, engine, holder, planned.plan.cache_volume)
        run = rebuild_run(
            found,
            BuildRun(
                dist=holder / "dist", source=source, quiet=quiet, verbose=verbose, tag="verify"
            ),
        )
        rebuilt: WheelResult = run.execute(planned, engine=engine)
        diff = compare(wheel, rebuilt.wheel)
        return VerifyResult(
            wheel=wheel,
            sha256=found.wheel.sha256,  # the wheel's: prepare_verify checked it is the same
            receipt_sha256=found.wheel.sha256,
            rebuilt_sha256=rebuilt.sha256,
            reproducible=diff.equal,
            diff=diff,
            rebuild_seconds=rebuilt.seconds,
            inputs_covered=found.inputs_intact() is True,
            warnings=rebuilt.warnings,
        )


def _remove_verify(engine: Engine, holder: Path, volume: str) -> None:
    """verify's temporary directory and its volume pair (the cache and its output base), whole
    whatever signal comes meanwhile."""
    with held_signals():
        shutil.rmtree(holder, ignore_errors=True)
        # The volume held only this rebuild's caches; a failure to remove it must not hide the
        # result (or the error) of the rebuild itself.
        with contextlib.suppress(Exception):
            engine.remove_volume(volume)


def with_cache_volume(plan: BuildPlan, volume: str) -> BuildPlan:
    """The plan with this machine's cache volume: the one a receipt names is never mounted (it
    could name any volume of this engine, or a host path)."""
    reason = Reason(
        what="cache volume",
        value=volume,
        why="this machine's cache volume (--cache-volume); a rebuild never mounts the volume its "
        "receipt names",
    )
    return replace(plan, cache_volume=volume, reasons=(*plan.reasons, reason))


def from_receipt(receipt_file: Path, args: PlanOptions, run: BuildRun) -> tuple[Planned, BuildRun]:
    """``tfbuild wheel --from-receipt``: the receipt's plan and the run that rebuilds it here, on
    this machine's cache volume (``--cache-volume``, the only plan option it takes), with no remote
    cache or executor (a receipt's would be its writer's choice, and shape the wheel). No engine:
    a hostile receipt is refused before Docker is connected to; the caller then checks the base
    images on the engine (:func:`check_base_image`)."""
    if replace(args, cache_volume=CACHE_VOLUME) != PlanOptions():
        raise UsageError(
            "--from-receipt with plan options",
            why="a rebuild takes its whole plan from the receipt",
            fix="Drop the plan options (--tf, --mkl, --target, ...).",
        )
    found = load_receipt(None, receipt_file)
    planned = plan_from_receipt(found)
    plan = without_remote(
        with_cache_volume(planned.plan, args.cache_volume),
        why="a rebuild from a receipt sends nothing to, and takes nothing from, a remote cache or "
        "executor its receipt names: their results would shape the wheel",
    )
    return replace(planned, plan=plan), rebuild_run(found, run)
