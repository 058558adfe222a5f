"""`forge guard scan`: exit 0 clean, 1 found, 2 bad input; `--json` never prints the secret."""

import json

from typer.testing import CliRunner

from workers.cli import app

SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, ["guard", "scan", *args], input=stdin)


def test_a_json_document_reports_each_finding_by_pointer_and_never_the_value(tmp_path):
    doc = tmp_path / "payload.json"
    doc.write_text(json.dumps({"billing": {"stripe": SECRET}, "owner": "jane.doe@acme.io"}))
    result = run(str(doc), "--json")
    assert result.exit_code == 1, result.output
    findings = json.loads(result.output)["findings"]
    assert {(f["path"], f["detector"]) for f in findings} == {
        ("/billing/stripe", "stripe-access-token"),
        ("/owner", "email"),
    }
    assert SECRET not in result.output and "jane.doe" not in result.output


def test_plain_text_from_stdin_is_scanned_line_by_line():
    result = run("-", stdin=f"host: db\nSTRIPE_KEY={SECRET}\n")
    assert result.exit_code == 1
    assert "line 2" in result.output and "stripe-access-token" in result.output
    assert SECRET not in result.output


def test_a_clean_document_exits_0():
    result = run("-", "--json", stdin='{"region": "north", "total": 12.5}')
    assert result.exit_code == 0 and json.loads(result.output) == {"findings": []}
    assert "nothing found" in run("-", stdin="all quiet\n").output


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    missing = run(str(tmp_path / "nope.json"))
    assert missing.exit_code == 2 and "no such file" in missing.output
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    bad = run(str(binary))
    assert bad.exit_code == 2 and "not UTF-8" in bad.output
    assert len(bad.output.strip().splitlines()) == 1


def test_an_error_line_never_echoes_a_credential(tmp_path):
    """Issue 18 §2: what the CLI prints on an error is masked like everything else."""
    named = tmp_path / f"{SECRET} copy.json"
    result = run(str(named))
    assert result.exit_code == 2
    assert SECRET not in result.output
    assert "[REDACTED:stripe-access-token] copy.json: no such file" in result.output
