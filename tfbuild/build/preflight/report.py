"""The preflight's report: each check's :class:`Finding`, and a report's failures as one error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tfbuild.build.preflight.workspace import Loaded
from tfbuild.core.errors import UnsupportedError

Status = Literal["ok", "fail", "note", "skipped"]


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One check of the tree: what was found, where (the tree's file and line), why, what to do."""

    check: str
    status: Status
    what: str
    file: str | None = None  # relative to the tree
    line: int | None = None
    why: str = ""
    fix: str = ""

    @property
    def where(self) -> str:
        """``file:line``, ``file`` when no line is meant, empty when no file is."""
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    @property
    def located(self) -> str:
        return f"{self.where}: {self.what}" if self.where else self.what

    def text(self) -> str:
        """One line: ``where: what (why). fix``."""
        out = self.located
        if self.why:
            out += f" ({self.why})"
        if self.fix:
            out += f". {self.fix}"
        return out


@dataclass(frozen=True)
class TreeCheck:
    """One check's findings, each made with its name and status."""

    name: str

    def ok(self, what: str, file: str | None = None, line: int | None = None) -> Finding:
        return Finding(check=self.name, status="ok", what=what, file=file, line=line)

    def note(
        self, what: str, file: str | None = None, line: int | None = None, *, why: str = ""
    ) -> Finding:
        return Finding(check=self.name, status="note", what=what, file=file, line=line, why=why)

    def fail(
        self, what: str, file: str | None = None, line: int | None = None, *, why: str, fix: str
    ) -> Finding:
        return Finding(
            check=self.name, status="fail", what=what, file=file, line=line, why=why, fix=fix
        )

    def skipped(self, what: str, why: str) -> Finding:
        return Finding(check=self.name, status="skipped", what=f"not checked: {what}", why=why)

    def downloaded(self, what: str, loaded: Loaded) -> Finding:
        """Not checked: ``what`` comes from another repository, not from the tree."""
        return self.note(
            f"not checked: {what} {loaded.label}",
            loaded.file,
            loaded.line,
            why="a repository bazel downloads, not a file of this tree",
        )


@dataclass(frozen=True, kw_only=True)
class PreflightReport:
    """Every finding for one plan and one tree."""

    schema: Literal["tfbuild.preflight/1"] = "tfbuild.preflight/1"
    tree: str
    plan: str  # what was checked, in words: "TensorFlow 2.21.0 cpu, Python 3.11"
    passed: bool = field(init=False)  # no finding failed
    findings: tuple[Finding, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", not self.failures)

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status == "fail")

    def error(self, *, shown: bool = False) -> UnsupportedError | None:
        """The failures as one error (exit 4): the first in its line, all of them in its why.
        ``shown``: every finding was printed above (``plan --source``)."""
        return failures_error(
            f"the source tree {self.tree} does not fit the plan",
            self.failures,
            more="Each one's why is above"
            if shown
            else "tfbuild plan --source DIR lists every check with its why",
            done="Nothing was built: no image, no container.",
        )


def failures_error(
    what: str, failures: tuple[Finding, ...], *, more: str, done: str = ""
) -> UnsupportedError | None:
    """One error for ``failures``. One: it in the line, its why and its fix. Several: their count
    in the line, each (numbered, where and what) once in the why, and each one's fix under the
    same numbers (one fix that several share is given once, with all their numbers)."""
    if not failures:
        return None
    first = failures[0]
    if len(failures) == 1:
        fixes = [first.fix] if first.fix else []
        return UnsupportedError(
            f"{what}: {first.located}",
            why=first.why,
            fix=" ".join(f"{s.rstrip('.')}." for s in [*fixes, done] if s),
        )
    listed = "; ".join(f"({n}) {f.located}" for n, f in enumerate(failures, 1))
    numbers: dict[str, list[int]] = {}
    for n, failure in enumerate(failures, 1):
        if failure.fix:
            numbers.setdefault(failure.fix.rstrip("."), []).append(n)
    fixes = [f"({', '.join(map(str, ns))}) {fix}" for fix, ns in numbers.items()]
    return UnsupportedError(
        f"{what} ({len(failures)} mismatches)",
        why=listed,
        fix=" ".join(f"{s.rstrip('.')}." for s in [*fixes, more, done] if s),
    )
