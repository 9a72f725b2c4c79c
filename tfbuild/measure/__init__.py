"""Measuring: timing two things side by side until the difference is decided, and what is timed.

``smoke`` proves a wheel with it; ``forecast`` and ``tune`` are measurements of their own; the
overlay's proof runs on it too. Nothing here reads a plan or a build: a measurement takes the facts
it needs (a wheel, an interpreter, flags) as values.

Rooms: ``envs`` (a virtual environment per wheel, the stock wheel's requirement) · ``scripts/worker.py`` (the
benchmark process inside a wheel's environment; it never imports tfbuild) · ``run`` (workers timed in
alternating pairs, rounds until decided, judged by :mod:`tfbuild.core.stats`) · ``models`` (a user's
model, checked before it loads) · ``tune`` (runtime settings, kept when they
win) · the forecast's parts that measure nothing of their own: ``forecast_onednn`` (oneDNN's kernels,
from its verbose lines), ``forecast_report`` (its results, summary and JSON), ``forecast_store`` (kept
for smoke); the forecast itself builds an overlay and times it: ``tfbuild.overlay.forecast``.
"""
