"""The canary: a miniature STAND-IN for TensorFlow's source tree (it is not TensorFlow).

`tfbuild doctor` and the end-to-end tests run the real pipeline (rendered ``build.sh``, the
toolchain container, the output directory) on this tree instead of TensorFlow, which takes hours and
fetches from the internet. It honours the same contract: ``build.sh`` installs the rendered rc file
as ``.tf_configure.bazelrc``, runs ``bazel build --config=opt ... //tensorflow/tools/pip_package:wheel``,
and finds a wheel in ``bazel-bin/tensorflow/tools/pip_package/wheel_house/``. Here ``bazel`` is a
small script that compiles one native kernel with the planned compiler and ``build:opt`` flags and
packages it as a wheel whose version says ``tfbuild.canary``.
"""

from __future__ import annotations

from pathlib import Path

#: The stand-in source tree, to copy (or mount) where a TensorFlow checkout would go.
TREE = Path(__file__).resolve().parent / "tree"
