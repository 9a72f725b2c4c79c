"""TensorFlow's CPU-feature messages, in every form it has printed them since 1.0.

Input is what a process that ran ``import tensorflow`` and one op wrote to stderr (and stdout).
Output is :class:`TensorFlowMessages`: the instructions the binary leaves unused (what ``tfbuild
smoke`` wants empty), the ones it needs but the CPU lacks (fatal), whether oneDNN's custom
operations are on, recognised harmless lines, and any other ERROR/FATAL lines.

The guard's forms, oldest first (tests/fixtures/tf-logs/ holds a real capture of each):

* ``1.x-per-feature`` (1.0 to about 1.5), one WARNING per feature: "The TensorFlow library wasn't
  compiled to use SSE4.2 instructions, but these are available on your machine ...".
* ``supports-not-compiled`` (about 1.6 to 2.3, and 2.14+ builds without oneDNN): "Your CPU supports
  instructions that this TensorFlow binary was not compiled to use: AVX2 FMA".
* ``mkl-dnn`` (MKL builds, about 1.14 to 2.3): "... optimized with Intel(R) MKL-DNN to use the
  following CPU instructions in performance critical operations:  AVX2 FMA".
* ``onednn-2.4`` (about 2.4 to 2.11): "... optimized with oneAPI Deep Neural Network Library
  (oneDNN) to use the following CPU instructions in performance-critical operations:  AVX2 FMA".
  These are the instructions oneDNN uses; the next line ("To enable them in other operations,
  rebuild ...") says the rest of TensorFlow does not, so they count as unused.
* ``2.12+``: "This TensorFlow binary is optimized to use available CPU instructions in
  performance-critical operations." then "To enable the following instructions: AVX2 FMA, in other
  operations, rebuild TensorFlow with the appropriate compiler flags."

Messages are matched by their text wherever they sit in a line, so every log prefix works (none,
``2017-05-01 10:11:12.123456: W tensorflow/...:45]``, ``I0000 00:00:1795313969.500936 17197
cpu_feature_guard.cc:227]``, Windows paths, indentation). The guard's INFO lines are hidden by
``TF_CPP_MIN_LOG_LEVEL>=1`` while the oneDNN line is not, so a log with no guard message proves
nothing unless that variable was unset where it ran (smoke's probe unsets it). Nothing here raises
on odd input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tfbuild.core.controls import printable_line

#: Every value :attr:`TensorFlowMessages.form` can take besides None, oldest first.
FORMS: tuple[str, ...] = (
    "1.x-per-feature",
    "supports-not-compiled",
    "mkl-dnn",
    "onednn-2.4",
    "2.12+",
)

# A single line longer than this is cut before matching: a guard line is under 400 characters,
# and bounding the rest keeps a binary blob from costing more than a linear scan.
_MAX_LINE = 16 * 1024


def _phrase(text: str) -> str:
    """A regex for ``text`` whose spaces may be any run of whitespace, or none.

    Pasted logs lose spaces at wrapped line ends ("The TensorFlow librarywasn't compiled ...",
    conda-forge/tensorflow-feedstock#43), and the 2.4 oneDNN line really lacks one ("(oneDNN)to").
    Copies through word processors turn ' into ’ ("aren’t", Zeta36/tensorflow-tex-wavenet#8).
    """
    words = (re.escape(word).replace("'", "['\u2019]") for word in text.split())
    return r"\s*".join(words)


_NAME = r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.]*)"


def _one_name(before: str, after: str) -> re.Pattern[str]:
    return re.compile(rf"{_phrase(before)}\s+{_NAME}\s+{_phrase(after)}")


def _listing(before: str) -> re.Pattern[str]:
    return re.compile(_phrase(before) + "(?P<list>.*)")


_PER_FEATURE = _one_name("wasn't compiled to use", "instructions, but these are available")
_MISSING = _one_name("was compiled to use", "instructions, but these aren't available")
_SUPPORTS = _listing(
    "Your CPU supports instructions that this TensorFlow binary was not compiled to use:"
)
_MKL_DNN = _listing(
    "optimized with Intel(R) MKL-DNN to use the following CPU instructions in "
    "performance critical operations:"
)
_ONEDNN = _listing(
    "optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU "
    "instructions in performance-critical operations:"
)
_V212_HEAD = re.compile(_phrase("This TensorFlow binary is optimized to use available CPU"))
_V212_LIST = re.compile(
    _phrase("To enable the following instructions:")
    + r"(?P<list>.*?)(?:,\s*"
    + _phrase("in other operations")
    + "|$)"
)
_ONEDNN_ON = re.compile(_phrase("oneDNN custom operations are on"))

# Harmless lines worth keeping for the report. The DT_HALF line is ERROR level, yet fp16 ops print
# it even on AVX-512 CPUs (measured with the stock 2.21 wheel on a Zen 5); absl prints its line
# once per copy of absl loaded; gperftools reports big allocations on stderr.
_BENIGN = (
    re.compile(_phrase("oneDNN supports DT_HALF only on platforms with AVX-512")),
    re.compile(_phrase("All log messages before absl::InitializeLog() is called")),
    re.compile(_phrase("tcmalloc: large alloc")),
)

# ERROR and FATAL lines in the three prefixes TensorFlow has used: absl's ("E0000 00:00:1795...
# 17197 util.cc:131]", whose seconds field is really epoch seconds), TF's own ("2023-04-13
# 03:58:35.887616: E tensorflow/...:131]", paths may be Windows ones) and 1.0's ("F tensorflow/
# core/platform/cpu_feature_guard.cc:35]"). The first two may follow a launcher's prefix
# ("(pid=42) " from Ray) or markdown ("`" in tensorflow/tensorflow#62002); the bare one is too loose
# to be looked for anywhere but at the start.
_SEVERE = re.compile(
    r"""(?:^|[^\w.:])(?:
        [EF]\d{4}\s+\d+:\d+:\d+(?:\.\d+)?\s+\d+\s+[^\s\]]+:\d+\]
      | \d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?:?\s+[EF]\s+[^\]]*:\d+\]
    )
    | ^[\s`>*|]*[EF]\s+[^\s\]]+:\d+\]
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, kw_only=True)
class TensorFlowMessages:
    """What TensorFlow said about CPU instructions, and what else it printed at ERROR or worse.

    Not :class:`tfbuild.detect.report.GuardReport`, which is what the CPU has.
    """

    form: str | None  # one of FORMS; None when no guard message was printed
    #: No unused instructions were reported (check ``missing`` and ``errors`` separately).
    silent: bool = field(init=False)
    unused: tuple[str, ...]  # instructions the CPU has and the binary leaves unused, as printed
    missing: tuple[str, ...]  # instructions the binary needs and the CPU lacks (TF aborts)
    onednn_custom_ops: bool  # "oneDNN custom operations are on" (printed even at log level 3)
    #: The binary cannot run here, or TensorFlow logged an error not known to be harmless.
    failed: bool = field(init=False)
    benign: tuple[str, ...]  # recognised harmless lines, ERROR-level DT_HALF one included
    errors: tuple[str, ...]  # every other ERROR/FATAL line

    def __post_init__(self) -> None:
        object.__setattr__(self, "silent", not self.unused)
        object.__setattr__(self, "failed", bool(self.missing or self.errors))


def _names(listed: str) -> list[str]:
    """Instruction names from a printed list; punctuation and markup around them are dropped."""
    return [name.rstrip(".") for name in re.findall(r"[A-Za-z0-9][A-Za-z0-9_.]*", listed)]


def parse_messages(text: str) -> TensorFlowMessages:
    """Read TensorFlow's CPU-feature messages from a process's output; never raises."""
    form: str | None = None
    unused: list[str] = []
    missing: list[str] = []
    benign: list[str] = []
    errors: list[str] = []
    onednn = False
    for raw in text.splitlines():
        # Colour codes, if the output went through a terminal, and controls: shown, never obeyed.
        line = printable_line(raw[:_MAX_LINE]).strip()
        if not line:
            continue
        found = _guard(line)
        if found is not None:
            line_form, names = found
            form = form or line_form  # the first form printed names the build
            unused.extend(names)
            continue
        match = _MISSING.search(line)
        if match:
            missing.append(match.group("name"))
            continue
        if _ONEDNN_ON.search(line):
            onednn = True
            continue
        if any(pattern.search(line) for pattern in _BENIGN):
            benign.append(line)
            continue
        if _SEVERE.search(line):
            errors.append(line)
    return TensorFlowMessages(
        form=form,
        unused=_unique(unused),
        missing=_unique(missing),
        onednn_custom_ops=onednn,
        benign=_unique(benign),
        errors=_unique(errors),
    )


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _guard(line: str) -> tuple[str, list[str]] | None:
    """The guard form a line belongs to and the instruction names it lists, or None."""
    match = _PER_FEATURE.search(line)
    if match:
        return "1.x-per-feature", [match.group("name")]
    for form, pattern in (
        ("supports-not-compiled", _SUPPORTS),
        ("mkl-dnn", _MKL_DNN),
        ("onednn-2.4", _ONEDNN),
        ("2.12+", _V212_LIST),
    ):
        match = pattern.search(line)
        if match:
            return form, _names(match.group("list"))
    # The 2.12+ head line lists nothing itself, but it dates the build when the list line is lost.
    if _V212_HEAD.search(line):
        return "2.12+", []
    return None
