"""`forge schemas export`: one JSON Schema per public model, for tools outside Python."""

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from schemas.error_codes import ErrorCode
from workers.cli.common import VerbGroup, fail, out

schemas_app = typer.Typer(
    cls=VerbGroup, help="Export the JSON Schemas of Forge's public models.", no_args_is_help=True
)


def schema_documents() -> dict[str, dict[str, Any]]:
    """File name -> JSON Schema for every exported model."""
    from workers.cli.schema_list import EXPORTED  # the models load for this verb only

    return {f"{m.__name__}.json": m.model_json_schema() for m in EXPORTED}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@schemas_app.command("export")
def export_cmd(directory: Annotated[Path, typer.Argument(metavar="DIR")]) -> None:
    """Write one <Model>.json per public model into DIR (the repo keeps schemas/jsonschema/)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        docs = schema_documents()
        for name, schema in docs.items():
            (directory / name).write_text(render(schema), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write to {directory}: {exc.strerror}", code=ErrorCode.FILE_UNUSABLE)
    out.print(f"[green]✓[/] wrote {len(docs)} JSON Schemas to {directory}")
