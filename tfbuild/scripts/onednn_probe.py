"""A matmul and a convolution in the stock TensorFlow, for ``tfbuild forecast``'s oneDNN probe.

Run by tfbuild (``tfbuild/measure/forecast_onednn.py``) with ``ONEDNN_VERBOSE=1``: oneDNN prints
the ISA it detected and each primitive it ran, which tfbuild reads. Imports tensorflow only.
"""

import tensorflow as tf  # type: ignore[import-untyped]

a = tf.random.normal([512, 512])
tf.linalg.matmul(a, a)
x, k = tf.random.normal([1, 32, 32, 16]), tf.random.normal([3, 3, 16, 16])
tf.nn.conv2d(x, k, 1, "SAME")
