"""One `tfbuild smoke` run: environments, probes, the side-by-side benchmark, settings, report."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tfbuild.core import serial
from tfbuild.core.defaults import multiarch
from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.core.files import read_input
from tfbuild.core.pythons import packages_of
from tfbuild.detect import cpu
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.measure import forecast_report
from tfbuild.measure.envs import TestEnv, WheelSpec, clean_env, ensure_env, stock_spec
from tfbuild.measure.forecast_store import saved_forecast
from tfbuild.measure.run import (
    Method,
    OpResult,
    SettingTrial,
    compare,
    openmp_env,
    threads_env,
    try_setting,
)
from tfbuild.smoke.options import SmokeOptions
from tfbuild.smoke.probe import ProbeResult, run_probe
from tfbuild.smoke.report import SmokeReport, write_env_file
from tfbuild.smoke.standin import receipt_beside

Progress = Callable[[str], None]


def with_wheel_files(options: SmokeOptions) -> SmokeOptions:
    """The options completed with what tfbuild wheel left beside a wheel file: the runtime env file
    ``<wheel>.env`` (unless ``--env-file`` names another) and the receipt ``<wheel>.json`` (what the
    wheel was built for)."""
    wheel = options.wheel if options.wheel and options.wheel.endswith(".whl") else None
    env_file = options.env_file
    if env_file is None and wheel is not None:
        beside = Path(wheel).with_suffix(".env")
        env_file = beside if beside.exists() else None
    runtime = read_env_file(env_file) if env_file is not None and env_file.exists() else {}
    return replace(
        options,
        env_file=env_file,
        runtime_env=runtime or options.runtime_env,
        built_for=built_for(Path(wheel)) if wheel is not None else options.built_for,
    )


#: The most of an env file read: tfbuild writes a few lines.
MAX_ENV_FILE_BYTES = 1 << 20


def read_env_file(path: Path) -> dict[str, str]:
    """NAME=value lines (comments and blank lines ignored), as tfbuild writes them; read by
    :func:`read_input` (a FIFO or a device is one line, exit 3)."""
    what = f"the env file {path}"
    fix = "Point --env-file at the <wheel>.env tfbuild wheel wrote, or remove what is there."
    try:
        data = read_input(path, limit=MAX_ENV_FILE_BYTES, what=what, fix=fix)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"no env file at {path}", fix=fix) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not text", why=str(exc), fix=fix) from None
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip().strip("'\"")
    return values


def built_for(wheel: Path) -> str | None:
    """ "x86_64_v4 (-march=x86-64-v4 ...)" from the wheel's receipt (``<wheel>.json``), if usable
    (:func:`~tfbuild.smoke.standin.receipt_beside`)."""
    receipt = receipt_beside(wheel)
    return receipt.built_for if receipt is not None else None


def check_python(python: str, *, installed: bool) -> None:
    """The interpreter ``--python`` names runs; with ``--installed``, it has a TensorFlow to test.

    Asked before any environment is made, so that a wrong path or a missing TensorFlow is one line,
    not a failed probe report. Whether that TensorFlow imports is the probe's job."""
    found = packages_of(
        python,
        what=f"cannot run --python {python}",
        fix="Give the path of a Python interpreter with --python PATH.",
        error=InputError,
    )
    if installed and found.tensorflow is None:
        quoted = shlex.quote(python)
        raise EnvironmentProblem(
            f"no TensorFlow installed for {python}",
            why="--installed tests the TensorFlow that interpreter imports, and it finds none",
            fix=f"Install one ({quoted} -m pip install tensorflow-cpu), name another interpreter "
            "with --python PATH, or test a wheel file: tfbuild smoke WHEEL.",
        )


def wheel_to_test(wheel: str | None, *, installed: bool, python: str) -> WheelSpec:
    """What ``smoke`` and ``tune`` run: ``python``'s own TensorFlow with ``installed`` (checked to
    have one), else the wheel file or requirement ``wheel`` (and ``python`` checked to run)."""
    check_python(python, installed=installed)
    return WheelSpec(kind="installed", value=python) if installed else WheelSpec.parse(wheel or "")


def run_smoke(options: SmokeOptions, *, progress: Progress | None = None) -> SmokeReport:
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    spec = wheel_to_test(options.wheel, installed=options.installed, python=options.python)
    say(f"preparing an environment for {spec.label}")
    candidate_env = ensure_env(spec, python=options.python)
    say(f"probing {spec.label} ({'reused' if candidate_env.reused else 'new'} environment)")
    # The wheel's runtime env applies, except a log level that would hide the guard message.
    cand_vars = {**clean_env(), **options.runtime_env}
    cand_vars.pop("TF_CPP_MIN_LOG_LEVEL", None)
    candidate = run_probe(candidate_env.python, env=cand_vars)
    tcmalloc_expected = "tcmalloc" in options.runtime_env.get("LD_PRELOAD", "")
    info = cpu.host_cpuinfo()

    baseline: ProbeResult | None = None
    baseline_label: str | None = None
    baseline_env: TestEnv | None = None
    if candidate.ok and options.bench and options.baseline != "none":
        baseline_label = options.baseline or stock_spec(candidate.version, info.architecture)
        say(f"preparing the baseline {baseline_label}")
        baseline_env = ensure_env(WheelSpec.parse(baseline_label), python=options.python)
        baseline = run_probe(baseline_env.python, env=clean_env())

    method: Method | None = None
    results: tuple[OpResult, ...] = ()
    settings: tuple[SettingTrial, ...] = ()
    if candidate.ok and options.bench:
        margin = options.rules.min_margin
        method = Method.quick(margin) if options.quick else Method(min_margin=margin)
        if options.budget is not None:
            method = replace(method, budget=options.budget)
        trying = options.settings and not options.quick
        have_bf16 = bool(info.flags & {"avx512_bf16", "amx_bf16"})
        say("benchmarking (candidate and baseline in alternation)")
        results = tuple(
            compare(
                candidate_env.python,
                baseline_env.python if baseline_env and baseline and baseline.ok else None,
                candidate_env=cand_vars,
                baseline_env=clean_env(),
                # with the settings to try, they get 40 % of the budget
                method=replace(method, budget=method.budget * 0.6) if trying else method,
                bf16=have_bf16,
                progress=say,
            )
        )
        if trying:
            each = replace(method, budget=method.budget * 0.4 / 3)  # three settings at most
            settings = _try_settings(candidate_env.python, cand_vars, info, each, say)

    report = SmokeReport(
        candidate_label=spec.label,
        baseline_label=baseline_label,
        candidate=candidate,
        baseline=baseline,
        method=method,
        results=results,
        settings=settings,
        rules=options.rules,
        env_file=str(options.env_file) if options.env_file else None,
        seconds=time.perf_counter() - started,
        tcmalloc_expected=tcmalloc_expected,
        built_for=options.built_for,
        forecast=forecast_beside(candidate.version, options.built_for, results),
    )
    if options.env_file and settings:
        write_env_file(
            options.env_file,
            settings,
            header=f"runtime settings measured by tfbuild smoke for {spec.label}",
        )
    return report


def forecast_beside(
    version: str | None, built_for: str | None, results: tuple[OpResult, ...]
) -> dict[str, object] | None:
    """The forecast kept for this version and target, per op class beside the one-thread ratios
    measured (``tfbuild forecast`` keeps one each run); None without one."""
    saved = saved_forecast(version, built_for)
    if saved is None or not results:
        return None
    measured = {r.op: r.verdict.ratio for r in results if r.threads == "1" and r.verdict}
    return {
        "file": saved["saved"],
        "schema": saved.get("schema"),
        "target": saved.get("target"),
        "summary": saved.get("summary"),
        "classes": serial.to_data(forecast_report.beside(saved, measured)),
    }


def _try_settings(
    python: str, base_env: dict[str, str], info: CpuInfo, method: Method, say: Progress
) -> tuple[SettingTrial, ...]:
    """The seed guides' runtime advice, each tried against the wheel without it."""
    tcmalloc = Path(f"/usr/lib/{multiarch(info.architecture)}/libtcmalloc.so.4")
    preload = tcmalloc.exists() and "LD_PRELOAD" not in base_env
    cores = info.physical_cores or info.logical_cpus or 1
    # Each: what is said, its name, its variables; TCMalloc where installed and LD_PRELOAD unset.
    settings = (
        ("TCMalloc preloaded", "tcmalloc", {"LD_PRELOAD": str(tcmalloc)}),
        (
            f"intra-op threads = {cores} physical cores, inter-op = 1",
            f"threads intra={cores} inter=1",
            threads_env(cores),
        ),
        (
            "OpenMP settings (OMP_NUM_THREADS, KMP_BLOCKTIME, KMP_AFFINITY)",
            "openmp",
            openmp_env(cores),
        ),
    )
    trials = []
    for said, name, env in settings if preload else settings[1:]:
        say(f"trying {said}")
        trials.append(try_setting(python, base_env=base_env, name=name, env=env, method=method))
    return tuple(trials)
