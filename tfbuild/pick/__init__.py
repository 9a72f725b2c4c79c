"""`tfbuild pick`: which wheel of a directory or an index page runs best on a machine, and why.

The wheels come from a local directory or an index page (:mod:`~tfbuild.pick.listing` says how, and
which links and receipts it follows); a wheel that is not the file its receipt describes is refused
first (stage ``integrity``). The machine is this one, or a saved ``/proc/cpuinfo`` with a stated
Python and CUDA driver.

Each wheel passes five checks in order, and the first that fails is the wheel's refusal reason:

1. **platform**: its platform tag is for this architecture (``linux_x86_64``, ``manylinux*``, ``any``);
2. **python**: its Python tag fits the interpreter (``cp311``, ``abi3``, ``py3-none``);
3. **glibc**: the C and C++ runtimes. A ``manylinux_X_Y`` wheel needs glibc X.Y, and a wheel whose
   receipt records a floor (:class:`~tfbuild.wheel.receipt.WheelFloor`, found by auditwheel) needs its
   ``GLIBC_`` version (the stricter of the two decides) and a libstdc++ that defines its
   ``GLIBCXX_`` version. A ``--cpuinfo`` machine's runtimes are unknown, so not checked, unless
   ``--glibc X.Y`` / ``--libstdcxx X.Y.Z`` state them;
4. **cpu**: the CPU target of its local version label (:mod:`tfbuild.wheel.labels`) runs here, by
   archspec's rule (:func:`tfbuild.detect.cpu.why_not`) on instruction sets only (flags such as
   ``flush_l1d`` and ``pku`` that compiled code cannot depend on are left out:
   :data:`~tfbuild.detect.cpu.NOT_INSTRUCTION_SETS`), and every TensorFlow guard feature its
   receipt says the compiler turned on is present. ``native`` needs a receipt; no label at all is
   assumed portable (the stock wheel);
5. **cuda**: a CUDA build needs a driver that supports that CUDA release.

Among the wheels that run (and match ``--tf`` / ``--variant``), :mod:`~tfbuild.pick.rank` ranks
them. Overlays (``tfbuild_overlay-*.whl``, :mod:`tfbuild.overlay`) pass checks of their own
(:mod:`~tfbuild.pick.compat`) and are chosen apart from the wheels (:mod:`~tfbuild.pick.rank`).

One module a job (each one's docstring, and ARCHITECTURE.md's table, say which), each importing
only those before it: ``options`` (what the command takes), ``fetch``, ``listing``, ``machine``,
``compat``, ``rank``, ``install``, ``session``; ``report`` is what ``--json`` writes of a result.

The human output is :func:`tfbuild.cli.wheel_display.print_pick`; this package never imports rich, so
``--json`` does not either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line loads pick.options; a plain import would load all of pick
    from tfbuild.pick.compat import Assessment as Assessment
    from tfbuild.pick.rank import PickResult as PickResult
