"""Defaults that several stages share, defined once; it imports nothing, so lazy imports stay lazy."""

#: The Docker volume that holds bazel's caches (``--cache-volume``; the plan's ``cache_volume``).
CACHE_VOLUME = "tfbuild-cache"
#: The label ``tfbuild base`` gives its images (the suite): they are imported, not built, so they
#: carry it instead of the engine's ``org.tfbuild=1``.
BASE_LABEL = "org.tfbuild.base"
#: The repository of the toolchain images: ``tfbuild/toolchain:<input hash>`` on the engine, and
#: ``<registry>/tfbuild/toolchain`` where ``--push-toolchain`` puts it for remote actions.
TOOLCHAIN_REPOSITORY = "tfbuild/toolchain"
#: The repository of the base images ``tfbuild base`` makes: ``tfbuild/base:<suite>``.
BASE_REPOSITORY = "tfbuild/base"
#: Seconds one ``tfbuild pick`` may spend reading its index page and receipts (``--timeout``).
PICK_TIMEOUT_S = 120.0
#: The earliest time a zip member (so a wheel's) can carry: 1980-01-01 00:00:00 UTC, in seconds since
#: 1970. A build's SOURCE_DATE_EPOCH when its source gives none.
ZIP_EPOCH = 315532800
#: The distribution (and import) name of the canary's STAND-IN wheel: a name of its own, so that
#: installing it never replaces a TensorFlow (``tfbuild_canary-0.0.0+tfbuild.canary...whl``).
STANDIN_WHEEL = "tfbuild_canary"
#: How long ``tfbuild doctor`` takes (its checks, then the canary built twice, smoked and timed),
#: measured on the project's 2-core VM: the first run builds the canary's toolchain image (223 s),
#: later runs reuse it (16-22 s in four runs, 2026-11-27; 22 s while other tests loaded the
#: machine). The one statement of it: the doctor's help, ``--canary``'s help and the offline hint
#: all say this.
DOCTOR_TIMES = "223 s the first time, which builds its toolchain image, 16-22 s after, on 2 cores"


def multiarch(architecture: str) -> str:
    """Debian's multiarch directory for ``architecture``: its libraries are in ``/usr/lib/<it>``."""
    return "aarch64-linux-gnu" if architecture == "aarch64" else "x86_64-linux-gnu"
