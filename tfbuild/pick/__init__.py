"""`tfbuild pick`: which wheel of a directory or an index page runs best on a machine, and why.

The wheels come from a local directory (``*.whl``, with the receipt ``<stem>.json`` beside each one
when there is one) or from an HTML index page (PEP 503 anchors, ``<a href="NAME.whl#sha256=HEX">``,
which is what ``tfbuild index`` writes), a local file (its links resolved against its own place) or
an http(s) URL. The machine is this one, or a saved ``/proc/cpuinfo`` with
a stated Python and CUDA driver.

A wheel whose sha256 is not the one its receipt records (a local file's, computed; a link's
``#sha256=``) is not the wheel that build wrote, and is refused first (stage ``integrity``). A
receipt over http(s) is read only from where its wheel may be (the page's origin or an
``--allow-origin`` one), redirects included: one that redirects elsewhere is not used.

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

Among the wheels that run (and match ``--tf`` / ``--variant``) the ranking is: newest TensorFlow,
then a usable CUDA build over CPU builds, then the most specific CPU target (a target above its
ancestors; among unrelated ones, more features), then the plain build over oneDNN (``mkl``), then an
exact ``cpXY`` build over ``abi3`` over ``py3-none``.

Overlays (``tfbuild_overlay-*.whl``, :mod:`tfbuild.overlay`) are judged by the same platform, python,
glibc and CPU checks (the CPU must have every instruction set the overlay's loader checks for), and
one more, **tensorflow**: the interpreter chosen for (``--python``'s, else tfbuild's own) has
exactly the TensorFlow its receipt names installed, the same distribution, release and build. They
are chosen apart from the wheels (:mod:`~tfbuild.pick.rank` says why): ``chosen`` is still the best
wheel, ``overlay`` the best overlay for the TensorFlow installed.

One module a job (each one's docstring, and ARCHITECTURE.md's table, say which), each importing
only those before it: ``fetch``, ``listing``, ``machine``, ``compat``, ``rank``, ``install``,
``session``; ``report`` is what ``--json`` writes of a result.

The human output is :func:`tfbuild.cli.wheel_display.print_pick`; this package never imports rich, so
``--json`` does not either.
"""

from __future__ import annotations

from tfbuild.pick.compat import Assessment
from tfbuild.pick.rank import PickResult

__all__ = ["Assessment", "PickResult"]
