"""`forge guard scan`: what the guard (L3) finds in a JSON document or a text, never the value."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.common import VerbGroup, fail, out

if TYPE_CHECKING:
    from compiler.ladder.guard import Detection

__all__ = ["guard_app"]

guard_app = typer.Typer(
    cls=VerbGroup,
    help="The guard (ladder stage L3): credentials and personal data in a document.",
    no_args_is_help=True,
)
MAX_BYTES = 64 << 20  # a document beyond this is refused, not half-scanned
EXIT_FOUND = 1


def _read(source: str) -> str:
    if source == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        where = "standard input"
    else:
        path = Path(source)
        if not path.is_file():
            fail(
                f"{source}: no such file; give a JSON or text file, or - for standard input",
                code=ErrorCode.FILE_UNUSABLE,
            )
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            fail(
                f"{source}: cannot be read ({exc.strerror}); check its permissions",
                code=ErrorCode.FILE_UNUSABLE,
            )
        where = source
    if len(data) > MAX_BYTES:
        fail(
            f"{where} is over {MAX_BYTES >> 20} MiB; scan it in parts", code=ErrorCode.FILE_UNUSABLE
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(
            f"{where} is not UTF-8 text (byte {exc.start}); the guard scans text and JSON only",
            code=ErrorCode.FILE_UNUSABLE,
        )


def scan_text(text: str) -> list[Detection]:
    """A JSON document by JSON pointer; anything else line by line (`line N`)."""
    from compiler.ladder.guard import scan_document

    stripped = text.lstrip()
    if stripped[:1] in ("{", "[", '"'):
        try:
            value: Any = json.loads(text)
        except json.JSONDecodeError:
            pass
        else:
            return scan_document(value)
    found: list[Detection] = []
    for number, line in enumerate(text.splitlines(), start=1):
        found += [d._replace(path=f"line {number}") for d in scan_document(line)]
    return found


@guard_app.command("scan")
def scan_cmd(
    source: Annotated[str, typer.Argument(metavar="FILE|-", help="a JSON or text file, or -")],
    as_json: Annotated[bool, typer.Option("--json", help="print {findings: [...]}")] = False,
) -> None:
    """Scan a JSON document (every string, number and key) or a text; exit 1 if anything is found.

    Findings show where (a JSON pointer, or `line N` in a text), which detector and a mask,
    never the value itself. Exit 0: nothing found; 1: something found; 2: the input is bad.
    """
    findings = scan_text(_read(source))
    if as_json:
        rows = [{"path": d.path, "detector": d.detector, "masked": d.masked} for d in findings]
        typer.echo(json.dumps({"findings": rows}, indent=2))
    elif not findings:
        out.print("[green]✓[/] nothing found")
    else:
        table = Table(title=f"{len(findings)} finding(s)", title_justify="left")
        for column in ("path", "detector", "masked"):
            table.add_column(column)
        for d in findings:
            table.add_row(escape(d.path or "/"), d.detector, escape(d.masked))
        out.print(table)
    if findings:
        raise typer.Exit(EXIT_FOUND)
