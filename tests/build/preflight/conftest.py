"""The real-engine fixtures of tests/docker (the engine; CI fails, never skips, without one)."""

from tests.docker.conftest import base_image, engine

__all__ = ["base_image", "engine"]
