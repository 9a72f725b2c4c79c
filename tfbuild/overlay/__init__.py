"""``tfbuild overlay``: the gain of a rebuild in minutes, without one.

TensorFlow's own element-wise CPU kernels (exp, tanh, sigmoid, erf, softmax, the mixed-precision
casts, ...) compiled for a target against the stock wheel's headers, registered above the stock
kernels, and shipped as a wheel that installs a loader into ``site-packages/tensorflow-plugins/``
beside stock TensorFlow. ``build`` makes it, ``check`` compares it with stock numerically, ``prove``
times it against stock on real TensorFlow.
"""
