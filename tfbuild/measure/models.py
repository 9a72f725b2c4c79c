"""A user's model for ``tfbuild tune --model``: checked for its kind and size before anything loads it.

The model is untrusted input. Before a TensorFlow worker is started with it, :func:`check_model` makes
sure it is one of the two things tune times, within bounds:

* a SavedModel: a directory holding ``saved_model.pb``, every entry beneath it a regular file or a
  directory (a FIFO or a device would hang or feed TensorFlow's reader; a link to a directory could
  loop), at most :data:`MAX_ENTRIES` of them and :data:`MAX_BYTES` in all;
* a Keras file: a regular file named ``*.keras`` that is a zip archive holding ``config.json`` (the
  Keras v3 format), at most :data:`MAX_BYTES` on disk and unpacked.

Anything else is one :class:`InputError` line (exit 3). Loading and calling happen in the timing
worker (``_worker.py``); what fails there is :class:`UnsupportedError` (exit 4), raised by
:mod:`tfbuild.measure.run`.
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core.errors import InputError
from tfbuild.core.files import ZIP_MEMBER_ERRORS, kind_of, shown

#: The largest model tune takes, on disk and (a .keras zip) unpacked: each timing worker holds it.
MAX_BYTES = 2 << 30
#: The most files and directories a SavedModel directory may hold.
MAX_ENTRIES = 10_000
#: The largest batch --model-batch accepts.
MAX_BATCH = 4096

FIX = "Pass a SavedModel directory (with saved_model.pb) or a Keras v3 .keras file."


@dataclass(frozen=True, kw_only=True)
class ModelFile:
    """A model that passed the checks: where it is, what kind, and the op name it is timed as."""

    path: str  # resolved
    kind: str  # "savedmodel" or "keras"
    op: str  # "model:<file or directory name>"
    bytes: int
    batch: int  # the batch dimension given to inputs whose first dimension is open


def _refuse(name: str, why: str, fix: str = FIX) -> InputError:
    return InputError(f"cannot time the model {name}", why=why, fix=fix)


def _too_large(name: str, what: str) -> InputError:
    return _refuse(
        name,
        f"{what} larger than {MAX_BYTES >> 30} GiB, the most tune loads into each timing worker",
        "Time a smaller model, or tune without --model.",
    )


def _saved_model(root: Path, name: str) -> int:
    """The bytes of the SavedModel directory ``root``, after checking every entry under it."""
    pb = root / "saved_model.pb"
    try:
        pb_mode = pb.stat().st_mode
    except FileNotFoundError:
        raise _refuse(
            name, "the directory holds no saved_model.pb, so it is not a SavedModel"
        ) from None
    except OSError as exc:
        raise _refuse(name, f"saved_model.pb: {exc.strerror or exc}") from None
    if not stat.S_ISREG(pb_mode):
        raise _refuse(name, f"its saved_model.pb is {kind_of(pb_mode)}, not a regular file")
    total = 0
    entries = 0

    def walk_error(exc: OSError) -> None:
        raise _refuse(name, f"{shown(str(exc.filename))}: {exc.strerror or exc}")

    for top, dirs, files in os.walk(root, onerror=walk_error):
        for entry in dirs + files:
            entries += 1
            if entries > MAX_ENTRIES:
                raise _refuse(
                    name,
                    f"the directory holds more than {MAX_ENTRIES:,} entries; a SavedModel has a few",
                )
            path = Path(top) / entry
            try:
                found = path.stat()
            except OSError as exc:
                raise _refuse(name, f"{shown(str(path))}: {exc.strerror or exc}") from None
            if entry in dirs:
                if path.is_symlink():
                    raise _refuse(name, f"{shown(str(path))} is a link to a directory")
                if not stat.S_ISDIR(found.st_mode):
                    raise _refuse(name, f"{shown(str(path))} is {kind_of(found.st_mode)}")
                continue
            if not stat.S_ISREG(found.st_mode):
                raise _refuse(
                    name,
                    f"{shown(str(path))} is {kind_of(found.st_mode)}; a SavedModel holds regular "
                    "files only",
                )
            total += found.st_size
            if total > MAX_BYTES:
                raise _too_large(name, "the SavedModel is")
    return total


def _keras_file(path: Path, name: str) -> int:
    """The bytes of the .keras file ``path``, after checking it is a bounded zip with config.json."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise _refuse(name, exc.strerror or str(exc)) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # replaced since the stat: check what was opened
            raise _refuse(name, f"it is {kind_of(info.st_mode)}, not a regular file")
        if info.st_size > MAX_BYTES:
            raise _too_large(name, "the file is")
        os.set_blocking(fd, True)
        try:
            with zipfile.ZipFile(handle) as archive:
                members = archive.infolist()
        except ZIP_MEMBER_ERRORS as exc:
            raise _refuse(
                name,
                f"it is not a zip archive, as a Keras v3 .keras file is ({exc})",
                "Save the model with model.save('NAME.keras') (Keras 3, or tf.keras 2.13 and later).",
            ) from None
    if "config.json" not in {m.filename for m in members}:
        raise _refuse(
            name,
            "the zip holds no config.json, so it is not a Keras v3 model file",
            "Save the model with model.save('NAME.keras').",
        )
    if sum(m.file_size for m in members) > MAX_BYTES:
        raise _too_large(name, "the file unpacks")
    return info.st_size


def check_model(path: Path, *, batch: int = 1) -> ModelFile:
    """The model at ``path``, checked for kind and size; InputError (exit 3) if it is not one."""
    name = shown(str(path))
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise _refuse(name, "no such file or directory") from None
    except OSError as exc:
        raise _refuse(name, exc.strerror or str(exc)) from None
    resolved = path.resolve()
    label = shown(resolved.name or str(resolved))
    if stat.S_ISDIR(mode):
        kind, size = "savedmodel", _saved_model(resolved, name)
    elif not stat.S_ISREG(mode):
        raise _refuse(name, f"it is {kind_of(mode)}, not a SavedModel directory or a .keras file")
    elif resolved.suffix == ".keras":
        kind, size = "keras", _keras_file(resolved, name)
    elif resolved.suffix in (".h5", ".hdf5"):
        raise _refuse(
            name,
            "an HDF5 (legacy Keras) file, which tune does not load",
            "Load it and save it again as NAME.keras, or export a SavedModel.",
        )
    else:
        raise _refuse(name, "a file that is not named *.keras")
    return ModelFile(path=str(resolved), kind=kind, op=f"model:{label}", bytes=size, batch=batch)
