"""Your model, as fast as this machine runs it: every lever measured on the model, the winner kept.

``tfbuild tune --model PATH`` asks one question: which way of running *this* model is fastest
*here*. The levers and why each is measured, not assumed (measured on real models, see
docs/tune.md):

* **XLA on the whole step** (``jit_compile=True``): 1.3-1.7x on recurrent and attention models,
  4-14x *slower* on convolutional ones (XLA's CPU convolutions are not oneDNN's). Keras 3 turns it
  off on a machine without an accelerator, so it is a code change, printed as such.
* **XLA auto-clustering** (``TF_XLA_FLAGS``): helps some models that whole-step XLA helps, hurts
  others; an environment variable.
* **The overlay** (TensorFlow's own element-wise kernels compiled for this CPU): 2-3x on its ops,
  a few percent on most models. Kernels inside an XLA cluster are XLA's, so it is measured without
  XLA and with auto-clustering (whose unclustered ops are TensorFlow's), never with whole-step XLA.
* **Threads**: one thread against TensorFlow's default, each lever at both (which lever wins can
  change with the threads).
* then on top of the fastest of those, the process settings tune tries without a model: oneDNN
  off, a preloaded allocator, OpenMP's settings for an OpenMP build.

Levers interact, so the first stage races every combination that can win
(:mod:`tfbuild.measure.race`: one process each, timed round by round), not one knob at a time from
the defaults. The fastest is the one kept, unless a simpler one (fewer levers) is within its noise;
the process settings are then raced on top of it; the result is confirmed against TensorFlow's
defaults in a fresh pair of processes, and every claim of it once more in another
(:func:`tfbuild.measure.run.time_and_recheck`): only a profile faster beyond the noise there is
kept. What needs a code change is printed as that change, with its gain; the env file holds the
rest.

What a rebuild would add is read off TensorFlow's profiler on the stock configuration
(:mod:`tfbuild.measure.profile`): the share of the model's op time in the kernels a rebuild for
this CPU recompiles with a gain (the overlay's), and what that share predicts, beside what the
overlay measured.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from tfbuild.core.stats import FASTER, SAME, SLOWER, UNDECIDED, Verdict
from tfbuild.measure.models import ModelFile
from tfbuild.measure.profile import (
    KernelTime,
    bound,
    disagreement,
    kernel_times,
    predict,
    profile_model,
    unclaimed,
)
from tfbuild.measure.race import Entrant, Race, race
from tfbuild.measure.run import (
    LOSES,
    NO_GAIN,
    WINS,
    Method,
    OpResult,
    Worker,
    time_and_recheck,
)

Progress = Callable[[str], object]
#: The baseline: stock TensorFlow's kernels at its defaults.
STOCK = "stock"
FAILED = "failed"
#: What the variables the levers set are cleared to for every process (TensorFlow's defaults).
LEVER_VARIABLES = (
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "TF_XLA_FLAGS",
    "TF_ENABLE_ONEDNN_OPTS",
    "TFBUILD_OVERLAY",
    "OMP_NUM_THREADS",
    "KMP_BLOCKTIME",
    "KMP_AFFINITY",
    "LD_PRELOAD",
)
AUTO_JIT = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"
#: The confirmation's shortest repetition, seconds (the race's is the method's).
CONFIRM_REP_SECONDS = 0.02
#: A lever's outcome from its verdict: the words tune uses without a model too.
OUTCOMES = {FASTER: WINS, SLOWER: LOSES, SAME: NO_GAIN, UNDECIDED: UNDECIDED}


@dataclass(frozen=True, kw_only=True)
class Lever:
    """One thing the user can change: its key, its name, and how it is applied."""

    key: str
    name: str  # short, for tables: "XLA", "1 thread"
    said: str = ""  # in a sentence: "XLA (jit_compile=True)"; the name when empty
    env: tuple[tuple[str, str], ...] = ()  # environment variables it sets
    xla: str = "off"  # "jit": the step compiled whole with XLA (a code change)
    code: str | None = None  # the code change that applies it
    install: str | None = None  # what to install first


ONE_THREAD = Lever(
    key="1-thread",
    name="1 thread",
    env=(("TF_NUM_INTEROP_THREADS", "1"), ("TF_NUM_INTRAOP_THREADS", "1")),
)
XLA = Lever(key="xla", name="XLA", said="XLA (jit_compile=True)", xla="jit")
AUTO = Lever(
    key="xla-auto",
    name="XLA auto",
    said="XLA auto-clustering (TF_XLA_FLAGS)",
    env=(("TF_XLA_FLAGS", AUTO_JIT),),
)
ONEDNN_OFF = Lever(key="onednn-off", name="oneDNN off", env=(("TF_ENABLE_ONEDNN_OPTS", "0"),))


def xla_code(model: ModelFile) -> str:
    """The change that compiles the model's step with XLA, for its kind and step."""
    if model.kind == "savedmodel":
        return (
            'serve = tf.function(tf.saved_model.load(PATH).signatures["serving_default"], '
            "jit_compile=True)"
        )
    if model.step == "train":
        return "model.compile(..., jit_compile=True)  # fit() then runs each step under XLA"
    return (
        "model.compile(jit_compile=True)  # predict() under XLA; or call "
        "tf.function(model, jit_compile=True)(x)"
    )


@dataclass(frozen=True, kw_only=True)
class OverlayLever:
    """The overlay, when there is one to measure: how a process gets it, and its kernels."""

    source: str  # "installed", or the wheel given or built
    installed: bool  # in the tuned interpreter (on unless TFBUILD_OVERLAY=off)
    site: str | None = None  # else: a directory named site-packages holding it, for PYTHONPATH
    wheel: str | None = None
    kernels: tuple[str, ...] = ()  # "Exp:float32": what it registers

    def lever(self) -> Lever:
        install = None if self.installed else f"pip install {self.wheel or self.source}"
        return Lever(key="overlay", name="overlay", said="the overlay", install=install)


@dataclass(frozen=True, kw_only=True)
class Arm:
    """One way of running the model: a set of levers (none: stock at its defaults)."""

    levers: tuple[Lever, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(lever.key for lever in self.levers)

    @property
    def name(self) -> str:
        return " + ".join(lever.name for lever in self.levers) or STOCK

    @property
    def said(self) -> str:
        """The arm in a sentence: "XLA (jit_compile=True) and tcmalloc preloaded"."""
        return " and ".join(lever.said or lever.name for lever in self.levers) or STOCK

    @property
    def threads(self) -> str:
        return "1" if ONE_THREAD.key in self.keys else "default"

    @property
    def xla(self) -> str:
        return "jit" if any(lever.xla == "jit" for lever in self.levers) else "off"

    def with_(self, lever: Lever) -> Arm:
        return Arm(levers=(*self.levers, lever))

    def env(self, base: Mapping[str, str], overlay: OverlayLever | None) -> dict[str, str]:
        """The process's whole environment: ``base`` with every lever's variables, and the overlay
        on (on the path) or off."""
        env = dict(base)
        for lever in self.levers:
            env.update(lever.env)
        if overlay is not None:
            on = "overlay" in self.keys
            if overlay.installed and not on:
                env["TFBUILD_OVERLAY"] = "off"
            if on and overlay.site is not None:
                env["PYTHONPATH"] = overlay.site
        return env


@dataclass(frozen=True, kw_only=True)
class Apply:
    """How the user applies a result: variables for the env file, a code change, an install."""

    env: tuple[tuple[str, str], ...] = ()
    code: tuple[str, ...] = ()
    install: tuple[str, ...] = ()


def apply_of(arm: Arm, model: ModelFile, overlay: OverlayLever | None) -> Apply:
    env = [item for lever in arm.levers for item in lever.env]
    if overlay is not None and overlay.installed and "overlay" not in arm.keys:
        env.append(("TFBUILD_OVERLAY", "off"))  # installed, and it does not win here
    return Apply(
        env=tuple(env),
        code=tuple(xla_code(model) for lever in arm.levers if lever.xla == "jit"),
        install=tuple(lever.install for lever in arm.levers if lever.install),
    )


@dataclass(frozen=True, kw_only=True)
class LeverResult:
    """One way of running the model against stock at the same threads (stock at one thread:
    against TensorFlow's default threads)."""

    name: str
    levers: tuple[str, ...]
    threads: str  # "default" or "1"
    against: str
    outcome: str  # wins, loses, no gain, undecided, failed
    verdict: Verdict | None
    seconds: float | None  # median seconds a step in the race
    why: str | None  # why it failed or stopped early
    apply: Apply


@dataclass(frozen=True, kw_only=True)
class Kept:
    """The profile kept: its levers, how to apply it, and its confirmation against stock at its
    defaults in a fresh pair of processes."""

    name: str
    said: str
    levers: tuple[str, ...]
    apply: Apply
    confirmation: OpResult

    @property
    def verdict(self) -> Verdict:
        assert self.confirmation.verdict is not None
        return self.confirmation.verdict


@dataclass(frozen=True, kw_only=True)
class RebuildShare:
    """What recompiling the model's kernels for this CPU would add, from TensorFlow's profiler on
    stock at its defaults; with an overlay, its kernels profiled too, and what it measured."""

    share: float  # of the op time, in the kernels a rebuild (or the overlay) recompiles
    onednn_share: float  # in oneDNN's matmuls and convolutions (unchanged by a rebuild)
    bound: float  # the most those kernels could give: 1 / (1 - share)
    top: tuple[tuple[str, float], ...]  # the op types taking most of the time, seconds a step
    kernels: tuple[KernelTime, ...]  # the recompiled kernels that ran, slowest first
    kernel_speedup: float | None  # the overlay's kernels together, stock time over theirs
    predicted: float | None  # amdahl(share, kernel_speedup)
    measured: Verdict | None  # the overlay against stock, default threads, from the race
    note: str | None  # where the measurement and the prediction disagree


@dataclass(frozen=True, kw_only=True)
class ModelTune:
    """What ``tune --model`` found: every lever on the model, the kept profile, the rebuild's share."""

    wheel: str
    model: ModelFile
    described: Mapping[str, object]  # the inputs made, the parameters, from the worker
    stock_seconds: float | None  # a step, stock at its defaults, in the race
    levers: tuple[LeverResult, ...]
    kept: Kept | None
    not_kept: str | None  # why the race's fastest was not kept, when it was not
    rebuild: RebuildShare | None
    overlay: str | None  # where the overlay measured came from; None: none measured, and why
    overlay_note: str | None
    not_tried: tuple[str, ...]
    races: tuple[Race, ...]
    seconds: float


@dataclass(frozen=True, kw_only=True)
class ModelTuneOptions:
    python: str  # the interpreter with the TensorFlow tuned
    wheel: str  # its label
    model: ModelFile
    base_env: Mapping[str, str]
    budget: float = 600.0
    overlay: OverlayLever | None = None
    overlay_note: str | None = None  # why no overlay is measured, when none is
    knobs: tuple[Lever, ...] = ()  # the process settings raced on top of the fastest
    replaced: tuple[str, ...] = ()  # the kernels a rebuild recompiles, when no overlay names them
    method: Method = dataclasses.field(default_factory=Method)


def stage_one(overlay: OverlayLever | None) -> tuple[Arm, ...]:
    """Every combination that can win, at TensorFlow's default threads and at one: stock, XLA,
    auto-clustering, and with an overlay, the overlay alone and under auto-clustering."""
    arms: list[Arm] = []
    for threads in (Arm(), Arm(levers=(ONE_THREAD,))):
        arms += [threads, threads.with_(XLA), threads.with_(AUTO)]
        if overlay is not None:
            lever = overlay.lever()
            arms += [threads.with_(lever), threads.with_(AUTO).with_(lever)]
    return tuple(arms)


def trouble(found: Race, arm: Arm) -> str | None:
    """Why an arm's timings do not count: its process could not run, or its overlay was not
    loaded (the loader's own line says why); None when they count."""
    lane = found.lane(arm.name)
    if lane.failed is not None:
        return lane.failed
    if "overlay" in arm.keys and not lane.overlay_loaded:
        said = "; ".join(lane.loader_lines) or "its kernels were not registered"
        return f"the overlay did not load: {said}"
    return None


#: The names of stock at each thread count: what every first-stage row is judged against (the
#: process settings' rows are judged against the lever they are raced on top of).
STOCK_NAMES = frozenset({Arm().name, Arm(levers=(ONE_THREAD,)).name})


def lever_results(
    found: Race,
    arms: Sequence[Arm],
    model: ModelFile,
    overlay: OverlayLever | None,
    reference: Callable[[Arm], str | None] | None = None,
) -> list[LeverResult]:
    """Each arm but the baseline against its ``reference``: by default stock at its threads (stock
    at one thread: against the default threads)."""
    rows = []
    for arm in arms:
        against = (reference or reference_of)(arm)
        if against is None:
            continue
        lane = found.lane(arm.name)
        failed = trouble(found, arm)
        compared = found.compare(arm.name, against) if failed is None else None
        if failed is not None:
            outcome = FAILED
        elif compared is None:
            outcome = UNDECIDED
        elif lane.stopped is not None and compared.ratio < 1 and compared.label != FASTER:
            outcome = LOSES  # far slower than the leader in every pair: stopped, not kept
        else:
            outcome = OUTCOMES[compared.label]
        rows.append(
            LeverResult(
                name=arm.name,
                levers=arm.keys,
                threads=arm.threads,
                against=against,
                outcome=outcome,
                verdict=compared,
                seconds=lane.median,
                why=failed or lane.stopped,
                apply=apply_of(arm, model, overlay),
            )
        )
    return rows


def choose(found: Race, arms: Sequence[Arm]) -> Arm | None:
    """The arm to keep from a race against stock at its defaults: of those faster than it, the
    one with the fewest levers (no code change first) among those within the noise of the fastest
    (not slower than it); None when none is faster."""
    faster = []
    for arm in arms:
        if not arm.levers or trouble(found, arm) is not None:
            continue
        compared = found.compare(arm.name, found.baseline)
        if compared is not None and compared.label == FASTER:
            faster.append((arm, compared.ratio))
    if not faster:
        return None
    leader = max(faster, key=lambda item: item[1])[0]
    near = []
    for arm, ratio in faster:
        against = found.compare(arm.name, leader.name) if arm is not leader else None
        if arm is leader or (against is not None and against.label != SLOWER):
            near.append((len(arm.levers), arm.xla == "jit", -ratio, arm))
    return min(near, key=lambda item: item[:3])[3]


def _race_arms(
    arms: Sequence[Arm],
    reference: Callable[[Arm], str | None],
    options: ModelTuneOptions,
    *,
    deadline: float,
    say: Progress,
) -> Race:
    """The arms raced, each judged against its ``reference`` (None: the baseline)."""
    return race(
        [_entrant(arm, options, reference(arm)) for arm in arms],
        python=options.python,
        model=options.model,
        method=options.method,
        deadline=deadline,
        say=say,
    )


def _entrant(arm: Arm, options: ModelTuneOptions, reference: str | None = None) -> Entrant:
    """The arm as a process of the race or the confirmation runs it."""
    env = arm.env(options.base_env, options.overlay)
    return Entrant(name=arm.name, env=env, xla=arm.xla, reference=reference)


def reference_of(arm: Arm) -> str | None:
    """What an arm of the first stage is judged against: stock at its threads; stock at one
    thread, against stock at the default threads; stock, against nothing."""
    if not arm.levers:
        return None
    one_thread = arm.threads == "1" and arm.keys != (ONE_THREAD.key,)
    return ONE_THREAD.name if one_thread else STOCK


def confirm(arm: Arm, options: ModelTuneOptions, *, deadline: float, say: Progress) -> OpResult:
    """``arm`` against stock at its defaults in a fresh pair of processes, each claim once more in
    another (:func:`tfbuild.measure.run.time_and_recheck`)."""
    stock = Arm()
    model = options.model

    @contextlib.contextmanager
    def start() -> Iterator[tuple[Worker, Worker | None]]:
        # Both at once (nothing is timed while they start); each is closed however the other ends.
        with (
            contextlib.ExitStack() as stack,
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool,
        ):
            entrants = [_entrant(which, options) for which in (arm, stock)]
            jobs = [pool.submit(entrant.worker, options.python, model) for entrant in entrants]
            for job in jobs:
                job.add_done_callback(lambda done: done.exception() or stack.push(done.result()))
            kept, base = (job.result() for job in jobs)
            yield kept, base

    say(f"confirming {arm.name} against stock in a fresh pair of processes")
    # Both sides run the calls one side's calibration found (the larger count): the slower side's
    # repetitions last the ratio times longer, so a shorter one keeps a big gain cheap to confirm.
    method = dataclasses.replace(
        options.method, ops=(model.op,), min_rep_seconds=CONFIRM_REP_SECONDS
    )
    results = time_and_recheck(
        start,
        method=method,
        threads="default",
        deadline=deadline,
        progress=say,
    )
    (result,) = [r for r in results if r.op == model.op]
    return result


def rebuild_share(
    options: ModelTuneOptions, measured: Verdict | None, *, say: Progress
) -> RebuildShare:
    """The stock step profiled (overlay off, default threads), counting the overlay's kernels (or
    the kernels a rebuild recompiles); with an overlay, profiled on too, for their speedup."""
    overlay = options.overlay
    kernels = overlay.kernels if overlay is not None and overlay.kernels else options.replaced
    stock = Arm()
    say("profiling the model with TensorFlow's profiler: where its time goes")
    off = profile_model(
        options.python,
        options.model,
        env=stock.env(options.base_env, overlay),
        replaced=kernels or None,
    )
    speedup = predicted = None
    times = kernel_times(off)
    if overlay is not None:
        on_arm = stock.with_(overlay.lever())
        on = profile_model(
            options.python,
            options.model,
            env=on_arm.env(options.base_env, overlay),
            replaced=off.kernels,
        )
        # Loaded, and its kernels seen in the profile (none seen: no speedup can be told).
        if on.overlay_loaded and (on.replaced_s > 0 or off.replaced_s == 0):
            speedup, predicted, times = predict(off, on)
    return RebuildShare(
        share=off.share,
        onednn_share=off.onednn_share,
        bound=bound(off.share),
        top=off.top(),
        kernels=times,
        kernel_speedup=speedup,
        predicted=predicted,
        measured=measured,
        note=disagreement(off.share, predicted, speedup, measured),
    )


def tune_model(options: ModelTuneOptions, *, say: Progress) -> ModelTune:
    """Race the levers on the model, pick, add the process settings, confirm; profile the share a
    rebuild would change (see the module docstring). ``options.budget`` bounds the timing: the
    first stage gets half, the process settings a third of what is left, the confirmation the
    rest; a stage that does not fit is reported as not tried."""
    started = time.monotonic()
    end = started + options.budget
    arms = stage_one(options.overlay)
    first = _race_arms(
        arms, reference_of, options, deadline=started + options.budget * 0.45, say=say
    )
    rows = lever_results(first, arms, options.model, options.overlay)
    overlay_row = next((r for r in rows if r.levers == ("overlay",)), None)
    rebuild = rebuild_share(options, overlay_row.verdict if overlay_row else None, say=say)
    rows, chosen = first_choice(first, arms, rows, rebuild)
    races = [first]
    not_tried: list[str] = []
    knobs = [k for k in options.knobs if not (k.key == ONEDNN_OFF.key and chosen.xla == "jit")]
    if knobs and time.monotonic() + _longest(first) < end:
        second_arms = [chosen, *(chosen.with_(k) for k in knobs)]
        left = end - time.monotonic()

        def on_chosen(arm: Arm) -> str | None:
            return None if arm is chosen else chosen.name

        second = _race_arms(
            second_arms, on_chosen, options, deadline=time.monotonic() + left / 2, say=say
        )
        races.append(second)
        rows += lever_results(second, second_arms, options.model, options.overlay, on_chosen)
        chosen = _with_knobs(second, chosen, knobs)
    else:
        not_tried += [f"{chosen.name} + {k.name}" for k in knobs]
    kept, why_not = None, None
    if chosen.levers:
        result = confirm(chosen, options, deadline=end, say=say)
        if result.verdict is not None and result.verdict.label == FASTER:
            kept = Kept(
                name=chosen.name,
                said=chosen.said,
                levers=chosen.keys,
                apply=apply_of(chosen, options.model, options.overlay),
                confirmation=result,
            )
        else:
            shown = result.verdict.label if result.verdict else "not timed"
            why_not = (
                f"{chosen.name} won the race but came out {shown} against stock in a fresh pair "
                "of processes: not kept"
            )
    return ModelTune(
        wheel=options.wheel,
        model=options.model,
        described=first.lane(STOCK).described,
        stock_seconds=first.lane(STOCK).median,
        levers=tuple(rows),
        kept=kept,
        not_kept=why_not,
        rebuild=rebuild,
        overlay=options.overlay.source if options.overlay else None,
        overlay_note=options.overlay_note,
        not_tried=tuple(not_tried),
        races=tuple(races),
        seconds=time.monotonic() - started,
    )


def first_choice(
    found: Race, arms: Sequence[Arm], rows: Sequence[LeverResult], rebuild: RebuildShare
) -> tuple[list[LeverResult], Arm]:
    """The rows with each overlay gain its kernels cannot explain made undecided, and the arm the
    first race keeps (stock when none is faster): never the overlay alone where its gain is not
    its kernels' doing (two processes differing)."""
    claimed = [_claimed(row, rebuild) for row in rows]
    unexplained = {r.name for r, c in zip(rows, claimed, strict=True) if r.outcome != c.outcome}
    chosen = choose(found, [a for a in arms if a.name not in unexplained]) or Arm()
    return claimed, chosen


def _claimed(row: LeverResult, rebuild: RebuildShare) -> LeverResult:
    """An overlay row (alone, at either thread count) whose gain its kernels cannot explain is
    undecided, with why (:func:`tfbuild.measure.profile.unclaimed`)."""
    if row.levers not in (("overlay",), (ONE_THREAD.key, "overlay")):
        return row
    reason = unclaimed(rebuild.share, rebuild.kernel_speedup, row.verdict)
    if reason is None:
        return row
    return dataclasses.replace(row, outcome=UNDECIDED, why=reason)


def _longest(found: Race) -> float:
    """A guess at what a race of a few entrants costs: the first one's start and one block."""
    starts = [lane.start_seconds for lane in found.lanes]
    per_round = sum(lane.median or 0.0 for lane in found.lanes)
    return max(starts, default=0.0) * 3 + per_round * 15


def _with_knobs(second: Race, chosen: Arm, knobs: Sequence[Lever]) -> Arm:
    """``chosen`` with each process setting that beat it, best first, one per variable (two
    allocators both set LD_PRELOAD: the better stays)."""
    winners = []
    for knob in knobs:
        arm = chosen.with_(knob)
        compared = second.compare(arm.name, chosen.name) if trouble(second, arm) is None else None
        if compared is not None and compared.label == FASTER:
            winners.append((compared.ratio, knob))
    result, taken = chosen, set[str]()
    for _, knob in sorted(winners, key=lambda item: -item[0]):
        names = {key for key, _ in knob.env}
        if names & taken:
            continue
        taken |= names
        result = result.with_(knob)
    return result
