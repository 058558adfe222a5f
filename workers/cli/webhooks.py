"""`forge webhooks create|list|delete`: a tenant's webhooks, as its administrator on this machine.

The same store and checks as `/v1/webhooks`. The signing secret is printed once, at creation; it
derives from the server's key (workers/services/webhook_keys.py), so this command must see the same
FORGE_HOME or FORGE_WEBHOOK_SIGNING_KEY as the workers that deliver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.scope_ids import DEFAULT_TENANT
from schemas.webhook_events import WEBHOOK_EVENTS
from workers.cli.common import TenantOption, VerbGroup, one_line_errors, out, scope_of, settings

if TYPE_CHECKING:
    from activities.store.webhooks import WebhookStore

__all__ = ["webhooks_app"]

webhooks_app = typer.Typer(
    cls=VerbGroup,
    help="Webhooks of a tenant: gates opened and runs finished or failed, POSTed signed.",
)


def _store() -> WebhookStore:
    from activities.store.webhooks import open_webhook_store

    return open_webhook_store(settings().database_url)


@webhooks_app.command("create")
@one_line_errors
def webhooks_create(
    url: Annotated[str, typer.Argument(metavar="URL", help="http:// or https:// receiver")],
    events: Annotated[
        list[str] | None,
        typer.Option(
            "--event", metavar="TYPE", help=f"Repeatable; default all: {', '.join(WEBHOOK_EVENTS)}"
        ),
    ] = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Register a webhook; its signing secret is printed this once."""
    from activities.store.access import open_access_store
    from activities.webhooks.signing import webhook_secret
    from workers.services.access import authorize, local
    from workers.services.webhook_keys import server_signing_key

    scope = scope_of(tenant)
    who = local(scope.tenant)
    authorize(who, "webhooks.write")
    with open_access_store(settings().database_url) as access:
        access.tenant(scope.tenant)  # an unknown tenant is named, with how to create it
    with _store() as store:
        made = store.create(scope.tenant, url, events or list(WEBHOOK_EVENTS), who.actor)
    secret = webhook_secret(server_signing_key(settings()), made.webhook_id)
    out.print(f"[green]✓[/] webhook [bold]{made.webhook_id}[/] · tenant {made.tenant_id}")
    out.print(f"  POSTs {', '.join(made.events)} to {escape(made.url)}", soft_wrap=True)
    out.print(f"  signing secret (shown once; store it now): {secret}", soft_wrap=True)


@webhooks_app.command("list")
@one_line_errors
def webhooks_list(
    deleted: Annotated[bool, typer.Option("--deleted", help="Removed ones too.")] = False,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """The tenant's webhooks, newest first. Never a secret."""
    from workers.services.access import authorize, local

    scope = scope_of(tenant)
    authorize(local(scope.tenant), "webhooks.read")
    with _store() as store:
        hooks = store.webhooks(scope.tenant, deleted=deleted)
    table = Table(title=f"{len(hooks)} webhook(s) of {scope.tenant}", title_justify="left")
    for col in ("webhook", "url", "events", "created", "state"):
        table.add_column(col, overflow="fold")  # a URL is shown whole, over lines if need be
    for h in hooks:
        state = f"deleted {h.deleted_at:%Y-%m-%d %H:%M}" if h.deleted_at else "live"
        table.add_row(
            h.webhook_id,
            escape(h.url),
            ", ".join(h.events),
            f"{h.created_at:%Y-%m-%d %H:%M}",
            state,
        )
    out.print(table)


@webhooks_app.command("delete")
@one_line_errors
def webhooks_delete(
    webhook: Annotated[str, typer.Argument(metavar="WEBHOOK", help="wh_… as listed")],
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Remove a webhook: it hears nothing more (deliveries under way still finish)."""
    from workers.services.access import authorize, local

    scope = scope_of(tenant)
    authorize(local(scope.tenant), "webhooks.write")
    with _store() as store:
        removed = store.delete(scope.tenant, webhook)
    assert removed.deleted_at is not None
    out.print(
        f"[green]✓[/] webhook {removed.webhook_id} deleted at "
        f"{removed.deleted_at:%Y-%m-%d %H:%M} UTC"
    )
