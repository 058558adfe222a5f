# Forge: `make demo` runs the main job on the embedded default; `make test` passes the tests.
# Every target creates or refreshes .venv first; that step is a no-op when nothing changed.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PY     := $(BIN)/python
FORGE  := $(BIN)/forge

.PHONY: demo test bench lint format venv clean system-deps

venv: $(STAMP)

# Step code runs inside bubblewrap (DESIGN.md §5) and the store tests start a real PostgreSQL
# server; install what is missing once (as root), stay silent when everything is present.
CC ?= gcc
SYSTEM_PACKAGES := $(if $(shell command -v bwrap),,bubblewrap) \
                   $(if $(shell command -v $(CC)),,gcc libc6-dev) \
                   $(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql)

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

LAUNCHER := $(BIN)/forge-sandbox-launcher

$(STAMP): pyproject.toml activities/sandbox/launcher.c | system-deps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing forge and its dev tools into $(VENV) ..."
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@# The native sandbox launcher (activities/sandbox/launcher.py is the fallback without it).
	@$(CC) -O2 -Wall -Wextra -Werror -o $(LAUNCHER) activities/sandbox/launcher.c
	@touch $(STAMP)

DEMO_DATA := .forge/demo/data

demo: $(STAMP)
	@$(FORGE) dev up
	@$(PY) examples/billing-audit/generate.py $(DEMO_DATA) --seed 2
	@$(FORGE) run examples/billing-audit/frozen-plan.json \
	    --input time_entries=$(DEMO_DATA)/time_entries.csv \
	    --input rate_cards=$(DEMO_DATA)/rate_cards.csv \
	    --input contracts=$(DEMO_DATA)/contracts.json
	@$(PY) examples/billing-audit/summarize.py "$$(ls -dt .forge/outputs/run-* | head -1)" \
	    $(DEMO_DATA)/answer_key.json
	@echo "The embedded Temporal server keeps running; stop it with: $(FORGE) dev down"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy schemas compiler workers activities workflows

test: lint
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) -m tests.bench

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis bench-results.json
