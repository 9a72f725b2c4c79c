"""Defaults that several stages share, defined once; it imports nothing, so lazy imports stay lazy."""

#: The Docker volume that holds bazel's caches (``--cache-volume``; the plan's ``cache_volume``).
CACHE_VOLUME = "tfbuild-cache"
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
