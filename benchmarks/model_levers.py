"""Reference models nobody here wrote, each tuned by ``tfbuild tune --model``: what every lever
does to it on this machine, side by side, and what tune kept.

The models are real architectures built offline with random weights (keras.applications, and
keras-hub backbones built from their arguments), a GRU and an LSTM text classifier, an attention
encoder, and training steps of two of them. Each is saved as a .keras file and tuned in a
reference environment: stock ``tensorflow-cpu`` with ``keras-hub`` installed beside it *without
its dependencies* (``pip install keras-hub`` pulls tensorflow-text, which installs the full
``tensorflow`` wheel over tensorflow-cpu's framework, and an overlay built for tensorflow-cpu then
rightly refuses to load); the script checks that the framework is still tensorflow-cpu's. The
overlay is built once, for this CPU, against that environment's TensorFlow.

    python benchmarks/model_levers.py [--models gru,encoder,...] [--budget 600]
        [--python REFERENCE_PYTHON] [--overlay WHEEL] [--compiler clang++-16] [--json FILE]

Printed per model: stock's step time; each lever's ratio to stock at TensorFlow's default threads
with its interval (the overlay, XLA on the whole step, XLA auto-clustering, one thread); tune's
kept profile with its ratio, confirmed in a fresh pair of processes; how long tune took; and how
busy the machine was while it measured (the load average before and after, the other processes'
share of the CPUs while the model was timed). --json keeps every tune's whole answer.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TF = "2.21.0"
#: keras-hub 0.32's own dependencies but tensorflow-text (which replaces the framework).
KERAS_HUB = ("keras-hub==0.32.0",)
KERAS_HUB_DEPS = (
    "absl-py", "kagglehub", "regex", "rich", "sentencepiece", "tokenizers", "packaging",
)  # fmt: skip
#: libtensorflow_framework.so.2 of tensorflow-cpu 2.21.0 (the full tensorflow wheel's: 162,648,808).
CPU_FRAMEWORK_BYTES = 65_222_328

#: name -> (what it is, batch, --model-input values, step)
MODELS: dict[str, tuple[str, int, tuple[str, ...], str]] = {
    "gru": ("GRU(128) text classifier, 50 steps of 32 features", 256, (), "predict"),
    "lstm": (
        "Embedding(20000, 64) + LSTM(128) sentiment classifier, 100 tokens",
        64,
        (),
        "predict",
    ),
    "encoder": (
        "2 x (MultiHeadAttention(4, 64), exact-gelu MLP 1024), 128 x 256",
        8,
        (),
        "predict",
    ),
    "bert": ("keras-hub BertBackbone, 4 layers, hidden 256, 128 tokens", 8, ("128",), "predict"),
    "gpt2": ("keras-hub GPT2Backbone, 4 layers, hidden 256, 128 tokens", 8, ("128",), "predict"),
    "mobilenet": ("keras.applications MobileNetV3Small, 224 x 224", 8, (), "predict"),
    "efficientnet": ("keras.applications EfficientNetB0, 224 x 224", 4, (), "predict"),
    "resnet50": ("keras.applications ResNet50, 224 x 224", 4, (), "predict"),
    "gru-train": ("the GRU classifier's training step (Adam)", 256, (), "train"),
    "mobilenet-train": ("MobileNetV3Small's training step (Adam)", 8, (), "train"),
}

BUILD = """
import sys
import keras

name, path = sys.argv[1], sys.argv[2]
keras.utils.set_random_seed(0)
layers = keras.layers
if name in ("gru", "gru-train"):
    model = keras.Sequential([keras.Input((50, 32)), layers.GRU(128), layers.Dense(2)])
elif name == "lstm":
    model = keras.Sequential([
        keras.Input((100,), dtype="int32"), layers.Embedding(20000, 64), layers.LSTM(128),
        layers.Dense(1, activation="sigmoid"),
    ])
elif name == "encoder":
    inputs = keras.Input((128, 256))
    x = inputs
    for _ in range(2):
        x = layers.LayerNormalization()(x + layers.MultiHeadAttention(num_heads=4, key_dim=64)(x, x))
        h = layers.Dense(1024, activation="gelu")(x)  # Keras' gelu: the exact (erf) form
        x = layers.LayerNormalization()(x + layers.Dense(256)(h))
    model = keras.Model(inputs, x)
elif name in ("mobilenet", "mobilenet-train"):
    model = keras.applications.MobileNetV3Small(weights=None, input_shape=(224, 224, 3))
elif name == "efficientnet":
    model = keras.applications.EfficientNetB0(weights=None)
elif name == "resnet50":
    model = keras.applications.ResNet50(weights=None)
elif name in ("bert", "gpt2"):
    import keras_hub

    size = dict(num_layers=4, num_heads=4, hidden_dim=256, intermediate_dim=1024,
                max_sequence_length=128)
    if name == "bert":
        model = keras_hub.models.BertBackbone(vocabulary_size=30522, **size)
    else:
        model = keras_hub.models.GPT2Backbone(vocabulary_size=50257, **size)
else:
    raise SystemExit(f"no model {name}")
model.save(path)
print(model.count_params())
"""


def say(line: str) -> None:
    print(f"[bench] {line}", file=sys.stderr, flush=True)


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, text=True, capture_output=True, check=False, **kwargs)


def reference_python(cache: Path) -> str:
    """The reference environment's interpreter: made once (stock tensorflow-cpu, keras-hub
    without its dependencies), reused after; its framework checked to be tensorflow-cpu's."""
    venv = cache / f"reference-tf{TF}"
    python = venv / "bin" / "python"
    if not (venv / ".ready").is_file():
        say(f"making the reference environment {venv} (tensorflow-cpu {TF}, keras-hub)")
        shutil.rmtree(venv, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "-q", f"tensorflow-cpu=={TF}"],
            [str(python), "-m", "pip", "install", "-q", "--no-deps", *KERAS_HUB],
            [str(python), "-m", "pip", "install", "-q", *KERAS_HUB_DEPS],
        ]
        for argv in steps:
            done = run(argv)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
        (venv / ".ready").write_text("ok\n")
    return str(python)


def check_framework(python: str) -> None:
    found = run([python, "-c", "import tensorflow as tf, os; print(os.path.dirname(tf.__file__))"])
    framework = Path(found.stdout.strip()) / "libtensorflow_framework.so.2"
    size = framework.stat().st_size
    if size != CPU_FRAMEWORK_BYTES:
        raise SystemExit(
            f"{framework} is {size:,} bytes, not tensorflow-cpu {TF}'s {CPU_FRAMEWORK_BYTES:,}: "
            "another TensorFlow was installed over it (tensorflow-text?)"
        )


def build_overlay(python: str, compiler: str, out: Path) -> str:
    say(f"building the overlay for this CPU against {python}'s TensorFlow, with {compiler}")
    done = run(
        [sys.executable, "-m", "tfbuild", "overlay", "--installed", "--python", python,
         "--compiler", compiler, "--dist", str(out), "--json"],
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"tfbuild overlay failed: {done.stderr.strip()[-800:]}")
    receipt = json.loads(done.stdout)
    return str(out / receipt["wheel"]["name"])


def tune(
    python: str, model: Path, name: str, *, overlay: str, budget: str, work: Path
) -> dict[str, Any]:
    _, batch, inputs, step = MODELS[name]
    argv = [
        sys.executable, "-m", "tfbuild", "tune", "--installed", "--python", python,
        "--model", str(model), "--model-batch", str(batch), "--model-step", step,
        "--overlay-wheel", overlay, "--budget", budget, "--env-file", str(work / f"{name}.env"),
        "--json",
    ]  # fmt: skip
    for value in inputs:
        argv += ["--model-input", value]
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    done = run(argv)
    took = time.monotonic() - started
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:], "seconds": took}
    data: dict[str, Any] = json.loads(done.stdout)
    data["bench"] = {
        "wall_seconds": round(took, 1),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    return data


def ratio(row: dict[str, Any] | None) -> str:
    """A lever's ratio and interval, and its answer when it is not a plain win or loss."""
    if row is None:
        return "-"
    if row["ratio"] is None:
        return "failed"
    low, high = row["interval"]
    found = f"{row['ratio']:.2f}x [{low:.2f}, {high:.2f}]"
    if row["outcome"] == "undecided" and row.get("why") and "not claimed" in row["why"]:
        return found + " not claimed"
    return found if row["outcome"] in ("wins", "loses") else f"{found} {row['outcome']}"


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| model | stock step | overlay | XLA | XLA auto | 1 thread | tune kept | a rebuild's share | "
        "tune took | machine |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, data in results.items():
        if "error" in data:
            lines.append(f"| {name} | error: {' '.join(data['error'])} | | | | | | | | |")
            continue
        rows = {r["name"]: r for r in data["levers"]}
        kept = data["kept"]
        shown = (
            f"{kept['name']}: {kept['ratio']:.2f}x [{kept['interval'][0]:.2f}, "
            f"{kept['interval'][1]:.2f}]"
            if kept
            else "stock's defaults"
        )
        machine = data["machine"] or {}
        bench = data["bench"]
        load = f"load {bench['load_before']:.1f}->{bench['load_after']:.1f}"
        others = machine.get("others_busy")
        if others is not None:
            load += f", others {others:.2f} cores"
        stock = data["stock_seconds"]
        rebuild = data["rebuild"] or {}
        most = rebuild.get("bound")
        share = f"{rebuild['share'] * 100:.1f}% (at most {most:.3f}x)" if most is not None else "-"
        lines.append(
            f"| {name} (batch {data['model']['batch']}) | {stock * 1e3:.3g} ms | "
            f"{ratio(rows.get('overlay'))} | {ratio(rows.get('XLA'))} | "
            f"{ratio(rows.get('XLA auto'))} | {ratio(rows.get('1 thread'))} | {shown} | "
            f"{share} | {bench['wall_seconds']:.0f} s | {load} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--budget", default="600", help="tune's --budget for each model")
    parser.add_argument("--python", help="a reference interpreter (default: made and cached)")
    parser.add_argument("--overlay", help="an overlay wheel for it (default: built here)")
    parser.add_argument("--compiler", default="clang++-16", help="for the overlay built here")
    parser.add_argument("--json", type=Path, help="write every tune's answer here")
    args = parser.parse_args()
    names = [m for m in args.models.split(",") if m]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tfbuild"
    python = args.python or reference_python(cache)
    check_framework(python)
    with tempfile.TemporaryDirectory(prefix="tfbuild-model-levers-") as scratch:
        work = Path(scratch)
        overlay = args.overlay or build_overlay(python, args.compiler, work / "dist")
        results: dict[str, dict[str, Any]] = {}
        for name in names:
            path = work / f"{name}.keras"
            built = run([python, "-c", BUILD, name, str(path)])
            if built.returncode != 0:
                results[name] = {"error": built.stderr.strip().splitlines()[-1:]}
                continue
            say(f"{name}: {MODELS[name][0]}, {int(built.stdout.split()[-1]):,} parameters; tuning")
            results[name] = tune(python, path, name, overlay=overlay, budget=args.budget, work=work)
            say(f"{name}: {results[name].get('headline') or results[name].get('error')}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"tfbuild tune --model on {len(names)} reference models ({os.cpu_count()} CPUs)")
    print("\n".join(table(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
