"""Importing the `forge` CLI loads no model SDK, Temporal worker, SQLAlchemy or pydantic, and
`forge --help` renders without typer's rich help machinery (issue 34 §1)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Modules whose import costs seconds, or that only some verbs need, and so must load only
# inside the verb that uses them:
# - `anthropic`: the model SDK (over a second of CPU on its own), needed by `forge worker`/`run`;
# - `temporalio.worker`: the Temporal worker (and the workflow sandbox it pulls in), needed
#   only by the verbs that host a worker; `temporalio.client` alone is allowed;
# - `sqlalchemy` and `sqlalchemy.engine`: the store's engine, needed only by verbs that open
#   a store (`sqlalchemy` is the package every SQLAlchemy import loads first);
# - `pydantic` and `temporalio.client`: the models and the client, needed by the verbs that
#   read or start work, not by `--help` (option defaults come from pydantic-free modules:
#   schemas/scope_ids.py, schemas/webhook_events.py);
# - `asyncio`: only the verbs that run a coroutine load it (common.run_async).
HEAVY = (
    "anthropic",
    "temporalio.worker",
    "sqlalchemy",
    "sqlalchemy.engine",
    "pydantic",
    "temporalio.client",
    "asyncio",
)

_PROBE = (
    "import json, sys, workers.cli; "
    f"print(json.dumps(sorted(set({list(HEAVY)!r}) & set(sys.modules))))"
)


def test_importing_the_cli_loads_none_of_the_heavy_modules() -> None:
    """A fresh interpreter imports `workers.cli` and reports which of `HEAVY` it loaded.

    A fresh process, because this test session has long since imported all of them; `forge
    --help` and every verb pay this import first, so each verb imports what it needs when it
    runs. The probe checks `sys.modules` for exactly the names in `HEAVY`.
    """
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []


# `forge --help` through the console script's own entry point; what it loaded, printed at exit.
_HELP_PROBE = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: sys.stderr.write(json.dumps(sorted(sys.modules))))\n"
    "from workers.cli import main\n"
    "sys.argv = ['forge', '--help']\n"
    "main()\n"
)


def test_help_renders_without_typers_rich_help_or_any_model() -> None:
    """`typer.rich_utils` loads Markdown and traceback renderers (over 100 ms) on every help.

    The root app sets `rich_markup_mode=None`, so every group and verb shows click's plain help.
    """
    done = subprocess.run(
        [sys.executable, "-c", _HELP_PROBE], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stderr))
    assert "workers.cli" in loaded  # the probe saw the CLI load
    assert {"typer.rich_utils", "rich.markdown", "pydantic", *HEAVY} & loaded == set()
    assert "Commands:" in done.stdout


# What `forge status`, `forge runs` and `forge budget show` load to read a run.
_READ_PROBE = (
    "import json, sys\n"
    "import workers.cli.status, workers.services.run_reads, workers.process.devserver\n"
    "print(json.dumps(sorted(sys.modules)))\n"
)


def test_reading_a_run_loads_no_workflow_worker_or_store() -> None:
    """The read path connects without ForgePlugin: no workflows, no worker (issue 34 §1)."""
    done = subprocess.run(
        [sys.executable, "-c", _READ_PROBE], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(done.stdout))
    assert "temporalio.client" in loaded and "schemas.run" in loaded  # what reading needs
    heavy = {"workflows.run", "workers.plugin", "temporalio.worker", "anthropic", "sqlalchemy"}
    assert heavy & loaded == set()
