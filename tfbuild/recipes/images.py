"""Base images: the pinned entries of ``base-images.yaml``, and the suites ``tfbuild base`` makes."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core import defaults
from tfbuild.core.defaults import BASE_REPOSITORY
from tfbuild.recipes.recipe import recipe_dirs
from tfbuild.recipes.strict_yaml import DataFile, Field, entries_of, read_text, validate

BASE_IMAGES_FILE = "base-images.yaml"


@dataclass(frozen=True, kw_only=True)
class BaseImage:
    """An image a toolchain image is built on: pinned by digest in base-images.yaml, or a local
    image made by ``tfbuild base`` (then ``image_id`` pins it, as its reference is a tag)."""

    name: str
    reference: str  # image@sha256:digest
    image_id: str | None = None  # a local image (tfbuild base): its id, as the reference is a tag
    distro: str
    suite: str
    python: str  # the distribution's python3 (X.Y)
    tcmalloc_package: str
    packaged_compilers: tuple[str, ...] = ()  # "clang-16", "gcc-12": what apt installs as is
    cuda: str | None = None  # NVIDIA images: the CUDA toolkit inside
    cudnn: str | None = None  # NVIDIA images: the cuDNN major inside (None: none)
    glibc: str | None = None  # the distribution's glibc (X.Y)


#: One entry of base-images.yaml (its header comment documents each field).
BASE_IMAGE_SCHEMA: dict[str, Field] = {
    "image": Field("image"),
    "tag": Field("tag"),
    "digest": Field("digest"),
    "read": Field("date", required=False),
    "source": Field("text", required=False),
    "distro": Field("token"),
    "suite": Field("token"),
    "glibc": Field("version2", required=False, nullable=True),
    "python": Field("version2"),
    "tcmalloc_package": Field("token"),
    "packaged_compilers": Field("list:compiler", required=False, nullable=True),
    "cuda": Field("release", required=False, nullable=True),
    "cudnn": Field("release", required=False, nullable=True),
}


def parse_base_images(text: str, *, path: str) -> dict[str, BaseImage]:
    """The text of a ``base-images.yaml``: name -> BaseImage, validated like a recipe."""
    doc = DataFile(
        path=path,
        noun="base image file",
        fix="Fix the file (its header comment documents each field).",
    )
    images: dict[str, BaseImage] = {}
    for name, value_node in entries_of(doc, text, "image names to their pins"):
        entry = validate(doc, value_node, BASE_IMAGE_SCHEMA, f"{name}.", {})
        images[name] = BaseImage(
            name=name,
            reference=f"{entry['image']}:{entry['tag']}@{entry['digest']}",
            distro=entry["distro"],
            suite=entry["suite"],
            python=entry["python"],
            tcmalloc_package=entry["tcmalloc_package"],
            packaged_compilers=tuple(entry.get("packaged_compilers") or ()),
            cuda=entry.get("cuda"),
            cudnn=entry.get("cudnn"),
            glibc=entry.get("glibc"),
        )
    return images


def load_base_images(extra_dirs: Sequence[Path] = ()) -> dict[str, BaseImage]:
    """``base-images.yaml``: name -> BaseImage (pinned by digest). A user recipes directory may
    carry its own file, whose entries add to or replace the shipped ones."""
    images: dict[str, BaseImage] = {}
    for index, directory in enumerate(recipe_dirs(extra_dirs)):
        path = directory / BASE_IMAGES_FILE
        if not os.path.lexists(path):
            continue  # a link that leads nowhere is not absent: reading it says so
        shown = f"recipes/{BASE_IMAGES_FILE}" if index == 0 else str(path)
        images.update(parse_base_images(read_text(path, "base image file"), path=shown))
    return images


# --- local base images (tfbuild base) ------------------------------------------------------------

#: The suites tfbuild base makes. Each has its facts (Python, TCMalloc package, packaged compilers,
#: glibc) in the base-images.yaml entry of that suite, which --base-image reads for an image made
#: here (tests/build/test_base_suites.py holds every suite to that).
SUITES = {
    "bullseye": "debian",
    "bookworm": "debian",
    "trixie": "debian",
    "jammy": "ubuntu",
    "noble": "ubuntu",
}
#: The label of an image made by ``tfbuild base``: its suite (what a plan reads the facts of).
BASE_LABEL = defaults.BASE_LABEL


def default_tag(suite: str) -> str:
    """The tag ``tfbuild base`` gives the image of ``suite`` unless --tag says otherwise."""
    return f"{BASE_REPOSITORY}:{suite}"


def suite_facts(suite: str, known: Mapping[str, BaseImage]) -> BaseImage | None:
    """The facts of ``suite`` (Python, TCMalloc package, packaged compilers, glibc): those of its
    plain (non-CUDA) base-images.yaml entry, which pulls the same distribution from a registry."""
    return next((b for b in known.values() if b.suite == suite and b.cuda is None), None)
