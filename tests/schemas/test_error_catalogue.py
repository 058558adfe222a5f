"""One error tree: every code raised is catalogued and documented; every error is a ForgeError.

The walk reads each module's syntax tree under the five packages and collects the codes at
raise sites: `ErrorCode.X` members, `ApplicationError(type=...)`, `Diagnostic(code=...)`, the
first argument (or `code=`/`failure_class=`) of every Forge error class and code-taking helper,
and, as a net for codes passed around as plain strings (bridge replies, tuples), every
UPPER_SNAKE string literal: each must be a catalogue code, a diagnostic code, or a name listed
in NOT_CODES with the reason it is not one. An error class that only sets a code must be caught
by name somewhere in product code (or be listed in CODE_ONLY_KEPT with why it stays).
"""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path
from typing import get_args

import pytest

from schemas.diagnostic_codes import DIAGNOSTICS, TEMPLATE_REASONS, TemplateReason
from schemas.diagnostics import DiagnosticCode
from schemas.error_catalogue import CATALOGUE
from schemas.error_codes import ErrorCode, parse_code
from schemas.errors import ForgeError, Where
from schemas.models import RETRYABLE_MODEL_FAILURES, ModelFailureClass
from schemas.run import StepError
from schemas.typesystem import FailureClass
from workflows import policies

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("activities", "compiler", "schemas", "workers", "workflows")
# Programs that run inside the sandbox, not in Forge's processes: they import nothing of Forge
# (stdlib only), so their exceptions cannot derive from ForgeError. Their codes still count.
SANDBOX_SIDE = ROOT / "activities" / "sandbox" / "client"
SEPARATE_PROGRAM_EXCEPTIONS = {
    "BridgeError": "forge_bridge.py runs inside the sandbox as its own program (stdlib only)",
    "ParameterError": "forge_bridge.py's BridgeError for forge_bridge.param (stdlib only)",
}
# Modules that also run as programs of their own, without Forge's other packages.
STANDALONE_EXCEPTIONS = {
    "StepRuntimeError": "step_runtime.py runs as `python -m activities.sandbox.step_runtime "
    "build` (make runtime) with only its own files; the runner raises SandboxUnavailable for it",
}
# UPPER_SNAKE literals that are not error codes, by prefix or name, each with why.
NOT_CODES = {
    "FORGE_": "environment variable names (workers/settings.py)",
    "ANTHROPIC_": "environment variable names (workers/settings.py, activities/models/config.py)",
    "TEMPORAL_": "Temporal's own environment variable names (workers/settings_temporal.py)",
    "XDG_": "the XDG base directory variables (workers/settings_temporal.py)",
    "AWS_": "the AWS SDK's environment variable names (workers/process/locals3.py)",
    "OTEL_": "OpenTelemetry's standard environment variable names (workers/settings_telemetry.py)",
    "PG_VERSION": "a PostgreSQL data directory's version file (workers/process/localpg.py)",
    "RLIMIT_": "resource limit names of the `resource` module (activities/sandbox/limits.py)",
    "FILL_ENUM": "an imprinting token kind",
    "OPTIONAL_ENUM": "an imprinting token kind",
    "KEY_ENUM": "an imprinting token kind",
    "SKILL_DIR": "a CLI metavar",
    "STEP_KEY": "a CLI metavar",
}
_UPPER_SNAKE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$")
FAILURE_VALUES = {c.value for c in ErrorCode}
# Helpers whose first argument (or failure_class=) is a failure code.
CODE_HELPERS = {"step_failure", "error_reply", "record_refusal", "_refusal", "_refuse"}
CODE_HELPERS |= set(SEPARATE_PROGRAM_EXCEPTIONS)  # the in-sandbox client's BridgeError(code, ...)


def _modules() -> list[Path]:
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]


def _trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8")) for p in _modules()}


TREES = _trees()


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _class_bases() -> dict[str, tuple[set[str], Path]]:
    found: dict[str, tuple[set[str], Path]] = {}
    for path, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {b for b in (_name(x) for x in node.bases) if b}
                found[node.name] = (bases, path)
    return found


CLASSES = _class_bases()
_BUILTIN_EXCEPTIONS = {
    n
    for n in dir(builtins)
    if isinstance(getattr(builtins, n), type) and issubclass(getattr(builtins, n), BaseException)
}


def _derives(name: str, target: str, seen: frozenset[str] = frozenset()) -> bool:
    if name == target:
        return True
    if name not in CLASSES or name in seen:
        return False
    return any(_derives(b, target, seen | {name}) for b in CLASSES[name][0])


def _is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
    if name in _BUILTIN_EXCEPTIONS or name == "ForgeError":
        return True
    if name not in CLASSES or name in seen:
        return False
    return any(_is_exception(b, seen | {name}) for b in CLASSES[name][0])


FORGE_ERRORS = {n for n in CLASSES if _derives(n, "ForgeError")} | {"ForgeError"}


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _raise_site_codes() -> dict[str, set[str]]:
    """Codes at raise sites, by vocabulary ('failure', 'diagnostic', 'template') -> 'code@where'."""
    sites: dict[str, set[str]] = {"failure": set(), "diagnostic": set(), "template": set()}
    for path, tree in TREES.items():
        rel = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in {"ErrorCode", "C"}
            ):
                if not node.attr.startswith("_") and node.attr not in {"value", "name"}:
                    sites["failure"].add(f"{node.attr}@{rel}:{node.lineno}#member")
            if not isinstance(node, ast.Call):
                continue
            callee = _name(node.func)
            kw = {k.arg: k.value for k in node.keywords}
            first = _literal(node.args[0]) if node.args else None
            where = f"{rel}:{node.lineno}"
            if callee == "ApplicationError" and _literal(kw.get("type")):
                sites["failure"].add(f"{_literal(kw['type'])}@{where}")
            elif callee == "Diagnostic" and _literal(kw.get("code")):
                sites["diagnostic"].add(f"{_literal(kw['code'])}@{where}")
            elif callee == "TemplateError" and first is not None:
                sites["template"].add(f"{first}@{where}")
            elif callee in FORGE_ERRORS or callee in CODE_HELPERS:
                for value in (first, _literal(kw.get("code")), _literal(kw.get("failure_class"))):
                    if value is not None and _UPPER_SNAKE.match(value):
                        sites["failure"].add(f"{value}@{where}")
    return sites


SITES = _raise_site_codes()


def _code(site: str) -> str:
    return site.split("@", 1)[0]


def test_the_walk_finds_raise_sites_of_every_kind():
    # The walk must see the call shapes it checks, or the completeness tests prove nothing.
    assert {_code(s) for s in SITES["diagnostic"]} >= {"E_CYCLE", "E_SCHEMA"}
    assert {_code(s) for s in SITES["template"]} >= {"unfilled", "limit"}
    failure = {_code(s) for s in SITES["failure"]}
    assert {"CODE_ERROR", "GATE_REJECTED", "PLAN_REJECTED", "BRIDGE_PROTOCOL"} <= failure
    assert "STORE_CONFLICT" in failure  # a member name (ErrorCode.STORE_CONFLICT)


def test_every_failure_code_raised_is_in_the_catalogue():
    names = set(ErrorCode.__members__)
    unknown = sorted(
        s
        for s in SITES["failure"]
        if (s.endswith("#member") and _code(s) not in names)
        or (not s.endswith("#member") and _code(s) not in FAILURE_VALUES)
    )
    assert not unknown, f"codes raised but not in schemas.error_codes.ErrorCode: {unknown}"


def test_every_diagnostic_and_template_reason_raised_is_documented():
    diagnostics = sorted(s for s in SITES["diagnostic"] if _code(s) not in DIAGNOSTICS)
    reasons = sorted(s for s in SITES["template"] if _code(s) not in TEMPLATE_REASONS)
    assert not diagnostics, f"diagnostic codes not in schemas.diagnostic_codes: {diagnostics}"
    assert not reasons, f"template reasons not in TEMPLATE_REASONS: {reasons}"


def test_every_code_shaped_literal_is_a_code_or_named_as_not_one():
    stray = []
    for path, tree in TREES.items():
        exported = {
            id(c)
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
            for c in ast.walk(n.value)
        }
        for node in ast.walk(tree):
            value = _literal(node) if isinstance(node, ast.Constant) else None
            if value is None or not _UPPER_SNAKE.match(value) or id(node) in exported:
                continue
            if value in FAILURE_VALUES or value in DIAGNOSTICS:
                continue
            if any(value.startswith(p) for p in NOT_CODES):
                continue
            stray.append(f"{value} at {path.relative_to(ROOT)}:{node.lineno}")
    assert not stray, f"catalogue these codes (or list them in NOT_CODES): {stray}"


def test_every_exception_class_derives_from_forge_error():
    outside = []
    for name, (_, path) in CLASSES.items():
        if not _is_exception(name) or name in FORGE_ERRORS:
            continue
        if path.is_relative_to(SANDBOX_SIDE) and name in SEPARATE_PROGRAM_EXCEPTIONS:
            continue
        if name in STANDALONE_EXCEPTIONS:
            continue
        outside.append(f"{name} ({path.relative_to(ROOT)})")
    assert not outside, f"exception classes that do not derive from ForgeError: {outside}"


def _code_only(node: ast.ClassDef) -> bool:
    """A class whose body is a docstring and `code = ...` (or less): nothing a code does not say."""
    for stmt in node.body:
        if isinstance(stmt, ast.Pass) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            continue
        targets = (
            stmt.targets
            if isinstance(stmt, ast.Assign)
            else [stmt.target]
            if isinstance(stmt, ast.AnnAssign)
            else []
        )
        if not targets or any(not (isinstance(t, ast.Name) and t.id == "code") for t in targets):
            return False
    return True


def _caught_by_name() -> set[str]:
    """Class names product code selects errors by: except, isinstance/issubclass, a FastAPI
    exception_handler, workflow_failure_exception_types, and the keys of a class-keyed dict."""
    names: set[str] = set()

    def add(node: ast.expr | None) -> None:
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            for element in node.elts:
                add(element)
        elif node is not None and (name := _name(node)) is not None:
            names.add(name)

    for tree in TREES.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler):
                add(node.type)
            elif isinstance(node, ast.Call) and node.args:
                callee = _name(node.func)
                if callee in {"isinstance", "issubclass"} and len(node.args) == 2:
                    add(node.args[1])
                elif callee == "exception_handler":
                    add(node.args[0])
            elif isinstance(node, ast.keyword) and node.arg == "workflow_failure_exception_types":
                add(node.value)
            elif isinstance(node, ast.Dict):
                for key in node.keys:
                    add(key)
    return names


CAUGHT = _caught_by_name()
# Error classes that only set a code yet are kept although no product code catches them by
# name, each with why. Every other such class is a raise of ForgeError(message, code=...).
CODE_ONLY_KEPT = {
    "LedgerReplayError": "its name is recorded: when artifact.evaluate's replay fails inside a "
    "bridge call, the bridge records TOOL_CRASHED '<tool> failed: LedgerReplayError: ...' "
    "(activities/sandbox/bridge.py names the class of a crash) in the tool.called event",
}


def test_the_catch_walk_sees_every_shape():
    # except, a tuple in except, isinstance, exception_handler, workflow_failure_exception_types
    assert {"StoreError", "SkillNotRegistered", "NotRegularFileError", "RunFailure"} <= CAUGHT
    assert "CompilerError" in CAUGHT and "ForgeError" in CAUGHT


def test_every_error_class_that_only_sets_a_code_is_caught_by_name():
    # A class of its own is for a caller that catches it by name (or for data it carries);
    # one that only names a code is a second spelling of that code: raise ForgeError(message,
    # code=ErrorCode.X) and let callers, the API and the CLI read the code.
    idle = []
    for path, tree in TREES.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or node.name not in FORGE_ERRORS:
                continue
            if node.name == "ForgeError" or not _code_only(node) or node.name in CAUGHT:
                continue
            if node.name not in CODE_ONLY_KEPT:
                idle.append(f"{node.name} ({path.relative_to(ROOT)}:{node.lineno})")
    assert not idle, (
        "error classes that only set a code and that no product code catches by name; raise "
        f"ForgeError(message, code=ErrorCode.X) instead: {idle}"
    )
    stale = [n for n in CODE_ONLY_KEPT if n not in FORGE_ERRORS or n in CAUGHT]
    assert not stale, f"CODE_ONLY_KEPT names classes that are gone or caught by name: {stale}"


def test_application_error_is_built_in_one_place():
    builders = sorted(
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _name(node.func) == "ApplicationError"
    )
    assert builders and all(b.startswith("activities/errors.py:") for b in builders), builders


def test_catalogue_documents_every_code():
    assert set(CATALOGUE) == set(ErrorCode)
    for code, entry in CATALOGUE.items():
        assert entry.meaning.endswith(".") and entry.hint.endswith("."), code
        assert len(entry.meaning) > 15 and len(entry.hint) > 10, code
    # Values are persisted Temporal types: UPPER_SNAKE, except the three recorded class names.
    legacy = {c.value for c in ErrorCode if not _UPPER_SNAKE.match(c.value) and c.value != c.name}
    assert legacy == {"CompilerError", "ConflictError", "MissingCauseError"}
    assert all(c.value == c.name for c in ErrorCode if c.value not in legacy)


def test_diagnostic_and_template_sections_match_their_types():
    assert set(DIAGNOSTICS) == set(get_args(DiagnosticCode))
    assert set(TEMPLATE_REASONS) == set(get_args(TemplateReason))
    for meaning, hint in DIAGNOSTICS.values():
        assert meaning.endswith(".") and hint.endswith(".")


def test_older_vocabularies_are_members_of_the_catalogue():
    assert set(get_args(FailureClass)) <= FAILURE_VALUES
    assert set(get_args(ModelFailureClass)) <= FAILURE_VALUES
    model = {c.value for c, e in CATALOGUE.items() if e.category == "model" and e.retryable}
    assert RETRYABLE_MODEL_FAILURES <= model
    assert set(get_args(ModelFailureClass)) & model == RETRYABLE_MODEL_FAILURES
    for name in policies.NON_RETRYABLE_STEP_ERRORS:
        assert not CATALOGUE[ErrorCode(name)].retryable, name


def test_forge_error_line_has_code_where_and_hint():
    err = ForgeError("the approver refused", code=ErrorCode.GATE_REJECTED, where=Where(step="s1"))
    assert str(err) == "the approver refused"
    assert err.line() == (
        "GATE_REJECTED: the approver refused (step s1) — " + CATALOGUE[ErrorCode.GATE_REJECTED].hint
    )
    assert not err.retryable
    told = ForgeError("x", code=ErrorCode.MODEL_TIMEOUT, hint="wait", retryable=False)
    assert told.line() == "MODEL_TIMEOUT: x — wait" and not told.retryable
    assert str(Where(file="plan.json", line=3, field="steps")) == "plan.json:3, field steps"


@pytest.mark.parametrize(
    ("recorded", "code"),
    [
        ("CODE_ERROR", ErrorCode.CODE_ERROR),
        ("KeyError", ErrorCode.ERROR),
        ("ERROR", ErrorCode.ERROR),
    ],
)
def test_recorded_failure_types_read_back_as_codes(recorded: str, code: ErrorCode):
    assert parse_code(recorded) is code
    assert StepError(failure_class=recorded, message="m").failure_class is code


def test_no_hint_the_api_answers_with_names_a_cli_flag():
    """Issue 35 §3: a hint that names a flag has an `api_hint` the API answers with instead."""
    cli_only = {ErrorCode.USAGE_INVALID}  # a command line's own mistakes: never an API answer
    flagged = [
        code.name
        for code, entry in CATALOGUE.items()
        if code not in cli_only and "--" in (entry.api_hint or entry.hint)
    ]
    assert flagged == []
    error = ForgeError("cron '@every 1h' is an interval", code=ErrorCode.SCHEDULE_INVALID)
    assert error.worded("cli")[1] == CATALOGUE[ErrorCode.SCHEDULE_INVALID].hint
    assert error.worded("api")[1] == CATALOGUE[ErrorCode.SCHEDULE_INVALID].api_hint
    told = ForgeError("x", code=ErrorCode.SCHEDULE_INVALID, hint="a hint of its own")
    assert told.worded("api")[1] == "a hint of its own"  # a raiser's own hint is kept
