"""``tfbuild detect``: describe a machine (this one, or saved /proc/cpuinfo dumps)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_data
from tfbuild.core.options import CPUINFOS, JSON, TARGET, declared, option


@dataclass(frozen=True, kw_only=True)
class DetectArgs:
    as_json: bool = option(JSON, default=False)
    cpuinfo: tuple[Path, ...] = option(CPUINFOS, default=())
    compiler: str | None = declared(
        None,
        "--compiler",
        metavar="COMPILER",
        help="Compiler the flags are for, e.g. clang-18 or gcc-12 (a bare name asks PATH). "
        "Default: the newest recipe's compiler (what a build uses).",
    )
    target: str | None = option(
        TARGET.but(
            help="Only the flags for a portable target (x86_64_v3, haswell, ...) and whether it "
            "runs on the machine(s): the answer alone (--json: the whole report with it)."
        ),
        default=None,
    )
    why_not: tuple[str, ...] = declared(
        (),
        "--why-not",
        metavar="NAME",
        help="Only whether code built for this target runs on the machine, and why not: the "
        "answer alone (--json: the whole report with it).",
    )
    gpu: bool = declared(
        True, "--gpu/--no-gpu", help="Look for CUDA, cuDNN, NCCL, TensorRT and GPUs."
    )

    @property
    def question(self) -> bool:
        """A question (--target, --why-not) gets its answer alone; --json is always the whole
        report."""
        return bool(self.target or self.why_not) and not self.as_json


@takes(DetectArgs)
def detect_command(request: DetectArgs) -> None:
    """Describe a machine: CPU and microarchitecture, TensorFlow's CPU features, compiler flags,
    CUDA and GPUs, resources."""
    from tfbuild.detect.gather import gather

    report = gather(
        cpuinfo_files=request.cpuinfo,
        compiler_spec=request.compiler,
        target=request.target,
        why_not=request.why_not,
        with_gpu=request.gpu and not request.question,
    )
    if request.as_json:
        print_data(report)
        return
    from tfbuild.cli.display import print_detect, print_detect_answers

    if request.question:
        print_detect_answers(report)
    else:
        print_detect(report)
