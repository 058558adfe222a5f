"""Pass A with a model, pure parts: the planner template, the catalogue, intake of the answer.

The planner does not write free-form JSON: it fills the imprinting template of seed 000 §2.5,
rendered from PLANNER_SCHEMA with `render_template`. Its answer goes back through
`template_to_payload` and the validation ladder (the profile's planner_candidate phase, stages
that need no model), then through `parse_candidate` and a dry compile of passes B..E: whatever
fails on the way becomes the problems a repair call is given, within a bounded number of
repairs, after which the plan is rejected with every reason.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from compiler.errors import CompilerError
from compiler.imprint import (
    Header,
    TemplateError,
    parse_json,
    render_template,
    schema_to_template,
    template_to_payload,
)
from compiler.ladder import LadderContract, run_ladder
from compiler.ladder.runner import MODEL_STAGES, STAGE_IDS
from compiler.plan.context import CompileContext
from compiler.plan.params import declaration_problems, typed_declarations
from compiler.plan.parse import parse_candidate
from compiler.plan.pipeline import compile_plan
from compiler.typesystem.library import TypeLibrary
from schemas.plan import PARAM_NAME_PATTERN, PlannerCandidate, Scalar

MAX_REPAIRS = 2
_PATH = r"^(input|output)/[A-Za-z0-9._/-]+\.[A-Za-z0-9]+$"

# The planner-facing shape of forge.plan/1: what Pass A decides (seed 000 §2.5, §5.2), nothing
# the compiler freezes later (no contracts, paths beyond the declared ones, tools or skills).
PLANNER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["mission", "steps"],
    "additionalProperties": False,
    "properties": {
        "mission": {"type": "string", "minLength": 1, "description": "the objective in a line"},
        "parameters": {
            "type": "array",
            "maxItems": 30,
            "description": "values the user may change between runs (dates, thresholds, names)",
            "items": {
                "type": "object",
                "required": ["name", "type"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": PARAM_NAME_PATTERN},
                    "type": {"enum": ["string", "integer", "number", "boolean"]},
                    "default": {
                        "type": ["string", "integer", "number", "boolean"],
                        "description": "the value when a run gives none",
                    },
                    "description": {"type": "string"},
                },
            },
        },
        "steps": {
            "type": "array",
            "minItems": 1,
            "maxItems": 50,
            "items": {
                "type": "object",
                "required": [
                    "step_key",
                    "label",
                    "objective",
                    "expected_outputs",
                    "success_criteria",
                ],
                "additionalProperties": False,
                "properties": {
                    "step_key": {
                        "type": "string",
                        "pattern": r"^[a-z][a-z0-9_-]{0,39}$",
                        "description": "short unique id, lower case",
                    },
                    "label": {"type": "string", "description": "imperative verb phrase"},
                    "objective": {
                        "type": "string",
                        "description": "MUST/SHOULD/MAY objective of this step",
                    },
                    "depends_on": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "step_keys whose outputs this step reads",
                    },
                    "input_file_paths": {
                        "type": "array",
                        "items": {"type": "string", "pattern": _PATH},
                        "description": "run inputs (input/...) or earlier outputs (output/...)",
                    },
                    "expected_outputs": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["path", "role"],
                            "additionalProperties": False,
                            "properties": {
                                "path": {
                                    "type": "string",
                                    "pattern": r"^output/[A-Za-z0-9._/-]+\.[A-Za-z0-9]+$",
                                    "description": "output/<name>.<recognized extension>",
                                },
                                "role": {"enum": ["primary", "supporting", "report"]},
                            },
                        },
                    },
                    "success_criteria": {
                        "type": "string",
                        "description": "machine-checkable outcome",
                    },
                    "kind": {"enum": ["code", "evaluate"], "default": "code"},
                    "semantic_hints": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "domain_terms": {"type": "array", "items": {"type": "string"}},
                            "workflow_terms": {"type": "array", "items": {"type": "string"}},
                            "policy_terms": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
            },
        },
    },
}

_HEADER = Header(
    structure="A plan: mission and steps, each with outputs under output/",
    headline="Fill every token of the plan template",
    constraints=(
        "Replace tokens with values; keep every key; add no keys",
        "Paths: input/<name> for run inputs, output/<file> for outputs",
    ),
    next_actions=("Reply with the filled JSON only",),
)


def planner_template() -> str:
    """The text the planner fills: behavioral header, then the JSON skeleton."""
    return render_template(schema_to_template(PLANNER_SCHEMA), _HEADER)


def catalogue(library: TypeLibrary, *, limit: int = 60) -> str:
    """The compact pack catalogue the planner and resolver see: ids, titles, triggers."""
    lines = ["Domain packs:"]
    for p in sorted(library.domain_packs.values(), key=lambda p: p.domain_pack_id)[:limit]:
        lines.append(f"- {p.domain_pack_id}: {p.title} (triggers: {', '.join(p.triggers[:6])})")
    lines.append("Workflow packs:")
    for w in sorted(library.workflow_packs.values(), key=lambda w: w.workflow_pack_id)[:limit]:
        lines.append(f"- {w.workflow_pack_id}: {w.title} (triggers: {', '.join(w.triggers[:6])})")
    lines.append("Artifact kinds (by extension):")
    kinds = sorted(library.kinds.values(), key=lambda k: k.kind_key)[:limit]
    lines += [f"- {k.kind_key}: {', '.join(k.extensions)}" for k in kinds]
    return "\n".join(lines)


def candidate_from_answer(
    text: str,
    *,
    ctx: CompileContext,
    run_inputs: Sequence[dict[str, Any]],
    phase_mode: str,
    params: Mapping[str, Scalar] | None = None,
) -> tuple[PlannerCandidate | None, list[str]]:
    """The planner's filled template as a compiling candidate, or every problem found.

    `params` are the values the user started the run with (`--param NAME=VALUE`): each must be
    declared among the plan's parameters, and every declared default must be of its type.
    """
    try:
        filled = parse_json(text)
        payload = template_to_payload(filled, PLANNER_SCHEMA)
    except (TemplateError, ValueError) as exc:
        return None, [f"the answer is not a filled plan template: {exc}"]
    stages = [s for s in STAGE_IDS if s not in MODEL_STAGES]
    mode: Literal["block", "report"] = "block" if phase_mode == "block" else "report"
    ladder = run_ladder(
        payload, LadderContract(json_schema=PLANNER_SCHEMA), stages=stages, mode=mode
    )
    errors = [f"{f.path or '$'}: {f.message}" for f in ladder.findings if f.severity == "error"]
    if errors and (mode == "block" or ladder.payload is None):
        return None, errors
    document = dict(ladder.payload if ladder.payload is not None else payload)
    document["run_inputs"] = list(run_inputs)
    try:
        candidate = parse_candidate(document)
        problems = declaration_problems(candidate.parameters, sorted(params or {}))
        if problems:
            return None, problems
        candidate = candidate.model_copy(
            update={"parameters": typed_declarations(candidate.parameters)}
        )
        compile_plan(candidate, ctx=ctx)
    except CompilerError as exc:
        return None, [
            " ".join(
                x
                for x in (
                    f"[{d.code}]",
                    f"step {d.step_key}:" if d.step_key else "",
                    f"{d.field}:" if d.field else "",
                    d.message,
                    f"({d.hint})" if d.hint else "",
                )
                if x
            )
            for d in exc.diagnostics
        ]
    return candidate, []
