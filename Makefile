# Forge: `make demo` runs the main job on the embedded default; `make test` passes the tests.
# Everything installs from committed locks only: uv at a pinned version with its hashes
# (deploy/uv-requirements.txt), the project and its dev tools from uv.lock, the step runtime
# from activities/sandbox/runtime/requirements.lock. Each install step is a no-op when current.

PYTHON  ?= python3
TOOLS   := .tools
UV      := $(TOOLS)/bin/uv
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PY      := $(BIN)/python
FORGE   := $(BIN)/forge
# The worker looks for the step runtime here (activities/sandbox/step_runtime.py: RUNTIME_DIR).
RUNTIME := /opt/forge/runtime
# pytest workers: the suite waits on servers and sandboxes far more than it computes.
TEST_WORKERS ?= 4

# Only the package registries are reachable: uv must never try to fetch a Python build.
export UV_PYTHON_DOWNLOADS := never

.PHONY: demo test fuzz bench lint format venv runtime lock upgrade-check clean system-deps pin-images

venv: $(STAMP)

# Step code runs inside bubblewrap (DESIGN.md §5) on Debian's Python 3.11 (the sealed step
# runtime), the store tests start a real PostgreSQL server (and PgBouncer in front of it) and
# the API's docs page is checked in Debian's headless Chromium; install what is missing once
# (as root), stay silent when everything is present.
CC ?= gcc
SYSTEM_PACKAGES := $(if $(shell command -v bwrap),,bubblewrap) \
                   $(if $(shell command -v $(CC)),,gcc libc6-dev) \
                   $(if $(wildcard /usr/bin/python3.11),,python3.11) \
                   $(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql) \
                   $(if $(wildcard /usr/sbin/pgbouncer),,pgbouncer) \
                   $(if $(shell command -v chromium),,chromium)

system-deps:
	@if [ -n "$(strip $(SYSTEM_PACKAGES))" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing $(strip $(SYSTEM_PACKAGES)) ..."; \
	    apt-get update -qq && apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null; \
	  else \
	    echo "missing system packages: run \`sudo apt-get install $(strip $(SYSTEM_PACKAGES))\`" >&2; \
	    exit 1; \
	  fi; \
	fi

$(UV): deploy/uv-requirements.txt
	@test -x $(TOOLS)/bin/python || $(PYTHON) -m venv $(TOOLS)
	@$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
	    --require-hashes -r deploy/uv-requirements.txt
	@touch $(UV)
	@# Made by `sudo make runtime` on a fresh clone: give it back to the user who ran sudo.
	@if [ -n "$$SUDO_UID" ]; then chown -R "$$SUDO_UID:$$SUDO_GID" $(TOOLS); fi

LAUNCHER := $(BIN)/forge-sandbox-launcher

$(STAMP): uv.lock pyproject.toml activities/sandbox/launcher.c $(UV) | system-deps
	@echo "installing forge and its dev tools into $(VENV) from uv.lock ..."
	@$(UV) sync --locked --extra dev --python $(PYTHON) --quiet
	@# The native sandbox launcher (activities/sandbox/launcher.py is the fallback without it).
	@$(CC) -O2 -Wall -Wextra -Werror -o $(LAUNCHER) activities/sandbox/launcher.c
	@touch $(STAMP)

# The sealed step runtime (activities/sandbox/step_runtime.py): a no-op when it is current.
# It lives at a neutral root-owned path: a non-root user is told to run `sudo make runtime`.
# step_runtime.py imports only the standard library, so this needs no project venv (and
# `sudo make runtime` installs nothing into the checkout but uv itself).
runtime: $(UV) | system-deps
	@PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m activities.sandbox.step_runtime build \
	    --uv $(UV) --root $(RUNTIME)
	@# Steps run as this user when the worker is root (activities/sandbox/bwrap.py).
	@if [ "$$(id -u)" = 0 ] && ! id forge-sandbox >/dev/null 2>&1; then \
	  useradd --system --user-group --no-create-home --home-dir /nonexistent \
	    --shell /usr/sbin/nologin forge-sandbox; \
	fi

# The demo follows FORGE_HOME like every forge command (its default is .forge, as in forge);
# set in the environment or on the command line, make passes it on to forge itself.
FORGE_HOME ?= .forge
DEMO_DATA = $(FORGE_HOME)/demo/data

demo: $(STAMP) runtime
	@$(FORGE) dev up
	@$(PY) examples/billing-audit/generate.py $(DEMO_DATA) --seed 2
	@$(FORGE) run examples/billing-audit/frozen-plan.json \
	    --input time_entries=$(DEMO_DATA)/time_entries.csv \
	    --input rate_cards=$(DEMO_DATA)/rate_cards.csv \
	    --input contracts=$(DEMO_DATA)/contracts.json
	@$(PY) examples/billing-audit/summarize.py "$$(ls -dt $(FORGE_HOME)/outputs/run-* | head -1)" \
	    $(DEMO_DATA)/answer_key.json
	@echo "The embedded Temporal server keeps running; stop it with: $(FORGE) dev down"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy schemas compiler workers activities workflows

# openapi-python-client, a tool of its own (tests/api/test_generated_client.py generates a
# client from Forge's /openapi.json with it), installed from its hashed lock.
OAPC := $(TOOLS)/openapi-client/bin/openapi-python-client

$(OAPC): deploy/openapi-client-requirements.txt $(UV)
	@$(UV) venv --quiet --allow-existing --python $(PYTHON) $(TOOLS)/openapi-client
	@$(UV) pip install --quiet --python $(TOOLS)/openapi-client/bin/python --require-hashes \
	    -r deploy/openapi-client-requirements.txt
	@touch $(OAPC)

test: lint runtime $(OAPC)
	$(PY) -m pytest -q -n $(TEST_WORKERS)

# The API fuzzed deeper than `make test` does (tests/api/test_fuzz.py): schemathesis follows the
# OpenAPI links between operations (stateful) and tries many more examples of each, on SQLite
# and PostgreSQL, as an admin and as a viewer. FUZZ_EXAMPLES sets the examples per operation.
FUZZ_EXAMPLES ?= 150
fuzz: $(STAMP) runtime
	FORGE_FUZZ=deep FORGE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest tests/api/test_fuzz.py \
	    -q -n $(TEST_WORKERS) -p no:cacheprovider

# `make bench BENCH="harness" REPEAT=5`: chosen benchmarks, median of REPEAT runs each.
BENCH  ?=
REPEAT ?= 1
bench: $(STAMP) runtime
	$(PY) -m tests.bench $(BENCH) --repeat $(REPEAT)

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Re-resolve uv.lock from the ranges in pyproject.toml (keeping pins that still satisfy them;
# UPGRADE=1 moves everything to the newest allowed) and the step runtime's lock likewise.
RUNTIME_SPEC := activities/sandbox/runtime
lock: $(UV)
	$(UV) lock --python $(PYTHON) $(if $(UPGRADE),--upgrade)
	$(UV) pip compile $(RUNTIME_SPEC)/requirements.in --generate-hashes --universal \
	    --python-version 3.11 --no-header --quiet $(if $(UPGRADE),--upgrade) \
	    -o $(RUNTIME_SPEC)/requirements.lock

# Not part of `make test`: the newest allowed versions in a throw-away environment, with lint
# and the tests run there; reports what would change and what breaks. Changes nothing here.
upgrade-check: $(UV) runtime
	@$(PYTHON) tests/upgrade_check.py --uv $(UV) --python $(PYTHON) --workers $(TEST_WORKERS)

# The digest of every image docker-compose.yml runs, into deploy/images.lock (needs the
# registry; without it, one line and exit status 2, the lock file unchanged).
pin-images:
	@$(PYTHON) deploy/pin_images.py

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache .hypothesis bench-results.json
