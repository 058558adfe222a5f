"""One error format (issue 34 §2): every verb's bad input is one line `error: CODE: …`, exit 2.

Click's own errors (a word for a number, an unknown option, a missing argument) go through the
same line as Forge's refusals: no usage panel, no box, no traceback, no second line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import typer.main
from click.testing import Result

from schemas.error_codes import ErrorCode
from tests.workers.test_cli_recipes import SKILL
from tests.workflows.engine import BILLING
from workers.cli import app

PLAN = BILLING / "frozen-plan.json"
LINE = re.compile(r"^error: (?P<code>[A-Z][A-Z0-9_]*): \S")


def _skill(tmp: Path) -> Path:
    directory = tmp / "skills" / "tidy-changelog"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(SKILL, encoding="utf-8")
    return directory


def _bytes(tmp: Path, data: bytes) -> Path:
    (tmp / "data.txt").write_bytes(data)
    return tmp / "data.txt"


def _under_a_file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("x", encoding="utf-8")
    return tmp / "a-file" / "out"


def _csv(tmp: Path) -> Path:
    (tmp / "x.csv").write_text("a\n1\n", encoding="utf-8")
    return tmp / "x.csv"


U = ErrorCode.USAGE_INVALID
F = ErrorCode.FILE_UNUSABLE
P = ErrorCode.PARAMETER_INVALID
BAD_CRON = ["schedule", "create", "x", "--capsule", "c", "--cron", "0 25 * * *", "--input", "a=b"]
# (id, arguments (a callable of tmp_path for files), the code, text the line must hold)
Args = list[str] | Callable[[Path], list[str]]
CASES: list[tuple[str, Args, ErrorCode, str]] = [
    # the cases issue 34 §2 names
    ("budget-extend-tokens-word", ["budget", "extend", "run-x", "--tokens", "abc"], U, "--tokens"),
    (
        "schedule-backfill-start-word",
        ["schedule", "backfill", "nightly", "--start", "yesterday", "--end", "today"],
        U,
        "--start",
    ),
    (
        "approve-no-pending-gate",
        ["approve", "run-nope", "gate-x", "--as", "ana", "--role", "ops", "--reason", "ok"],
        ErrorCode.DECISION_REFUSED,
        "forge gates --run run-nope",
    ),
    (
        "reject-no-pending-gate",
        ["reject", "run-nope", "gate-x", "--as", "ana", "--role", "ops", "--reason", "no"],
        ErrorCode.DECISION_REFUSED,
        "nothing changed",
    ),
    ("recipes-show-unknown", ["recipes", "show", "nosuch"], ErrorCode.RECIPE_NOT_FOUND, "nosuch"),
    ("worker-log-format-unknown", ["worker", "--log-format", "xml"], U, "--log-format json"),
    (
        "recipes-import-no-skill",
        lambda tmp: ["recipes", "import", str(tmp)],
        ErrorCode.RECIPE_IMPORT_REFUSED,
        "nothing was written",
    ),
    (
        "schedule-describe-unknown",
        ["schedule", "describe", "nosuch"],
        ErrorCode.SCHEDULE_NOT_FOUND,
        "forge schedule list",
    ),
    ("resume-unknown-run", ["resume", "run-nope"], ErrorCode.NOT_FOUND, "forge runs"),
    (
        "run-missing-input",
        ["run", str(PLAN)],
        ErrorCode.PARAMETER_INVALID,
        "missing required input",
    ),
    (
        "run-input-no-file",
        lambda tmp: ["run", str(PLAN), "--input", f"time_entries={tmp / 'none.csv'}"],
        ErrorCode.PARAMETER_INVALID,
        "",
    ),
    (
        "run-unknown-input",
        lambda tmp: ["run", str(PLAN), "--input", f"bogus={_csv(tmp)}"],
        ErrorCode.PARAMETER_INVALID,
        "not a run input",
    ),
    (
        "events-verify-unknown-tenant",
        ["events", "verify", "--tenant", "nobody"],
        ErrorCode.TENANT_INVALID,
        "nobody",
    ),
    # one bad input per verb
    ("api-port-word", ["api", "--port", "http"], U, "--port"),
    ("artifacts-no-run", ["artifacts"], U, "RUN"),
    ("budget-extend-negative", ["budget", "extend", "run-x", "--tokens", "-5"], U, "--tokens"),
    ("budget-show-unknown-run", ["budget", "show", "run-nope"], ErrorCode.NOT_FOUND, "run-nope"),
    ("cancel-unknown-run", ["cancel", "run-nope"], ErrorCode.NOT_FOUND, "run-nope"),
    ("capsule-diff-unknown", ["capsule", "diff", "nosuch@1", "nosuch@2"], None, "nosuch"),
    ("capsule-export-unknown", ["capsule", "export", "nosuch", "-o", "x.json"], None, "nosuch"),
    (
        "capsule-extract-unknown-run",
        ["capsule", "extract", "run-nope", "--name", "x"],
        None,
        "run-nope",
    ),
    (
        "capsule-import-no-file",
        lambda tmp: ["capsule", "import", str(tmp / "none.json")],
        ErrorCode.FILE_UNUSABLE,
        "none.json",
    ),
    ("capsule-list-bad-tenant", ["capsule", "list", "--tenant", "Bad!"], None, "Bad!"),
    ("capsule-run-unknown", ["capsule", "run", "nosuch"], ErrorCode.CAPSULE_NOT_FOUND, "nosuch"),
    ("capsule-show-unknown", ["capsule", "show", "nosuch"], ErrorCode.CAPSULE_NOT_FOUND, "nosuch"),
    ("capsule-versions-unknown", ["capsule", "versions", "nosuch"], None, "nosuch"),
    ("compile-no-file", ["compile", "nope.json"], ErrorCode.PLAN_FILE_INVALID, "nope.json"),
    ("db-upgrade-extra-argument", ["db", "upgrade", "now"], U, "now"),
    (
        "deploy-promote-no-deployment",
        ["deploy", "promote", "b1"],
        ErrorCode.DEPLOYMENT_REFUSED,
        "FORGE_DEPLOYMENT_NAME",
    ),
    ("deploy-status-unknown-option", ["deploy", "status", "--yaml"], U, "--yaml"),
    ("doctor-extra-argument", ["doctor", "now"], U, "now"),
    ("dev-up-unknown-option", ["dev", "up", "--port", "1"], U, "--port"),
    ("dev-down-extra-argument", ["dev", "down", "now"], U, "now"),
    ("dev-env-extra-argument", ["dev", "env", "now"], U, "now"),
    ("dev-status-unknown-option", ["dev", "status", "--yaml"], U, "--yaml"),
    ("dev-up-workers-word", ["dev", "up", "--workers", "many"], U, "--workers"),
    ("dev-up-flag-without-workers", ["dev", "up", "--api"], U, "--workers"),
    ("errors-unknown-code", ["errors", "NO_SUCH_CODE"], U, "NO_SUCH_CODE"),
    ("events-list-limit-word", ["events", "list", "--limit", "many"], U, "--limit"),
    ("events-types-extra-argument", ["events", "types", "run"], U, "run"),
    ("events-timings-no-run", ["events", "timings"], U, "RUN"),
    ("explain-no-file", ["explain", "nope.json", "s1"], ErrorCode.PLAN_FILE_INVALID, "nope.json"),
    ("explain-unknown-step", ["explain", str(PLAN), "no_such_step"], U, "no_such_step"),
    ("gates-bad-tenant", ["gates", "--tenant", "Bad!"], ErrorCode.TENANT_INVALID, "--tenant"),
    ("guard-scan-no-file", ["guard", "scan", "none.json"], F, "none.json"),
    ("keys-create-bad-role", ["keys", "create", "--role", "king"], U, "king"),
    # The checks of POST /v1/keys (issue 35 §3): nothing a person cannot type back, no past.
    (
        "keys-create-blank-gate-role",
        ["keys", "create", "--role", "approver", "--gate-role", "ops team"],
        U,
        "--gate-role 'ops team'",
    ),
    ("keys-create-blank-name", ["keys", "create", "--role", "viewer", "--name", " "], U, "--name"),
    (
        "keys-create-expired",
        ["keys", "create", "--role", "viewer", "--expires", "2001-01-01T00:00:00"],
        U,
        "--expires: is in the past",
    ),
    ("keys-list-bad-tenant", ["keys", "list", "--tenant", "Bad!"], None, "Bad!"),
    ("keys-revoke-unknown", ["keys", "revoke", "fk_nosuch"], None, "fk_nosuch"),
    ("packs-check-no-dir", ["packs", "check", "no-such-dir"], F, "no-such-dir"),
    ("packs-list-extra-argument", ["packs", "list", "all"], U, "all"),
    ("packs-show-unknown", ["packs", "show", "no.such.item"], ErrorCode.NOT_FOUND, "no.such.item"),
    ("receipts-unknown-run", ["receipts", "run-nope", "s1"], ErrorCode.NOT_FOUND, "run-nope"),
    ("recipes-check-no-dir", ["recipes", "check", "no-such-dir"], F, "no-such-dir"),
    ("recipes-list-extra-argument", ["recipes", "list", "all"], U, "all"),
    (
        "recipes-match-threshold-word",
        ["recipes", "match", "x", "--threshold", "hi"],
        U,
        "--threshold",
    ),
    ("run-no-file", ["run", "nope.json"], ErrorCode.PLAN_FILE_INVALID, "nope.json"),
    ("runs-bad-status", ["runs", "--status", "sleeping"], U, "--status"),
    ("sandbox-exec-no-script", ["sandbox", "exec", "none.py"], F, "none.py"),
    (
        "schedule-create-bad-cron",
        ["schedule", "create", "x", "--capsule", "c", "--cron", "0 25 * * *", "--input", "a=b"],
        ErrorCode.SCHEDULE_INVALID,
        "--cron",
    ),  # fmt: skip
    ("schedule-delete-unknown", ["schedule", "delete", "nosuch"], None, "nosuch"),
    ("schedule-list-bad-tenant", ["schedule", "list", "--tenant", "Bad!"], None, "Bad!"),
    ("schedule-pause-unknown", ["schedule", "pause", "nosuch"], None, "nosuch"),
    ("schedule-trigger-unknown", ["schedule", "trigger", "nosuch"], None, "nosuch"),
    ("schedule-unpause-unknown", ["schedule", "unpause", "nosuch"], None, "nosuch"),
    (
        "schedule-update-no-calendar",
        ["schedule", "update", "x", "--capsule", "c"],
        ErrorCode.SCHEDULE_INVALID,
        "--cron",
    ),
    ("schemas-export-missing-argument", ["schemas", "export"], U, "DIR"),
    ("skills-deprecate-unknown", ["skills", "deprecate", "no-such-skill"], None, "no-such-skill"),
    ("skills-list-bad-tenant", ["skills", "list", "--tenant", "Bad!"], None, "Bad!"),
    ("skills-register-no-dir", ["skills", "register", "no-such-dir"], None, "no-such-dir"),
    ("skills-show-unknown", ["skills", "show", "no-such-skill"], None, "no-such-skill"),
    ("status-unknown-run", ["status", "run-nope"], ErrorCode.NOT_FOUND, "run-nope"),
    ("tenants-create-bad-id", ["tenants", "create", "Bad!"], ErrorCode.TENANT_INVALID, "Bad!"),
    ("tenants-list-extra-argument", ["tenants", "list", "all"], U, "all"),
    ("tenants-show-unknown", ["tenants", "show", "nobody"], ErrorCode.TENANT_INVALID, "nobody"),
    ("tenants-update-word", ["tenants", "update", "default", "--max-runs", "lots"], U, "lots"),
    ("watch-unknown-run", ["watch", "run-nope"], ErrorCode.NOT_FOUND, "run-nope"),
    # The default tenant exists from the first command (migration 0010): the URL is refused.
    ("webhooks-create-ftp", ["webhooks", "create", "ftp://x"], ErrorCode.WEBHOOK_INVALID, "ftp"),
    ("webhooks-delete-unknown", ["webhooks", "delete", "wh_nosuch"], None, "wh_nosuch"),
    ("webhooks-list-extra-argument", ["webhooks", "list", "all"], U, "all"),
    ("worker-extra-argument", ["worker", "now"], U, "now"),
    # a code of its own, not USAGE_INVALID (each was USAGE_INVALID before `fail` required a code)
    (
        "budget-extend-unknown-run",
        ["budget", "extend", "run-nope", "--tokens", "5"],
        ErrorCode.NOT_FOUND,
        "run-nope",
    ),
    ("run-input-not-a-pair", ["run", str(PLAN), "--input", "nonsense"], P, "--input"),
    ("capsule-run-input-not-a-pair", ["capsule", "run", "c", "--input", "nonsense"], P, "--input"),
    (
        "capsule-extract-param-bad-type",
        ["capsule", "extract", "run-1", "--name", "b", "--param", "limit=bogus"],
        P,
        "limit=bogus",
    ),
    ("guard-scan-not-utf8", lambda tmp: ["guard", "scan", _bytes(tmp, b"\xff\xfe")], F, "UTF-8"),
    ("schemas-export-under-a-file", lambda tmp: ["schemas", "export", _under_a_file(tmp)], F, ""),
    (
        "compile-out-under-a-file",
        lambda tmp: ["compile", str(PLAN), "--out", _under_a_file(tmp)],
        F,
        "cannot write",
    ),
    # click's own errors above the verbs
    ("unknown-verb", ["nosuch"], U, "nosuch"),
    ("unknown-sub-verb", ["budget", "raise"], U, "raise"),
    ("missing-argument", ["approve"], U, "RUN"),
    ("missing-option", ["approve", "run-x", "gate-x", "--role", "ops"], U, "--as"),
]


def assert_one_error_line(result: Result, code: ErrorCode | None, says: str) -> str:
    """The result is exit 2 and exactly one line `error: CODE: message`, and returns it."""
    text = result.output  # CliRunner mixes stderr in, as a terminal shows both
    lines = [line for line in text.splitlines() if line.strip()]
    assert result.exit_code == 2, text
    assert len(lines) == 1, text
    [line] = lines
    match = LINE.match(line)
    assert match, line
    assert match["code"] in {c.name for c in ErrorCode}, line
    if code is not None:
        assert match["code"] == code.name, line
    assert says in line, line
    assert not any(ch in text for ch in "│╭╰"), text
    assert "Traceback" not in text and "Usage:" not in text, text
    return line


@pytest.mark.parametrize(
    ("args", "code", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_one_error_line(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: Args, code, says: str
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = args(tmp_path) if callable(args) else args
    assert_one_error_line(cli(*argv), code, says)


def test_the_hints_name_the_real_flag_and_say_it_once(cli, tmp_path: Path) -> None:
    described = assert_one_error_line(cli("schedule", "describe", "nosuch"), None, "")
    assert described.lower().count("forge schedule list") == 1, described
    skill = _skill(tmp_path)
    into = tmp_path / "recipes"
    assert cli("recipes", "import", skill, "--into", into).exit_code == 0
    again = cli("recipes", "import", skill, "--into", into)
    line = assert_one_error_line(again, ErrorCode.RECIPE_AUTHOR_REFUSED, "--overwrite")
    assert "overwrite=True to" not in line
    for args in (["resume", "run-nope"], ["run", PLAN]):
        line = assert_one_error_line(cli(*args), None, "")
        assert "forge.plan/1 schema" not in line, line  # the plan-file hint is not theirs


def _leaves() -> list[list[str]]:
    def walk(command, path: list[str]) -> list[list[str]]:
        subs = getattr(command, "commands", None)
        if not subs:
            return [path]
        return [leaf for name, sub in sorted(subs.items()) for leaf in walk(sub, [*path, name])]

    return walk(typer.main.get_command(app), [])


@pytest.mark.parametrize("verb", _leaves(), ids=" ".join)
def test_every_verb_refuses_an_unknown_option_in_one_line(cli, verb: list[str]) -> None:
    line = assert_one_error_line(cli(*verb, "--no-such-option"), ErrorCode.USAGE_INVALID, "")
    assert "--no-such-option" in line and f"forge {' '.join(verb)} --help" in line, line


def test_every_verb_has_a_case_in_the_table(tmp_path: Path) -> None:
    named = {" ".join(c[1][:2]) for c in CASES if not callable(c[1])}
    named |= {" ".join(c[1](tmp_path)[:2]) for c in CASES if callable(c[1])}
    missing = [" ".join(v) for v in _leaves() if not any(n.startswith(" ".join(v)) for n in named)]
    assert not missing, f"verbs with no bad-input case: {missing}"


def _unreachable_database(tmp: Path) -> dict[str, str]:
    return {"FORGE_DATABASE_URL": "postgresql://forge@127.0.0.1:1/forge"}


def _symlinked_workspace_root(tmp: Path) -> dict[str, str]:
    (tmp / "real").mkdir()
    (tmp / "link").symlink_to(tmp / "real")
    return {"FORGE_WORKSPACE_ROOT": str(tmp / "link")}


def _script(tmp: Path) -> Path:
    (tmp / "s.py").write_text("print(1)\n", encoding="utf-8")
    return tmp / "s.py"


# (id, environment, arguments, the code): a setup problem is named as one, not as bad usage.
SETUP_CASES = [
    ("events-list-no-database", _unreachable_database, ["events", "list"], ErrorCode.STORE_ERROR),
    ("skills-list-no-database", _unreachable_database, ["skills", "list"], ErrorCode.STORE_ERROR),
    (
        "sandbox-exec-symlinked-root",
        _symlinked_workspace_root,
        lambda tmp: ["sandbox", "exec", _script(tmp)],
        ErrorCode.WORKSPACE_VIOLATION,
    ),
]


@pytest.mark.parametrize(
    ("env", "args", "code"), [c[1:] for c in SETUP_CASES], ids=[c[0] for c in SETUP_CASES]
)
def test_a_setup_problem_has_its_own_code(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env, args: Args, code: ErrorCode
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in env(tmp_path).items():
        monkeypatch.setenv(name, value)
    argv = args(tmp_path) if callable(args) else args
    assert_one_error_line(cli(*argv), code, "")


async def test_a_run_no_worker_answers_is_worker_unavailable(
    cli, temporal_env, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running run whose task queue no worker polls cannot be queried: WORKER_UNAVAILABLE."""
    import asyncio
    from datetime import timedelta

    from schemas import names
    from workers.services import run_reads

    monkeypatch.setattr(run_reads, "_QUERY_TIMEOUT", timedelta(seconds=1))  # no answer is coming

    run_id = f"run-noworker-{task_queue[-8:]}"
    handle = await temporal_env.client.start_workflow(
        names.WORKFLOW, id=run_id, task_queue=f"{task_queue}-unpolled"
    )
    try:
        for verb in (["status", run_id], ["budget", "show", run_id]):
            result = await asyncio.to_thread(cli, *verb)
            assert_one_error_line(result, ErrorCode.WORKER_UNAVAILABLE, run_id)
    finally:
        await handle.terminate("test over")
