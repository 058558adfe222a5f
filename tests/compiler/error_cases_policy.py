"""Rejected plans: execution policies, contracts and skills."""

from __future__ import annotations

from tests.compiler.error_cases import (
    TIME_ENTRIES_CSV,
    Case,
    deprecated_skill_ctx,
    producer_consumer,
    skill_policy_ctx,
    tiny_profile_ctx,
)
from tests.compiler.plans import FAIL_CLOSED, inp, output, plan, rows_step, step

POLICY_CASES: list[Case] = [
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
        producer_consumer(
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
        producer_consumer(
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
