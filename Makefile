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

# Step code runs inside bubblewrap (DESIGN.md §5); install it once, stay silent when present.
system-deps:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing bubblewrap (step sandbox) ..."; \
	    apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; \
	  else \
	    echo "bubblewrap is missing: run \`sudo apt-get install bubblewrap\`" >&2; exit 1; \
	  fi; }

$(STAMP): pyproject.toml | system-deps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing forge and its dev tools into $(VENV) ..."
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	@$(FORGE) dev up
	@$(FORGE) compile examples/billing-audit/plan.json --out .forge/demo
	@$(FORGE) dev status
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
