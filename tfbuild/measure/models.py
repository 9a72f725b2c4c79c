"""A user's model for ``tfbuild tune --model``: checked for its kind and size before anything loads it.

The model is untrusted input. Before a TensorFlow worker is started with it, :func:`check_model` makes
sure it is one of the two things tune times, within bounds:

* a SavedModel: a directory holding ``saved_model.pb``, every entry beneath it a regular file or a
  directory (a FIFO or a device would hang or feed TensorFlow's reader; a link to a directory could
  loop), at most :data:`MAX_ENTRIES` of them and :data:`MAX_BYTES` in all;
* a Keras file: a regular file named ``*.keras`` that is a zip archive holding ``config.json`` (the
  Keras v3 format), at most :data:`MAX_BYTES` on disk and unpacked.

Anything else is one :class:`InputError` line (exit 3). Loading and calling happen in the timing
worker (``scripts/worker.py``); what fails there is :class:`UnsupportedError` (exit 4), raised by
:mod:`tfbuild.measure.run`.

The options that say how the model is called are declared here once (:class:`ModelOptions`), for
``tune`` and for ``smoke`` of an overlay: the batch, the shape of an input the model leaves open
(``--model-input [NAME=]DIMS[:DTYPE]``, :func:`parse_model_input`), a training step instead of
inference, and a Python file that defines the model's custom classes.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import stat
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

from tfbuild.core import serial
from tfbuild.core.errors import InputError, UsageError
from tfbuild.core.files import ZIP_MEMBER_ERRORS, kind_of, shown
from tfbuild.core.options import Cli, declared, option

#: The largest model tune takes, on disk and (a .keras zip) unpacked: each timing worker holds it.
MAX_BYTES = 2 << 30
#: The most files and directories a SavedModel directory may hold.
MAX_ENTRIES = 10_000
#: The largest batch --model-batch accepts.
MAX_BATCH = 4096

FIX = "Pass a SavedModel directory (with saved_model.pb) or a Keras v3 .keras file."


#: The steps a model is timed as: inference (``model(x, training=False)``, as predict and serving
#: run it), or a training step (forward, loss, gradients and an optimizer's update).
STEPS = ("predict", "train")
#: The dtypes ``--model-input`` names.
INPUT_DTYPES = (
    "float32", "float16", "bfloat16", "float64", "int32", "int64", "int16", "int8", "uint8", "bool",
)  # fmt: skip
#: An input's dimensions, the batch left out: at most this many, each at most this large...
MAX_DIMS, MAX_DIM = 8, 1 << 20
#: ... and at most this many elements a sample (a batch of them is made in every worker).
MAX_ELEMENTS = 1 << 26
#: The largest --model-code file.
MAX_CODE_BYTES = 1 << 20
_INPUT = re.compile(
    r"(?:(?P<name>[A-Za-z_][A-Za-z0-9_./:-]{0,127})=)?(?P<dims>[0-9]+(?:,[0-9]+)*)(?::(?P<dtype>\w+))?"
)
INPUT_FORM = "[NAME=]DIMS[:DTYPE]"


@dataclass(frozen=True, kw_only=True)
class ModelInput:
    """One input's shape (the batch left out) and dtype, given on the command line for a model
    that leaves it open; ``name`` None: the model's only input."""

    name: str | None = None
    shape: tuple[int, ...]
    dtype: str | None = None  # None: the model's own


def parse_model_input(text: str) -> ModelInput:
    """``224,224,3``, ``token_ids=128:int32``: one ``--model-input``; UsageError otherwise."""
    found = _INPUT.fullmatch(text.strip())
    example = "e.g. --model-input 224,224,3 or --model-input token_ids=128:int32"
    if found is None:
        raise UsageError(
            f"--model-input {text!r} is not {INPUT_FORM}",
            why="DIMS are the input's dimensions without the batch, comma-separated",
            fix=f"Write it as {INPUT_FORM}, {example}.",
        )
    shape = tuple(int(d) for d in found["dims"].split(","))
    dtype = found["dtype"]
    elements = math.prod(shape)
    if len(shape) > MAX_DIMS or not all(1 <= d <= MAX_DIM for d in shape):
        raise UsageError(
            f"--model-input {text!r}: {len(shape)} dimensions of {min(shape)} to {max(shape)}",
            fix=f"Give at most {MAX_DIMS} dimensions, each from 1 to {MAX_DIM:,}.",
        )
    if elements > MAX_ELEMENTS:
        raise UsageError(
            f"--model-input {text!r}: {elements:,} elements a sample",
            fix=f"Give a shape of at most {MAX_ELEMENTS:,} elements a sample.",
        )
    if dtype is not None and dtype not in INPUT_DTYPES:
        raise UsageError(
            f"--model-input {text!r}: unknown dtype {dtype!r}",
            fix=f"Name one of {', '.join(INPUT_DTYPES)}.",
        )
    return ModelInput(name=found["name"], shape=shape, dtype=dtype)


def _model_inputs(values: list[str]) -> tuple[ModelInput, ...]:
    inputs = tuple(parse_model_input(v) for v in values)
    names = [i.name for i in inputs]
    if len(set(names)) != len(names):
        raise UsageError(
            "two --model-input values for one input",
            why="one without a name gives every open input of its rank its shape; each other "
            "names one input",
            fix="Give each input once: NAME=DIMS[:DTYPE], with the model's input names.",
        )
    return inputs


#: ``--model PATH``: the user's model, timed (tune) or profiled and timed (smoke of an overlay).
MODEL = Cli(
    flags=("--model",),
    metavar="PATH",
    help=(
        "Your model: a Keras v3 .keras file (loaded with safe_mode=True, so no Lambda layers) or a "
        "SavedModel directory (its 'serving_default' signature; it runs its own graph: pass only "
        "models you trust)."
    ),
    show_default=False,
)


@dataclass(frozen=True, kw_only=True)
class ModelOptions:
    """How the user's model is found and called: the options of ``tune`` and of ``smoke`` of an
    overlay, declared once."""

    model: Path | None = option(MODEL, default=None)
    model_batch: int = declared(
        1,
        "--model-batch",
        metavar="N",
        min=1,
        max=MAX_BATCH,
        help="The batch given to the model's inputs (their open first dimension).",
    )
    model_input: tuple[ModelInput, ...] = declared(
        (),
        "--model-input",
        metavar=INPUT_FORM,
        help=(
            "The shape of the inputs the model leaves open, without the batch (224,224,3), and "
            "their dtype; NAME= for one input only. Repeat for several."
        ),
        show_default=False,
        cli_type=list[str] | None,
        convert=_model_inputs,
    )
    model_step: str = declared(
        "predict",
        "--model-step",
        metavar="predict|train",
        help="Time inference (predict) or a training step (forward, loss, gradients, Adam's "
        "update).",
    )
    model_code: Path | None = declared(
        None,
        "--model-code",
        metavar="FILE.py",
        help="A Python file of yours that defines and registers the model's custom classes "
        "(a subclassed model, custom layers), imported before the model loads.",
        show_default=False,
    )

    def __post_init__(self) -> None:
        if self.model_step not in STEPS:
            raise UsageError(
                f"--model-step {self.model_step!r}", fix=f"Choose one of {', '.join(STEPS)}."
            )
        if self.model is None and (
            self.model_input or self.model_code or self.model_step != "predict"
        ):
            raise UsageError(
                "--model-input, --model-step and --model-code say how to call --model",
                fix="Pass --model PATH too, or drop them.",
            )

    def checked(self) -> ModelFile | None:
        """The model, checked for kind and size (InputError, exit 3), or None without --model."""
        if self.model is None:
            return None
        found = check_model(self.model, batch=self.model_batch)
        code = check_code(self.model_code) if self.model_code is not None else None
        return replace(found, step=self.model_step, inputs=self.model_input, code=code)


@dataclass(frozen=True, kw_only=True)
class ModelFile:
    """A model that passed the checks: where it is, what kind, the op name it is timed as, and how
    it is called."""

    path: str  # resolved
    kind: str  # "savedmodel" or "keras"
    op: str  # "model:<file or directory name>"
    bytes: int
    batch: int  # the batch dimension given to inputs whose first dimension is open
    step: str = "predict"  # one of STEPS
    inputs: tuple[ModelInput, ...] = ()  # shapes given for inputs the model leaves open
    code: str | None = None  # the user's .py file of custom classes, resolved

    def worker_args(self) -> list[str]:
        """The measuring worker's arguments for this model (``worker.py --model ...``)."""
        argv = ["--model", self.path, "--model-kind", self.kind, "--model-op", self.op]
        argv += ["--model-batch", str(self.batch), "--model-step", self.step]
        if self.inputs:
            argv += ["--model-inputs", json.dumps(serial.to_data(self.inputs))]
        if self.code is not None:
            argv += ["--model-code", self.code]
        return argv


def check_code(path: Path) -> str:
    """The resolved path of a --model-code file: a regular .py file of at most 1 MiB."""
    refused = functools.partial(
        InputError,
        f"cannot use --model-code {shown(str(path))}",
        fix="Pass the .py file that defines the model's custom classes (as your program imports "
        "it).",
    )
    try:
        mode = path.stat()
    except OSError as exc:
        raise refused(why=exc.strerror or str(exc)) from None
    if not stat.S_ISREG(mode.st_mode) or path.suffix != ".py":
        what = kind_of(mode.st_mode) if not stat.S_ISREG(mode.st_mode) else "not named *.py"
        raise refused(why=f"it is {what}")
    if mode.st_size > MAX_CODE_BYTES:
        raise refused(why=f"it is larger than {MAX_CODE_BYTES >> 20} MiB")
    return str(path.resolve())


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
