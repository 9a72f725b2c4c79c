"""Recorded machine states for the printers' tests: what ``tfbuild.detect.contention`` measured on
the project's 2-vCPU VM, quiet and with a CPU-bound process on each CPU (2026-11-27)."""

from __future__ import annotations

import dataclasses

from tfbuild.detect.contention import Contention

QUIET = Contention(
    seconds=30.0,
    cpus=2,
    others_busy=0.02,
    ours_busy=1.0,
    steal=0.0,
    load_average=1.1,
    quota_cores=None,
    throttled=None,
)


def shared(others_busy: float = 1.8, steal: float = 0.06) -> Contention:
    """The machine with neighbours: ``others_busy`` cores theirs on average, ``steal`` stolen."""
    return dataclasses.replace(QUIET, others_busy=others_busy, steal=steal, load_average=3.9)
