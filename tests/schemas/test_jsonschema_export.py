"""The committed JSON Schemas under schemas/jsonschema/ must match the models."""

from pathlib import Path

from typer.testing import CliRunner

from workers.cli import app
from workers.cli.schema_list import EXPORTED
from workers.cli.schemas import render, schema_documents

COMMITTED = Path(__file__).resolve().parents[2] / "schemas" / "jsonschema"


def test_committed_schemas_are_current():
    docs = schema_documents()
    stale = [
        name
        for name, schema in docs.items()
        if not (COMMITTED / name).is_file()
        or (COMMITTED / name).read_text(encoding="utf-8") != render(schema)
    ]
    extra = sorted({p.name for p in COMMITTED.glob("*.json")} - set(docs))
    assert not stale and not extra, (
        f"stale {stale}, unexpected {extra}: run `forge schemas export schemas/jsonschema`"
    )


def test_export_command_writes_every_model(tmp_path):
    result = CliRunner().invoke(app, ["schemas", "export", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (tmp_path / "out").glob("*.json"))
    assert written == sorted(f"{m.__name__}.json" for m in EXPORTED)
    assert "PlannerCandidate.json" in written and "CompiledPlan.json" in written


def test_export_into_a_file_path_fails_cleanly(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = CliRunner().invoke(app, ["schemas", "export", str(blocker)])
    assert result.exit_code == 2
    assert "cannot write" in result.output
