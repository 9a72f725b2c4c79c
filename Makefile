# `make test` is the one command that checks everything: lint, types and the whole test suite (CI).
# `make quick` is the edit-test loop: lint, types and every test but the Docker and slow ones.
# Both create their own virtual environment (.venv) and install tfbuild with its test tools.

PYTHON ?= python3
# pytest keeps each test module, its assertions rewritten, as bytecode in __pycache__ (ignored by
# git): collecting the suite then takes 3 s, not 9 (per xdist worker). An environment that turns
# bytecode off (PYTHONDONTWRITEBYTECODE) would make every run rewrite them again.
unexport PYTHONDONTWRITEBYTECODE
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.tfbuild-installed

.PHONY: test quick lint typecheck pytest detect bench golden base-image clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check tfbuild tests benchmarks
	$(BIN)/ruff format --check tfbuild tests benchmarks
	$(BIN)/lint-imports  # the one-way layers of pyproject.toml's [tool.importlinter]

typecheck: $(STAMP)
	$(BIN)/mypy

# Two processes (pytest-xdist): the real engine's tests in one, one at a time (their xdist group,
# tests/conftest.py), every other test in the other; the slowest are named at the end. The suite
# must stay under 15 minutes here (2 cores).
pytest: $(STAMP)
	$(BIN)/pytest -n 2 --dist loadgroup --durations=15

test: lint typecheck pytest

# The tests marked docker (a real engine, see tests/docker) or slow (more than a few seconds each:
# real TensorFlow runs, real bazel builds, big wheels, timings) are left out; `make test` runs them.
quick: $(STAMP) lint typecheck  # the tests in two processes (pytest-xdist): about 70 s on 2 cores (docs/development.md)
	$(BIN)/pytest -q -n 2 -m "not docker and not slow"

detect: $(STAMP)
	$(BIN)/tfbuild detect

bench: $(STAMP)
	$(BIN)/python benchmarks/detect_speed.py
	$(BIN)/python benchmarks/render_speed.py
	$(BIN)/python benchmarks/wheel_overhead.py

# The base images the real-engine tests use (debootstrap + docker import; needs root and an engine):
# bookworm to build on, bullseye to show what an older glibc does with a wheel, trixie to show what
# a build on a newer system needs, and that the portable route (a bookworm sysroot) takes it back.
base-image: $(STAMP)
	$(BIN)/tfbuild base --suite bookworm
	$(BIN)/tfbuild base --suite bullseye  # an older glibc (2.31), where a newer wheel must not load
	$(BIN)/tfbuild base --suite trixie    # a newer glibc (2.41), whose plain builds need 2.38

# Regenerate every golden file after an intended change (tests/golden/, tests/plan/golden_json/ and
# golden_render/, schemas/: each test that compares with one has "golden" or "schema" in its name or
# its module's, tests/goldens.py); review the diff before committing.
golden: $(STAMP)
	TFBUILD_UPDATE_GOLDEN=1 $(BIN)/pytest -q -k "golden or schema"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache dist build
