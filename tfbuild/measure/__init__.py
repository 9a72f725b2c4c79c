"""Measuring: timing two things side by side until the difference is decided, and what is timed.

``smoke`` proves a wheel with it; ``forecast`` and ``tune`` are measurements of their own; the
overlay's proof runs on it too. Nothing here reads a plan or a build: a measurement takes the facts
it needs (a wheel, an interpreter, flags) as values. Its rooms, one job each: ARCHITECTURE.md.
"""
