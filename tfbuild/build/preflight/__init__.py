"""Preflight: does a TensorFlow source tree fit the plan? Seconds of file reads, before hours of build.

:func:`preflight` (in ``checks``) reads the few files of the tree that decide it and returns a
:class:`PreflightReport` (``report``): one or more :class:`Finding` per check, each naming the tree's
file and line, why it matters and what to do. ``tree_files`` reads the tree, ``bazelrc`` its rc
files, ``workspace`` what its WORKSPACE, BUILD and .bzl files declare. It only reads the tree:
``tfbuild recipes verify``, which fetches a release to check a recipe, is ``build.release_check``.
"""

from tfbuild.build.preflight.checks import preflight
from tfbuild.build.preflight.report import Finding, PreflightReport

__all__ = ["Finding", "PreflightReport", "preflight"]
