"""NVIDIA driver and GPU detection, on recorded real nvidia-smi output (this machine has no GPU).

Every text under tests/fixtures/nvidia/ was printed by a real nvidia-smi or kernel module; SOURCES.md
there names the machine or thread each came from. Parsers are tested on them directly; the entry
point is tested with them replayed per command line through ``commands.replaying``, and once on this machine for real.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from tfbuild.core import commands, serial
from tfbuild.core.commands import Finished
from tfbuild.detect.nvidia import (
    CUDA_DRIVER_TABLE,
    QUERY_FIELDS,
    QUERY_FIELDS_NO_COMPUTE_CAP,
    SMI_ARGV,
    DriverInfo,
    Gpu,
    NvidiaReport,
    SmiHeader,
    detect_nvidia,
    max_cuda_for_driver,
    min_driver_for_cuda,
    parse_proc_version,
    parse_query_csv,
    parse_smi_header,
    query_argv,
    report_from_outputs,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia"
MASKED_UUID = "GPU-00000000-0000-0000-0000-000000000000"  # as the capture tool stored it
NOT_LOADED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)


def fx(relative: str) -> str:
    return (FIXTURES / relative).read_text(encoding="utf-8")


#: How the runner answers a program that is not installed (or did not answer in time).
ABSENT = Finished(returncode=None, problem="it cannot run: No such file or directory")


def ok(stdout: str) -> Finished:
    return Finished(returncode=0, stdout=stdout)


class Replay:
    """A runner answering each command line with its recorded result; it fails on any other."""

    def __init__(self, answers: Mapping[tuple[str, ...], Finished]) -> None:
        self.answers = dict(answers)
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, call: commands.Command) -> Finished:
        self.calls.append(call.argv)
        assert call.argv in self.answers, f"detect_nvidia ran an unrecorded command: {call.argv}"
        return self.answers[call.argv]


class Everything:
    """A runner giving the same answer to every command (:data:`ABSENT`: no nvidia-smi)."""

    def __init__(self, answer: Finished) -> None:
        self.answer = answer
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, call: commands.Command) -> Finished:
        self.calls.append(call.argv)
        return self.answer


def detect(run: Replay | Everything, root: Path) -> NvidiaReport:
    with commands.replaying(run):
        return detect_nvidia(root=root)


def with_proc(tmp_path: Path, text: str) -> Path:
    """A fake root whose /proc/driver/nvidia/version holds a recorded file's text."""
    path = tmp_path / "proc" / "driver" / "nvidia" / "version"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return tmp_path


# --------------------------------------------------------------------------------------------------
# NVIDIA's driver table
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [
        ("525.60.13", "12.0"),  # CUDA 12.0 GA's minimum
        ("525.60.12", "11.8"),
        ("535.129.03", "12.2"),
        ("550.54.14", "12.4"),
        ("550.54.13", "12.3"),
        ("555.42.02", "12.5"),
        ("570.26", "12.8"),  # two-part versions compare by number, not text
        ("580.65.05", "12.9"),
        ("580.65.06", "13.0"),
        ("595.80", "13.2"),
        ("610.43.02", "13.3"),
        ("616.00", "13.3"),  # newer than the table: a lower bound
        ("465.27", "11.3"),
        ("384.98", "9.0"),
        ("346.46", "7.0"),
        ("346.45", None),
        ("35.3.1", None),  # a Jetson L4T release, not a driver number
        ("550", None),
        ("", None),
        ("N/A", None),
        ("1.2.3.4.5", None),
    ],
)
def test_max_cuda_for_driver(driver: str, cuda: str | None) -> None:
    assert max_cuda_for_driver(driver) == cuda


@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        ("12.0", "525.60.13"),
        ("12.4", "550.54.14"),
        ("12.4.1", "550.54.14"),  # the release's GA row; Update 1 itself needs 550.54.15
        ("12.5", "555.42.02"),
        ("12.8", "570.26"),
        ("13.0", "580.65.06"),
        ("11.0", "450.51.05"),  # the 11.0.1 RC row is left out
        ("12.7", None),  # never released
        ("twelve", None),
        ("12", None),
    ],
)
def test_min_driver_for_cuda(cuda: str, driver: str | None) -> None:
    assert min_driver_for_cuda(cuda) == driver


def test_driver_table_is_consistent() -> None:
    """Newest first, drivers never rising down the table, and the two lookups inverse."""
    keys = [tuple(int(p) for p in driver.split(".")) for _cuda, _label, driver in CUDA_DRIVER_TABLE]
    assert keys == sorted(keys, reverse=True)
    for cuda in {row[0] for row in CUDA_DRIVER_TABLE}:
        minimum = min_driver_for_cuda(cuda)
        assert minimum is not None
        assert max_cuda_for_driver(minimum) == cuda


@pytest.mark.parametrize(
    "table",
    [
        "l40s-595.80/nvidia-smi.txt",
        "h200-610.43.02/nvidia-smi.txt",
        "akash-12-two-quadro-rtx4000/nvidia-smi.txt",
        "sglang-27487-b200/nvidia-smi.txt",
        "compute-cap-rejected-470/nvidia-smi.txt",
        "header-418.39/nvidia-smi.txt",
    ],
)
def test_recorded_release_drivers_agree_with_the_table(table: str) -> None:
    header = parse_smi_header(fx(table))
    assert header is not None and header.driver_version is not None
    assert max_cuda_for_driver(header.driver_version) == header.cuda_version


def test_beta_driver_shows_why_the_table_is_a_lower_bound() -> None:
    header = parse_smi_header(fx("header-550.40.07-beta/nvidia-smi.txt"))
    assert header == SmiHeader(
        smi_version="550.40.07", driver_version="550.40.07", cuda_version="12.4"
    )
    assert max_cuda_for_driver("550.40.07") == "12.3"  # below 12.4 GA's 550.54.14


# --------------------------------------------------------------------------------------------------
# parse_query_csv
# --------------------------------------------------------------------------------------------------


def test_query_csv_projection_matches_the_recorded_full_query_l40s() -> None:
    recorded = parse_query_csv(fx("l40s-595.80/recorded-query-gpu.csv"))  # 202 columns, header
    projected = parse_query_csv(fx("l40s-595.80/query.csv"))
    expected = Gpu(
        index=0, name="NVIDIA L40S", memory_mib=46068, compute_capability="8.9", uuid=MASKED_UUID
    )
    assert recorded.gpus == projected.gpus == (expected,)
    assert recorded.driver_version == projected.driver_version == "595.80"
    assert recorded.warnings == projected.warnings == ()


def test_query_csv_projection_matches_the_recorded_full_query_465() -> None:
    recorded = parse_query_csv(fx("rtx2080super-465.27/recorded-query-gpu.csv"))
    projected = parse_query_csv(
        fx("rtx2080super-465.27/query-no-compute-cap.csv"), QUERY_FIELDS_NO_COMPUTE_CAP
    )
    expected = Gpu(
        index=0,
        name="NVIDIA GeForce RTX 2080 SUPER",
        memory_mib=7979,
        compute_capability=None,
        uuid="GPU-1937b558-347d-0f30-105b-893b98985668",
    )
    assert recorded.gpus == projected.gpus == (expected,)
    assert recorded.driver_version == projected.driver_version == "465.27"
    # The UUID is the one nvidia-smi -L printed on the same machine.
    assert expected.uuid is not None and expected.uuid in fx("rtx2080super-465.27/list-gpus.txt")


def test_query_csv_h200() -> None:
    parsed = parse_query_csv(fx("h200-610.43.02/query.csv"))
    assert parsed.gpus == (
        Gpu(
            index=0,
            name="NVIDIA H200",
            memory_mib=143771,
            compute_capability="9.0",
            uuid=MASKED_UUID,
        ),
    )
    assert parsed.driver_version == "610.43.02"


def test_query_csv_two_gpus_with_header_and_other_fields() -> None:
    parsed = parse_query_csv(fx("triton-8070-two-gpus/query-gpu.csv"))
    assert parsed.gpus == (
        Gpu(index=0, name="NVIDIA TITAN V", memory_mib=None, compute_capability="7.0", uuid=None),
        Gpu(
            index=1,
            name="NVIDIA RTX 5880 Ada Generation",
            memory_mib=None,
            compute_capability="8.9",
            uuid=None,
        ),
    )
    assert parsed.driver_version == "570.86.15"
    assert parsed.warnings == ()


def test_query_csv_without_header_with_units_and_no_index() -> None:
    fields = ("name", "memory.total", "driver_version", "pci.device_id")
    parsed = parse_query_csv(fx("akash-81-two-quadro-rtx6000/query-gpu.csv"), fields)
    assert [(g.index, g.name, g.memory_mib) for g in parsed.gpus] == [
        (0, "Quadro RTX 6000", 24576),
        (1, "Quadro RTX 6000", 24576),
    ]
    assert parsed.driver_version == "570.211.01"
    assert parsed.warnings == ()


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "\n\n",
        "\x00\xff\ufffd binary",
        fx("l40s-595.80/nvidia-smi.txt"),  # the table, where CSV was expected
        fx("driver-not-loaded/nvidia-smi.txt"),
    ],
)
def test_query_csv_never_crashes_on_garbage(garbage: str) -> None:
    parsed = parse_query_csv(garbage)
    assert parsed.gpus == ()
    assert parsed.driver_version is None
    assert len(parsed.warnings) <= 1  # one summary warning, not one per line


def test_query_csv_bad_values_become_none_with_warnings() -> None:
    # Odd values in otherwise well-formed rows; the last field keeps a comma in a name.
    text = (
        "x, GPU-a, 550.54.15, lots, eight, Some GPU\n"
        "1, [N/A], [Not Supported], [N/A], [N/A], Name, With Comma\n"
    )
    parsed = parse_query_csv(text)
    first, second = parsed.gpus
    assert first == Gpu(
        index=0, name="Some GPU", memory_mib=None, compute_capability=None, uuid="GPU-a"
    )
    assert second == Gpu(
        index=1, name="Name, With Comma", memory_mib=None, compute_capability=None, uuid=None
    )
    assert len(parsed.warnings) == 3  # index, memory and compute capability of the first row


def test_query_csv_flags_disagreeing_rows() -> None:
    text = "0, GPU-a, 550.54.15, 1, 8.9, A\n0, GPU-b, 535.129.03, 1, 8.9, B\n"
    parsed = parse_query_csv(text)
    assert parsed.driver_version == "550.54.15"
    assert any("different driver versions" in w for w in parsed.warnings)
    assert any("same GPU index twice" in w for w in parsed.warnings)


# --------------------------------------------------------------------------------------------------
# parse_smi_header and parse_proc_version
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ("l40s-595.80/nvidia-smi.txt", ("595.80", "595.80", "13.2")),
        ("h200-610.43.02/nvidia-smi.txt", ("610.43.02", "610.43.02", "13.3")),  # KMD / CUDA UMD
        ("sglang-27487-b200/nvidia-smi.txt", ("610.43.02", "610.43.02", "13.3")),
        ("akash-12-two-quadro-rtx4000/nvidia-smi.txt", ("535.129.03", "535.129.03", "12.2")),
        ("compute-cap-rejected-470/nvidia-smi.txt", ("470.256.02", "580.95.05", "13.0")),
        ("header-418.39/nvidia-smi.txt", ("418.39", "418.39", "10.1")),
        ("header-396.24-no-cuda/nvidia-smi.txt", ("396.24", "396.24", None)),
        ("header-575.64.03-cuda-na/nvidia-smi.txt", ("575.64.03", "575.64.03", None)),
    ],
)
def test_parse_smi_header(table: str, expected: tuple[str, str, str | None]) -> None:
    smi, driver, cuda = expected
    assert parse_smi_header(fx(table)) == SmiHeader(
        smi_version=smi, driver_version=driver, cuda_version=cuda
    )


@pytest.mark.parametrize(
    "text",
    [
        fx("driver-not-loaded/nvidia-smi.txt"),
        fx("h200-610.43.02/query.csv"),
        "",
        "CUDA Version: twelve",
    ],
)
def test_parse_smi_header_none(text: str) -> None:
    assert parse_smi_header(text) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("proprietary-384.98.txt", "384.98"),
        ("open-565.57.01.txt", "565.57.01"),
        ("open-525.60.11.txt", "525.60.11"),
        ("jetson-35.3.1.txt", "35.3.1"),
    ],
)
def test_parse_proc_version(name: str, expected: str) -> None:
    assert parse_proc_version(fx(f"proc-version/{name}")) == expected


@pytest.mark.parametrize("text", ["", "GCC version:  gcc version 7.2.0\n", "NVRM version: garbage"])
def test_parse_proc_version_none(text: str) -> None:
    assert parse_proc_version(text) is None


# --------------------------------------------------------------------------------------------------
# report_from_outputs (pure assembly)
# --------------------------------------------------------------------------------------------------


def test_report_two_gpus_to_json() -> None:
    report = report_from_outputs(query_csv=fx("triton-8070-two-gpus/query-gpu.csv"))
    assert serial.to_data(report) == {
        "driver": {
            "version": "570.86.15",
            "version_source": "nvidia-smi",
            "cuda_version": "12.8",
            "cuda_version_source": "driver-table",
        },
        "gpus": [
            {
                "index": 0,
                "name": "NVIDIA TITAN V",
                "uuid": None,
                "memory_mib": None,
                "compute_capability": "7.0",
            },
            {
                "index": 1,
                "name": "NVIDIA RTX 5880 Ada Generation",
                "uuid": None,
                "memory_mib": None,
                "compute_capability": "8.9",
            },
        ],
        "warnings": [],
    }
    assert json.loads(json.dumps(serial.to_data(report))) == serial.to_data(report)


def test_report_cuda_na_falls_back_to_the_table_with_a_warning() -> None:
    report = report_from_outputs(
        query_csv=None, smi_text=fx("header-575.64.03-cuda-na/nvidia-smi.txt")
    )
    assert report.driver == DriverInfo(
        version="575.64.03",
        version_source="nvidia-smi",
        cuda_version="12.9",
        cuda_version_source="driver-table",
    )
    assert len(report.warnings) == 1 and "no CUDA version" in report.warnings[0]


def test_report_old_nvidia_smi_on_new_driver_is_flagged() -> None:
    report = report_from_outputs(
        query_csv=None, smi_text=fx("compute-cap-rejected-470/nvidia-smi.txt")
    )
    assert report.driver is not None
    assert (report.driver.version, report.driver.cuda_version) == ("580.95.05", "13.0")
    assert report.warnings == (
        "nvidia-smi 470.256.02 does not match driver 580.95.05; it comes from another "
        "installation and may not know every field",
    )


def test_report_from_proc_only() -> None:
    report = report_from_outputs(query_csv=None, proc_text=fx("proc-version/open-565.57.01.txt"))
    assert report.driver == DriverInfo(
        version="565.57.01",
        version_source="/proc/driver/nvidia/version",
        cuda_version="12.6",
        cuda_version_source="driver-table",
    )
    assert report.warnings == ()


def test_report_jetson_proc_has_unknown_cuda() -> None:
    report = report_from_outputs(query_csv=None, proc_text=fx("proc-version/jetson-35.3.1.txt"))
    assert report.driver is not None
    assert (report.driver.cuda_version, report.driver.cuda_version_source) == (None, None)
    assert report.warnings == ("CUDA support of driver 35.3.1 is unknown",)


def test_report_flags_a_kernel_module_that_differs_from_nvidia_smi() -> None:
    # The L40S's nvidia-smi with another machine's /proc file: the "reboot after an upgrade" case.
    report = report_from_outputs(
        query_csv=fx("l40s-595.80/query.csv"),
        smi_text=fx("l40s-595.80/nvidia-smi.txt"),
        proc_text=fx("proc-version/open-565.57.01.txt"),
    )
    assert report.driver is not None and report.driver.version == "595.80"
    assert any("kernel module is 565.57.01" in w for w in report.warnings)


def test_report_nothing_at_all() -> None:
    assert report_from_outputs(query_csv=None) == NvidiaReport(driver=None, gpus=(), warnings=())


def test_to_json_key_order_is_fixed() -> None:
    report = report_from_outputs(
        query_csv=fx("l40s-595.80/query.csv"), smi_text=fx("l40s-595.80/nvidia-smi.txt")
    )
    data = serial.to_data(report)
    assert list(data) == ["driver", "gpus", "warnings"]
    assert list(data["driver"]) == [
        "version",
        "version_source",
        "cuda_version",
        "cuda_version_source",
    ]
    assert list(data["gpus"][0]) == ["index", "name", "uuid", "memory_mib", "compute_capability"]


# --------------------------------------------------------------------------------------------------
# detect_nvidia with replayed commands
# --------------------------------------------------------------------------------------------------


def test_query_command_line() -> None:
    assert query_argv() == (
        "nvidia-smi",
        "--query-gpu=index,uuid,driver_version,memory.total,compute_cap,name",
        "--format=csv,noheader,nounits",
    )
    assert tuple(f for f in QUERY_FIELDS if f != "compute_cap") == QUERY_FIELDS_NO_COMPUTE_CAP


def test_detect_absent_cleanly(tmp_path: Path) -> None:
    run = Everything(ABSENT)
    assert detect(run, tmp_path) == NvidiaReport(driver=None, gpus=(), warnings=())
    assert run.calls == [query_argv()]


def test_detect_driver_not_loaded(tmp_path: Path) -> None:
    run = Everything(Finished(returncode=9, stdout=fx("driver-not-loaded/nvidia-smi.txt")))
    report = detect(run, tmp_path)
    assert report == NvidiaReport(
        driver=None, gpus=(), warnings=(f"nvidia-smi failed (exit status 9): {NOT_LOADED}",)
    )
    assert run.calls == [query_argv()]  # the table call would fail the same way


def test_detect_l40s(tmp_path: Path) -> None:
    run = Replay(
        {
            query_argv(): ok(fx("l40s-595.80/query.csv")),
            SMI_ARGV: ok(fx("l40s-595.80/nvidia-smi.txt")),
        }
    )
    report = detect(run, tmp_path)
    assert report == NvidiaReport(
        driver=DriverInfo(
            version="595.80",
            version_source="nvidia-smi",
            cuda_version="13.2",
            cuda_version_source="nvidia-smi",
        ),
        gpus=(
            Gpu(
                index=0,
                name="NVIDIA L40S",
                memory_mib=46068,
                compute_capability="8.9",
                uuid=MASKED_UUID,
            ),
        ),
        warnings=(),
    )
    assert len(run.calls) == 2


def test_detect_h200_with_the_610_header(tmp_path: Path) -> None:
    run = Replay(
        {
            query_argv(): ok(fx("h200-610.43.02/query.csv")),
            SMI_ARGV: ok(fx("h200-610.43.02/nvidia-smi.txt")),
        }
    )
    report = detect(run, tmp_path)
    assert report.driver == DriverInfo(
        version="610.43.02",
        version_source="nvidia-smi",
        cuda_version="13.3",
        cuda_version_source="nvidia-smi",
    )
    assert [g.compute_capability for g in report.gpus] == ["9.0"]
    assert report.warnings == ()


def test_detect_old_driver_retries_without_compute_cap(tmp_path: Path) -> None:
    rejected = Finished(
        returncode=2, stdout=fx("compute-cap-rejected-470/query-gpu-compute-cap.txt")
    )
    run = Replay(
        {
            query_argv(): rejected,
            query_argv(QUERY_FIELDS_NO_COMPUTE_CAP): ok(
                fx("rtx2080super-465.27/query-no-compute-cap.csv")
            ),
            SMI_ARGV: ABSENT,  # not in the recording: replayed as "did not answer in time"
        }
    )
    report = detect(run, tmp_path)
    assert report.driver == DriverInfo(
        version="465.27",
        version_source="nvidia-smi",
        cuda_version="11.3",
        cuda_version_source="driver-table",
    )
    assert report.gpus == (
        Gpu(
            index=0,
            name="NVIDIA GeForce RTX 2080 SUPER",
            memory_mib=7979,
            compute_capability=None,
            uuid="GPU-1937b558-347d-0f30-105b-893b98985668",
        ),
    )
    assert len(report.warnings) == 2
    assert "compute_cap" in report.warnings[0]
    assert "driver table" in report.warnings[1]
    assert run.calls == [query_argv(), query_argv(QUERY_FIELDS_NO_COMPUTE_CAP), SMI_ARGV]


def test_detect_rejected_field_and_failing_retry(tmp_path: Path) -> None:
    rejected = Finished(
        returncode=2, stdout=fx("compute-cap-rejected-470/query-gpu-compute-cap.txt")
    )
    run = Everything(rejected)
    report = detect(run, tmp_path)
    assert report.driver is None and report.gpus == ()
    assert report.warnings[-1] == (
        'nvidia-smi failed (exit status 2): Field "compute_cap" is not a valid field to query.'
    )
    assert len(run.calls) == 2  # no endless retrying


def test_detect_kernel_module_without_nvidia_smi(tmp_path: Path) -> None:
    root = with_proc(tmp_path, fx("proc-version/proprietary-384.98.txt"))
    report = detect(Everything(ABSENT), root)
    assert report.driver == DriverInfo(
        version="384.98",
        version_source="/proc/driver/nvidia/version",
        cuda_version="9.0",
        cuda_version_source="driver-table",
    )
    assert report.gpus == ()
    assert report.warnings == (
        "nvidia-smi is not installed or did not answer in time; GPUs are not listed",
    )


def test_detect_unreadable_proc_file(tmp_path: Path) -> None:
    (tmp_path / "proc" / "driver" / "nvidia" / "version").mkdir(parents=True)  # a directory
    report = detect(Everything(ABSENT), tmp_path)
    assert report.driver is None
    assert any("cannot read /proc/driver/nvidia/version" in w for w in report.warnings)


def test_detect_garbage_output_gives_warnings_not_errors(tmp_path: Path) -> None:
    # An nvidia-smi that ignores its arguments and prints its table, then prints nothing.
    run = Replay({query_argv(): ok(fx("l40s-595.80/nvidia-smi.txt")), SMI_ARGV: ok("")})
    report = detect(run, tmp_path)
    assert report.driver is None
    assert report.gpus == ()
    assert report.warnings  # explained, not raised
    json.dumps(serial.to_data(report))


def test_detect_failing_table_call_falls_back_to_the_table(tmp_path: Path) -> None:
    run = Replay(
        {
            query_argv(): ok(fx("l40s-595.80/query.csv")),
            SMI_ARGV: Finished(returncode=9, stdout=fx("driver-not-loaded/nvidia-smi.txt")),
        }
    )
    report = detect(run, tmp_path)
    assert report.driver is not None
    assert (report.driver.cuda_version, report.driver.cuda_version_source) == (
        "13.2",
        "driver-table",
    )
    assert report.warnings == (f"plain nvidia-smi failed (exit status 9): {NOT_LOADED}",)


# --------------------------------------------------------------------------------------------------
# This machine, for real
# --------------------------------------------------------------------------------------------------


def test_detect_on_this_machine() -> None:
    report = detect_nvidia()  # how long it takes: benchmarks/gpu_detect_speed.py
    data = serial.to_data(report)
    assert json.loads(json.dumps(data)) == data
    if shutil.which("nvidia-smi") is None and not Path("/proc/driver/nvidia/version").exists():
        assert report == NvidiaReport(driver=None, gpus=(), warnings=())
        return
    # A machine with NVIDIA software: whatever is real, but consistent.
    if report.gpus:
        assert report.driver is not None
    indexes = [gpu.index for gpu in report.gpus]
    assert len(set(indexes)) == len(indexes)
    if report.driver is not None:
        assert max_cuda_for_driver(report.driver.version) is not None or report.warnings
