"""`forge deploy`: the worker deployment's versions, and making a new build current.

A rolling upgrade (docs/deployment.md): start the new build's workers beside the old ones,
`forge deploy promote BUILD`, and stop the old workers once `forge deploy status` shows their
build drained. Runs are pinned to the build they started on, so none moves mid-run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.common import VerbGroup, fail, fail_error, out, run_async, temporal_client
from workers.cli.common import settings as forge_settings

if TYPE_CHECKING:
    from workers.services.deployments import DeploymentView
    from workers.settings import Settings

__all__ = ["deploy_app"]

deploy_app = typer.Typer(
    cls=VerbGroup,
    help="Worker versioning: list the deployment's builds, make a build current.",
    no_args_is_help=True,
)


def _deployment(settings: Settings) -> str:
    if settings.deployment_name is None:
        fail(
            "FORGE_DEPLOYMENT_NAME is not set: the workers are not versioned",
            "set FORGE_DEPLOYMENT_NAME to the deployment name the workers run with "
            "(docs/deployment.md, rolling upgrades)",
            code=ErrorCode.DEPLOYMENT_REFUSED,
        )
    return settings.deployment_name


@deploy_app.command()
def promote(
    build_id: Annotated[str, typer.Argument(metavar="BUILD", help="The build id to make current.")],
) -> None:
    """Make BUILD the current version: new runs start on its workers; running ones stay put."""
    from workers.services.deployments import DeploymentRefused
    from workers.services.deployments import promote as promote_build
    from workers.settings_env import check_build_id

    try:
        check_build_id(build_id)
    except ValueError as exc:
        fail(f"BUILD {build_id!r} is invalid: expected {exc}", code=ErrorCode.USAGE_INVALID)
    settings = forge_settings()
    deployment = _deployment(settings)

    async def go() -> str | None:
        client = await temporal_client(settings, read_only=True)
        return (await promote_build(client, deployment, build_id)).previous_build_id

    try:
        previous = run_async(go())
    except DeploymentRefused as exc:
        fail_error(exc)
    was = f" (was {escape(previous)})" if previous and previous != build_id else ""
    out.print(
        f"[green]✓[/] build [bold]{escape(build_id)}[/] is current in deployment "
        f"{escape(deployment)}{was}: new runs start on it"
    )


@deploy_app.command()
def status(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the deployment as one JSON object.")
    ] = False,
) -> None:
    """The deployment's builds: which is current, which still drain, which is this one (local)."""
    from workers.process.versioning import build_id_of
    from workers.services.deployments import DeploymentRefused, describe

    settings = forge_settings()
    deployment = _deployment(settings)

    async def go() -> DeploymentView:
        return await describe(await temporal_client(settings, read_only=True), deployment)

    try:
        view = run_async(go())
    except DeploymentRefused as exc:
        fail_error(exc)
    local = build_id_of(settings)
    if as_json:
        out.print_json(json.dumps({**view.model_dump(mode="json"), "this_build_id": local}))
        return
    table = Table(title=f"worker deployment {escape(view.name)}", title_justify="left")
    for column in ("build", "status", "local"):
        table.add_column(column)
    for version in view.versions:
        mark = "✓" if version.build_id == local else ""
        table.add_row(escape(version.build_id), version.status, mark)
    out.print(table)
    if view.current_build_id is None:
        out.print(
            "[yellow]no current build:[/] new runs wait until one is promoted "
            "(`forge deploy promote BUILD`)"
        )
