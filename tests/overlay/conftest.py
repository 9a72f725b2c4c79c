"""The overlay tests' real overlay: built once per session by the fixtures of tests/overlays.py
(registered in tests/conftest.py, which the index and pick tests share)."""

from __future__ import annotations

from tests.overlays import BuiltOverlay, request_for, unpack

__all__ = ["BuiltOverlay", "request_for", "unpack"]
