"""`tfbuild smoke`: prove a wheel is optimized for this machine, and by how much.

Rooms: ``messages`` (TensorFlow's CPU-feature log lines, every known form), ``peak`` (the machine's
FP32 ceiling per thread count) and ``fma_probe`` (the measured one), ``_worker`` (the benchmark
process that runs inside the wheel's virtual environment and never imports tfbuild), ``envs``
(fresh virtual environments per wheel), ``probe`` (import + one op, build info, TCMalloc), ``run``
(candidate and baseline side by side, judged by :mod:`tfbuild.core.stats`) and ``report``.
"""
