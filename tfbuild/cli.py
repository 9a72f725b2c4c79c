"""The command line: parse options, call one function per command, print, map errors to exit codes.

No logic lives here. Every command hands its options to a pure function (or a detector) and prints
the result; every failure arrives as a :class:`tfbuild.errors.TfbuildError` and leaves through
:func:`main` as one line and the error's exit code.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from tfbuild import __version__
from tfbuild.errors import TfbuildError

app = typer.Typer(
    name="tfbuild",
    help="Build TensorFlow wheels optimized for the machines they run on.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_state: dict[str, bool] = {"debug": False}


def _debug_from_env() -> bool:
    return os.environ.get("TFBUILD_DEBUG", "") not in ("", "0", "false", "no")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tfbuild {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks (also TFBUILD_DEBUG=1).")
    ] = False,
) -> None:
    """Build TensorFlow wheels optimized for the machines they run on."""
    _state["debug"] = debug or _debug_from_env()


def _print_json(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


@app.command()
def detect(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON (schema in the README).")
    ] = False,
    cpuinfo: Annotated[
        list[Path] | None,
        typer.Option(
            "--cpuinfo",
            metavar="FILE",
            help="Describe another machine from a saved /proc/cpuinfo. Repeat to get the common "
            "target of several machines.",
            show_default=False,
        ),
    ] = None,
    compiler: Annotated[
        str | None,
        typer.Option(
            "--compiler",
            metavar="SPEC",
            help="Compiler the flags are for, e.g. clang-18 or gcc-12 (a bare name asks PATH). "
            "Default: the newest recipe's compiler (what a build uses).",
            show_default=False,
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            metavar="NAME",
            help="Also show flags for a portable target (x86_64_v3, haswell, ...) and whether it "
            "runs on the machine(s).",
            show_default=False,
        ),
    ] = None,
    why_not: Annotated[
        list[str] | None,
        typer.Option(
            "--why-not",
            metavar="NAME",
            help="Explain whether code built for this target runs on the machine, and why not.",
            show_default=False,
        ),
    ] = None,
    gpu: Annotated[
        bool,
        typer.Option("--gpu/--no-gpu", help="Look for CUDA, cuDNN, NCCL, TensorRT and GPUs."),
    ] = True,
) -> None:
    """Describe a machine: CPU and microarchitecture, TensorFlow's CPU features, compiler flags,
    CUDA and GPUs, resources."""
    from tfbuild.detect.gather import gather

    report = gather(
        cpuinfo_files=tuple(cpuinfo or ()),
        compiler_spec=compiler,
        target=target,
        why_not=tuple(why_not or ()),
        with_gpu=gpu,
    )
    if as_json:
        _print_json(report.to_json())
        return
    from tfbuild.display import print_detect

    print_detect(report)


# --- recipes ---------------------------------------------------------------------------------------

recipes_app = typer.Typer(
    help="The TensorFlow releases tfbuild can build, one recipe each.",
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(recipes_app, name="recipes")

RecipesDir = Annotated[
    list[Path] | None,
    typer.Option(
        "--recipes-dir",
        metavar="DIR",
        help="Extra recipes that add to or override the shipped ones (also $TFBUILD_RECIPES_DIR).",
        show_default=False,
    ),
]


@recipes_app.callback()
def recipes_list(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
    recipes_dir: RecipesDir = None,
) -> None:
    """List the recipes (one per TensorFlow release)."""
    if ctx.invoked_subcommand is not None:
        return
    from tfbuild.recipes import load_recipes

    recipes = load_recipes(tuple(recipes_dir or ()))
    if as_json:
        _print_json({"recipes": [r.to_json() for r in recipes.recipes], "dirs": list(recipes.dirs)})
        return
    from tfbuild.display import print_recipes

    print_recipes(recipes)


@recipes_app.command("show")
def recipes_show(
    version: Annotated[str, typer.Argument(help="TensorFlow version, e.g. 2.21 or 2.21.0.")],
    recipes_dir: RecipesDir = None,
) -> None:
    """Print one recipe, resolved, as JSON."""
    from tfbuild.recipes import load_recipes

    _print_json(load_recipes(tuple(recipes_dir or ())).get(version).to_json())


@app.command("matrix")
def matrix_command(
    tf: Annotated[
        list[str] | None,
        typer.Option(
            "--tf",
            metavar="LIST",
            help="TensorFlow versions, e.g. 2.20,2.21, or all (default: the newest recipe).",
            show_default=False,
        ),
    ] = None,
    python: Annotated[
        list[str] | None,
        typer.Option(
            "--python",
            metavar="LIST",
            help="Pythons, e.g. 3.11,3.12 (default: all a release supports).",
            show_default=False,
        ),
    ] = None,
    targets: Annotated[
        list[str] | None,
        typer.Option(
            "--targets",
            metavar="LIST",
            help="Portable CPU targets (default: x86_64_v2,x86_64_v3,x86_64_v4).",
            show_default=False,
        ),
    ] = None,
    variants: Annotated[
        list[str] | None,
        typer.Option(
            "--variants", metavar="LIST", help="cpu, mkl, cuda (default: cpu).", show_default=False
        ),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Say why each left-out combination is impossible.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="One line of JSON for GitHub Actions' fromJSON: {include}."),
    ] = False,
    recipes_dir: RecipesDir = None,
) -> None:
    """The CI build matrix: TensorFlow x Python x CPU target x variant, impossible ones left out."""
    from tfbuild.matrix import build_matrix
    from tfbuild.recipes import load_base_images, load_recipes

    extra = tuple(recipes_dir or ())
    matrix = build_matrix(
        load_recipes(extra),
        load_base_images(extra),
        tf=tf,
        python=python,
        targets=targets,
        variants=variants,
    )
    if explain:
        from tfbuild.display import print_skipped

        print_skipped(matrix.skipped)
    if as_json:
        # One line: the workflow writes it to $GITHUB_OUTPUT as matrix=<json>.
        sys.stdout.write(json.dumps(matrix.to_json(), separators=(",", ":")) + "\n")
        return
    from tfbuild.display import print_matrix

    print_matrix(matrix, explain=explain)


# --- plan and render ---------------------------------------------------------------------------------


def _plan_options(
    tf: Annotated[
        str | None,
        typer.Option(
            "--tf",
            metavar="VERSION",
            help="TensorFlow version: 2.21 or 2.21.0 (default: the newest recipe).",
            show_default=False,
        ),
    ] = None,
    mkl: Annotated[
        bool, typer.Option("--mkl", help="The oneDNN CPU build (see the README for its threading).")
    ] = False,
    cuda: Annotated[bool, typer.Option("--cuda", help="The CUDA build.")] = False,
    mkl_threading: Annotated[
        str,
        typer.Option(
            "--mkl-threading",
            metavar="threadpool|openmp",
            help="oneDNN threading: TensorFlow's thread pool (mkl_threadpool) or OpenMP (mkl).",
        ),
    ] = "threadpool",
    target: Annotated[
        str | None,
        typer.Option("--target", metavar="NAME", help="A portable target, e.g. x86_64_v3."),
    ] = None,
    cpuinfo: Annotated[
        Path | None,
        typer.Option(
            "--cpuinfo", metavar="FILE", help="Build for the machine of a saved /proc/cpuinfo."
        ),
    ] = None,
    native: Annotated[
        bool,
        typer.Option("--native", help="Literal -march=native (a build on the machine itself)."),
    ] = False,
    python: Annotated[
        str | None, typer.Option("--python", metavar="X.Y", help="Python the wheel is for.")
    ] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", min=1, help="bazel --jobs.")] = None,
    local_ram_resources: Annotated[
        int | None,
        typer.Option("--local-ram-resources", metavar="MB", min=512, help="bazel's memory budget."),
    ] = None,
    jvm_heap: Annotated[
        int | None, typer.Option("--jvm-heap", metavar="MB", min=256, help="bazel server heap.")
    ] = None,
    cache_volume: Annotated[
        str, typer.Option("--cache-volume", metavar="NAME", help="Docker volume for bazel caches.")
    ] = "tfbuild-cache",
    disk_cache: Annotated[
        bool, typer.Option("--disk-cache/--no-disk-cache", help="bazel's local disk cache.")
    ] = True,
    remote_cache: Annotated[
        str | None, typer.Option("--remote-cache", metavar="URL", help="A shared bazel cache.")
    ] = None,
    remote_executor: Annotated[
        str | None,
        typer.Option("--remote-executor", metavar="URL", help="A bazel remote executor."),
    ] = None,
    cuda_capabilities: Annotated[
        str | None,
        typer.Option(
            "--cuda-capabilities", metavar="LIST", help="e.g. 8.9,9.0 (default: this host's GPUs)."
        ),
    ] = None,
    cuda_version: Annotated[
        str | None, typer.Option("--cuda-version", metavar="X.Y.Z", help="Hermetic CUDA version.")
    ] = None,
    cudnn_version: Annotated[
        str | None, typer.Option("--cudnn-version", metavar="X.Y.Z", help="cuDNN version.")
    ] = None,
    skip_disk_check: Annotated[
        bool, typer.Option("--skip-disk-check", help="Plan even when free disk looks too small.")
    ] = False,
    label: Annotated[
        bool,
        typer.Option(
            "--label/--no-label",
            help="Put the target in the wheel's version: 2.21.0+x86_64v4 (read by tfbuild pick).",
        ),
    ] = True,
    recipes_dir: RecipesDir = None,
) -> None:
    """Holds the options plan, render (and wheel) share; never called."""


def _with_plan_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``func`` the shared plan options in front of its own (typer reads the signature)."""
    shared = inspect.signature(_plan_options, eval_str=True).parameters.values()
    own = [
        p
        for p in inspect.signature(func, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in (*own, *shared)]
    func.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    func.__annotations__ = {p.name: p.annotation for p in params}
    return func


def _make_plan(
    kwargs: dict[str, Any], *, engine: Any = None, standin: bool = False
) -> tuple[Any, Any]:
    from tfbuild.detect.gather import host_facts
    from tfbuild.errors import UsageError
    from tfbuild.plan import PlanOptions, Variant, make_plan
    from tfbuild.recipes import load_base_images, load_recipes

    if kwargs["mkl"] and kwargs["cuda"]:
        raise UsageError("--mkl and --cuda together", fix="Choose one variant.")
    if kwargs["mkl_threading"] not in ("threadpool", "openmp"):
        raise UsageError(
            f"--mkl-threading {kwargs['mkl_threading']!r}", fix="Use threadpool or openmp."
        )
    if kwargs["target"] and kwargs["cpuinfo"]:
        raise UsageError(
            "--target and --cpuinfo together",
            why="a build is for a named portable target or for one machine, not both",
            fix="Drop one of them.",
        )
    extra = tuple(kwargs["recipes_dir"] or ())
    recipes = load_recipes(extra)
    recipe = recipes.get(kwargs["tf"]) if kwargs["tf"] else recipes.recipes[-1]
    if standin:
        from tfbuild import canary

        recipe = canary.recipe(recipe)
    base_images = load_base_images(extra)
    base_image = kwargs.get("base_image")
    if base_image and base_image not in base_images and engine is not None:
        from tfbuild.build import local_base_image

        base_images[base_image] = local_base_image(engine, base_image, base_images)
    variant: Variant = "cuda" if kwargs["cuda"] else "mkl" if kwargs["mkl"] else "cpu"
    caps = tuple(c for c in (kwargs["cuda_capabilities"] or "").split(",") if c.strip())
    options = PlanOptions(
        tf=kwargs["tf"],
        variant=variant,
        mkl_threading=kwargs["mkl_threading"],
        target=kwargs["target"],
        native=kwargs["native"],
        python=kwargs["python"],
        jobs=kwargs["jobs"],
        local_ram_mb=kwargs["local_ram_resources"],
        jvm_heap_mb=kwargs["jvm_heap"],
        cache_volume=kwargs["cache_volume"],
        disk_cache=kwargs["disk_cache"],
        remote_cache=kwargs["remote_cache"],
        remote_executor=kwargs["remote_executor"],
        cuda_capabilities=caps,
        cuda_version=kwargs["cuda_version"],
        cudnn_version=kwargs["cudnn_version"],
        skip_disk_check=kwargs["skip_disk_check"],
        base_image=base_image,
        standin=standin,
        label=kwargs["label"],
    )
    host = host_facts(cpuinfo=kwargs["cpuinfo"], with_gpu=variant == "cuda")
    plan = make_plan(options, recipe, host, base_images=base_images)
    return plan, recipe


@app.command("plan")
@_with_plan_options
def plan_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    **kwargs: Any,
) -> None:
    """Resolve a build: every choice tfbuild would make, with the reason for it."""
    plan, _ = _make_plan(kwargs)
    if as_json:
        _print_json(plan.to_json())
        return
    from tfbuild.display import print_plan

    print_plan(plan)


@app.command("render")
@_with_plan_options
def render_command(
    out: Annotated[
        Path, typer.Option("-o", "--output", metavar="DIR", help="Where to write the context.")
    ],
    **kwargs: Any,
) -> None:
    """Write the build context: Dockerfile, bazel rc file, build.sh, runtime.env, plan.json."""
    from tfbuild.render import check, render_files, write_context

    plan, recipe = _make_plan(kwargs)
    files = render_files(plan)
    check(files, recipe)
    for path in write_context(files, out):
        typer.echo(str(path))


# --- wheel ---------------------------------------------------------------------------------------------


@app.command("wheel")
@_with_plan_options
def wheel_command(
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            metavar="DIR",
            help="A local TensorFlow checkout (any fork). Default: the recipe's release tarball, "
            "downloaded once and checked against its sha256.",
            show_default=False,
        ),
    ] = None,
    source_sha256: Annotated[
        str | None,
        typer.Option(
            "--source-sha256",
            metavar="HEX",
            help="The tarball's sha256, where the recipe pins none.",
            show_default=False,
        ),
    ] = None,
    dist: Annotated[
        Path, typer.Option("--dist", metavar="DIR", help="Where the wheel, receipt and logs go.")
    ] = Path("dist"),
    base_image: Annotated[
        str | None,
        typer.Option(
            "--base-image",
            metavar="NAME",
            help="A base-images.yaml entry, or a local image made by tfbuild base "
            "(e.g. tfbuild/base:jammy) where no registry can be reached.",
            show_default=False,
        ),
    ] = None,
    ca_bundle: Annotated[
        Path | None,
        typer.Option(
            "--ca-bundle",
            metavar="FILE",
            help="CA certificates for the build's downloads, mounted read-only (default: "
            "$SSL_CERT_FILE or $REQUESTS_CA_BUNDLE when set). Proxy variables pass through.",
            show_default=False,
        ),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option(
            "--memory", metavar="SIZE", help="Memory limit of the build container, e.g. 16g."
        ),
    ] = None,
    keep_container: Annotated[
        bool, typer.Option("--keep-container", help="Keep the build container for a post-mortem.")
    ] = False,
    canary: Annotated[
        bool,
        typer.Option(
            "--canary",
            help="Build tfbuild's STAND-IN source (a miniature, not TensorFlow) through the same "
            "pipeline, in a minute: what tfbuild doctor does.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Print only the result.")] = False,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Show every line of the build.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    **kwargs: Any,
) -> None:
    """Build the wheel in Docker: toolchain image, build container, wheel + receipt in dist/."""
    import signal

    from tfbuild.build import BuildRun
    from tfbuild.display import print_wheel_result

    if memory is not None and not _MEMORY.match(memory):
        from tfbuild.errors import UsageError

        raise UsageError(f"--memory {memory!r} is not a size", fix="Write it like 8g or 16384m.")

    def stop(signum: int, _frame: Any) -> None:
        from tfbuild.errors import Interrupted

        raise Interrupted(
            f"stopped by {signal.Signals(signum).name}",
            why="the build container was stopped and removed, no partial files were left",
        )

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        run = BuildRun(
            dist=dist,
            source=source,
            source_sha256=source_sha256,
            ca_bundle=ca_bundle,
            memory=memory,
            keep_container=keep_container,
            canary=canary,
            quiet=quiet or as_json,
            verbose=verbose,
        )
        result = run.execute(
            lambda engine, standin, default_base: _make_plan(
                {**kwargs, "base_image": base_image or default_base},
                engine=engine,
                standin=standin,
            )
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    if as_json:
        _print_json(result.to_json() | {"receipt_data": result.data})
    else:
        print_wheel_result(result, quiet=quiet)


_MEMORY = re.compile(r"^[1-9][0-9]*[bkmg]?$", re.IGNORECASE)


# --- doctor --------------------------------------------------------------------------------------------


@app.command("doctor")
def doctor_command(
    canary: Annotated[
        bool,
        typer.Option(
            "--canary/--no-canary",
            help="Build the stand-in canary through the whole pipeline (a few minutes).",
        ),
    ] = True,
    dist: Annotated[
        Path | None,
        typer.Option(
            "--dist",
            metavar="DIR",
            help="Keep the canary wheels, receipts and logs here (default: a temporary directory).",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Show every line of the canary builds.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check this machine for a TensorFlow build, then prove the pipeline with the canary."""
    from tfbuild.display import print_doctor_check
    from tfbuild.doctor import run_doctor
    from tfbuild.errors import EnvironmentProblem

    def say(text: str) -> None:
        if not as_json:
            sys.stderr.write(f"[doctor] {text}\n")

    report = run_doctor(
        with_canary=canary,
        dist=dist,
        say=say,
        show=(lambda _check: None) if as_json else print_doctor_check,
        verbose=verbose and not as_json,
    )
    if as_json:
        _print_json(report.to_json())
    failed = [c for c in report.checks if c.status == "fail"]
    if failed:
        raise EnvironmentProblem(
            f"{len(failed)} check(s) failed: {', '.join(c.name for c in failed)}",
            why=failed[0].detail,
            fix=failed[0].fix,
        )


# --- smoke -------------------------------------------------------------------------------------------


@app.command("smoke")
def smoke_command(
    wheel: Annotated[
        str | None,
        typer.Argument(
            help="A .whl file, or a requirement such as tensorflow-cpu==2.21.0.", show_default=False
        ),
    ] = None,
    installed: Annotated[
        bool, typer.Option("--installed", help="Test the TensorFlow of the --python interpreter.")
    ] = False,
    python: Annotated[
        str | None,
        typer.Option("--python", metavar="PATH", help="Interpreter for the test environments."),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            metavar="SPEC",
            help="What to compare with: a .whl, a requirement, or 'none'. Default: the stock "
            "tensorflow-cpu of the same version.",
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Shorter measurements for CI (under 2 minutes).")
    ] = False,
    bench: Annotated[
        bool, typer.Option("--bench/--no-bench", help="Benchmark, or only probe the import.")
    ] = True,
    settings: Annotated[
        bool,
        typer.Option("--settings/--no-settings", help="Try TCMalloc, thread and OpenMP settings."),
    ] = True,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file", metavar="FILE", help="The wheel's runtime env file: read, then updated."
        ),
    ] = None,
    allow_unused: Annotated[
        bool,
        typer.Option("--allow-unused", help="Pass even if TensorFlow names unused instructions."),
    ] = False,
    allow_slower: Annotated[
        str | None,
        typer.Option(
            "--allow-slower", metavar="OPS", help="Comma-separated ops allowed to be slower."
        ),
    ] = None,
    min_margin: Annotated[
        float,
        typer.Option(
            "--min-margin", min=0.0, max=1.0, help="Smallest difference called a verdict."
        ),
    ] = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    plot_file: Annotated[
        Path | None,
        typer.Option("--plot", metavar="FILE.png", help="Draw candidate vs baseline per op."),
    ] = None,
) -> None:
    """Prove a wheel: no unused-instruction complaint at import, and faster than the stock wheel."""
    from tfbuild.errors import SmokeFailed, UsageError
    from tfbuild.smoke.report import Rules
    from tfbuild.smoke.session import SmokeOptions, built_for, read_env_file, run_smoke

    if (wheel is None) == (not installed):
        raise UsageError(
            "name one wheel to test",
            why="give a WHEEL argument or --installed, not both and not neither",
            fix="e.g. tfbuild smoke dist/tensorflow_cpu-2.21.0-cp311-cp311-linux_x86_64.whl",
        )
    if plot_file is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            from tfbuild.errors import EnvironmentProblem

            raise EnvironmentProblem(
                "--plot needs matplotlib", fix="pip install 'tfbuild[plot]'"
            ) from None
    runtime: dict[str, str] = {}
    if env_file is None and wheel and wheel.endswith(".whl"):
        beside = Path(wheel).with_suffix(".env")
        env_file = beside if beside.exists() else None
    if env_file is not None and env_file.exists():
        runtime = read_env_file(env_file)
    receipt = Path(wheel).with_suffix(".json") if wheel and wheel.endswith(".whl") else None
    options = SmokeOptions(
        wheel=wheel,
        installed=installed,
        python=python or sys.executable,
        baseline=baseline,
        quick=quick,
        bench=bench,
        settings=settings,
        rules=Rules(
            allow_unused=allow_unused,
            allow_slower=tuple(o.strip() for o in (allow_slower or "").split(",") if o.strip()),
            min_margin=min_margin,
        ),
        env_file=env_file,
        runtime_env=runtime,
        built_for=built_for(receipt) if receipt else None,
    )

    def progress(message: str) -> None:
        if not as_json:
            sys.stderr.write(f"[smoke] {message}\n")

    report = run_smoke(options, progress=progress)
    if plot_file is not None and report.results:
        from tfbuild.smoke.report import plot

        plot(report, plot_file)
    if as_json:
        _print_json(report.to_json())
    else:
        from tfbuild.display import print_smoke

        print_smoke(report)
    if not report.passed:
        raise SmokeFailed(f"{report.candidate_label} did not pass", why="; ".join(report.failures))


# --- base ----------------------------------------------------------------------------------------------


@app.command("base")
def base_command(
    suite: Annotated[
        str, typer.Option("--suite", help="Debian or Ubuntu suite: bookworm, trixie, jammy, noble.")
    ] = "bookworm",
    mirror: Annotated[
        str | None,
        typer.Option(
            "--mirror", metavar="URL", help="Package mirror (default: the distribution's)."
        ),
    ] = None,
    tag: Annotated[
        str | None, typer.Option("--tag", help="Image tag (default: tfbuild/base:SUITE).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if the tag exists.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Make a base image with debootstrap + docker import (for sites without registry access)."""
    from tfbuild.base import make_base_image
    from tfbuild.engine import DockerEngine

    engine = DockerEngine.connect()
    try:

        def show(line: str) -> None:
            if not as_json:
                sys.stderr.write(f"[base] {line}\n")

        result = make_base_image(
            engine, suite=suite, mirror=mirror, tag=tag, force=force, on_line=show
        )
    finally:
        engine.close()
    if as_json:
        _print_json(result.to_json())
    else:
        state = f"created in {result.seconds:.0f} s" if result.created else "already there, reused"
        typer.echo(f"{result.tag} ({result.image_id[:19]}): {state}")


# --- index -------------------------------------------------------------------------------------------


@app.command("index")
def index_command(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The directory of wheels, e.g. dist.")
    ],
    title: Annotated[
        str | None,
        typer.Option(
            "--title", help="The page's title (default: a fixed one).", show_default=False
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            help="Link the wheels at URL/NAME (e.g. a release's download URL), not beside the page.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the wheels as JSON.")] = False,
) -> None:
    """Write DIR/index.html (a pip --find-links page, sha256 in every link) and DIR/SHA256SUMS."""
    from tfbuild.index import write_index

    result = write_index(directory, title=title, base_url=base_url)
    if as_json:
        _print_json(result.to_json())
        return
    for entry in result.entries:
        standin = "  STAND-IN" if entry.standin else ""
        typer.echo(f"{entry.sha256}  {entry.name}{standin}")
    typer.echo(f"{result.index} and {result.sums}: {len(result.entries)} wheel(s)")


# --- pick ----------------------------------------------------------------------------------------------


@app.command("pick")
def pick_command(
    source: Annotated[
        str,
        typer.Argument(
            metavar="DIR_OR_INDEX_URL",
            help="A directory of wheels (e.g. dist), one .whl, or an http(s) index page.",
        ),
    ],
    cpuinfo: Annotated[
        Path | None,
        typer.Option(
            "--cpuinfo", metavar="FILE", help="Pick for the machine of a saved /proc/cpuinfo."
        ),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            metavar="X.Y",
            help="The Python to match (default: --pip-python's, else tfbuild's own).",
            show_default=False,
        ),
    ] = None,
    driver_cuda: Annotated[
        str | None,
        typer.Option(
            "--driver-cuda",
            metavar="X.Y|none",
            help="The newest CUDA the GPU driver supports (default: from nvidia-smi; none with "
            "--cpuinfo).",
            show_default=False,
        ),
    ] = None,
    tf: Annotated[
        str | None,
        typer.Option("--tf", metavar="VERSION", help="Only this TensorFlow release, e.g. 2.20."),
    ] = None,
    variant: Annotated[
        str | None,
        typer.Option("--variant", metavar="cpu|mkl|cuda", help="Only this kind of build."),
    ] = None,
    install: Annotated[
        bool, typer.Option("--install", help="pip install the chosen wheel.")
    ] = False,
    pip_python: Annotated[
        str | None,
        typer.Option(
            "--pip-python",
            metavar="PATH",
            help="Install into this interpreter (its version is the Python to match).",
            show_default=False,
        ),
    ] = None,
    pip_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--pip-arg",
            metavar="ARG",
            help="Pass ARG to pip install (repeat), e.g. --pip-arg=--no-deps.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the choice as JSON.")] = False,
) -> None:
    """Choose the wheel that runs best here (or on a --cpuinfo machine), and say why."""
    from tfbuild import pick as picking
    from tfbuild.errors import UsageError

    if install and cpuinfo is not None:
        raise UsageError(
            "--install and --cpuinfo together",
            why="--install installs on this machine, --cpuinfo describes another one",
            fix="Drop --cpuinfo to pick for this machine.",
        )
    options = picking.PickOptions.parse(tf=tf, variant=variant)
    host = picking.describe_host(
        cpuinfo=cpuinfo, python=python, pip_python=pip_python, driver_cuda=driver_cuda
    )
    result = picking.pick(picking.load_wheels(source), host, options)
    if not as_json:
        picking.print_pick(result)
    installed = None
    if install and result.chosen is not None:
        installed = picking.install(
            result.chosen,
            python=pip_python or sys.executable,
            pip_args=tuple(pip_arg or ()),
            capture=as_json,
        )
    if as_json:
        _print_json(result.to_json() | {"install": installed.to_json() if installed else None})
    if result.chosen is None:
        raise result.no_choice()
    if installed is not None:
        failure = installed.error()
        if failure is not None:
            raise failure
        if not as_json:
            typer.echo(f"installed {installed.wheel} into {installed.python}")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``tfbuild`` console script: the only place that catches errors."""
    _state["debug"] = _debug_from_env() or "--debug" in (argv or sys.argv[1:])
    try:
        app(args=argv, prog_name="tfbuild")
    except TfbuildError as exc:
        if _state["debug"]:
            raise
        for detail in exc.details:
            sys.stderr.write(f"  | {detail}\n")
        sys.stderr.write(f"tfbuild: error: {exc.line()}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        if _state["debug"]:
            raise
        sys.stderr.write("tfbuild: interrupted: everything tfbuild started was stopped.\n")
        sys.exit(130)
    except Exception as exc:
        if _state["debug"]:
            raise
        sys.stderr.write(
            f"tfbuild: internal error: {type(exc).__name__}: {exc}. "
            "Run again with --debug for the traceback, and please report it.\n"
        )
        sys.exit(1)
