"""Finding CUDA toolkits, cuDNN, NCCL and TensorRT from their files, without a GPU or a driver.

Everything is looked up below ``root`` as if it were ``/`` (absolute symlinks resolve inside it,
like a chroot), so tests feed whole recorded trees. Only known paths are checked and a few
directories are listed one level deep; nvcc runs at most once per toolkit. Whatever looks wrong
(unreadable or garbage files, broken symlinks, an nvcc that fails, versions that disagree) becomes
a warning, never an error.

The locator is split by job: :mod:`~tfbuild.detect.cuda_report` (the report types),
:mod:`~tfbuild.detect.cuda_versions` (parsing version numbers), :mod:`~tfbuild.detect.cuda_search`
(the files below ``root``), :mod:`~tfbuild.detect.cuda_toolkit` (toolkits) and
:mod:`~tfbuild.detect.cuda_libraries` (cuDNN, NCCL, TensorRT). This module runs them.
"""

from __future__ import annotations

import contextlib
import os
import site
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from tfbuild.detect.cuda_libraries import locate_libraries
from tfbuild.detect.cuda_report import CudaReport
from tfbuild.detect.cuda_search import Search, Tree
from tfbuild.detect.cuda_toolkit import locate_toolkits


def _default_site_packages() -> tuple[PurePosixPath, ...]:
    """This interpreter's site-packages, and the user's when Python would import from it."""
    dirs: list[str] = []
    # Some embedded interpreters and old virtualenvs ship a site module without these.
    with contextlib.suppress(AttributeError):
        dirs.extend(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        with contextlib.suppress(AttributeError):
            dirs.append(site.getusersitepackages())
    return tuple(PurePosixPath(d) for d in dict.fromkeys(dirs) if d.startswith("/"))


def locate_cuda(
    *,
    root: Path = Path("/"),
    env: Mapping[str, str] | None = None,
    site_packages: Sequence[PurePosixPath | str] | None = None,
) -> CudaReport:
    """Every CUDA toolkit, cuDNN, NCCL and TensorRT installed below ``root``.

    ``env`` (default: ``os.environ``) supplies CUDA_HOME, CUDA_PATH, PATH, CONDA_PREFIX and
    LD_LIBRARY_PATH; ``site_packages`` (default: this interpreter's) is where pip's ``nvidia-*``
    wheels would be. All paths, including those in ``env``, are read as seen from ``root``.
    """
    env = os.environ if env is None else env
    sites = _default_site_packages() if site_packages is None else site_packages
    site_dirs = [PurePosixPath(s) for s in sites if str(s).startswith("/")]
    search = Search(Tree(root))

    toolkits = locate_toolkits(search, env, site_dirs)
    cudnn, nccl, tensorrt = locate_libraries(search, toolkits, env, site_dirs)
    for loop in sorted(search.tree.loops):
        search.warn(f"{loop} is part of a symlink loop; it was skipped.")
    return CudaReport(
        toolkits=tuple(toolkits),
        cudnn=cudnn,
        nccl=nccl,
        tensorrt=tensorrt,
        warnings=tuple(sorted(set(search.warnings))),
    )
