"""Receipts with credentials masked before they are stored, shown or packed into a prompt.

A receipt repeats what it read in a file: a JSON document's top-level keys, a table's header
cells (a headerless CSV's first data row), an HTML title, a parse error quoting a key. That is
the user's data, and a credential in it is masked like anywhere else Forge writes
(`compiler/ladder/secrets/mask.py`), each masking a guard.masked.v1 event naming the receipt's
event. Paths, sizes, sha256 digests, verdicts and placeholder names are the platform's own and
are never touched: the checks compare those (required inputs by path, inputs unchanged by the
digest of their bytes, outputs by existence, size, verdict and placeholders), so a masked
receipt verifies exactly as the unmasked one would.
"""

from collections.abc import Sequence
from typing import Any, cast

from activities.store.events import EventStore
from activities.store.masking import guard_draft
from compiler.ladder.detectors import placeholder
from compiler.ladder.secrets.mask import Masked, mask_text, mask_value
from schemas.event_ids import guard_stream
from schemas.events import EventDraft
from schemas.receipts import FileReceipt, Receipt

__all__ = ["mask_receipt", "record_receipt_masking"]

# Header cells are masked as one line, so a credential found by its neighbour (an AWS secret
# access key next to its key id) is found in a table's header row too.
_CELL_SEPARATOR = "\t"


def mask_receipt(receipt: Receipt, prefix: str = "/receipt") -> tuple[Receipt, list[Masked]]:
    """`receipt` with the credentials in what it read from its files masked, and the findings.

    Each finding's path is a JSON pointer into the receipt under `prefix`. Returns the receipt
    itself when nothing was found.
    """
    found: list[Masked] = []
    files = [_masked_file(f, f"{prefix}/files/{i}", found) for i, f in enumerate(receipt.files)]
    if not found:
        return receipt, []
    return receipt.model_copy(update={"files": files}), found


def record_receipt_masking(
    events: EventStore, stream_id: str, draft: EventDraft, found: Sequence[Masked]
) -> None:
    """The guard.masked.v1 event for the receipt that `draft` (its receipt event) names.

    Written at once in the tenant's guard stream, as the model gateway writes its findings;
    its id is derived from the receipt event's, so a retried write is the same event.
    """
    if not found:
        return
    guard = guard_draft(
        draft.event_id,
        draft.type,
        stream_id,
        list(found),
        scope=draft.scope,
        run_id=draft.run_id,
        session_id=draft.session_id,
        caused_by=draft.event_id,
        timestamp=draft.timestamp,
        seed=f"{draft.event_id}:receipt",
    )
    events.append([guard], stream_id=guard_stream(draft.scope.tenant))


def masked_summary(
    summary: dict[str, Any], where: str = "", found: list[Masked] | None = None
) -> dict[str, Any]:
    """A schema summary as a receipt stores it: column names and every string masked.

    A capsule compares a new input's summary with its source run's receipt, so it masks the new
    one this way first (activities/capsules/prepare_run.py).
    """
    sink: list[Masked] = [] if found is None else found
    header = _masked_header(summary, where, sink)
    masked, hits = mask_value(header, where)
    sink += hits
    return cast(dict[str, Any], masked)  # mask_value keeps a dict a dict


def _masked_file(f: FileReceipt, where: str, found: list[Masked]) -> FileReceipt:
    update: dict[str, Any] = {}
    summary = masked_summary(f.schema_summary, f"{where}/schema_summary", found)
    if summary is not f.schema_summary:
        update["schema_summary"] = summary
    check = f.parse_validation
    if check is not None and check.error:
        error, hits = mask_text(check.error, None, f"{where}/parse_validation/error")
        if hits:
            found += hits
            update["parse_validation"] = check.model_copy(update={"error": error})
    return f.model_copy(update=update) if update else f


def _masked_header(summary: dict[str, Any], where: str, found: list[Masked]) -> dict[str, Any]:
    """The summary with its column names masked as one header line (and its keys renamed)."""
    columns = summary.get("columns")
    if not isinstance(columns, list) or not columns:
        return summary
    names = [str(c.get("name", "")) if isinstance(c, dict) else "" for c in columns]
    line, hits = mask_text(_CELL_SEPARATOR.join(names), None, f"{where}/columns")
    if not hits:
        return summary
    found += hits
    cells = line.split(_CELL_SEPARATOR)
    if len(cells) != len(names):
        # A finding spanned two cells (or a cell held the separator): which cell held which
        # part is unknown, so none of the row's cells is kept.
        cells = [placeholder(hits[0].detector)] * len(names)
    renamed = {old: new for old, new in zip(names, cells, strict=True) if old != new}
    out = {
        **summary,
        "columns": [
            {**c, "name": renamed.get(n, n)} if isinstance(c, dict) else c
            for c, n in zip(columns, names, strict=True)
        ],
    }
    keys = summary.get("candidate_keys")
    if isinstance(keys, list):
        out["candidate_keys"] = [
            [renamed.get(str(n), n) for n in key] if isinstance(key, list) else key for key in keys
        ]
    return out
