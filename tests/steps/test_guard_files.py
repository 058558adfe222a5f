"""The guard at a step's edges: which files are scanned, where a finding is, what a phase does."""

import json
from pathlib import Path

import pytest

from activities.compile.typelib import load_profiles
from activities.harness import guard_files
from activities.harness.guard_files import blocked_message, phase_mode, scan_files
from schemas.plan import ArtifactContract
from schemas.profile import ExecutionProfile

ANTHROPIC = "sk-ant-api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
AWS_ID = "AKIA2E0A8F3B244C9986"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"


def workspace(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return tmp_path


def places(tmp_path: Path, rel: str, content: str | bytes, contract=None) -> list[tuple]:
    ws = workspace(tmp_path, {rel: content})
    return [(f.file, f.where, f.detector) for f in scan_files(ws, [(rel, contract)])]


def test_json_findings_are_json_pointers_and_never_the_value(tmp_path):
    doc = {"config": {"key": ANTHROPIC}, "rows": [{"note": f"id {AWS_ID}"}], "who": "a@b.co"}
    ws = workspace(tmp_path, {"output/a.json": json.dumps(doc)})
    found = scan_files(ws, [("output/a.json", None)])
    assert [(f.where, f.detector) for f in found] == [
        ("/config/key", "anthropic_key"),
        ("/rows/0/note", "aws_key"),
    ]
    assert all(ANTHROPIC not in f.model_dump_json() for f in found)
    assert all(AWS_ID not in f.masked for f in found)


def test_json_text_inside_a_string_is_scanned_as_json(tmp_path):
    doc = {"payload": json.dumps({"auth": {"token": ANTHROPIC}})}
    assert places(tmp_path, "output/a.json", json.dumps(doc)) == [
        ("output/a.json", "/payload", "anthropic_key")
    ]


def test_an_escaped_credential_is_found_as_the_value_it_decodes_to(tmp_path):
    raw = json.dumps({"k": ANTHROPIC}).replace("sk-", "\\u0073k-")
    assert "sk-" not in raw
    assert places(tmp_path, "output/a.json", raw) == [("output/a.json", "/k", "anthropic_key")]


def test_personal_data_alone_is_no_finding(tmp_path):
    doc = {
        "email": "ada.lovelace@example.co.uk",
        "phone": "+1 415 555 0132",
        "card": 4111111111111111,
    }
    assert places(tmp_path, "output/people.json", json.dumps(doc)) == []
    assert places(tmp_path, "output/people.csv", "name,email\nAda,ada@example.com\n") == []


def test_csv_findings_name_the_line_and_the_secrets_column(tmp_path):
    table = (
        "name,password,comment\n"
        'ada,"Tr0ub4dor&3xK9#qZ",fine\n'
        'bob,hunter,"two\nlines"\n'
        f"eve,x,key {ANTHROPIC}\n"
    )
    # A column named for a secret judges its cells as that field; the rest is found by line.
    assert places(tmp_path, "output/users.csv", table) == [
        ("output/users.csv", "line 2, column password", "secret_field"),
        ("output/users.csv", "line 5", "anthropic_key"),
    ]


def test_a_secret_in_a_csv_header_is_found_once(tmp_path):
    table = f"id,{ANTHROPIC}\n1,2\n3,4\n"
    assert places(tmp_path, "output/t.csv", table) == [("output/t.csv", "line 1", "anthropic_key")]


def test_text_findings_name_the_line(tmp_path):
    text = f"# notes\nfirst\n{PRIVATE_KEY}\nkey={ANTHROPIC}\n"
    assert places(tmp_path, "output/notes.md", text) == [
        ("output/notes.md", "line 3", "private_key"),
        ("output/notes.md", "line 6", "anthropic_key"),
    ]


def test_text_is_scanned_in_batches_with_the_right_line_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(guard_files, "CHUNK_CHARS", 64)
    lines = [f"line {i} of plain text" for i in range(200)]
    lines[150] = f"key {ANTHROPIC}"
    assert places(tmp_path, "output/log.txt", "\n".join(lines)) == [
        ("output/log.txt", "line 151", "anthropic_key")
    ]


def test_a_file_that_is_not_what_its_name_says_is_scanned_as_text(tmp_path):
    assert places(tmp_path, "output/a.json", f'{{"broken": "{ANTHROPIC}"') == [
        ("output/a.json", "line 1", "anthropic_key")
    ]


def test_the_contracts_parse_validator_decides_the_format(tmp_path):
    contract = ArtifactContract(parse_validator="json")
    doc = json.dumps({"k": ANTHROPIC})
    assert places(tmp_path, "output/data", doc, contract) == [
        ("output/data", "/k", "anthropic_key")
    ]


def test_binary_files_are_not_scanned(tmp_path):
    assert places(tmp_path, "output/a.bin", b"\0\1\2" + ANTHROPIC.encode()) == []
    assert places(tmp_path, "output/a.zip", ANTHROPIC) == []
    # an unknown extension without NUL bytes is text
    assert places(tmp_path, "output/creds.env", f"KEY={ANTHROPIC}\n") == [
        ("output/creds.env", "line 1", "anthropic_key")
    ]


def test_missing_files_and_symlinks_are_left_to_the_receipt(tmp_path):
    ws = workspace(tmp_path, {"secret.txt": f"key {ANTHROPIC}\n"})
    (ws / "output").mkdir()
    (ws / "output" / "link.txt").symlink_to(ws / "secret.txt")
    assert scan_files(ws, [("output/link.txt", None), ("output/gone.json", None)]) == []


def _profile(phases: dict) -> ExecutionProfile:
    layers, _ = load_profiles()
    doc = layers.builtin["default"].model_dump(mode="json")
    doc["validation"]["phases"] = phases
    return ExecutionProfile.model_validate(doc)


@pytest.mark.parametrize(
    ("declared", "mode"),
    [
        ({"mode": "block"}, "block"),
        ({"mode": "report"}, "report"),
        ({"mode": "off"}, "off"),
        ({"mode": "block", "stages": ["L3", "L0"]}, "block"),
        ({"mode": "block", "stages": ["L0"]}, "off"),  # stages that leave out the guard
        (None, "block"),  # an undeclared phase is not waved through
    ],
)
def test_phase_mode(declared, mode):
    phases = {"step_output": declared} if declared is not None else {}
    assert phase_mode(_profile(phases), "step_output") == mode


def test_the_default_profile_blocks_at_both_step_phases():
    layers, _ = load_profiles()
    default = layers.builtin["default"]
    assert phase_mode(default, "step_input") == phase_mode(default, "step_output") == "block"
    fast = layers.builtin["fast-prototyping"]
    assert phase_mode(fast, "step_input") == phase_mode(fast, "step_output") == "report"


def test_the_blocked_message_says_where_what_and_what_to_do(tmp_path):
    ws = workspace(tmp_path, {f"output/{i}.txt": f"k {ANTHROPIC}\n" for i in range(7)})
    found = scan_files(ws, [(f"output/{i}.txt", None) for i in range(7)])
    message = blocked_message("export", "step_output", found)
    assert message.startswith("step export wrote credentials: output/0.txt at line 1: ")
    assert "Anthropic API key" in message and "(and 2 more)" in message
    assert "nothing" not in message and "none of the step's outputs was stored" in message
    assert "validation.phases.step_output.mode is report" in message
    assert ANTHROPIC not in message and ANTHROPIC[:16] not in message
    refused = blocked_message("load", "step_input", found[:1])
    assert refused.startswith("step load was not run: its inputs hold credentials: ")
