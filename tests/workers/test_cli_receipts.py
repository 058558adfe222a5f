"""`forge receipts` shows what a step's files held with their credentials masked, as stored.

A real run on the session's dev server: one step writes a JSON object keyed by credentials and a
headerless CSV whose first line is an AWS key pair, the next step reads that CSV. Receipts as
stored, as printed, and the run's events hold none of them; each masking is a guard event.
"""

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from activities.store.artifacts import open_artifact_store
from activities.store.events import open_event_store
from compiler.ladder.secrets.checksums import github_token
from schemas.guard import GUARD_MASKED
from schemas.scope import Scope
from tests.workflows.plans import code_step, plan, report_profile, write_json
from workers.settings import Settings

# Split so that neither the plan nor its events hold them: the step's program joins them.
STRIPE = ("sk_live_", "4eC39HqLyjWDarjtT1zdp7dc")
_TOKEN = github_token("ghp", "Xq3v9LmT2pR7sK1wZ8yB4nC6dF0gH5")
GITHUB = (_TOKEN[:4], _TOKEN[4:])
AWS_ID = ("AKIA", "QYLPMN5HHHFPZAM2")
AWS_SECRET = ("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYzq3vKEY9ab")
SECRETS = ["".join(parts) for parts in (STRIPE, GITHUB, AWS_ID, AWS_SECRET)]

WRITE = f"""
import json
stripe, github = {STRIPE[0]!r} + {STRIPE[1]!r}, {GITHUB[0]!r} + {GITHUB[1]!r}
key_id, secret = {AWS_ID[0]!r} + {AWS_ID[1]!r}, {AWS_SECRET[0]!r} + {AWS_SECRET[1]!r}
open("output/keys.json", "w").write(json.dumps({{stripe: "billing", github: "ci-bot"}}))
other = "ci,AKIA{"B" * 16},{"c" * 40}"
open("output/creds.csv", "w").write(f"aws-prod,{{key_id}},{{secret}}\\n{{other}}\\n")
"""


def _flat(output: str) -> str:
    """The printed tables without borders or whitespace: a cell folded over lines reads whole."""
    return re.sub(r"[\s│┃─━┏┓┗┛┡┩└┘├┤┼╇╈┬┴╷╵]", "", output)


def test_forge_receipts_prints_masks_and_the_store_holds_no_credential(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    doc = plan(
        code_step("w", WRITE, ["output/keys.json", "output/creds.csv"]),
        code_step(
            "r",
            write_json("output/n.json"),
            ["output/n.json"],
            depends_on=["w"],
            reads=["output/creds.csv"],
        ),
    )
    path = tmp_path / "creds.json"
    path.write_text(json.dumps(doc))
    # Report mode at step inputs and outputs: under the default profile the guard refuses
    # these files before any receipt lists them (docs/security.md).
    profiles = tmp_path / "home" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "guard-report.yaml").write_text(yaml.safe_dump(report_profile()))
    ran = cli("run", path, "--profile", "guard-report")
    assert ran.exit_code == 0, ran.output
    found = re.search(r"run-\d{8}-\d{6}-[0-9a-f]{6}", ran.output)
    assert found is not None, ran.output
    run_id = found.group(0)

    written = cli("receipts", run_id, "w")  # the postflight receipt of the JSON keys
    assert written.exit_code == 0, written.output
    shown = _flat(written.output)
    assert "[REDACTED:stripe-access-token]" in shown and "[REDACTED:github_token]" in shown
    read = cli("receipts", run_id, "r")  # the preflight receipt of the headerless CSV
    assert read.exit_code == 0, read.output
    shown += _flat(read.output)
    assert shown.count("[REDACTED:aws_key]") >= 2  # the key id and its secret
    assert [s[:8] for s in SECRETS if s in shown] == []

    settings = Settings.from_env()
    with open_event_store(settings.database_url) as events:
        log = events.list_events(limit=100_000)
    store = open_artifact_store(settings.artifacts_url)
    receipts = [
        store.read_bytes(Scope.default(), e.payload["receipt_ref"]["sha256"], 1 << 20).decode()
        for e in log
        if e.run_id == run_id and e.type.startswith("step.receipt.")
    ]
    assert len(receipts) == 4  # pre and post of both steps
    stored = "\n".join(receipts) + "\n".join(e.model_dump_json() for e in log)
    assert [s[:8] for s in SECRETS if s in stored] == []
    guards = [
        e for e in log if e.type == GUARD_MASKED and e.payload["event_type"].startswith("step.rec")
    ]
    detectors = {
        (e.payload["event_type"], f["detector"]) for e in guards for f in e.payload["findings"]
    }
    assert detectors == {
        ("step.receipt.postflight.v1", "stripe-access-token"),
        ("step.receipt.postflight.v1", "github_token"),
        ("step.receipt.postflight.v1", "aws_key"),
        ("step.receipt.postflight.v1", "aws_secret"),
        ("step.receipt.preflight.v1", "aws_key"),
        ("step.receipt.preflight.v1", "aws_secret"),
    }
    assert all(e.run_id == run_id and e.stream_id == "guard:default" for e in guards)
