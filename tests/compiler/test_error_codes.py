"""Every diagnostic code the compiler emits, each from a minimal plan, located exactly.

`CASES` is the single table: every entry is a plan that must be rejected with one specific
diagnostic (code, step_key, slot, field and the offending value in its message).
`test_every_code_has_a_case` fails when DiagnosticCode grows a code without a case here.
"""

from __future__ import annotations

import re
from typing import get_args

import pytest

from schemas.diagnostics import Diagnostic, DiagnosticCode
from tests.compiler.conftest import diagnostics_of
from tests.compiler.error_cases import STRUCTURE_CASES, Case
from tests.compiler.error_cases_binding import BINDING_CASES
from tests.compiler.error_cases_policy import POLICY_CASES
from tests.compiler.plans import FAIL_CLOSED, inp, output, plan, step

# Codes no plan can trigger; each must be explained in the report. None so far.
UNREACHABLE: frozenset[str] = frozenset()

CASES: list[Case] = [*STRUCTURE_CASES, *BINDING_CASES, *POLICY_CASES]


def _diagnostics(case: Case) -> list[Diagnostic]:
    ctx = case.ctx() if case.ctx is not None else None
    return diagnostics_of(case.raw, case.profile_ref, ctx=ctx)


def _the_one(diags: list[Diagnostic], case: Case) -> Diagnostic:
    hits = [d for d in diags if d.code == case.code and d.field == case.field]
    assert len(hits) == 1, f"expected one {case.code} at {case.field}, got {diags}"
    return hits[0]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.code}-{c.id}" for c in CASES])
def test_diagnostic(case: Case) -> None:
    d = _the_one(_diagnostics(case), case)
    assert (d.step_key, d.slot, d.field) == (case.step_key, case.slot, case.field)
    assert d.message.strip() and d.hint.strip()
    assert case.value in d.message, d.message
    for text in case.in_hint:
        assert text in d.hint, d.hint


@pytest.mark.parametrize("code", sorted(get_args(DiagnosticCode)))
def test_every_code_has_a_case(code: str) -> None:
    """A new DiagnosticCode without a case in CASES (or an UNREACHABLE entry) fails here."""
    covered = {c.code for c in CASES}
    assert (code in covered) != (code in UNREACHABLE), f"{code}: add a Case to CASES"


def test_case_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def test_error_string_names_every_diagnostic() -> None:
    """str(CompilerError) is what a person reads: code and location of every problem."""
    from compiler.errors import CompilerError
    from tests.compiler.conftest import compile_raw

    raw = plan(step("a", out="/abs.json"), step("b", depends_on=["ghost"]))
    with pytest.raises(CompilerError) as info:
        compile_raw(raw)
    text = str(info.value)
    assert text.startswith(f"{len(info.value.diagnostics)} problem(s) in the plan:")
    assert "E_PATH_ESCAPE at a/expected_outputs[0].path" in text
    assert "E_UNKNOWN_DEPENDENCY at b/depends_on[0]" in text


def test_cycle_message_is_a_closed_path_of_real_edges() -> None:
    raw = plan(
        step("a", depends_on=["c"]),
        step("b", depends_on=["a"]),
        step("c", depends_on=["b"]),
        step("d", depends_on=["a"]),
    )
    [d] = [d for d in diagnostics_of(raw) if d.code == "E_CYCLE"]
    path = d.message.split(": ", 1)[1].split(" -> ")
    assert path[0] == path[-1] and len(path) == 4
    deps = {s["step_key"]: s["depends_on"] for s in raw["steps"]}
    assert all(v in deps[u] for u, v in zip(path, path[1:], strict=False))


def test_all_problems_of_pass_c_are_reported_at_once() -> None:
    raw = plan(
        step("a", out="/etc/passwd.json"),  # E_PATH_ESCAPE
        step("b", depends_on=["ghost"]),  # E_UNKNOWN_DEPENDENCY
        step("c", out="output/c.xyz"),  # E_BAD_EXTENSION
        step("d", out="output/c.xyz"),  # E_DUPLICATE_WRITER (+ E_BAD_EXTENSION)
        step("e", expected_outputs=[]),  # E_NO_OUTPUTS
        step("f", abstract_outputs=[output("bogus_slot")]),  # E_UNKNOWN_SLOT
        step("g", artifact_contracts={"output/zzz.json": {}}),  # E_UNDECLARED_OUTPUT
        step("h", kind="adapter"),  # E_MISSING_CODE
    )
    diags = diagnostics_of(raw)
    where = {(d.code, d.step_key) for d in diags}
    assert {
        ("E_PATH_ESCAPE", "a"),
        ("E_UNKNOWN_DEPENDENCY", "b"),
        ("E_BAD_EXTENSION", "c"),
        ("E_BAD_EXTENSION", "d"),
        ("E_DUPLICATE_WRITER", "d"),
        ("E_NO_OUTPUTS", "e"),
        ("E_UNKNOWN_SLOT", "f"),
        ("E_UNDECLARED_OUTPUT", "g"),
        ("E_MISSING_CODE", "h"),
    } <= where
    assert len({d.code for d in diags}) >= 8


def test_all_binding_problems_are_reported_at_once() -> None:
    raw = plan(
        step(
            "a",
            abstract_outputs=[output("normalized_rows", "billing.time_entry", "table.json_rows")],
        ),
        step(
            "b",
            depends_on=["a"],
            abstract_inputs=[
                inp("normalized_rows", "billing.rate_card", "table.json_rows"),  # incompatible
                inp("findings"),  # unbound
                inp("scores", "billing.nope"),  # unknown entity
            ],
            input_file_paths=["input/missing.csv"],  # unbound read
        ),
        step(
            "c",
            depends_on=["a"],
            policy_profile_id=FAIL_CLOSED,
            abstract_inputs=[inp("normalized_rows", "billing.time_entry", "table.csv")],  # policy
        ),
    )
    diags = diagnostics_of(raw)
    assert {(d.code, d.step_key, d.field) for d in diags} >= {
        ("E_INCOMPATIBLE_BINDING", "b", "abstract_inputs[0]"),
        ("E_UNBOUND_INPUT", "b", "abstract_inputs[1]"),
        ("E_UNKNOWN_ENTITY", "b", "abstract_inputs[2].entity_schema_id"),
        ("E_UNBOUND_INPUT", "b", "input_file_paths[0]"),
        ("E_POLICY", "c", "abstract_inputs[0]"),
    }


def test_all_resolution_problems_are_reported_at_once() -> None:
    raw = plan(
        step("a", domain_pack_ids=["nope-1"], workflow_pack_ids=["nope-2"]),
        step("b", policy_profile_id="nope.nope.v1"),
        step("c", domain_pack_ids=["billing-audit", "nope-3"]),
    )
    diags = diagnostics_of(raw)
    assert [(d.code, d.step_key, d.field) for d in diags] == [
        ("E_UNKNOWN_PACK", "a", "domain_pack_ids"),
        ("E_UNKNOWN_PACK", "a", "workflow_pack_ids"),
        ("E_POLICY", "b", "policy_profile_id"),
        ("E_UNKNOWN_PACK", "c", "domain_pack_ids"),
    ]
    assert "'nope-3'" in diags[-1].message


def test_a_plan_with_many_independent_problems_reports_them_all() -> None:
    """At least four different codes in one CompilerError (the brief's acceptance check)."""
    raw = plan(
        step("a", out="output/../escape.json"),
        step("b", depends_on=["ghost"]),
        step("c", out="output/c.unknownext"),
        step("d", abstract_outputs=[output("findings", "billing.nope", "table.nope")]),
        step("e", out="output/a.json", artifact_contracts={"output/other.json": {}}),
        run_inputs=[{"name": "x", "path": "/abs/x.csv"}],
    )
    codes = {d.code for d in diagnostics_of(raw)}
    assert codes >= {
        "E_PATH_ESCAPE",
        "E_UNKNOWN_DEPENDENCY",
        "E_BAD_EXTENSION",
        "E_UNKNOWN_ENTITY",
        "E_UNKNOWN_KIND",
        "E_UNDECLARED_OUTPUT",
    }


def test_graph_errors_stop_before_binding() -> None:
    """With a cycle, binding is not attempted: no E_UNBOUND_INPUT noise for the same plan."""
    raw = plan(
        step("a", depends_on=["b"], abstract_inputs=[inp("findings")]),
        step("b", depends_on=["a"]),
    )
    codes = [d.code for d in diagnostics_of(raw)]
    assert "E_CYCLE" in codes and "E_UNBOUND_INPUT" not in codes


def test_run_input_path_hint_example_is_under_input() -> None:
    """Regression: the hint's example path must itself be acceptable for a run input."""
    raw = plan(step("a"), run_inputs=[{"name": "x", "path": "output/x.csv"}])
    [d] = [d for d in diagnostics_of(raw) if d.code == "E_PATH_ESCAPE"]
    example = re.search(r"e\.g\. (\S+)", d.hint)
    assert example is not None and example.group(1).startswith("input/"), d.hint
