"""Reproducibility: the measures that make two builds of the same inputs give the same wheel.

Each measure answers a known source of difference between TensorFlow builds (docs/verify.md has
the list and what remains); :func:`choose_measures` says each, with its reason.

The snapshot: where the distribution keeps a snapshot archive (Debian's, Ubuntu's), the
toolchain's packages come from it at the time the recipe names, so a rebuild next month installs
the same versions.
"""

from __future__ import annotations

from tfbuild.plan.model import OUTPUT_BASE, AptSnapshot, Reason
from tfbuild.plan.options import PlanOptions
from tfbuild.recipes.images import BaseImage
from tfbuild.recipes.recipe import Recipe

#: Exported by build.sh before bazel runs (SOURCE_DATE_EPOCH comes from the source at build time).
BUILD_ENV = (("TZ", "UTC"), ("LC_ALL", "C"), ("PYTHONHASHSEED", "0"))
#: bazel runs actions in a cleaned environment: these pass the measures on to every action.
ACTION_ENV = ("SOURCE_DATE_EPOCH", "TZ", "LC_ALL", "PYTHONHASHSEED")
#: The snapshot archives of Debian and Ubuntu (plain http: the base images have no CA certificates
#: yet, and apt checks the archive's signatures either way), and where their security updates are.
SNAPSHOT_URLS = {
    "debian": "http://snapshot.debian.org/archive/debian/{time}/",
    "ubuntu": "http://snapshot.ubuntu.com/ubuntu/{time}/",
}
SECURITY_URLS = {
    "debian": "http://snapshot.debian.org/archive/debian-security/{time}/",
    "ubuntu": "http://snapshot.ubuntu.com/ubuntu/{time}/",
}
COMPONENTS = {"debian": "main", "ubuntu": "main universe"}


def choose_measures(options: PlanOptions) -> tuple[Reason, ...]:
    """The reason of each determinism measure (BUILD_ENV, ACTION_ENV, the path map, the wheel
    normalised); none with --no-reproducible, which says so."""
    if not options.reproducible:
        return (
            Reason(
                what="reproducible",
                value="off",
                why="asked for with --no-reproducible: two builds of the same inputs may "
                "differ (dates, paths, member order and times)",
            ),
        )
    return (
        Reason(
            what="SOURCE_DATE_EPOCH",
            value="from the source",
            why="the source's commit time (or its newest file): compilers take __DATE__ and "
            "__TIME__ from it, and the wheel's member times",
        ),
        Reason(
            what="build environment",
            value=" ".join(f"{k}={v}" for k, v in BUILD_ENV) + ", umask 022",
            why="dates, sort orders, Python's hash order in generated code and file modes do not "
            "depend on the machine that builds",
        ),
        Reason(
            what="path prefix map",
            value=f"-ffile-prefix-map={OUTPUT_BASE}=.",
            why="absolute paths in __FILE__ and debug info must not carry where bazel worked; "
            "the output base is one fixed path, so the compile commands, and their cache keys, "
            "are the same for every source tree",
        ),
        Reason(
            what="wheel normalisation",
            value="sorted members, SOURCE_DATE_EPOCH times, 0644/0755 modes",
            why="a wheel packed in filesystem order with build-time mtimes differs every time; "
            "the members are copied raw, never recompressed",
        ),
    )


def choose_snapshot(recipe: Recipe, base: BaseImage) -> tuple[AptSnapshot | None, Reason | None]:
    """The snapshot archive the recipe's packages come from, when it names a time."""
    if recipe.snapshot is None or base.distro not in SNAPSHOT_URLS:
        return None, None
    snapshot = snapshot_for(base, recipe.snapshot)
    url = snapshot.url
    return snapshot, Reason(
        what="package snapshot",
        value=recipe.snapshot,
        why=f"{recipe.where('snapshot')}: {base.suite}'s packages as they were then, from its "
        f"snapshot archive ({url}), so a rebuild installs the same versions; other repositories "
        "(apt.llvm.org, NVIDIA's) have no snapshot: the receipt records their versions",
    )


def snapshot_for(base: BaseImage, time: str) -> AptSnapshot:
    """The snapshot of ``base``'s distribution at ``time``: its archive and sources.list lines. A
    plan read back must hold exactly these (decode.decode_plan): apt would trust any other line."""
    url = SNAPSHOT_URLS[base.distro].format(time=time)
    security = SECURITY_URLS[base.distro].format(time=time)
    parts = COMPONENTS[base.distro]
    option = "[check-valid-until=no]"  # a snapshot's Release files are past their Valid-Until
    sources = (
        f"deb {option} {url} {base.suite} {parts}",
        f"deb {option} {url} {base.suite}-updates {parts}",
        f"deb {option} {security} {base.suite}-security {parts}",
    )
    return AptSnapshot(time=time, url=url, sources=sources)
