"""Receipts masked before they are stored or shown: JSON keys, CSV header cells, a headerless
CSV's first line, a parse error quoting a key; what the checks compare is never touched."""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activities.harness.receipts import build_receipt
from activities.harness.receipts_masking import mask_receipt, record_receipt_masking
from activities.store.events import open_event_store
from compiler.ladder.secrets.checksums import github_token
from schemas.event_catalogue import STEP_RECEIPT_POSTFLIGHT
from schemas.events import EventDraft
from schemas.guard import GUARD_MASKED
from schemas.receipts import Receipt
from schemas.scope import Scope

STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GITHUB = github_token("ghp", "Xq3v9LmT2pR7sK1wZ8yB4nC6dF0gH5")
AWS_ID = "AKIA" + "QYLPMN5HHHFPZAM2"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzq3vKEY9ab"
SECRETS = (STRIPE, GITHUB, AWS_ID, AWS_SECRET)


def _receipt(tmp_path: Path, files: dict[str, str], phase: str = "postflight") -> Receipt:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return build_receipt(
        tmp_path,
        [(rel, None) for rel in files],
        step_id="s",
        step_key="s",
        contract_hash="sha256:" + "0" * 64,
        phase=phase,  # type: ignore[arg-type]
    )


def _checked(receipt: Receipt) -> list[tuple[object, ...]]:
    """What verify_inputs, verify_outputs and check_undeclared_writes read of a receipt."""
    return [
        (
            f.path,
            f.exists,
            f.size_bytes,
            f.sha256,
            f.kind_key,
            f.parse_validation.ok if f.parse_validation else None,
            tuple(f.placeholder_sentinels),
        )
        for f in receipt.files
    ]


def _summary(receipt: Receipt) -> dict[str, Any]:
    return dict(receipt.files[0].schema_summary)


def _error(receipt: Receipt) -> str:
    check = receipt.files[0].parse_validation
    return (check.error if check else None) or ""


def _leaks(receipt: Receipt) -> list[str]:
    text = receipt.model_dump_json()
    return [s[:8] for s in SECRETS if s in text]


def test_json_keys_are_masked_and_the_checks_see_the_same_receipt(tmp_path: Path) -> None:
    doc = json.dumps({STRIPE: "billing", GITHUB: "ci-bot", "region": "eu"})
    receipt = _receipt(tmp_path, {"output/keys.json": doc})
    assert _leaks(receipt) == ["sk_live_", "ghp_Xq3v"]  # what a receipt held before
    masked, found = mask_receipt(receipt)
    assert _leaks(masked) == []
    summary = _summary(masked)
    assert summary["keys"] == [
        "[REDACTED:github_token]",
        "region",
        "[REDACTED:stripe-access-token]",
    ]
    assert set(summary["key_types"]) == {
        "[REDACTED:github_token]",
        "[REDACTED:stripe-access-token]",
        "region",
    }
    assert {(f.path, f.detector) for f in found} >= {
        ("/receipt/files/0/schema_summary/keys/0", "github_token"),
        ("/receipt/files/0/schema_summary/keys/2", "stripe-access-token"),
    }
    assert all(s not in f.masked for f in found for s in SECRETS)
    # Hashes are of the file's bytes and verdicts are the platform's: masking changes neither.
    assert _checked(masked) == _checked(receipt)


def test_csv_header_cells_are_masked_with_their_candidate_keys(tmp_path: Path) -> None:
    csv = f"id,{STRIPE},note\n1,a,x\n2,b,y\n"
    receipt = _receipt(tmp_path, {"input/t.csv": csv}, phase="preflight")
    masked, found = mask_receipt(receipt)
    summary = _summary(masked)
    names = [c["name"] for c in summary["columns"]]
    assert names == ["id", "[REDACTED:stripe-access-token]", "note"]
    assert ["[REDACTED:stripe-access-token]"] in summary["candidate_keys"]
    assert [f.path for f in found] == ["/receipt/files/0/schema_summary/columns"]
    assert _leaks(masked) == [] and _checked(masked) == _checked(receipt)


def test_a_headerless_csvs_first_line_loses_its_key_pair(tmp_path: Path) -> None:
    """`aws-prod,AKIA…,<secret>` read as a header: both halves of the pair are masked."""
    csv = f"aws-prod,{AWS_ID},{AWS_SECRET}\nci,AKIA{'B' * 16},{'c' * 40}\n"
    receipt = _receipt(tmp_path, {"input/creds.csv": csv}, phase="preflight")
    assert _leaks(receipt) == ["AKIAQYLP", "wJalrXUt"]
    masked, found = mask_receipt(receipt)
    names = [c["name"] for c in _summary(masked)["columns"]]
    assert names == ["aws-prod", "[REDACTED:aws_key]", "[REDACTED:aws_key]"]
    assert {f.detector for f in found} == {"aws_key", "aws_secret"}
    keys = _summary(masked)["candidate_keys"]
    assert all(AWS_ID not in k and AWS_SECRET not in k for k in keys)
    assert _leaks(masked) == [] and _checked(masked) == _checked(receipt)


def test_a_parse_error_quoting_a_key_is_masked(tmp_path: Path) -> None:
    rows = json.dumps([{STRIPE: {"nested": True}}])
    receipt = _receipt(tmp_path, {"output/r.rows.json": rows})
    assert STRIPE in _error(receipt)
    masked, found = mask_receipt(receipt)
    assert (
        _error(masked)
        == "row 1, key '[REDACTED:stripe-access-token]': nested object; rows are flat"
    )
    assert [f.path for f in found] == ["/receipt/files/0/parse_validation/error"]
    assert _checked(masked)[0][5] is False  # the verdict stands
    assert _checked(masked) == _checked(receipt)


def test_a_clean_receipt_is_returned_as_it_is(tmp_path: Path) -> None:
    receipt = _receipt(tmp_path, {"output/a.json": '{"customer_id": 1}', "input/b.csv": "id\n1\n"})
    masked, found = mask_receipt(receipt)
    assert masked is receipt and found == []


def test_each_masking_is_one_guard_event_naming_the_receipt_event(tmp_path: Path) -> None:
    receipt = _receipt(tmp_path / "ws", {"output/keys.json": json.dumps({STRIPE: 1})})
    _, found = mask_receipt(receipt)
    draft = EventDraft(
        event_id="run-1:step.receipt.postflight.v1:s:1",
        type=STEP_RECEIPT_POSTFLIGHT,
        scope=Scope.default(),
        run_id="run-1",
        caused_by="run-1:step.started.v1:s:1",
        timestamp=datetime.now(UTC),
        payload={},
    )
    with open_event_store(f"sqlite:///{tmp_path / 'forge.db'}") as events:
        record_receipt_masking(events, "run-1:step:s", draft, [])  # nothing masked: no event
        record_receipt_masking(events, "run-1:step:s", draft, found)
        record_receipt_masking(events, "run-1:step:s", draft, found)  # a retry: the same event
        [guard] = [e for e in events.list_events() if e.type == GUARD_MASKED]
    assert guard.stream_id == "guard:default" and guard.caused_by == draft.event_id
    assert guard.payload["event_id"] == draft.event_id
    assert guard.payload["event_type"] == STEP_RECEIPT_POSTFLIGHT
    # The key is in the summary twice: in `keys` and in `key_types`.
    assert [(f["path"], f["detector"]) for f in guard.payload["findings"]] == [
        ("/receipt/files/0/schema_summary/keys/0", "stripe-access-token"),
        ("/receipt/files/0/schema_summary/key_types", "stripe-access-token"),
    ]
    assert STRIPE not in json.dumps(guard.payload)
