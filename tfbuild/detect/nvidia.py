"""The NVIDIA driver, the newest CUDA it supports, and its GPUs; absent cleanly when there is none.

Three sources, cheapest first:

1. ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits``: one line per GPU with
   its index, UUID, driver version, total memory (MiB), compute capability and name. Drivers older
   than the ``compute_cap`` field reject the whole query (``Field "compute_cap" is not a valid field
   to query.``); the query is then repeated without it and compute capability is left unknown.
2. Plain ``nvidia-smi``: its header names the newest CUDA the driver supports (``CUDA Version: 12.4``;
   ``CUDA UMD Version: 13.3`` from the 610 drivers on). Without it, the CUDA version comes from
   NVIDIA's driver table (:func:`max_cuda_for_driver`), which is a lower bound.
3. ``/proc/driver/nvidia/version``: the loaded kernel module's version, there even without
   nvidia-smi (in containers, minimal installs).

Parsing is pure (``parse_*``, :func:`report_from_outputs`) and tested on recorded real output; only
:func:`detect_nvidia` runs commands and reads files. Nothing here raises on odd output: whatever
cannot be understood becomes a warning in the report.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tfbuild.core.commands import Command, Finished, attempt
from tfbuild.recipes.tfversions import parse_version

#: Fields asked of ``nvidia-smi --query-gpu``, in output order. ``name`` is last because nvidia-smi
#: does not quote its CSV: a comma in a product name can then only spill into the last column.
QUERY_FIELDS: tuple[str, ...] = (
    "index",
    "uuid",
    "driver_version",
    "memory.total",
    "compute_cap",
    "name",
)
#: The same without ``compute_cap``, for drivers whose nvidia-smi does not know that field.
QUERY_FIELDS_NO_COMPUTE_CAP: tuple[str, ...] = tuple(f for f in QUERY_FIELDS if f != "compute_cap")

#: Seconds each nvidia-smi call may take. Instant without a GPU; on a GPU machine without persistence
#: mode the first call initialises the driver, which can take a second or more per GPU.
NVIDIA_SMI_TIMEOUT = 5.0

PROC_VERSION = Path("proc/driver/nvidia/version")  # under the injectable root
_PROC_MAX_BYTES = 64 * 1024

# Names nvidia-smi accepts for the fields read here, mapped to the name used in this module.
_ALIASES = {"gpu_name": "name", "gpu_uuid": "uuid"}
_KNOWN_FIELDS = frozenset(QUERY_FIELDS) | frozenset(_ALIASES)

_VERSION = r"\d+(?:\.\d+){1,3}"
_CUDA = r"\d+\.\d+"
_REJECTED_FIELD_RE = re.compile(r'Field "([^"]+)" is not a valid field to query')


# NVIDIA's "CUDA Toolkit and Corresponding Driver Versions" table (Linux x86_64 column).
#
# Source: NVIDIA CUDA Toolkit Release Notes, section "CUDA Driver", Table 3 "CUDA Toolkit and
# Corresponding Driver Versions", https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
# (rows 7.0 to 13.2 Update 2 as published with CUDA 13.2 Update 2; CUDA 13.3 GA and Update 1, both
# >= 610.43.02, from the CUDA 13.3 release notes). Each row is the driver bundled with that toolkit,
# i.e. the driver it needs without NVIDIA's compatibility modes. "CUDA 11.0.1 RC" (>= 450.36.06) is
# left out: a release candidate is no release to plan for.
#
# Table 2 of the same notes allows "minor version compatibility" (a 12.x toolkit on any driver
# >= 525, a 13.x toolkit on any driver >= 580, with reduced features such as no PTX JIT); that is the
# build planner's decision, not a fact about the driver, so it is not folded in here.
#: (CUDA release "X.Y", NVIDIA's row label, minimum Linux x86_64 driver), newest first.
CUDA_DRIVER_TABLE: tuple[tuple[str, str, str], ...] = (
    ("13.3", "CUDA 13.3 Update 1", "610.43.02"),
    ("13.3", "CUDA 13.3 GA", "610.43.02"),
    ("13.2", "CUDA 13.2 Update 2", "595.71.05"),
    ("13.2", "CUDA 13.2 Update 1", "595.58.03"),
    ("13.2", "CUDA 13.2 GA", "595.45.04"),
    ("13.1", "CUDA 13.1 Update 1", "590.48.01"),
    ("13.1", "CUDA 13.1 GA", "590.44.01"),
    ("13.0", "CUDA 13.0 Update 2", "580.95.05"),
    ("13.0", "CUDA 13.0 Update 1", "580.82.07"),
    ("13.0", "CUDA 13.0 GA", "580.65.06"),
    ("12.9", "CUDA 12.9 Update 1", "575.57.08"),
    ("12.9", "CUDA 12.9 GA", "575.51.03"),
    ("12.8", "CUDA 12.8 Update 1", "570.124.06"),
    ("12.8", "CUDA 12.8 GA", "570.26"),
    ("12.6", "CUDA 12.6 Update 3", "560.35.05"),
    ("12.6", "CUDA 12.6 Update 2", "560.35.03"),
    ("12.6", "CUDA 12.6 Update 1", "560.35.03"),
    ("12.6", "CUDA 12.6 GA", "560.28.03"),
    ("12.5", "CUDA 12.5 Update 1", "555.42.06"),
    ("12.5", "CUDA 12.5 GA", "555.42.02"),
    ("12.4", "CUDA 12.4 Update 1", "550.54.15"),
    ("12.4", "CUDA 12.4 GA", "550.54.14"),
    ("12.3", "CUDA 12.3 Update 1", "545.23.08"),
    ("12.3", "CUDA 12.3 GA", "545.23.06"),
    ("12.2", "CUDA 12.2 Update 2", "535.104.05"),
    ("12.2", "CUDA 12.2 Update 1", "535.86.09"),
    ("12.2", "CUDA 12.2 GA", "535.54.03"),
    ("12.1", "CUDA 12.1 Update 1", "530.30.02"),
    ("12.1", "CUDA 12.1 GA", "530.30.02"),
    ("12.0", "CUDA 12.0 Update 1", "525.85.12"),
    ("12.0", "CUDA 12.0 GA", "525.60.13"),
    ("11.8", "CUDA 11.8 GA", "520.61.05"),
    ("11.7", "CUDA 11.7 Update 1", "515.48.07"),
    ("11.7", "CUDA 11.7 GA", "515.43.04"),
    ("11.6", "CUDA 11.6 Update 2", "510.47.03"),
    ("11.6", "CUDA 11.6 Update 1", "510.47.03"),
    ("11.6", "CUDA 11.6 GA", "510.39.01"),
    ("11.5", "CUDA 11.5 Update 2", "495.29.05"),
    ("11.5", "CUDA 11.5 Update 1", "495.29.05"),
    ("11.5", "CUDA 11.5 GA", "495.29.05"),
    ("11.4", "CUDA 11.4 Update 4", "470.82.01"),
    ("11.4", "CUDA 11.4 Update 3", "470.82.01"),
    ("11.4", "CUDA 11.4 Update 2", "470.57.02"),
    ("11.4", "CUDA 11.4 Update 1", "470.57.02"),
    ("11.4", "CUDA 11.4.0 GA", "470.42.01"),
    ("11.3", "CUDA 11.3.1 Update 1", "465.19.01"),
    ("11.3", "CUDA 11.3.0 GA", "465.19.01"),
    ("11.2", "CUDA 11.2.2 Update 2", "460.32.03"),
    ("11.2", "CUDA 11.2.1 Update 1", "460.32.03"),
    ("11.2", "CUDA 11.2.0 GA", "460.27.03"),
    ("11.1", "CUDA 11.1.1 Update 1", "455.32"),
    ("11.1", "CUDA 11.1 GA", "455.23"),
    ("11.0", "CUDA 11.0.3 Update 1", "450.51.06"),
    ("11.0", "CUDA 11.0.2 GA", "450.51.05"),
    ("10.2", "CUDA 10.2.89", "440.33"),
    ("10.1", "CUDA 10.1 (10.1.105 general release, and updates)", "418.39"),
    ("10.0", "CUDA 10.0.130", "410.48"),
    ("9.2", "CUDA 9.2 (9.2.148 Update 1)", "396.37"),
    ("9.2", "CUDA 9.2 (9.2.88)", "396.26"),
    ("9.1", "CUDA 9.1 (9.1.85)", "390.46"),
    ("9.0", "CUDA 9.0 (9.0.76)", "384.81"),
    ("8.0", "CUDA 8.0 (8.0.61 GA2)", "375.26"),
    ("8.0", "CUDA 8.0 (8.0.44)", "367.48"),
    ("7.5", "CUDA 7.5 (7.5.16)", "352.31"),
    ("7.0", "CUDA 7.0 (7.0.28)", "346.46"),
)


def max_cuda_for_driver(driver_version: str) -> str | None:
    """The newest CUDA release ("X.Y") whose toolkit driver this Linux driver meets, or None.

    A lower bound: beta drivers and drivers newer than the table's last row may support more, which
    is why the ``CUDA Version`` nvidia-smi prints is preferred when there is one. None for a version
    that is not a desktop/server driver number (e.g. Jetson's L4T "35.3.1") or older than CUDA 7.0.
    """
    text = driver_version.strip()
    if not re.fullmatch(_VERSION, text):
        return None
    supported = [
        cuda
        for cuda, _label, minimum in CUDA_DRIVER_TABLE
        if parse_version(text) >= parse_version(minimum)
    ]
    return max(supported, key=parse_version, default=None)


def min_driver_for_cuda(cuda_version: str) -> str | None:
    """The oldest Linux driver any toolkit of CUDA release "X.Y" ships with (its GA row), or None.

    Later updates of a release may need a slightly newer driver (12.4 Update 1 needs 550.54.15, GA
    550.54.14); see :data:`CUDA_DRIVER_TABLE`. Extra components ("12.4.1") are ignored.
    """
    parts = cuda_version.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts):
        return None
    release = f"{int(parts[0])}.{int(parts[1])}"
    minimums = [m for cuda, _label, m in CUDA_DRIVER_TABLE if cuda == release]
    return min(minimums, key=parse_version, default=None)


@dataclass(frozen=True, kw_only=True)
class Gpu:
    """One GPU as nvidia-smi lists it; None where nvidia-smi did not say (or could not be read)."""

    index: int
    name: str | None
    uuid: str | None
    memory_mib: int | None
    compute_capability: str | None  # "8.9"


@dataclass(frozen=True, kw_only=True)
class DriverInfo:
    """The driver, and the newest CUDA release it supports."""

    version: str
    version_source: str  # "nvidia-smi" or "/proc/driver/nvidia/version"
    cuda_version: str | None  # "12.4"
    cuda_version_source: str | None  # "nvidia-smi", "driver-table" (a lower bound), None if unknown


@dataclass(frozen=True, kw_only=True)
class NvidiaReport:
    """What this machine has: no driver and no GPUs is a valid, warning-free answer."""

    driver: DriverInfo | None
    gpus: tuple[Gpu, ...]
    warnings: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ParsedQuery:
    """The GPUs from ``nvidia-smi --query-gpu`` CSV, and the one driver version they report."""

    gpus: tuple[Gpu, ...]
    driver_version: str | None
    warnings: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class SmiHeader:
    """The versions in the header of plain ``nvidia-smi`` output."""

    smi_version: str | None  # "NVIDIA-SMI 550.54.15": the tool's own version
    driver_version: str | None  # "Driver Version:" or, from the 610 drivers on, "KMD Version:"
    cuda_version: str | None  # "CUDA Version:" / "CUDA UMD Version:"; None when absent or "N/A"


def _missing(value: str) -> bool:
    """nvidia-smi's ways of saying "no value": N/A, [N/A], [Not Supported], [Unknown Error], ..."""
    text = value.strip()
    return not text or text in ("N/A", "Not Supported") or text.startswith("[")


def _header_fields(line: str) -> list[str] | None:
    """The field names if ``line`` is a CSV header ("index, memory.total [MiB], ..."), else None."""
    cells = [re.sub(r"\s*\[[^\]]*\]$", "", cell.strip()) for cell in line.split(",")]
    # Field names are dotted identifiers ("pci.baseClass"); values never are all of them at once.
    if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", cell) for cell in cells):
        return None
    if not any(cell in _KNOWN_FIELDS for cell in cells):
        return None
    return [_ALIASES.get(cell, cell) for cell in cells]


def parse_query_csv(text: str, fields: Sequence[str] = QUERY_FIELDS) -> ParsedQuery:
    """Parse ``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]`` output.

    ``fields`` names the columns of header-less output; a header line, when present, names them
    instead. Fields other than those in :data:`QUERY_FIELDS` are ignored; absent ones stay None
    (a missing ``index`` becomes the row's position, the order nvidia-smi lists GPUs in).
    """
    warnings: list[str] = []
    lines = [line for line in text.splitlines() if line.strip()]
    columns = [_ALIASES.get(f, f) for f in fields]
    if lines and (header := _header_fields(lines[0])) is not None:
        columns = header
        lines = lines[1:]
    gpus: list[Gpu] = []
    drivers: list[str] = []
    ignored: list[str] = []
    for line in lines:
        # Split at most len-1 times: a comma inside the last column (the name) stays in it.
        cells = [cell.strip() for cell in line.split(",", len(columns) - 1)]
        if len(cells) != len(columns):
            ignored.append(line.strip())
            continue
        row = dict(zip(columns, cells, strict=True))
        gpu, driver, row_warnings = _gpu_from_row(row, len(gpus))
        warnings.extend(row_warnings)
        gpus.append(gpu)
        if driver is not None and driver not in drivers:
            drivers.append(driver)
    if ignored:
        # One warning, not one per line: garbage output (a help text, an error page) is long.
        warnings.append(
            f"nvidia-smi --query-gpu: ignored {len(ignored)} line(s) that are not rows of "
            f"{len(columns)} values, the first: {ignored[0][:120]!r}"
        )
    if len(drivers) > 1:
        warnings.append(
            f"nvidia-smi reports different driver versions per GPU: {', '.join(drivers)}"
        )
    indexes = [gpu.index for gpu in gpus]
    if len(set(indexes)) != len(indexes):
        warnings.append(f"nvidia-smi lists the same GPU index twice: {indexes}")
    return ParsedQuery(
        gpus=tuple(gpus), driver_version=drivers[0] if drivers else None, warnings=tuple(warnings)
    )


def _gpu_from_row(row: dict[str, str], position: int) -> tuple[Gpu, str | None, list[str]]:
    warnings: list[str] = []

    def value(field: str) -> str | None:
        raw = row.get(field)
        return None if raw is None or _missing(raw) else raw

    def checked(field: str, pattern: str, where: str, what: str, expected: str) -> str | None:
        raw = value(field)
        if raw is None or re.fullmatch(pattern, raw):
            return raw
        warnings.append(f"{where}: {what} {raw!r} is not {expected}")
        return None

    raw_index = checked("index", r"\d+", f"GPU in line {position + 1}", "index", "a number")
    index = position if raw_index is None else int(raw_index)
    where = f"GPU {index}"
    memory = checked("memory.total", r"\d+(?:\s*MiB)?", where, "total memory", "a number of MiB")
    gpu = Gpu(
        index=index,
        name=value("name"),
        memory_mib=None if memory is None else int(memory.removesuffix("MiB")),
        compute_capability=checked("compute_cap", _CUDA, where, "compute capability", "'X.Y'"),
        uuid=value("uuid"),
    )
    driver = checked("driver_version", _VERSION, where, "driver version", "a version number")
    return gpu, driver, warnings


def parse_smi_header(text: str) -> SmiHeader | None:
    """Read the versions from plain ``nvidia-smi`` output; None if it shows neither driver nor CUDA.

    Handles the classic header (``Driver Version: 550.54.15   CUDA Version: 12.4``), the 610+
    header (``KMD Version: 610.43.02   CUDA UMD Version: 13.3``), old drivers that print no CUDA
    version at all (396.x and earlier) and ``CUDA Version: N/A`` (seen on FreeBSD).
    """
    smi = re.search(r"NVIDIA-SMI\s+(\d+(?:\.\d+)+)", text)
    driver = re.search(r"(?:Driver|KMD) Version\s*:\s*(\d+(?:\.\d+)+)", text)
    cuda = re.search(r"CUDA (?:UMD )?Version\s*:\s*(\S+)", text)
    cuda_version = None
    if cuda is not None and re.fullmatch(_CUDA, cuda.group(1)):
        cuda_version = cuda.group(1)
    if driver is None and cuda_version is None:
        return None
    return SmiHeader(
        smi_version=smi.group(1) if smi else None,
        driver_version=driver.group(1) if driver else None,
        cuda_version=cuda_version,
    )


def parse_proc_version(text: str) -> str | None:
    """The loaded kernel module's version in ``/proc/driver/nvidia/version``, or None.

    ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  ...`` (proprietary) or
    ``NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build ...`` (open).
    """
    match = re.search(
        r"^NVRM version:.*?\bKernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)\b", text, re.MULTILINE
    )
    return match.group(1) if match else None


def _first_line(result: Finished) -> str:
    for stream in (result.stdout, result.stderr):
        for line in stream.splitlines():
            if line.strip():
                return line.strip()
    return "(no output)"


def report_from_outputs(
    *,
    query_csv: str | None,
    query_fields: Sequence[str] = QUERY_FIELDS,
    smi_text: str | None = None,
    proc_text: str | None = None,
) -> NvidiaReport:
    """Build the report from the texts the commands printed (None for what was not available).

    Pure: :func:`detect_nvidia` runs the commands and adds warnings about the ones that failed.
    """
    warnings: list[str] = []
    gpus: tuple[Gpu, ...] = ()
    smi_driver: str | None = None
    if query_csv is not None:
        parsed = parse_query_csv(query_csv, query_fields)
        warnings.extend(parsed.warnings)
        gpus = parsed.gpus
        smi_driver = parsed.driver_version
        if not gpus:
            warnings.append("nvidia-smi --query-gpu listed no GPUs")

    header = parse_smi_header(smi_text) if smi_text is not None else None
    if smi_text is not None and header is None:
        warnings.append("the nvidia-smi table has no 'Driver Version' or 'CUDA Version' header")
    if smi_driver is None and header is not None:
        smi_driver = header.driver_version
    if (
        header is not None
        and header.smi_version is not None
        and header.driver_version is not None
        and header.smi_version != header.driver_version
    ):
        # Seen with an nvidia-smi bundled in a snap or container image: an older tool does not
        # know newer fields (compute_cap) and may misreport.
        warnings.append(
            f"nvidia-smi {header.smi_version} does not match driver {header.driver_version}; "
            "it comes from another installation and may not know every field"
        )

    proc = parse_proc_version(proc_text) if proc_text is not None else None
    if proc_text is not None and proc is None:
        warnings.append(f"/{PROC_VERSION} names no kernel module version")

    if smi_driver is not None:
        version, version_source = smi_driver, "nvidia-smi"
        if proc is not None and proc != smi_driver:
            warnings.append(
                f"nvidia-smi reports driver {smi_driver} but the loaded kernel module is "
                f"{proc}; reboot or reload the module so that they match"
            )
    elif proc is not None:
        version, version_source = proc, f"/{PROC_VERSION}"
    else:
        return NvidiaReport(driver=None, gpus=gpus, warnings=tuple(warnings))

    cuda: str | None
    cuda_source: str | None
    if header is not None and header.cuda_version is not None:
        cuda, cuda_source = header.cuda_version, "nvidia-smi"
    else:
        cuda = max_cuda_for_driver(version)
        cuda_source = "driver-table" if cuda is not None else None
        if header is not None:
            warnings.append(
                "the nvidia-smi header gives no CUDA version"
                + (f"; using NVIDIA's driver table, which gives at least {cuda}" if cuda else "")
            )
        if cuda is None:
            warnings.append(f"CUDA support of driver {version} is unknown")
    driver = DriverInfo(
        version=version,
        version_source=version_source,
        cuda_version=cuda,
        cuda_version_source=cuda_source,
    )
    return NvidiaReport(driver=driver, gpus=gpus, warnings=tuple(warnings))


def query_argv(fields: Sequence[str] = QUERY_FIELDS) -> tuple[str, ...]:
    """The ``nvidia-smi --query-gpu`` command line for ``fields``."""
    return ("nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits")


#: Plain ``nvidia-smi``: the table whose header holds the CUDA version.
SMI_ARGV: tuple[str, ...] = ("nvidia-smi",)


def _run_nvidia_smi(argv: tuple[str, ...]) -> Finished:
    env = {**os.environ, "LC_ALL": "C"}  # its messages are matched in English
    call = Command(argv=argv, what="nvidia-smi did not run", env=env, timeout=NVIDIA_SMI_TIMEOUT)
    return attempt(call)


def _read_proc(root: Path) -> tuple[str | None, str | None]:
    """The text of ``root/proc/driver/nvidia/version`` (None if absent) and a warning, if any."""
    path = root / PROC_VERSION
    try:
        with path.open("rb") as handle:
            raw = handle.read(_PROC_MAX_BYTES)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read /{PROC_VERSION}: {exc.strerror or exc}"
    return raw.decode("utf-8", errors="replace"), None


def detect_nvidia(*, root: Path = Path("/")) -> NvidiaReport:
    """Detect the NVIDIA driver and GPUs: at most one query (two for old drivers) and one table call.

    No nvidia-smi and no ``/proc/driver/nvidia/version`` means no driver, no GPUs and no warning.
    """
    proc_text, proc_warning = _read_proc(root)
    warnings = [proc_warning] if proc_warning else []

    fields = QUERY_FIELDS
    result = _run_nvidia_smi(query_argv(fields))
    if result.returncode not in (None, 0):
        rejected = _REJECTED_FIELD_RE.search(result.stdout + "\n" + result.stderr)
        if rejected is not None and rejected.group(1) == "compute_cap":
            # Drivers before the compute_cap field (e.g. 465.27, whose --help-query-gpu lacks it).
            fields = QUERY_FIELDS_NO_COMPUTE_CAP
            result = _run_nvidia_smi(query_argv(fields))
            warnings.append(
                "this nvidia-smi cannot report compute capability (it rejects the 'compute_cap' "
                "field); compute capability is unknown"
            )

    query_csv = smi_text = None
    if result.returncode is None:
        if proc_text is None and not warnings:
            return NvidiaReport(driver=None, gpus=(), warnings=())  # no NVIDIA driver: absent
        warnings.append(
            "nvidia-smi is not installed or did not answer in time; GPUs are not listed"
        )
    elif result.returncode != 0:
        # Typically the driver is not loaded ("NVIDIA-SMI has failed because it couldn't
        # communicate with the NVIDIA driver. ..."); the table call would fail the same way.
        warnings.append(
            f"nvidia-smi failed (exit status {result.returncode}): {_first_line(result)}"
        )
    else:
        query_csv = result.stdout
        table = _run_nvidia_smi(SMI_ARGV)
        if table.returncode is None:
            warnings.append(
                "plain nvidia-smi did not answer in time; CUDA version from driver table"
            )
        elif table.returncode != 0:
            warnings.append(
                f"plain nvidia-smi failed (exit status {table.returncode}): {_first_line(table)}"
            )
        else:
            smi_text = table.stdout
    report = report_from_outputs(
        query_csv=query_csv, query_fields=fields, smi_text=smi_text, proc_text=proc_text
    )
    return replace(report, warnings=(*warnings, *report.warnings))
