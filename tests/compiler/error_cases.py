"""The rejected plans of tests/compiler/test_error_codes.py, with the Case they are written as.

One table split by concern: the plan's shape, sizes, graph and paths here; the type library
and input bindings in error_cases_binding.py; policies, contracts and skills in
error_cases_policy.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compiler.plan.context import CompileContext, ProfileLayers
from schemas.diagnostics import DiagnosticCode
from schemas.profile import SkillPolicy
from tests.compiler.conftest import _profiles, make_ctx
from tests.compiler.plans import inp, plan, step

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


def producer_consumer(out: dict[str, Any], in_: dict[str, Any], **consumer: Any) -> dict[str, Any]:
    return plan(
        step("a", abstract_outputs=[out]),
        step("b", depends_on=["a"], abstract_inputs=[in_], **consumer),
    )


STRUCTURE_CASES: list[Case] = [
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
]
