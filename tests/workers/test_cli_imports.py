"""Importing the `forge` CLI loads no model SDK, Temporal worker or SQLAlchemy (issue 34 §1)."""

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
#   a store (`sqlalchemy` is the package every SQLAlchemy import loads first).
HEAVY = ("anthropic", "temporalio.worker", "sqlalchemy", "sqlalchemy.engine")

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
