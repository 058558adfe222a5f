"""`forge errors`, docs/errors.md, the CLI's one-line ForgeError, and the one converter."""

from pathlib import Path

import pydantic
import pytest
from temporalio.api.failure.v1 import Failure
from temporalio.converter import default
from temporalio.exceptions import ApplicationErrorCategory
from typer.testing import CliRunner

from activities.errors import ForgeFailureConverter, step_failure, to_application_error
from activities.store.errors import ConflictError, MissingCauseError
from compiler.errors import CompilerError
from schemas.diagnostics import Diagnostic
from schemas.error_catalogue import CATALOGUE
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError, Where
from workers import cli
from workers.cli import app
from workers.cli.errors import render_markdown
from workers.settings import SettingsError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


def test_docs_errors_md_matches_the_catalogue():
    assert DOCS.read_text(encoding="utf-8") == render_markdown(), (
        "docs/errors.md is stale: run `forge errors --markdown > docs/errors.md`"
    )
    for code in ErrorCode:
        assert f"`{code.value}`" in render_markdown()


def test_errors_verb_lists_and_shows_codes():
    runner = CliRunner()
    listed = runner.invoke(app, ["errors"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert "GATE_REJECTED" in listed.output and "STORE_CONFLICT" in listed.output
    one = runner.invoke(app, ["errors", "gate_rejected"], env={"COLUMNS": "200"})
    assert one.exit_code == 0 and "GATE_REJECTED" in one.output
    assert "PLAN_REJECTED" not in one.output
    markdown = runner.invoke(app, ["errors", "--markdown"])
    assert markdown.exit_code == 0 and markdown.output == render_markdown()


def test_errors_verb_refuses_an_unknown_code():
    result = CliRunner().invoke(app, ["errors", "NO_SUCH_CODE"])
    assert result.exit_code == 2
    assert "no error code 'NO_SUCH_CODE'" in result.output


def test_main_prints_an_unhandled_forge_error_as_one_line(monkeypatch, capsys):
    def boom() -> None:
        raise SettingsError("FORGE_DEV_PORT", "x", "a port number")

    monkeypatch.setattr(cli, "app", boom)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2
    printed = capsys.readouterr().err.strip()
    assert printed.startswith("error: SETTINGS_INVALID: FORGE_DEV_PORT='x' is invalid")
    assert "\n" not in printed


def test_a_bad_setting_exits_2_with_its_code(monkeypatch):
    monkeypatch.setenv("FORGE_DEV_PORT", "not-a-port")
    result = CliRunner().invoke(app, ["runs"])
    assert result.exit_code == 2
    assert "SETTINGS_INVALID: FORGE_DEV_PORT" in result.output


def test_to_application_error_keeps_type_retry_details_and_hint():
    err = ForgeError(
        "no such gate", code=ErrorCode.DECISION_REFUSED, where=Where(step="s1"), details=[{"a": 1}]
    )
    app_err = to_application_error(err)
    assert app_err.type == "DECISION_REFUSED" and app_err.non_retryable
    assert app_err.message == "no such gate"
    assert app_err.details[0] == {"a": 1}
    assert app_err.details[1] == {
        "code": "DECISION_REFUSED",
        "hint": CATALOGUE[ErrorCode.DECISION_REFUSED].hint,
        "where": "step s1",
    }
    assert app_err.category == ApplicationErrorCategory.UNSPECIFIED


def test_store_errors_keep_the_types_retry_policies_name():
    assert to_application_error(ConflictError("dup")).type == "ConflictError"
    missing = to_application_error(MissingCauseError("step.completed.v1", "e1"))
    assert missing.type == "MissingCauseError" and missing.non_retryable


def test_a_rejected_plan_carries_every_diagnostic_first():
    diag = Diagnostic(code="E_CYCLE", message="a -> b -> a", hint="break it", step_key="a")
    app_err = to_application_error(CompilerError([diag]))
    assert app_err.type == "CompilerError" and app_err.non_retryable
    assert app_err.details[0] == diag.model_dump(mode="json")
    assert CompilerError([diag]).line().startswith("COMPILER_ERROR: 1 problem(s) in the plan:")


def test_a_step_failure_is_benign_with_its_attempt_first():
    app_err = step_failure(ErrorCode.CODE_ERROR, "boom", attempt=2, retryable=False, usage={})
    assert app_err.type == "CODE_ERROR" and app_err.non_retryable
    assert app_err.category == ApplicationErrorCategory.BENIGN
    assert app_err.details[0] == {"attempt": 2, "failure_class": "CODE_ERROR", "usage": {}}


class _Payload(pydantic.BaseModel):
    n: int


def _converted(exc: BaseException) -> Failure:
    failure = Failure()
    ForgeFailureConverter().to_failure(exc, default().payload_converter, failure)
    return failure


def test_the_failure_converter_converts_forge_errors_and_invalid_payloads():
    refused = _converted(ForgeError("over", code=ErrorCode.EXTENSION_REFUSED))
    assert refused.application_failure_info.type == "EXTENSION_REFUSED"
    assert refused.application_failure_info.non_retryable
    assert refused.message == "over"
    try:
        _Payload.model_validate({"n": "x"})
    except pydantic.ValidationError as exc:
        invalid = _converted(exc)
    assert invalid.application_failure_info.type == "INVALID_INPUT"
    assert not invalid.application_failure_info.non_retryable
    assert invalid.message.startswith("invalid _Payload: n: ")
