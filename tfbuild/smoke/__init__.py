"""`tfbuild smoke`: prove a wheel is optimized for this machine, and by how much.

Rooms: ``options`` (what the command takes, declared once) · ``messages`` (TensorFlow's
CPU-feature log lines, every known form) · ``probe`` (import + one op, build info, TCMalloc) ·
``session`` (one smoke: the wheel's environment, the probe, the measurements of
:mod:`tfbuild.measure` against the baseline, the forecast kept for its target) · ``report`` (the
verdicts and rules) · ``standin`` (the canary's STAND-IN wheel, tested as what it is) · ``loads`` +
``scripts/loadprobe.py`` (``--in-image``: does the wheel load on another system).
"""
