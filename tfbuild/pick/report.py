"""What ``tfbuild pick --json`` writes (``tfbuild.pick/1``): its types, built from a pick's result.

The report is a view, not the pick's own values: a wheel's entry joins the file, its receipt and its
assessment in one object, and the host leaves out the CPU's details. So it has types of its own,
which say field by field what the JSON says; :mod:`tfbuild.core.serial` writes them.

Overlays are listed apart (``overlays``, ``overlay``, ``overlay_why``; each entry's ``overlay`` says
what its receipt says it goes on), and ``host.tensorflow`` is the TensorFlow they were judged
against: keys added to ``tfbuild.pick/1``, whose ``wheels`` and ``chosen`` keep their meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tfbuild.core.variants import Variant
from tfbuild.pick.compat import Assessment, Stage
from tfbuild.pick.install import InstallResult
from tfbuild.pick.listing import WheelFile, WheelSource
from tfbuild.pick.machine import Host, InstalledTensorFlow
from tfbuild.pick.rank import SCHEMA, PickOptions, PickResult
from tfbuild.wheel.labels import WheelLabel
from tfbuild.wheel.receipt import WheelFloor


@dataclass(frozen=True, kw_only=True)
class SourceSummary:
    """Where the wheels were listed, and how many."""

    input: str
    kind: Literal["directory", "file", "index"]
    wheels: int  # how many wheels it lists


@dataclass(frozen=True, kw_only=True)
class HostSummary:
    """The machine and interpreter judged on, and where each fact came from."""

    source: str
    live: bool
    architecture: str
    target: str
    tensorflow_features: tuple[str, ...]
    python: str
    python_implementation: str
    python_source: str
    glibc: str | None
    glibc_checked: bool
    glibc_source: str
    libstdcxx: str | None
    libstdcxx_checked: bool
    libstdcxx_source: str
    driver_cuda: str | None
    driver_cuda_source: str
    tensorflow: InstalledTensorFlow | None  # what an overlay would go on (null: none, or not known)
    tensorflow_source: str


@dataclass(frozen=True, kw_only=True)
class ReceiptSummary:
    """What the report shows of a wheel's receipt: where it was read, what it was built for."""

    source: str | None
    target: str
    variant: str
    architecture: str | None
    cflags: tuple[str, ...]
    covered: tuple[str, ...]
    floor: WheelFloor | None


@dataclass(frozen=True, kw_only=True)
class OverlaySummary:
    """What the report shows of an overlay's receipt: the TensorFlow it goes on, what its loader
    checks."""

    source: str | None  # where the receipt was read
    distribution: str  # the TensorFlow it goes on, normalised: tensorflow-cpu
    tensorflow: str  # that TensorFlow's exact release
    framework_size: int
    target: str
    cflags: tuple[str, ...]
    features: tuple[str, ...]  # the instruction sets its loader checks for
    kernels: int


@dataclass(frozen=True, kw_only=True)
class WheelEntry:
    """One wheel: the file, its receipt, and whether (and why) it runs on the host."""

    filename: str
    location: str
    sha256: str | None
    receipt: ReceiptSummary | None
    name: str
    version: str
    tensorflow: str
    tags: tuple[str, ...]
    label: WheelLabel | None
    target: str | None
    variant: Variant
    cuda: str | None
    standin: bool
    status: Literal["runs", "refused", "filtered"]
    runs: bool
    stage: Stage
    reason: str
    filtered: str | None
    rank: int | None
    # An overlay's receipt (null: a wheel, or an overlay without one).
    overlay: OverlaySummary | None


@dataclass(frozen=True, kw_only=True)
class PickReport:
    """Everything ``pick --json`` says."""

    schema: Literal["tfbuild.pick/1"] = SCHEMA
    source: SourceSummary
    host: HostSummary
    options: PickOptions
    chosen: WheelEntry | None
    why: tuple[str, ...]
    wheels: tuple[WheelEntry, ...]
    warnings: tuple[str, ...]
    install: InstallResult | None
    overlay: WheelEntry | None  # the overlay chosen for the TensorFlow installed
    overlay_why: tuple[str, ...]
    overlays: tuple[WheelEntry, ...]


def source_summary(source: WheelSource) -> SourceSummary:
    return SourceSummary(input=source.source, kind=source.kind, wheels=len(source.wheels))


def host_summary(host: Host) -> HostSummary:
    return HostSummary(
        source=host.source,
        live=host.live,
        architecture=host.cpu.architecture,
        target=host.target,
        tensorflow_features=host.guard,
        python=host.python,
        python_implementation=host.implementation,
        python_source=host.python_source,
        glibc=host.glibc,
        glibc_checked=host.glibc_checked,
        glibc_source=host.glibc_source,
        libstdcxx=host.libstdcxx,
        libstdcxx_checked=host.libstdcxx is not None,
        libstdcxx_source=host.libstdcxx_source,
        driver_cuda=host.driver_cuda,
        driver_cuda_source=host.driver_source,
        tensorflow=host.tensorflow,
        tensorflow_source=host.tensorflow_source,
    )


def receipt_summary(wheel: WheelFile) -> ReceiptSummary | None:
    receipt = wheel.receipt
    if receipt is None:
        return None
    return ReceiptSummary(
        source=wheel.receipt_source,
        target=receipt.target,
        variant=receipt.variant,
        architecture=receipt.architecture,
        cflags=receipt.cflags,
        covered=receipt.covered,
        floor=receipt.floor,
    )


def overlay_summary(wheel: WheelFile) -> OverlaySummary | None:
    receipt = wheel.overlay
    if receipt is None:
        return None
    return OverlaySummary(
        source=wheel.receipt_source,
        distribution=receipt.stock_name,
        tensorflow=receipt.tensorflow,
        framework_size=receipt.framework_size,
        target=receipt.target,
        cflags=receipt.cflags,
        features=receipt.features,
        kernels=len(receipt.kernels),
    )


def wheel_entry(assessment: Assessment) -> WheelEntry:
    wheel = assessment.wheel
    return WheelEntry(
        filename=wheel.filename,
        location=wheel.location,
        sha256=wheel.sha256,
        receipt=receipt_summary(wheel),
        name=assessment.name,
        version=assessment.version,
        tensorflow=assessment.tensorflow,
        tags=assessment.tags,
        label=assessment.label if assessment.label.text else None,
        target=assessment.target,
        variant=assessment.variant,
        cuda=assessment.label.cuda,
        standin=assessment.standin,
        status=assessment.status,
        runs=assessment.runs,
        stage=assessment.stage,
        reason=assessment.reason,
        filtered=assessment.filtered,
        rank=assessment.rank,
        overlay=overlay_summary(wheel),
    )


def pick_report(result: PickResult, installed: InstallResult | None = None) -> PickReport:
    """The ``pick --json`` report of ``result`` (and of pip's install, when there was one)."""
    return PickReport(
        source=source_summary(result.source),
        host=host_summary(result.host),
        options=result.options,
        chosen=wheel_entry(result.chosen) if result.chosen else None,
        why=result.why,
        wheels=tuple(wheel_entry(v) for v in result.wheels),
        warnings=result.warnings,
        install=installed,
        overlay=wheel_entry(result.overlay) if result.overlay else None,
        overlay_why=result.overlay_why,
        overlays=tuple(wheel_entry(v) for v in result.overlays),
    )
