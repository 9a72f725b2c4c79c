"""Measuring: timing two things side by side until the difference is decided, and what is timed.

``smoke`` proves a wheel with it; ``forecast`` and ``tune`` are measurements of their own; the
overlay's proof runs on it too. Nothing here reads a plan or a build: a measurement takes the facts
it needs (a wheel, an interpreter, flags) as values.

Rooms: ``envs`` (a virtual environment per wheel, the stock wheel's requirement) · ``_worker`` (the
benchmark process inside a wheel's environment; it never imports tfbuild) · ``run`` (workers timed in
alternating pairs, rounds until decided, judged by :mod:`tfbuild.core.stats`) · ``models`` (a user's
model, checked before it loads) · ``tune`` (runtime settings, kept when they
win) · the forecast: ``forecast`` (the request and its run), ``eigen_headers`` (the stock wheel's,
copied as untrusted input), ``forecast_bench`` + ``forecast_kernels.cc`` (compiled with each side's
flags, timed in alternation), ``forecast_tensorflow`` + ``_forecast_tf`` (stock TensorFlow's own ops),
``forecast_onednn`` (oneDNN's kernels, from its verbose lines), ``forecast_emit`` (the benchmark for
another machine), ``forecast_store`` (kept for smoke), ``forecast_report``.
"""
