"""`forge capsule ...` as a user runs it, on the session dev server, with real billing runs.

Verbs that succeed run through typer's CliRunner (the `cli` fixture); refusals run the console
script's own entry point (`workers.cli:main`, as `forge` does) so what is checked is exactly
what a person sees: exit code 2, one line on stderr starting with `error:`, no traceback.
"""

import json
import re
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from temporalio.exceptions import ApplicationError

from activities.capsules.instantiate import CapsuleActivities
from activities.capsules.prepare_run import prepare_capsule_run
from activities.store.artifacts import parse_digest
from schemas.capsule import CapsuleInstantiateInput, CapsuleRunSpec
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import Scope
from schemas.tenant_settings import TenantSettings
from tests.workflows.engine import BILLING
from tests.workflows.test_capsules import billing_data
from workers.process.worker import Services
from workers.services import runs
from workers.services.capsule_runs import input_policy
from workers.settings import Settings

PLAN = BILLING / "frozen-plan.json"
SCOPE = Scope.default()


@dataclass(frozen=True)
class Said:
    code: int
    stdout: str
    stderr: str


@pytest.fixture
def forge(cli, capsys):
    """`forge ARGS...` through the console script's entry point, after the `cli` fixture's env."""
    from workers.cli import main

    def invoke(*args: object) -> Said:
        capsys.readouterr()
        with mock.patch.object(sys, "argv", ["forge", *(str(a) for a in args)]):
            try:
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return Said(code, captured.out, captured.err)

    return invoke


def one_error_line(said: Said, *says: str) -> str:
    """Exit 2, nothing on stdout, one `error:` line on stderr that says each of `says`."""
    assert said.code == 2, said
    assert "Traceback" not in said.stderr + said.stdout, said
    lines = said.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), said
    for text in says:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def _run_id(output: str) -> str:
    return re.search(r"run-\d{8}-\d{6}-[0-9a-f]{6}", output).group(0)


def _inputs(data: dict[str, Path]) -> list[str]:
    args = []
    for name, path in data.items():
        args += ["--input", f"{name}={path}"]
    return args


def _billing_run(cli, tmp_path: Path, seed: int) -> str:
    ran = cli("run", PLAN, *_inputs(billing_data(tmp_path, seed)))
    assert ran.exit_code == 0, ran.output
    return _run_id(ran.output)


def _blob_files(home: Path, tenant: str) -> list[Path]:
    root = home / "artifacts" / "tenants" / tenant
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_extract_list_show_versions_diff_export_import(cli, forge, tmp_path):
    home = tmp_path / "home"
    first = _billing_run(cli, tmp_path, 2)
    second = _billing_run(cli, tmp_path, 3)

    made = cli("capsule", "extract", first, "--name", "billing")
    assert made.exit_code == 0, made.output
    assert "✓ capsule billing@1 · sha256:" in made.output and f"from {first}" in made.output
    assert "inputs: time_entries, rate_cards, contracts; parameters: none" in made.output
    assert "run it: forge capsule run billing@1 --input NAME=PATH" in made.output
    again = cli("capsule", "extract", first, "--name", "billing")
    assert again.exit_code == 0, again.output
    assert again.output.startswith("= capsule billing@1 already holds this run")
    assert "nothing added" in again.output
    # Another run of the same plan on other data: other provenance, so a new version.
    newer = cli("capsule", "extract", second, "--name", "billing")
    assert newer.exit_code == 0 and "✓ capsule billing@2" in newer.output, newer.output

    listed = cli("capsule", "list")
    assert listed.exit_code == 0, listed.output
    assert "│ billing │ 2 " in listed.output  # the newest version
    assert "time_entries, rate_cards, contracts" in listed.output
    shown = cli("capsule", "show", "billing")
    assert shown.exit_code == 0 and shown.output.startswith("billing@2 · sha256:"), shown.output
    shown_1 = cli("capsule", "show", "billing@1")
    assert shown_1.exit_code == 0 and shown_1.output.startswith("billing@1 · sha256:")
    assert f"from run {first}" in shown_1.output and "find_discrepancies" in shown_1.output
    versions = cli("capsule", "versions", "billing")
    assert versions.exit_code == 0, versions.output
    assert first in versions.output and second in versions.output
    diffed = cli("capsule", "diff", "billing@1", "billing@2")
    assert diffed.exit_code == 0, diffed.output
    assert diffed.output.startswith("billing@1 -> billing@2")
    same = cli("capsule", "diff", "billing@1", "billing@1")
    assert same.exit_code == 0 and "are identical" in same.output

    exported = tmp_path / "billing-1.json"
    wrote = cli("capsule", "export", "billing@1", "-o", exported)
    assert wrote.exit_code == 0 and "✓ exported billing@1" in wrote.output, wrote.output
    document = json.loads(exported.read_text())
    assert document["schema_version"] == "forge.capsule-export/1" and document["version"] == 1

    imported = cli("capsule", "import", exported, "--tenant", "other")
    assert imported.exit_code == 0, imported.output
    assert "✓ imported as billing@1" in imported.output
    twice = cli("capsule", "import", exported, "--tenant", "other")
    assert twice.exit_code == 0 and twice.output.startswith("= billing@1 already holds")
    assert "billing" in cli("capsule", "list", "--tenant", "other").output

    # A tampered export: refused in one line naming the file; nothing imported, no blob kept.
    blob_key = sorted(document["blobs"])[0]
    encoded = document["blobs"][blob_key]
    flipped = ("B" if encoded[0] == "A" else "A") + encoded[1:]
    step = next(iter(document["content"]["contracts"]))
    tampered = {
        "blob": {**document, "blobs": {**document["blobs"], blob_key: flipped}},
        "contract": {
            **document,
            "content": {
                **document["content"],
                "contracts": {**document["content"]["contracts"], step: "sha256:" + "0" * 64},
            },
        },
    }
    for what, bad in tampered.items():
        path = tmp_path / f"tampered-{what}.json"
        path.write_text(json.dumps(bad))
        one_error_line(forge("capsule", "import", path, "--tenant", "other2"), str(path))
    nothing = cli("capsule", "list", "--tenant", "other2")
    assert nothing.exit_code == 0 and "no capsules for tenant other2" in nothing.output
    assert _blob_files(home, "other2") == []
    # Another tenant's capsule reads exactly like one that does not exist.
    for verb in ("show", "versions"):
        theirs = one_error_line(forge("capsule", verb, "billing", "--tenant", "other2"))
        absent = one_error_line(forge("capsule", verb, "nosuch", "--tenant", "other2"))
        assert theirs == absent.replace("nosuch", "billing")
        assert theirs.startswith("error: CAPSULE_NOT_FOUND: tenant 'other2' has no capsule")
    missing_version = one_error_line(forge("capsule", "show", "billing@3"), "CAPSULE_NOT_FOUND")
    assert "has no version 3: it has versions 1, 2" in missing_version


def test_a_capsule_runs_end_to_end_and_refuses_bad_runs_in_one_line(
    cli, forge, tmp_path, monkeypatch
):
    monkeypatch.setenv("FORGE_INPUT_ROOTS", str(tmp_path))
    home = tmp_path / "home"
    source = _billing_run(cli, tmp_path, 2)
    assert cli("capsule", "extract", source, "--name", "billing").exit_code == 0
    # The capsule runs end to end on new data: sealed, no model, no tokens.
    fresh = billing_data(tmp_path, 7)
    ran = cli("capsule", "run", "billing", *_inputs(fresh))
    assert ran.exit_code == 0, ran.output
    assert "capsule billing@1 (sealed)" in ran.output
    assert "tokens: 0 (no planning, no code generation" in ran.output

    # Refusals: one line each, exit 2, nothing started.
    runs_before = cli("runs").output.count("run-")
    no_contracts = {k: v for k, v in fresh.items() if k != "contracts"}
    one_error_line(
        forge("capsule", "run", "billing", *_inputs(no_contracts)),
        "PARAMETER_INVALID",
        "missing input(s): --input contracts=",
    )
    one_error_line(
        forge("capsule", "run", "nosuch", *_inputs(fresh)),
        "CAPSULE_NOT_FOUND",
        "tenant 'default' has no capsule 'nosuch'",
    )
    one_error_line(
        forge("capsule", "run", "billing@9", *_inputs(fresh)),
        "has no version 9: it has versions 1;",
    )
    for bad_ref in ("Billing", "billing@x", "billing@0", "billing@1@2"):
        one_error_line(
            forge("capsule", "run", bad_ref, *_inputs(fresh)),
            "CAPSULE_REFUSED",
            f"{bad_ref!r} is not a capsule: write NAME or NAME@VERSION",
        )
    outside = {**fresh, "contracts": Path("/etc/hostname")}
    one_error_line(
        forge("capsule", "run", "billing", *_inputs(outside)),
        "INPUT_LOCATION_REFUSED",
        "--input contracts=/etc/hostname",
        "is outside the input roots of tenant 'default'",
    )
    # Another tenant's capsule answers exactly like one that does not exist.
    theirs = one_error_line(forge("capsule", "run", "billing", *_inputs(fresh), "--tenant", "x"))
    absent = one_error_line(forge("capsule", "run", "nosuch", *_inputs(fresh), "--tenant", "x"))
    assert theirs == absent.replace("nosuch", "billing")
    assert cli("runs").output.count("run-") == runs_before
    assert _blob_files(home, "x") == []


def _settings(tmp_path: Path) -> Settings:
    return Settings.from_env().model_copy(update={"input_roots": (tmp_path,)})


def _prepare(services: Services, tmp_path: Path, inputs: dict[str, Path]) -> None:
    prepare_capsule_run(
        services.capsules,
        services.artifacts,
        input_policy(_settings(tmp_path), TenantSettings(tenant_id=SCOPE.tenant)),
        SCOPE,
        "billing",
        run_id=runs.new_run_id(SCOPE.tenant),
        inputs={k: str(v) for k, v in inputs.items()},
        params={},
    )


def _count_files(root: Path) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file())


def test_a_capsule_tampered_after_extraction_is_refused_before_anything_starts(
    cli, forge, tmp_path, monkeypatch
):
    monkeypatch.setenv("FORGE_INPUT_ROOTS", str(tmp_path))
    home = tmp_path / "home"
    source = _billing_run(cli, tmp_path, 2)
    assert cli("capsule", "extract", source, "--name", "billing").exit_code == 0
    fresh = billing_data(tmp_path, 5)
    services = Services.from_settings(Settings.from_env())
    version = services.capsules.get(SCOPE, "billing")
    events_before = len(services.events.list_events(limit=1_000_000))
    blobs_before = _count_files(home / "artifacts")

    def refused(*says: str) -> None:
        with pytest.raises(ForgeError) as caught:
            _prepare(services, tmp_path, fresh)
        assert caught.value.code == ErrorCode.CAPSULE_TAMPERED, caught.value.line()
        for said in says:
            assert said in str(caught.value)
        one_error_line(
            forge("capsule", "run", "billing", *_inputs(fresh)), "error: CAPSULE_TAMPERED: "
        )

    # 1. The compiled plan's bytes replaced in the artifact store.
    digest = parse_digest(version.content.plan_template.sha256)
    blob = home / "artifacts" / "sha256" / digest[:2] / digest[2:]
    original = blob.read_bytes()
    blob.chmod(0o600)
    plan = json.loads(original)
    plan["mission"] = plan["mission"] + " (edited)"
    blob.write_bytes(json.dumps(plan).encode())
    refused(version.content.plan_template.sha256)
    # A run already started finds it too: capsule__instantiate refuses as CAPSULE_TAMPERED.
    front_end = CapsuleActivities(services.artifacts, services.capsules)
    spec = CapsuleRunSpec(name="billing", version=1, capsule_hash=version.capsule_hash)
    with pytest.raises(ApplicationError) as failed:
        front_end.instantiate(
            CapsuleInstantiateInput(run_id="run-x", scope=SCOPE, capsule=spec, cause_event_id="e")
        )
    assert failed.value.type == "CAPSULE_TAMPERED" and failed.value.non_retryable, failed.value
    blob.write_bytes(original)

    # 2. The capsules.content row edited in the database: it no longer hashes to its seal.
    with sqlite3.connect(home / "forge.db") as db:
        [(content,)] = db.execute("SELECT content FROM capsules WHERE name = 'billing'")
        edited = json.loads(content)
        edited["goal_template"] = "something else"
        db.execute("UPDATE capsules SET content = ? WHERE name = 'billing'", (json.dumps(edited),))
    refused("billing@1", "the row was altered in the database")

    # Nothing was uploaded, nothing started, no event written.
    assert len(services.events.list_events(limit=1_000_000)) == events_before
    assert _count_files(home / "artifacts") == blobs_before


@pytest.mark.parametrize(
    "args",
    [
        ["run", "billing", "--input", "contracts=a.json", "--input", "contracts =b.json"],
        ["run", "billing", "--param", "limit=1", "--param", "limit =2"],
        ["extract", "run-1", "--name", "b", "--param", "limit=number", "--param", "limit =integer"],
    ],
    ids=["input", "param", "extract-param"],
)
def test_a_name_given_twice_is_refused_even_with_spaces(tmp_path, monkeypatch, args):
    from typer.testing import CliRunner

    from workers.cli import app

    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(app, ["capsule", *args])
    assert result.exit_code == 2, (result.output, result.exception)
    [line] = result.output.strip().splitlines()
    assert line.startswith(f"error: PARAMETER_INVALID: {args[-2]} "), line
    assert "is given twice" in line, line


def test_closing_line_credits_sealed_code_only_with_steps_that_ran():
    """No step ran (a model worker never came): the line does not say sealed code ran (§5)."""
    from schemas.run import RunResult, StepState
    from workers.cli.capsule_run import spending_line

    def result(status: str, *steps: str) -> RunResult:
        states = {k: StepState(step_key=k, status=st) for k, st in zip("ab", steps, strict=False)}
        return RunResult(run_id="r", status=status, steps=states)

    none_ran = spending_line(result("failed", "error", "skipped"), [])
    assert none_ran == "tokens: 0 (no step ran: the run failed)"
    assert "sealed" not in spending_line(result("failed"), [])
    assert spending_line(result("failed", "done", "error"), []) == (
        "tokens: 0 (1 of 2 steps ran, all sealed code)"
    )
    assert "every step ran sealed code" in spending_line(result("completed", "done", "done"), [])
    # A fresh step asked a model: zero reported tokens do not make it sealed code.
    fresh_free = spending_line(result("completed", "done", "done"), ["b"])
    assert fresh_free == "tokens: 0 (2 of 2 steps ran; fresh steps b reported no tokens)"
