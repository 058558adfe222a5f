"""`forge tenants update|show`: a tenant's quotas and the input locations its runs may read."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.common import fail, one_line_errors, out, settings

if TYPE_CHECKING:
    from schemas.quota import QuotaUsage
    from schemas.tenant_settings import TenantSettings

__all__ = ["tenants_show", "tenants_update"]

_UNLIMITED = ("unlimited", "none")
TenantArg = Annotated[str, typer.Argument(metavar="TENANT")]


def _limit(option: str, raw: str | None) -> object:
    """A quota option's value: a whole number, `unlimited`, or (not given) unchanged."""
    from activities.store.tenant_settings import KEEP

    if raw is None:
        return KEEP
    if raw.lower() in _UNLIMITED:
        return None
    if not raw.isdigit():
        fail(
            f"{option} {raw!r}: give a whole number (0 or more) or 'unlimited'",
            code=ErrorCode.USAGE_INVALID,
        )
    return int(raw)


def _known(tenant: str) -> None:
    from activities.store.access import open_access_store
    from schemas.scope_ids import DEFAULT_TENANT

    if tenant != DEFAULT_TENANT:
        with open_access_store(settings().database_url) as access:
            access.tenant(tenant)


def _show(s: TenantSettings, usage: QuotaUsage | None = None) -> None:
    from schemas.scope_ids import DEFAULT_TENANT

    table = Table(title=f"tenant {s.tenant_id}", title_justify="left", show_header=False)
    table.add_column("setting")
    table.add_column("value")
    table.add_row("concurrent runs", _quota(s.max_concurrent_runs))
    table.add_row("tokens per day (UTC)", _quota(s.max_tokens_per_day))
    deployment = s.tenant_id == DEFAULT_TENANT  # the default tenant also reads FORGE_INPUT_*
    table.add_row("input roots", _listed(s.input_roots, "FORGE_INPUT_ROOTS" if deployment else ""))
    table.add_row(
        "input buckets", _listed(s.input_buckets, "FORGE_INPUT_BUCKETS" if deployment else "")
    )
    if usage is not None and (usage.max_concurrent_runs, usage.max_tokens_per_day) != (None, None):
        table.add_row("runs not ended", f"{len(usage.live_runs)}")
        table.add_row(
            "tokens today",
            f"{usage.tokens_today:,} (resets {usage.resets_at:%Y-%m-%d %H:%M:%S} UTC)",
        )
    if s.updated_at is not None:
        table.add_row("updated", f"{s.updated_at:%Y-%m-%d %H:%M:%S} UTC by {s.updated_by}")
    out.print(table)


def _listed(own: tuple[str, ...], deployment: str) -> str:
    lines = [*own, *([f"+ {deployment}"] if deployment else [])]
    return "\n".join(lines) or "none"


def _quota(value: int | None) -> str:
    return "unlimited" if value is None else f"{value:,}"


@one_line_errors
def tenants_update(
    tenant: TenantArg,
    max_runs: Annotated[
        str | None,
        typer.Option("--max-runs", help="runs at once, started or waiting (N or 'unlimited')"),
    ] = None,
    max_tokens: Annotated[
        str | None,
        typer.Option("--max-tokens-per-day", help="model tokens per UTC day (N or 'unlimited')"),
    ] = None,
    add_root: Annotated[
        list[Path] | None,
        typer.Option("--add-input-root", help="a local directory its runs may read (repeatable)"),
    ] = None,
    remove_root: Annotated[
        list[Path] | None, typer.Option("--remove-input-root", help="stop reading a directory")
    ] = None,
    add_bucket: Annotated[
        list[str] | None,
        typer.Option("--add-input-bucket", help="BUCKET or BUCKET/PREFIX/ of S3 (repeatable)"),
    ] = None,
    remove_bucket: Annotated[
        list[str] | None, typer.Option("--remove-input-bucket", help="stop reading a location")
    ] = None,
) -> None:
    """Set a tenant's quotas and readable input locations; shows the result."""
    from activities.store.tenant_settings import SettingsChange, open_tenant_settings

    change = SettingsChange(
        max_concurrent_runs=_limit("--max-runs", max_runs),
        max_tokens_per_day=_limit("--max-tokens-per-day", max_tokens),
        add_roots=tuple(str(p.expanduser().resolve()) for p in add_root or ()),
        remove_roots=tuple(str(p.expanduser().resolve()) for p in remove_root or ()),
        add_buckets=tuple(add_bucket or ()),
        remove_buckets=tuple(remove_bucket or ()),
    )
    if change == SettingsChange():
        fail(
            "nothing to update",
            "give --max-runs, --max-tokens-per-day, --add-input-root or --add-input-bucket "
            "(see `forge tenants update --help`)",
            code=ErrorCode.USAGE_INVALID,
        )
    _known(tenant)
    with open_tenant_settings(settings().database_url) as store:
        updated = store.update(tenant, change, actor="cli")
    out.print(f"[green]✓[/] tenant [bold]{tenant}[/] updated")
    _show(updated)


@one_line_errors
def tenants_show(tenant: TenantArg) -> None:
    """A tenant's quotas (and what it uses of them) and input locations."""
    from activities.store.admissions import open_admissions
    from activities.store.tenant_settings import open_tenant_settings

    _known(tenant)
    url = settings().database_url
    with open_tenant_settings(url) as store, open_admissions(url) as admissions:
        _show(store.get(tenant), admissions.usage(tenant, datetime.now(UTC)))
