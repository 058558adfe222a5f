"""The catalogue's two sections of problem codes: compiler diagnostics and template reasons.

A failure code (schemas.error_codes) names why an operation failed and becomes the Temporal
failure type. The codes here name one problem inside such a failure: a rejected plan
(CompilerError) carries every diagnostic found, each E_* with its own location and hint; a
TemplateError (TEMPLATE_INVALID) names its reason in lowercase. They are never failure types and
are never retried on their own, so they stay separate sections of the one catalogue (one test
checks every code raised against them; docs/errors.md lists them after the failure codes).
"""

from typing import Literal

from schemas.diagnostics import DiagnosticCode

# Each diagnostic code: what it means and what to do (a Diagnostic's own hint is more precise).
DIAGNOSTICS: dict[DiagnosticCode, tuple[str, str]] = {
    "E_SCHEMA": (
        "The plan document does not match the forge.plan/1 schema.",
        "Fix the field named to match the schema (schemas/jsonschema/PlannerCandidate.json).",
    ),
    "E_TOO_LARGE": (
        "A plan, or one of its fields or lists, is larger than Forge accepts (schemas/bounds.py).",
        "Shorten the field named: keep long material in input files, not in the plan.",
    ),
    "E_DUPLICATE_STEP": (
        "Two steps share one step_key.",
        "Give every step a unique step_key.",
    ),
    "E_UNKNOWN_DEPENDENCY": (
        "A step depends on a step_key that is not in the plan.",
        "Name an existing step_key or remove the dependency.",
    ),
    "E_CYCLE": (
        "The steps' dependencies form a cycle.",
        "Break the cycle: a step cannot (transitively) depend on its own output.",
    ),
    "E_NO_OUTPUTS": (
        "A step declares no expected output, so the platform cannot verify it.",
        "Add expected_outputs with a path under output/.",
    ),
    "E_BAD_EXTENSION": (
        "An output path has no recognised extension, so its artifact kind is unknown.",
        "Use an extension such as .json, .csv, .html or .md, or declare kind_key.",
    ),
    "E_PATH_ESCAPE": (
        "A path is absolute, climbs out with `..`, or is outside the step's roots.",
        "Use a relative path under input/ or output/.",
    ),
    "E_DUPLICATE_WRITER": (
        "Two steps (or outputs) write the same path.",
        "Every path has one writer: give one of the outputs another path.",
    ),
    "E_UNKNOWN_PACK": (
        "A step names a domain or workflow pack that does not exist.",
        "Use a pack from `forge packs list`.",
    ),
    "E_UNKNOWN_KIND": (
        "An artifact kind does not exist in the type library.",
        "Use one of the kinds the message lists.",
    ),
    "E_UNKNOWN_SLOT": (
        "A slot is not a cross-step slot of the type library.",
        "Use one of the slots the message lists.",
    ),
    "E_UNKNOWN_ENTITY": (
        "A run input or output names an entity schema that does not exist.",
        "Use an entity from `forge packs show DOMAIN`.",
    ),
    "E_UNKNOWN_PROFILE": (
        "The execution profile named is not defined.",
        "Use a profile the message lists, or pass a profile file with --profile.",
    ),
    "E_UNBOUND_INPUT": (
        "A step reads a path no upstream step or run input provides.",
        "Add the run input, depend on the step that writes it, or fix the path.",
    ),
    "E_AMBIGUOUS_BINDING": (
        "Several upstream steps produce the slot a step reads.",
        "Set abstract_inputs[].from_step or .path to choose one.",
    ),
    "E_INCOMPATIBLE_BINDING": (
        "An upstream output's kind cannot feed the input that reads it, and no adapter "
        "converts it.",
        "Change one side's kind, or add an adapter step between them.",
    ),
    "E_POLICY": (
        "The plan breaks the policy profile (gates, approvers, what the profile forbids).",
        "Change the plan as the hint says, or use a profile that allows it.",
    ),
    "E_MISSING_CODE": (
        "An adapter step written in the plan carries no code.",
        "Add `code`, or let the compiler insert a library adapter by binding kinds.",
    ),
    "E_UNDECLARED_OUTPUT": (
        "An artifact contract names a path that is not an expected output.",
        "Add the path to expected_outputs or remove its artifact contract.",
    ),
    "E_KIND_MISMATCH": (
        "An output's kind fits none of the kinds its slot or contract prefers.",
        "Give the output an extension of a preferred kind.",
    ),
    "E_TOO_MANY_STEPS": (
        "The plan has more steps (adapters included) than the profile's max_steps.",
        "Split the plan, or use a profile with a larger budgets.max_steps.",
    ),
    "E_UNKNOWN_SKILL": (
        "A step invokes a skill that is not in the skill library.",
        "Name a skill from stdlib/skills or a pack's skills/, or register it.",
    ),
    "E_SKILL_DEPRECATED": (
        "A skill the profile pins as required is deprecated.",
        "Pin its replacement (see the skill's SKILL.md) or unpin it.",
    ),
    "E_SKILL_OUTPUT": (
        "A skill declares a JSON output schema but the step writes no .json output.",
        "Add an expected output such as output/STEP.json.",
    ),
    "E_REQUIRED_SKILL_MISSING": (
        "A skill the profile pins as required is not in the skill library.",
        "Register it (`forge skills register DIR`), add it to a skills directory, or unpin it.",
    ),
    "E_SKILL_DENIED_AND_PINNED": (
        "A skill is both pinned and denied by the execution profile.",
        "Remove it from skill_policy.denied_skills or from skill_policy.pinned_skills.",
    ),
    "E_EVALUATION_BUNDLE": (
        "An evaluate step has no .json output to write its verdict to.",
        "Declare an output such as output/STEP.verdict.json.",
    ),
}

TemplateReason = Literal[
    "argument",
    "auto",
    "count",
    "encoding",
    "enum",
    "format",
    "json",
    "key",
    "length",
    "limit",
    "media_type",
    "missing",
    "one_of",
    "operation",
    "pattern",
    "range",
    "ref",
    "schema",
    "synonym",
    "token",
    "type",
    "unfilled",
    "unique",
    "unknown",
    "unsatisfiable",
]

# Each template reason: what it means (the TemplateError names the path and the fix).
TEMPLATE_REASONS: dict[TemplateReason, str] = {
    "argument": "A function was called with an argument it cannot use (a schema where a template "
    "belongs).",
    "auto": "An AUTO token was given a value; the platform fills it.",
    "count": "An array holds fewer or more items than the schema allows.",
    "encoding": "Text is not valid UTF-8, or a document is too large to read.",
    "enum": "A value is not one of the schema's enum members.",
    "format": "A string does not match the schema's format (date, email, uri, ...).",
    "json": "Text is not valid JSON, or not the JSON type expected.",
    "key": "An object key is not allowed (a KEY token's value or an additionalProperties key).",
    "length": "A string or array is shorter or longer than the schema allows.",
    "limit": "A document exceeds a size, nesting or count limit of imprinting.",
    "media_type": "An OpenAPI operation has no media type imprinting can use.",
    "missing": "A required property is absent.",
    "one_of": "A value matches none (or more than one) of a oneOf/anyOf's alternatives.",
    "operation": "An OpenAPI operation id or path is unknown or unusable.",
    "pattern": "A string does not match the schema's pattern.",
    "range": "A number is outside the schema's minimum/maximum or multipleOf.",
    "ref": "A $ref is malformed, circular or points at nothing.",
    "schema": "A JSON Schema uses something imprinting does not support, or is malformed.",
    "synonym": "A key is a synonym of another key already present.",
    "token": "A template token is malformed or of an unknown kind.",
    "type": "A value has the wrong JSON type.",
    "unfilled": "A required FILL token was left unfilled.",
    "unique": "An array that must hold unique items holds a duplicate.",
    "unknown": "A property the schema does not declare.",
    "unsatisfiable": "No value can satisfy the schema (`false`, or something that requires it).",
}
