"""`forge artifacts|receipts`: what a run published, and the receipts of a step's files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from schemas.error_codes import ErrorCode
from schemas.scope_ids import DEFAULT_TENANT
from workers.cli.common import TenantOption, fail, masked, out, scope_of, settings

if TYPE_CHECKING:
    from activities.store.events import EventStore


def artifacts_cmd(
    words: Annotated[list[str], typer.Argument(metavar="RUN | get RUN PATH")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Where to write.")] = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """`forge artifacts RUN` lists published outputs; `forge artifacts get RUN PATH -o FILE`."""
    from activities.store.artifacts import open_artifact_store
    from activities.store.errors import StoreError
    from activities.store.events import open_event_store

    scope = scope_of(tenant)  # the run must be this tenant's; bytes come from its store only
    s = settings()
    events = open_event_store(s.database_url)
    if words[0] == "get":
        if len(words) != 3 or output is None:
            fail("usage: forge artifacts get RUN PATH -o FILE", code=ErrorCode.USAGE_INVALID)
        _, run_id, path = words
        _tenants_run(events, run_id, scope.tenant)
        latest = events.latest(run_id, path, tenant_id=scope.tenant)
        if latest is None:
            fail(
                f"{run_id} published nothing at {path}",
                f"see `forge artifacts {run_id}`",
                code=ErrorCode.NOT_FOUND,
            )
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            open_artifact_store(s.artifacts_url, s3_endpoint=s.s3_endpoint).get_to_file(
                scope, latest.sha256, output
            )
        except StoreError as exc:  # the blob is missing or corrupt in the store: its own code
            fail(f"cannot write {output}: {exc}", code=exc.code)
        except OSError as exc:
            fail(f"cannot write {output}: {exc}", code=ErrorCode.FILE_UNUSABLE)
        out.print(f"[green]✓[/] {path} (v{latest.version}, {latest.size_bytes:,} bytes) → {output}")
        return
    if len(words) != 1:
        fail(
            "usage: forge artifacts RUN, or forge artifacts get RUN PATH -o FILE",
            code=ErrorCode.USAGE_INVALID,
        )
    _tenants_run(events, words[0], scope.tenant)
    published = events.list_published(words[0], tenant_id=scope.tenant)
    if not published:
        fail(f"run {words[0]!r} has published no artifacts", code=ErrorCode.NOT_FOUND)
    table = Table(title=f"artifacts of {words[0]}", title_justify="left")
    for col in ("path", "version", "size", "sha256", "step", "contract"):
        table.add_column(col, overflow="fold")
    for p in published:
        table.add_row(
            p.path,
            str(p.version),
            f"{p.size_bytes:,}",
            p.sha256[7:19],
            p.step_key,
            p.contract_hash[7:19],
        )
    out.print(table)


def _tenants_run(events: EventStore, run_id: str, tenant: str) -> None:
    """Exit 2 unless `run_id` is a run of `tenant` (another tenant's run is not found either)."""
    from schemas.event_ids import stream_id

    started = events.read_stream(stream_id(run_id, "run"), tenant_id=tenant)
    if not started or started[0].scope.tenant != tenant:
        fail(
            f"no run {run_id!r} for tenant {tenant!r}",
            "check the run id with `forge runs`, and pass --tenant with the run's tenant",
            code=ErrorCode.NOT_FOUND,
        )


def receipts_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    step_key: Annotated[str, typer.Argument(metavar="STEP")],
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """The preflight and postflight receipts of a step: hashes, parse checks, schema summaries."""
    from activities.store.artifacts import open_artifact_store
    from activities.store.errors import StoreError
    from activities.store.events import open_event_store
    from schemas.event_catalogue import STEP_RECEIPT_POSTFLIGHT, STEP_RECEIPT_PREFLIGHT
    from schemas.event_ids import stream_id
    from schemas.receipts import Receipt

    scope = scope_of(tenant)
    s = settings()
    events = open_event_store(s.database_url)
    _tenants_run(events, run_id, scope.tenant)
    store = open_artifact_store(s.artifacts_url, s3_endpoint=s.s3_endpoint)
    found = [
        e
        for e in events.read_stream(stream_id(run_id, "step", step_key), tenant_id=scope.tenant)
        if e.type in (STEP_RECEIPT_PREFLIGHT, STEP_RECEIPT_POSTFLIGHT)
    ]
    if not found:
        fail(
            f"no receipts for step {step_key!r} of run {run_id!r}",
            f"check the step key with `forge status {run_id}`",
            code=ErrorCode.NOT_FOUND,
        )
    for event in found:
        ref = event.payload["receipt_ref"]
        try:
            raw = store.read_bytes(scope, ref["sha256"], 16 * 1024 * 1024)
        except StoreError as exc:
            fail(
                f"the {event.type} receipt of {step_key} is not in the artifact store: {exc}",
                "check FORGE_ARTIFACTS_URL points at the store this run used",
                code=exc.code,
            )
        receipt = Receipt.model_validate_json(raw)
        table = Table(
            title=f"{receipt.phase} · attempt {event.payload.get('attempt', '?')}"
            f" · {receipt.step_key} · {receipt.contract_hash[:19]}…",
            title_justify="left",
        )
        for col in ("path", "exists", "size", "sha256", "parse", "summary", "placeholders"):
            table.add_column(col, overflow="fold")
        for f in receipt.files:
            parse = (
                "ok"
                if f.parse_validation and f.parse_validation.ok
                else (f.parse_validation.error if f.parse_validation else "-")
            )
            # Receipts stored before they were masked are masked here (each finding noted).
            table.add_row(
                masked(f.path),
                "yes" if f.exists else "[red]no[/]",
                f"{f.size_bytes:,}" if f.size_bytes is not None else "-",
                (f.sha256 or "-")[7:19],
                masked(str(parse)),
                masked(_summary(f.schema_summary)),
                ", ".join(f.placeholder_sentinels) or "-",
            )
        out.print(table)


def _summary(summary: dict[str, Any]) -> str:
    if "columns" in summary:
        cols = ", ".join(f"{c['name']}:{c['type']}" for c in summary["columns"][:8])
        return f"{summary.get('row_count', '?')} rows; {cols}"
    return ", ".join(f"{k}={v}" for k, v in list(summary.items())[:4])
