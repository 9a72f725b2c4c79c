"""tfbuild: build TensorFlow wheels optimized for the machines they run on."""

__version__ = "0.1.0"
