"""Every diagnostic code the compiler emits, each from a minimal plan, located exactly.

`CASES` is the single table: every entry is a plan that must be rejected with one specific
diagnostic (code, step_key, slot, field and the offending value in its message).
`test_every_code_has_a_case` fails when DiagnosticCode grows a code without a case here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, get_args

import pytest

from compiler.plan.context import CompileContext, ProfileLayers
from schemas.diagnostics import Diagnostic, DiagnosticCode
from schemas.profile import SkillPolicy
from tests.compiler.conftest import _profiles, diagnostics_of, make_ctx
from tests.compiler.plans import FAIL_CLOSED, inp, output, plan, rows_step, step

# Codes no plan can trigger; each must be explained in the report. None so far.
UNREACHABLE: frozenset[str] = frozenset()

TIME_ENTRIES_CSV = {
    "name": "time_entries",
    "path": "input/time_entries.csv",
    "entity_schema_id": "billing.time_entry",
    "kind_key": "table.csv",
}


def tiny_profile_ctx(max_steps: int) -> CompileContext:
    """A run-level execution profile 'tiny' (the default one with a small max_steps)."""
    layers = _profiles()
    base = layers.builtin["default"]
    budgets = base.budgets.model_copy(update={"max_steps": max_steps})
    tiny = base.model_copy(update={"profile_id": "tiny", "budgets": budgets})
    return make_ctx(
        "tiny",
        ProfileLayers(builtin=layers.builtin, workspace=layers.workspace, run={"tiny": tiny}),
    )


def deprecated_skill_ctx() -> CompileContext:
    """The real library with csv-profile marked deprecated."""
    ctx = make_ctx()
    skills = dict(ctx.library.skills)
    skills["csv-profile"] = skills["csv-profile"].model_copy(update={"deprecated": True})
    library = ctx.library.model_copy(update={"skills": skills})
    return ctx.model_copy(update={"library": library})


def skill_policy_ctx(policy: dict[str, Any]) -> Callable[[], CompileContext]:
    """A run-level profile 'pinned' (the default one) with the given skill policy."""

    def build() -> CompileContext:
        layers = _profiles()
        base = layers.builtin["default"]
        pinned = base.model_copy(
            update={"profile_id": "pinned", "skill_policy": SkillPolicy.model_validate(policy)}
        )
        return make_ctx(
            "pinned",
            ProfileLayers(
                builtin=layers.builtin, workspace=layers.workspace, run={"pinned": pinned}
            ),
        )

    return build


@dataclass(frozen=True)
class Case:
    """A plan that must be rejected, and where the one expected diagnostic points."""

    id: str
    code: DiagnosticCode
    raw: dict[str, Any]
    step_key: str | None
    field: str | None
    value: str  # the offending value; the message must contain it
    slot: str | None = None
    profile_ref: str | None = None
    ctx: Callable[[], CompileContext] | None = None
    in_hint: tuple[str, ...] = field(default_factory=tuple)  # extra text the hint must contain


def _producer_consumer(out: dict[str, Any], in_: dict[str, Any], **consumer: Any) -> dict[str, Any]:
    return plan(
        step("a", abstract_outputs=[out]),
        step("b", depends_on=["a"], abstract_inputs=[in_], **consumer),
    )


CASES: list[Case] = [
    Case(
        "too-large-mission",
        "E_TOO_LARGE",
        {**plan(step("a")), "mission": "m" * 20_001},
        step_key=None,
        field="mission",
        value="20,001 characters; at most 20,000",
    ),
    Case(
        "too-large-step-code",
        "E_TOO_LARGE",
        plan(step("a", code="x" * (256 * 1024 + 1))),
        step_key="a",
        field="code",
        value="at most 262,144 characters",
    ),
    Case(
        "too-large-step-list",
        "E_TOO_LARGE",
        plan(step("a", input_file_paths=[f"input/{i}.csv" for i in range(1_001)])),
        step_key="a",
        field="input_file_paths",
        value="1,001 entries; at most 1,000",
    ),
    Case(
        "too-large-document",
        "E_TOO_LARGE",
        plan(*(step(f"s{i}", code="x" * 200_000) for i in range(25))),
        step_key=None,
        field="plan",
        value="at most 4,194,304",
    ),
    Case(
        "schema-wrong-type",
        "E_SCHEMA",
        plan(step("a", depends_on="a")),
        step_key="a",
        field="depends_on",
        value="'a'",
    ),
    Case(
        "schema-missing-objective",
        "E_SCHEMA",
        plan({k: v for k, v in step("a").items() if k != "objective"}),
        step_key="a",
        field="objective",
        value="Field required",
    ),
    Case(
        "schema-unknown-field",
        "E_SCHEMA",
        plan(step("a", colour="blue")),
        step_key="a",
        field="colour",
        value="'blue'",
    ),
    Case(
        "schema-no-step-key",
        "E_SCHEMA",
        plan({k: v for k, v in step("a").items() if k != "step_key"}),
        step_key="steps[0]",
        field="step_key",
        value="Field required",
    ),
    Case(
        "duplicate-step",
        "E_DUPLICATE_STEP",
        plan(step("a"), step("a", out="output/a2.json")),
        step_key="a",
        field="step_key",
        value="'a'",
    ),
    Case(
        "unknown-dependency",
        "E_UNKNOWN_DEPENDENCY",
        plan(step("a", depends_on=["ghost"])),
        step_key="a",
        field="depends_on[0]",
        value="'ghost'",
    ),
    Case(
        "unknown-from-step",
        "E_UNKNOWN_DEPENDENCY",
        plan(step("a", abstract_inputs=[inp("findings", from_step="ghost")])),
        step_key="a",
        slot="findings",
        field="abstract_inputs[0].from_step",
        value="'ghost'",
    ),
    Case(
        "self-cycle",
        "E_CYCLE",
        plan(step("a", depends_on=["a"])),
        step_key="a",
        field="depends_on[0]",
        value="a -> a",
    ),
    Case(
        "two-step-cycle",
        "E_CYCLE",
        plan(step("a", depends_on=["b"]), step("b", out="output/b.json", depends_on=["a"])),
        step_key="a",
        field="depends_on",
        value="a -> b -> a",
    ),
    Case(
        "no-outputs",
        "E_NO_OUTPUTS",
        plan(step("a", expected_outputs=[])),
        step_key="a",
        field="expected_outputs",
        value="code step",
    ),
    Case(
        "evaluate-no-outputs",
        "E_NO_OUTPUTS",
        plan(step("a", kind="evaluate", expected_outputs=[])),
        step_key="a",
        field="expected_outputs",
        value="evaluate step",
    ),
    Case(
        "bad-extension",
        "E_BAD_EXTENSION",
        plan(step("a", out="output/a.xyz")),
        step_key="a",
        field="expected_outputs[0].path",
        value="'output/a.xyz'",
    ),
    Case(
        "bad-extension-run-input",
        "E_BAD_EXTENSION",
        plan(step("a"), run_inputs=[{"name": "x", "path": "input/x.weird"}]),
        step_key=None,
        field="run_inputs[0]",
        value="'input/x.weird'",
    ),
    Case(
        "path-absolute",
        "E_PATH_ESCAPE",
        plan(step("a", out="/etc/a.json")),
        step_key="a",
        field="expected_outputs[0].path",
        value="'/etc/a.json'",
        in_hint=("output/",),
    ),
    Case(
        "path-dotdot",
        "E_PATH_ESCAPE",
        plan(step("a", out="output/../a.json")),
        step_key="a",
        field="expected_outputs[0].path",
        value="'output/../a.json'",
        in_hint=("output/",),
    ),
    Case(
        "path-empty-segment",
        "E_PATH_ESCAPE",
        plan(step("a", out="output//a.json")),
        step_key="a",
        field="expected_outputs[0].path",
        value="'output//a.json'",
    ),
    Case(
        "path-outside-output-roots",
        "E_PATH_ESCAPE",
        plan(step("a", out="tmp/a.json")),
        step_key="a",
        field="expected_outputs[0].path",
        value="'tmp/a.json'",
        in_hint=("output/", "work/"),
    ),
    Case(
        "path-output-into-input",
        "E_PATH_ESCAPE",
        plan(step("a", out="input/a.json")),
        step_key="a",
        field="expected_outputs[0].path",
        value="'input/a.json'",
    ),
    Case(
        "path-read-climbs",
        "E_PATH_ESCAPE",
        plan(step("a", input_file_paths=["../secrets.csv"])),
        step_key="a",
        field="input_file_paths[0]",
        value="'../secrets.csv'",
    ),
    Case(
        "path-abstract-input",
        "E_PATH_ESCAPE",
        plan(step("a", abstract_inputs=[inp("findings", path="/tmp/x.json")])),
        step_key="a",
        field="abstract_inputs[0].path",
        value="'/tmp/x.json'",
    ),
    Case(
        "path-run-input-outside-input",
        "E_PATH_ESCAPE",
        plan(step("a"), run_inputs=[{"name": "x", "path": "output/x.csv"}]),
        step_key=None,
        field="run_inputs[0].path",
        value="'output/x.csv'",
        in_hint=("input/",),
    ),
    Case(
        "duplicate-writer",
        "E_DUPLICATE_WRITER",
        plan(step("a"), step("b", out="output/a.json")),
        step_key="b",
        field="expected_outputs[0].path",
        value="'output/a.json'",
    ),
    Case(
        "duplicate-writer-after-normalization",
        "E_DUPLICATE_WRITER",
        plan(step("a"), step("b", out="./output/a.json")),
        step_key="b",
        field="expected_outputs[0].path",
        value="'output/a.json'",
    ),
    Case(
        "duplicate-run-input-name",
        "E_DUPLICATE_WRITER",
        plan(
            step("a"),
            run_inputs=[{"name": "x", "path": "input/x.csv"}, {"name": "x", "path": "input/y.csv"}],
        ),
        step_key=None,
        field="run_inputs[1].name",
        value="'x'",
    ),
    Case(
        "unknown-domain-pack",
        "E_UNKNOWN_PACK",
        plan(step("a", domain_pack_ids=["no-such-domain"])),
        step_key="a",
        field="domain_pack_ids",
        value="'no-such-domain'",
        in_hint=("billing-audit",),
    ),
    Case(
        "unknown-workflow-pack",
        "E_UNKNOWN_PACK",
        plan(step("a", workflow_pack_ids=["no-such-workflow"])),
        step_key="a",
        field="workflow_pack_ids",
        value="'no-such-workflow'",
        in_hint=("normalize-transform",),
    ),
    Case(
        "unknown-preferred-kind",
        "E_UNKNOWN_KIND",
        plan(step("a", abstract_outputs=[output("findings", None, "table.nope")])),
        step_key="a",
        slot="findings",
        field="abstract_outputs[0].preferred_kind_keys",
        value="'table.nope'",
        in_hint=("table.json_rows",),
    ),
    Case(
        "unknown-accepted-kind",
        "E_UNKNOWN_KIND",
        plan(
            rows_step("a"),
            step("b", depends_on=["a"], abstract_inputs=[inp("findings", None, "table.nope")]),
        ),
        step_key="b",
        slot="findings",
        field="abstract_inputs[0].accepted_kind_keys",
        value="'table.nope'",
    ),
    Case(
        "unknown-contract-kind",
        "E_UNKNOWN_KIND",
        plan(step("a", artifact_contracts={"output/a.json": {"kind_key": "table.nope"}})),
        step_key="a",
        field="artifact_contracts.output/a.json.kind_key",
        value="'table.nope'",
    ),
    Case(
        "unknown-run-input-kind",
        "E_UNKNOWN_KIND",
        plan(
            step("a"), run_inputs=[{"name": "x", "path": "input/x.csv", "kind_key": "table.nope"}]
        ),
        step_key=None,
        field="run_inputs[0]",
        value="'table.nope'",
    ),
    Case(
        "unknown-output-slot",
        "E_UNKNOWN_SLOT",
        plan(step("a", abstract_outputs=[output("bogus_slot")])),
        step_key="a",
        slot="bogus_slot",
        field="abstract_outputs[0].slot",
        value="'bogus_slot'",
        in_hint=("findings",),
    ),
    Case(
        "unknown-input-slot",
        "E_UNKNOWN_SLOT",
        plan(step("a", abstract_inputs=[inp("bogus_slot")])),
        step_key="a",
        slot="bogus_slot",
        field="abstract_inputs[0].slot",
        value="'bogus_slot'",
    ),
    Case(
        "unknown-output-entity",
        "E_UNKNOWN_ENTITY",
        plan(step("a", abstract_outputs=[output("findings", "billing.nope")])),
        step_key="a",
        slot="findings",
        field="abstract_outputs[0].entity_schema_id",
        value="'billing.nope'",
    ),
    Case(
        "unknown-input-entity",
        "E_UNKNOWN_ENTITY",
        plan(rows_step("a"), step("b", depends_on=["a"], abstract_inputs=[inp("findings", "x.y")])),
        step_key="b",
        slot="findings",
        field="abstract_inputs[0].entity_schema_id",
        value="'x.y'",
    ),
    Case(
        "unknown-run-input-entity",
        "E_UNKNOWN_ENTITY",
        plan(
            step("a"),
            run_inputs=[{"name": "x", "path": "input/x.csv", "entity_schema_id": "billing.nope"}],
        ),
        step_key=None,
        field="run_inputs[0].entity_schema_id",
        value="'billing.nope'",
    ),
    Case(
        "unknown-artifact-profile",
        "E_UNKNOWN_PROFILE",
        plan(
            step(
                "a",
                abstract_outputs=[
                    output(
                        "findings",
                        "billing.discrepancy_row",
                        "table.json_rows",
                        profile_id="billing.table.json_rows.nope.v1",
                    )
                ],
            )
        ),
        step_key="a",
        # The field names the expected output, not abstract_outputs[0].profile_id (see report).
        field="expected_outputs[0]",
        value="'billing.table.json_rows.nope.v1'",
    ),
    Case(
        "unknown-execution-profile",
        "E_UNKNOWN_PROFILE",
        plan(step("a")),
        step_key=None,
        field="profile",
        value="'no-such-profile'",
        profile_ref="no-such-profile",
        in_hint=("default", "strict-compliance"),
    ),
    Case(
        "unbound-no-producer",
        "E_UNBOUND_INPUT",
        plan(step("a", abstract_inputs=[inp("findings")])),
        step_key="a",
        slot="findings",
        field="abstract_inputs[0]",
        value="'findings'",
    ),
    Case(
        "unbound-producer-not-upstream",
        "E_UNBOUND_INPUT",
        plan(rows_step("a"), step("b", abstract_inputs=[inp("findings", "generic.rows")])),
        step_key="b",
        slot="findings",
        field="abstract_inputs[0]",
        value="'findings'",
        in_hint=("'a'", "depends_on"),
    ),
    Case(
        "unbound-path-not-upstream",
        "E_UNBOUND_INPUT",
        plan(
            rows_step("a"),
            step("b", abstract_inputs=[inp("findings", "generic.rows", path="output/a.json")]),
        ),
        step_key="b",
        slot="findings",
        field="abstract_inputs[0].path",
        value="'output/a.json'",
        in_hint=("'a'", "depends_on"),
    ),
    Case(
        "unbound-path-nobody-writes",
        "E_UNBOUND_INPUT",
        plan(step("a", abstract_inputs=[inp("findings", path="output/nowhere.json")])),
        step_key="a",
        slot="findings",
        field="abstract_inputs[0].path",
        value="'output/nowhere.json'",
    ),
    Case(
        "unbound-from-step-not-upstream",
        "E_UNBOUND_INPUT",
        plan(rows_step("a"), step("b", abstract_inputs=[inp("findings", from_step="a")])),
        step_key="b",
        slot="findings",
        field="abstract_inputs[0].from_step",
        value="'a'",
        in_hint=("depends_on",),
    ),
    Case(
        "unbound-input-file-path",
        "E_UNBOUND_INPUT",
        plan(step("a", input_file_paths=["input/missing.csv"])),
        step_key="a",
        field="input_file_paths[0]",
        value="'input/missing.csv'",
    ),
    Case(
        "unbound-input-file-path-not-upstream",
        "E_UNBOUND_INPUT",
        plan(step("a"), step("b", input_file_paths=["output/a.json"])),
        step_key="b",
        field="input_file_paths[0]",
        value="'output/a.json'",
        in_hint=("'a'",),
    ),
    Case(
        "ambiguous-binding",
        "E_AMBIGUOUS_BINDING",
        plan(
            rows_step("a"),
            rows_step("b"),
            step("c", depends_on=["a", "b"], abstract_inputs=[inp("findings", "generic.rows")]),
        ),
        step_key="c",
        slot="findings",
        field="abstract_inputs[0]",
        value="a:output/a.json, b:output/b.json",
        in_hint=("from_step",),
    ),
    Case(
        "ambiguous-transitive-binding",
        "E_AMBIGUOUS_BINDING",
        plan(
            rows_step("a"),
            rows_step("b"),
            step("mid", depends_on=["a", "b"]),
            step("c", depends_on=["mid"], abstract_inputs=[inp("findings", "generic.rows")]),
        ),
        step_key="c",
        slot="findings",
        field="abstract_inputs[0]",
        value="a:output/a.json, b:output/b.json",
    ),
    Case(
        "ambiguous-output-slot",
        "E_AMBIGUOUS_BINDING",
        plan(
            step(
                "a",
                expected_outputs=[{"path": "output/a.json"}, {"path": "output/b.json"}],
                abstract_outputs=[output("findings", None, "object.json")],
            )
        ),
        step_key="a",
        slot="findings",
        field="abstract_outputs[0].path",
        value="2 of the 2",
        in_hint=("output/a.json", "output/b.json"),
    ),
    Case(
        "incompatible-entities",
        "E_INCOMPATIBLE_BINDING",
        _producer_consumer(
            output("normalized_rows", "billing.time_entry", "table.json_rows"),
            inp("normalized_rows", "billing.rate_card", "table.json_rows"),
        ),
        step_key="b",
        slot="normalized_rows",
        field="abstract_inputs[0]",
        value="billing.time_entry cannot feed billing.rate_card",
    ),
    Case(
        "incompatible-no-adapter",
        "E_INCOMPATIBLE_BINDING",
        _producer_consumer(
            output("normalized_rows", "billing.time_entry", "table.json_rows"),
            inp("normalized_rows", "billing.time_entry", "table.parquet"),
        ),
        step_key="b",
        slot="normalized_rows",
        field="abstract_inputs[0]",
        value="table.parquet",
    ),
    Case(
        "policy-unknown",
        "E_POLICY",
        plan(step("a", policy_profile_id="strict.nope.v1")),
        step_key="a",
        field="policy_profile_id",
        value="'strict.nope.v1'",
        in_hint=("strict.fail-closed.v1",),
    ),
    Case(
        "policy-adapter-fail-closed",
        "E_POLICY",
        plan(
            step(
                "a",
                policy_profile_id=FAIL_CLOSED,
                abstract_inputs=[
                    inp(
                        "raw_files",
                        "billing.time_entry",
                        "table.json_rows",
                        path="input/time_entries.csv",
                    )
                ],
            ),
            run_inputs=[TIME_ENTRIES_CSV],
        ),
        step_key="a",
        slot="raw_files",
        field="abstract_inputs[0]",
        value="strict.fail-closed.v1",
        in_hint=("policy_profile_id",),
    ),
    Case(
        "policy-generic-binding",
        "E_POLICY",
        _producer_consumer(
            output("normalized_rows", None, "table.json_rows"),
            inp("normalized_rows", "billing.time_entry", "table.json_rows"),
        ),
        step_key="b",
        slot="normalized_rows",
        field="abstract_inputs[0]",
        value="strict.allow-normalizers.v1",
    ),
    Case(
        "policy-generic-entity-to-domain-entity",
        "E_POLICY",
        _producer_consumer(
            output("normalized_rows", "generic.rows", "table.json_rows"),
            inp("normalized_rows", "billing.time_entry", "table.json_rows"),
        ),
        step_key="b",
        slot="normalized_rows",
        field="abstract_inputs[0]",
        value="generic.rows",
    ),
    Case(
        "missing-code",
        "E_MISSING_CODE",
        plan(step("a", kind="adapter")),
        step_key="a",
        field="code",
        value="adapter step",
    ),
    Case(
        "undeclared-artifact-contract",
        "E_UNDECLARED_OUTPUT",
        plan(step("a", artifact_contracts={"output/zzz.json": {"format": "json"}})),
        step_key="a",
        field="artifact_contracts.output/zzz.json",
        value="'output/zzz.json'",
    ),
    Case(
        "undeclared-abstract-output-path",
        "E_UNDECLARED_OUTPUT",
        plan(step("a", abstract_outputs=[output("findings", path="output/zzz.json")])),
        step_key="a",
        slot="findings",
        field="abstract_outputs[0].path",
        value="'output/zzz.json'",
        in_hint=("output/a.json",),
    ),
    Case(
        "kind-vs-extension",
        "E_KIND_MISMATCH",
        plan(step("a", artifact_contracts={"output/a.json": {"kind_key": "report.html"}})),
        step_key="a",
        field="expected_outputs[0].path",
        value="report.html",
    ),
    Case(
        "preferred-kinds-vs-extension",
        "E_KIND_MISMATCH",
        plan(step("a", abstract_outputs=[output("findings", None, "report.html")])),
        step_key="a",
        field="expected_outputs[0].path",
        value="'output/a.json'",
    ),
    Case(
        "format-vs-kind",
        "E_KIND_MISMATCH",
        plan(step("a", artifact_contracts={"output/a.json": {"format": "csv"}})),
        step_key="a",
        field="artifact_contracts.output/a.json.format",
        value="'csv'",
    ),
    Case(
        "profile-vs-entity",
        "E_KIND_MISMATCH",
        plan(
            step(
                "a",
                abstract_outputs=[
                    output(
                        "findings",
                        "billing.discrepancy_row",
                        "table.json_rows",
                        profile_id="billing.table.json_rows.time_entries.v1",
                    )
                ],
            )
        ),
        step_key="a",
        field="expected_outputs[0]",
        value="billing.table.json_rows.time_entries.v1",
    ),
    Case(
        "too-many-steps",
        "E_TOO_MANY_STEPS",
        plan(rows_step("a"), rows_step("b", deps=("a",))),
        step_key=None,
        field="steps",
        value="max_steps 1",
        ctx=lambda: tiny_profile_ctx(1),
        in_hint=("max_steps",),
    ),
    Case(
        "too-many-steps-counts-adapters",
        "E_TOO_MANY_STEPS",
        plan(
            step(
                "a",
                abstract_inputs=[
                    inp(
                        "raw_files",
                        "billing.time_entry",
                        "table.json_rows",
                        path="input/time_entries.csv",
                    )
                ],
            ),
            run_inputs=[TIME_ENTRIES_CSV],
        ),
        step_key=None,
        field="steps",
        value="2 steps (adapters included)",
        ctx=lambda: tiny_profile_ctx(1),
    ),
    Case(
        "invoke-unknown-skill",
        "E_UNKNOWN_SKILL",
        plan(step("a", invoke_skill="no-such-skill")),
        step_key="a",
        field="invoke_skill",
        value="no-such-skill",
        in_hint=("csv-profile",),
    ),
    Case(
        "invoke-deprecated-skill",
        "E_SKILL_DEPRECATED",
        plan(step("a", invoke_skill="csv-profile")),
        step_key="a",
        field="invoke_skill",
        value="csv-profile",
        ctx=deprecated_skill_ctx,
    ),
    Case(
        "skill-schema-needs-json-output",
        "E_SKILL_OUTPUT",
        plan(step("a", out="output/a.md", invoke_skill="csv-profile")),
        step_key="a",
        field="expected_outputs",
        value="csv-profile",
    ),
    Case(
        "evaluation-bundle-names-an-unread-file",
        "E_EVALUATION_BUNDLE",
        plan(
            step(
                "judge",
                kind="evaluate",
                out="output/judge.verdict.json",
                evaluation={"derived": ["output/report.md"], "rubric": ["cites the source"]},
            )
        ),
        step_key="judge",
        field="evaluation.derived[0]",
        value="output/report.md",
        in_hint=("input_file_paths",),
    ),
    Case(
        "required-skill-missing",
        "E_REQUIRED_SKILL_MISSING",
        plan(step("a")),
        step_key=None,
        field="skill_policy.pinned_skills[0]",
        value="no-such-skill",
        ctx=skill_policy_ctx(
            {"pinned_skills": [{"skill_id": "no-such-skill", "priority": "required"}]}
        ),
        in_hint=("forge skills register", "csv-profile"),
    ),
    Case(
        "skill-denied-and-pinned",
        "E_SKILL_DENIED_AND_PINNED",
        plan(step("a")),
        step_key=None,
        field="skill_policy.pinned_skills[0]",
        value="csv-profile",
        ctx=skill_policy_ctx(
            {
                "pinned_skills": [{"skill_id": "csv-profile", "priority": "preferred"}],
                "denied_skills": ["csv-profile"],
            }
        ),
        in_hint=("denied_skills",),
    ),
]


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
