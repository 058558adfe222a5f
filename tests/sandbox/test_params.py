"""forge_bridge.param in the sealed runtime, and the harness's side of meta/params*.

The accessor runs inside a real bubblewrap sandbox (and with isolation none); what the step
leaves in meta/params-read is read by the harness as untrusted.
"""

import json
import os
from pathlib import Path

import pytest

from activities.harness.failure import StepFailure
from activities.harness.params import (
    PARAMS_READ_FILE,
    PARAMS_READ_MAX,
    params_read,
    step_params,
    write_params,
)
from activities.sandbox.workspace import ensure_layout
from schemas.error_codes import ErrorCode
from schemas.plan import ParameterDecl
from tests.sandbox.runner.support import run
from tests.support.sandbox import needs_bwrap

VALUES = {"cutoff": "2026-01-31", "limit": 3, "rate": 1.5, "strict": True}

READER = """
import json
import forge_bridge
got = {n: forge_bridge.param(n) for n in ("cutoff", "limit", "rate", "strict")}
got["limit_again"] = forge_bridge.param("limit")
got["fallback"] = forge_bridge.param("absent", default=7)
try:
    forge_bridge.param("absent")
except forge_bridge.ParameterError as exc:
    got["error"] = [str(exc), isinstance(exc, KeyError), isinstance(exc, forge_bridge.BridgeError)]
print(json.dumps({"values": got, "types": {k: type(v).__name__ for k, v in got.items()}}))
"""


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ensure_layout(ws)
    write_params(ws, VALUES)
    return ws


def _check_reader(result, ws: Path) -> None:
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    values, types = report["values"], report["types"]
    assert {k: values[k] for k in VALUES} == VALUES
    assert types == {
        "cutoff": "str",
        "limit": "int",
        "rate": "float",
        "strict": "bool",
        "limit_again": "int",
        "fallback": "int",
        "error": "list",
    }
    message, is_key_error, is_bridge_error = values["error"]
    assert "PARAMETER_INVALID" in message and "'absent'" in message
    assert "declared: cutoff, limit, rate, strict" in message
    assert is_key_error and is_bridge_error
    # Every read is recorded, defaults and refusals are not.
    recorded = (ws / PARAMS_READ_FILE).read_text().split()
    assert recorded == ["cutoff", "limit", "rate", "strict", "limit"]
    assert params_read(ws, list(VALUES)) == ["cutoff", "limit", "rate", "strict"]


@needs_bwrap
def test_step_code_reads_typed_parameters_in_the_sandbox_and_each_read_is_recorded(tmp_path):
    ws = _workspace(tmp_path)
    _check_reader(run(ws, READER, bridge=True), ws)


def test_with_isolation_none_the_parameters_are_found_next_to_the_bridge_socket(tmp_path):
    ws = _workspace(tmp_path)
    _check_reader(run(ws, READER, bridge=True, isolation="none"), ws)


@needs_bwrap
def test_a_run_without_parameters_gives_defaults_and_a_clear_error(tmp_path):
    ws = tmp_path / "ws"
    ensure_layout(ws)  # no meta/params.json at all
    code = """
    import forge_bridge
    print(forge_bridge.param("limit", default=10))
    forge_bridge.param("limit")
    """
    result = run(ws, code, bridge=True)
    assert result.exit_code == 1 and result.stdout.strip() == "10"
    assert "ParameterError" in result.stderr
    assert "the run has no parameter 'limit'; declared: none" in result.stderr
    assert not (ws / PARAMS_READ_FILE).exists()


def test_values_are_typed_by_their_declaration_and_a_bad_one_fails_the_step():
    decls = [
        ParameterDecl(name="cutoff", default="2026-01-01"),
        ParameterDecl(name="limit", type="integer", default=5),
    ]
    assert step_params("s", decls, {"limit": "8", "undeclared": "x"}) == {
        "cutoff": "2026-01-01",
        "limit": 8,
    }
    with pytest.raises(StepFailure) as info:
        step_params("totals", decls, {"limit": "eight"})
    assert info.value.code is ErrorCode.PARAMETER_INVALID
    assert "step totals" in str(info.value) and "'limit' must be an integer" in str(info.value)


@pytest.mark.parametrize(
    "plant",
    [
        "link",  # a symlink to a file outside the workspace
        "dir",
        "fifo",
        "huge",
        "binary",
        "parent-link",  # meta/ itself replaced by a link
    ],
)
def test_whatever_the_step_leaves_at_params_read_is_never_fatal(tmp_path, plant):
    ws = tmp_path / "ws"
    ensure_layout(ws)
    outside = tmp_path / "outside"
    outside.write_text("cutoff\nlimit\n")
    record = ws / PARAMS_READ_FILE
    expected: list[str] = []
    if plant == "link":
        record.symlink_to(outside)
    elif plant == "dir":
        record.mkdir()
    elif plant == "fifo":
        os.mkfifo(record)
    elif plant == "huge":
        record.write_bytes(b"cutoff\n" * (PARAMS_READ_MAX // 7 + 10))
    elif plant == "binary":
        record.write_bytes(b"\xff\xfe\x00cutoff\n\x80limit\nrm -rf /\n../../etc\ncutoff\r\n")
        expected = ["cutoff"]
    else:
        (ws / "meta").rmdir()
        (ws / "meta").symlink_to(tmp_path)
        (tmp_path / "params-read").write_text("cutoff\n")
    assert params_read(ws, ["cutoff", "limit"]) == expected
    assert params_read(ws, []) == []


def test_the_runtime_digest_covers_the_client_so_make_runtime_rebuilds_for_param(
    tmp_path, monkeypatch
):
    from activities.sandbox import step_runtime
    from activities.sandbox.client import forge_bridge

    source = Path(forge_bridge.__file__)
    assert "def param(" in source.read_text()
    before = step_runtime.expected_digest()
    older = tmp_path / "forge_bridge.py"
    older.write_text(source.read_text().split("\n_MISSING")[0])  # the client without param
    monkeypatch.setattr(forge_bridge, "__file__", str(older))
    step_runtime.expected_digest.cache_clear()
    try:
        assert step_runtime.expected_digest() != before
    finally:
        monkeypatch.undo()
        step_runtime.expected_digest.cache_clear()
    assert step_runtime.expected_digest() == before
