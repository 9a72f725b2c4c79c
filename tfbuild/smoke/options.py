"""What ``tfbuild smoke`` of a TensorFlow wheel takes, declared once (:mod:`tfbuild.core.options`);
light, so that the command line loads it, not the smoke."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from tfbuild.core.errors import UsageError
from tfbuild.core.options import BUDGET, INSTALLED, WHEEL, declared, group, option
from tfbuild.core.pythons import PYTHON_INTERPRETER


def _ops(text: str) -> tuple[str, ...]:
    return tuple(o.strip() for o in text.split(",") if o.strip())


@dataclass(frozen=True, kw_only=True)
class Rules:
    """What fails the wheel: ``smoke``'s options, declared once."""

    allow_unused: bool = declared(
        False, "--allow-unused", help="Pass even if TensorFlow names unused instructions."
    )
    allow_slower: tuple[str, ...] = declared(
        (),
        "--allow-slower",
        metavar="OPS",
        help="Comma-separated ops allowed to be slower.",
        cli_type=str | None,
        convert=_ops,
    )
    min_margin: float = declared(
        0.05, "--min-margin", min=0.0, max=1.0, help="Smallest difference called a verdict."
    )


@dataclass(frozen=True, kw_only=True)
class SmokeOptions:
    """What ``tfbuild smoke`` of a TensorFlow wheel was asked: its options, declared once."""

    wheel: str | None = option(WHEEL, default=None)
    installed: bool = option(INSTALLED, default=False)
    python: str = option(PYTHON_INTERPRETER, default=sys.executable)
    baseline: str | None = declared(
        None,
        "--baseline",
        metavar="SPEC",
        help="What to compare with: a .whl, a requirement, or 'none'. Default: the stock "
        "tensorflow-cpu of the same version.",
    )
    quick: bool = declared(False, "--quick", help="Shorter measurements for CI (under 2 minutes).")
    budget: float | None = option(
        BUDGET.but(help=f"{BUDGET.help} Default: 90 with --quick, else 300."),
        default=None,
    )
    bench: bool = declared(True, "--bench/--no-bench", help="Benchmark, or only probe the import.")
    settings: bool = declared(
        True, "--settings/--no-settings", help="Try TCMalloc, thread and OpenMP settings."
    )
    env_file: Path | None = declared(
        None, "--env-file", metavar="FILE", help="The wheel's runtime env file: read, then updated."
    )
    rules: Rules = group(Rules)
    runtime_env: dict[str, str] = field(default_factory=dict)  # the wheel's runtime env file
    built_for: str | None = None  # from the wheel's receipt: the target and flags it was built with

    def check(self) -> None:
        """It names one wheel: a WHEEL or --installed (asked once the command knows the wheel is
        TensorFlow, not an overlay or the stand-in)."""
        if (self.wheel is None) == (not self.installed):
            raise UsageError(
                "name one wheel to test",
                why="give a WHEEL argument or --installed, not both and not neither",
                fix="e.g. tfbuild smoke dist/tensorflow_cpu-2.21.0-cp311-cp311-linux_x86_64.whl",
            )
