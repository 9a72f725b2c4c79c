"""Real models of a user's, made once a session by the stock TensorFlow and its Keras (3.15): every
form ``tune --model`` and ``smoke OVERLAY --model`` must take, and a few they must refuse. The
fixture is registered in tests/conftest.py, so that tests/measure and tests/overlay share the one
set."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

#: The Python file of the subclassed model's class: what --model-code imports before it loads.
SUBCLASS_CODE = """
import keras


@keras.saving.register_keras_serializable(package="mine")
class Scaled(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(4)

    def call(self, x):
        return self.dense(x) * 2.0
"""

MAKE_MODELS = """
import sys
import keras
import numpy as np
import tensorflow as tf

out = sys.argv[1]
keras.utils.set_random_seed(0)
layers = keras.layers

# a small functional model, as .keras and as a SavedModel
inputs = keras.Input(shape=(16,), name="features")
model = keras.Model(inputs, layers.Dense(4)(layers.Dense(8, activation="relu")(inputs)))
model.save(out + "/tiny.keras")
model.export(out + "/tiny_saved")

# issue 41: the Sequential a new user saves, and the same built with build() instead
gru = keras.Sequential([keras.Input((40, 24)), layers.GRU(96), layers.Dense(4, activation="softmax")])
gru.save(out + "/gru_input.keras")
built = keras.Sequential([layers.GRU(96), layers.Dense(4, activation="softmax")])
built.build((None, 40, 24))
built.save(out + "/gru_built.keras")
# a Sequential of token ids: int32 from keras.Input, and float from build()
ids = keras.Sequential(
    [keras.Input((20,), dtype="int32"), layers.Embedding(50, 8), layers.GRU(8), layers.Dense(2)]
)
ids.save(out + "/embedding.keras")
ids_built = keras.Sequential([layers.Embedding(50, 8), layers.GRU(8), layers.Dense(2)])
ids_built.build((None, 20))
ids_built.save(out + "/embedding_built.keras")
# a dict of inputs: token ids, segment ids (a vocabulary of 2), features
tokens = keras.Input((10,), dtype="int32", name="ids")
segment = keras.Input((10,), dtype="int32", name="segment")
features = keras.Input((4,), name="features")
mixed = layers.Embedding(50, 8)(tokens) + layers.Embedding(2, 8)(segment)
pooled = layers.Concatenate()([layers.GlobalAveragePooling1D()(mixed), features])
keras.Model({"ids": tokens, "segment": segment, "features": features}, layers.Dense(1)(pooled)).save(
    out + "/dict_inputs.keras"
)
# a width left open: needs --model-input
sequence = keras.Input((None, 3), name="points")
keras.Model(sequence, layers.Dense(2)(layers.GlobalAveragePooling1D()(sequence))).save(
    out + "/open.keras"
)
# a subclassed model, built by a call before it was saved; its class in a file of its own
sys.path.insert(0, out)
from scaled import Scaled

scaled = Scaled()
scaled(np.zeros((1, 8), "float32"))
scaled.save(out + "/subclassed.keras")

# refused: a Lambda layer, an open width in a SavedModel, a call that raises on the batch
doubled = keras.Sequential([keras.Input(shape=(4,)), layers.Lambda(lambda x: x * 2)])
doubled.save(out + "/lambda.keras")


class Open(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def double(self, x):
        return {"y": x * 2}


module = Open()
tf.saved_model.save(module, out + "/open_dims", signatures={"serving_default": module.double})


class Picky(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def positive(self, x):
        tf.debugging.assert_positive(x, message="only positive inputs")
        return {"y": x}


module = Picky()
tf.saved_model.save(module, out + "/picky", signatures={"serving_default": module.positive})
"""


@pytest.fixture(scope="session")
def user_models(stock_python: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The models, in one directory; ``scaled.py`` beside them defines the subclassed one's class."""
    out = tmp_path_factory.mktemp("user-models")
    (out / "scaled.py").write_text(SUBCLASS_CODE)
    done = subprocess.run(
        [stock_python, "-c", MAKE_MODELS, str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out
