"""`forge sandbox exec` as a person or a script uses it."""

import json
import tempfile
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tests.support.sandbox import needs_bwrap
from workers.cli.sandbox import sandbox_app

app = typer.Typer()
app.add_typer(sandbox_app, name="sandbox")


@pytest.fixture
def run(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, ["sandbox", "exec", *args])

    return invoke


def script(tmp_path: Path, code: str) -> str:
    path = tmp_path / "probe.py"
    path.write_text(code)
    return str(path)


@needs_bwrap
def test_json_result_has_exactly_the_documented_keys(run, tmp_path, monkeypatch):
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    result = run(script(tmp_path, "print('hi')"), "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert set(payload) == {
        "exit_code",
        "timed_out",
        "killed_by",
        "stdout",
        "stderr",
        "duration_ms",
        "violations",
    }
    assert payload["exit_code"] == 0 and payload["stdout"] == "hi\n"
    assert list(temp.iterdir()) == []  # the default workspace is removed afterwards


@needs_bwrap
def test_summary_shows_exit_code_and_output_tail(run, tmp_path):
    result = run(script(tmp_path, "import sys; print('out-line'); sys.exit(3)"))
    assert result.exit_code == 1
    assert "exit code" in result.stdout and "3" in result.stdout
    assert "out-line" in result.stdout


@needs_bwrap
def test_timeout_kills_and_fails(run, tmp_path):
    result = run(script(tmp_path, "while True:\n    pass\n"), "--timeout", "1", "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["timed_out"] and payload["killed_by"] == "wall_clock"


@needs_bwrap
def test_timeout_summary_says_what_killed_it(run, tmp_path):
    result = run(script(tmp_path, "while True:\n    pass\n"), "--timeout", "1")
    assert result.exit_code == 1
    assert "None" not in result.stdout, result.stdout
    assert "137 (killed: wall_clock limit)" in result.stdout, result.stdout


@needs_bwrap
def test_memory_option_and_kept_workspace(run, tmp_path):
    ws = tmp_path / "ws"
    code = "open('/workspace/output/o.txt', 'w').write('x'); bytearray(512 * 1024 * 1024)"
    result = run(script(tmp_path, code), "--memory", "128", "--workspace", str(ws), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["killed_by"] == "memory"
    assert (ws / "output" / "o.txt").read_text() == "x"
    assert (ws / "meta" / "probe.py").is_file()


def test_missing_script_is_bad_input(run, tmp_path):
    result = run(str(tmp_path / "nope.py"))
    assert result.exit_code == 2
    assert "no such file" in result.stderr
    assert "Traceback" not in result.output


def test_missing_bwrap_is_a_clear_error(run, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = run(script(tmp_path, "print('never')"))
    assert result.exit_code == 2
    assert "apt-get install bubblewrap" in result.stderr
    assert "Traceback" not in result.output
