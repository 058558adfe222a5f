"""`LadderContract`: everything the ladder validates a payload against, checked on creation.

A contract is data (it hashes like every other Forge contract): the JSON Schema, the
expected top-level type, the domain pack's synonym map, defaults, declarative transforms,
JsonLogic rules, the guard's configuration, the L1 rename threshold and the limits that
keep hostile input bounded. Creating one runs every check that can be made without a
payload, so a bad contract fails at compile time with all of its problems listed.
"""

from typing import Annotated, Any, Literal, get_args

from jsonschema import Draft202012Validator, validators
from jsonschema.protocols import Validator
from pydantic import Field, PrivateAttr, model_validator

from compiler.ladder.pointer import PointerError, decode
from compiler.ladder.rules import rule_problem
from compiler.ladder.schemacheck import check_schema
from compiler.ladder.schemaview import SchemaView
from schemas.base import FrozenModel

JsonType = Literal["object", "array", "string", "number", "integer", "boolean", "null"]
Detector = Literal[
    "email",
    "phone",
    "us_ssn",
    "iban",
    "card",
    "anthropic_key",
    "openai_key",
    "aws_key",
    "github_token",
    "slack_token",
    "private_key",
    "bearer_token",
    "credential",  # gitleaks' rule set and Forge's context rules (compiler/ladder/secrets)
    "secret_field",  # a random-looking value under a field named password, token, secret, ...
]
ALL_DETECTORS: tuple[Detector, ...] = get_args(Detector)
DateFormat = Literal[
    "YYYY-MM-DD",
    "YYYY/MM/DD",
    "YYYYMMDD",
    "MM/DD/YYYY",
    "DD/MM/YYYY",
    "DD.MM.YYYY",
    "DD-MM-YYYY",
    "MM-DD-YYYY",
    "Month D, YYYY",
    "D Month YYYY",
]


class GuardConfig(FrozenModel):
    """L3: which detectors run, what they may ignore, and what a hit does."""

    detectors: tuple[Detector, ...] = ALL_DETECTORS
    allow: tuple[str, ...] = Field(default=(), description="exact values never reported")
    skip_paths: tuple[str, ...] = Field(
        default=(), description='pointers not scanned ("*" = every array index)'
    )
    scan_keys: bool = True
    action: Literal["block", "redact"] = Field(
        default="block",
        description="block: a hit is an error; redact: the match is masked in place (a warning)",
    )


class CaseTransform(FrozenModel):
    kind: Literal["case"] = "case"
    path: str
    style: Literal["title", "upper", "lower"] = "title"


class ScaleTransform(FrozenModel):
    """Unit scaling: bare numbers are multiplied by `factor`; "90 min" uses `units`."""

    kind: Literal["scale"] = "scale"
    path: str
    factor: float = 1.0
    units: dict[str, float] = Field(
        default_factory=dict, description='suffix -> multiplier into the target unit, e.g. "min"'
    )
    round_digits: int | None = Field(default=None, ge=0, le=12)


class EnumCaseTransform(FrozenModel):
    """Case-fold a string onto the one enum member it matches ("ACTIVE" -> "active")."""

    kind: Literal["enum_casefold"] = "enum_casefold"
    path: str


class DateTransform(FrozenModel):
    """Rewrite dates in any of `input_formats` as ISO 8601 calendar dates (YYYY-MM-DD)."""

    kind: Literal["date"] = "date"
    path: str
    input_formats: tuple[DateFormat, ...] = (
        "YYYY-MM-DD",
        "YYYY/MM/DD",
        "YYYYMMDD",
        "MM/DD/YYYY",
        "DD.MM.YYYY",
        "Month D, YYYY",
        "D Month YYYY",
    )


Transform = Annotated[
    CaseTransform | ScaleTransform | EnumCaseTransform | DateTransform,
    Field(discriminator="kind"),
]


class DomainRule(FrozenModel):
    """L5: a JsonLogic rule that must hold; falsy means the finding `message`."""

    rule_id: str = Field(min_length=1)
    logic: Any
    message: str = Field(min_length=1)
    severity: Literal["error", "warning"] = "error"
    path: str = Field(default="", description="the pointer the finding is reported at")
    scope: Literal["document", "each_item"] = Field(
        default="document", description="each_item: evaluate once per element of an array"
    )
    requires: tuple[str, ...] = Field(
        default=(), description="var names; the rule is skipped when any is missing or null"
    )


class LadderLimits(FrozenModel):
    """Bounds on input size and work, so hostile input ends in a finding, not a hang."""

    max_depth: int = Field(default=32, ge=1, le=100)
    max_nodes: int = Field(default=200_000, ge=1)
    max_text_bytes: int = Field(default=16 * 1024 * 1024, ge=1)
    max_schema_nodes: int = Field(default=20_000, ge=1)
    max_schema_properties: int = Field(default=2_000, ge=1)
    max_schema_depth: int = Field(default=32, ge=1, le=64)
    max_rule_depth: int = Field(default=32, ge=1, le=64)
    max_findings: int = Field(default=200, ge=1)
    max_rename_comparisons: int = Field(default=100_000, ge=1)


class LadderContract(FrozenModel):
    """What a payload is validated and corrected against (see the module docstring)."""

    json_schema: dict[str, Any]
    top_level: JsonType | None = Field(
        default=None, description="expected top-level type; None = the schema's single type"
    )
    synonyms: dict[str, str] = Field(default_factory=dict, description="alias -> canonical")
    defaults: dict[str, Any] = Field(
        default_factory=dict, description='pointer ("*" = every array index) -> default value'
    )
    use_schema_defaults: bool = True
    transforms: list[Transform] = Field(default_factory=list)
    rules: list[DomainRule] = Field(default_factory=list)
    guard: GuardConfig = Field(default_factory=GuardConfig)
    rename_threshold: float = Field(default=0.75, gt=0, le=1)
    rename_margin: float = Field(default=0.05, ge=0, le=1)
    strip_undeclared: bool = Field(
        default=False, description="L4 strips keys not declared even where the schema allows them"
    )
    limits: LadderLimits = Field(default_factory=LadderLimits)

    _view: SchemaView | None = PrivateAttr(default=None)
    _validator: Validator | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self) -> "LadderContract":
        lim = self.limits
        problems = check_schema(
            self.json_schema,
            max_nodes=lim.max_schema_nodes,
            max_depth=lim.max_schema_depth,
            max_properties=lim.max_schema_properties,
        )
        if not problems:
            self._view = SchemaView(self.json_schema)
            problems += self._check_paths(self._view)
            problems += self._check_defaults(self._view) if not problems else []
            problems += [
                f"rule {r.rule_id!r}: {p}"
                for r in self.rules
                if (p := rule_problem(r.logic, lim.max_rule_depth))
            ]
        if self.top_level is None and self.expected_type() is None and not problems:
            problems.append("the schema has no single top-level type; set top_level")
        if problems:
            raise ValueError("invalid ladder contract:\n  " + "\n  ".join(problems))
        return self

    def _check_paths(self, view: SchemaView) -> list[str]:
        problems: list[str] = []
        per_item = ("*",) if self.expected_type() == "array" else ()
        targets: list[tuple[str, str, tuple[str, ...]]] = [
            ("default", p, ()) for p in self.defaults
        ]
        targets += [(f"{t.kind} transform", t.path, ()) for t in self.transforms]
        targets += [
            ("rule path", r.path, per_item if r.scope == "each_item" else ())
            for r in self.rules
            if r.path
        ]
        for what, pointer, prefix in targets:
            try:
                tokens = decode(pointer)
            except PointerError as exc:
                problems.append(f"{what} {pointer!r}: {exc}")
                continue
            if not tokens:
                problems.append(f"{what} {pointer!r} must name a field, not the whole payload")
            elif view.locate((*prefix, *tokens)) is None:
                problems.append(f"{what} {pointer!r} is not a path the schema defines")
        for alias, canonical in self.synonyms.items():
            if alias == canonical:
                problems.append(f"synonym {alias!r} maps to itself")
        return problems

    def _check_defaults(self, view: SchemaView) -> list[str]:
        """Every contract default must itself be valid where it would be injected."""
        problems = []
        for pointer, value in self.defaults.items():
            node = view.locate(decode(pointer))
            if isinstance(node, dict):
                try:
                    errors = list(self.validator.evolve(schema=node).iter_errors(value))
                except ArithmeticError as exc:
                    problems.append(f"default {pointer!r} cannot be checked: {exc}")
                    continue
                if errors:
                    problems.append(
                        f"default {pointer!r} = {value!r:.60} does not fit its schema: "
                        f"{errors[0].message:.120}"
                    )
        return problems

    @property
    def view(self) -> SchemaView:
        """The checked schema, ready for the stages to walk."""
        if self._view is None:  # model_construct() skips validation; build it on first use
            self._view = SchemaView(self.json_schema)
        return self._view

    @property
    def validator(self) -> Validator:
        """The jsonschema validator for the schema, formats checked (built once)."""
        if self._validator is None:
            cls = validators.validator_for(self.json_schema, default=Draft202012Validator)
            self._validator = cls(self.json_schema, format_checker=cls.FORMAT_CHECKER)
        return self._validator

    def expected_type(self) -> str | None:
        """The top-level JSON type payloads must have, if the contract fixes one."""
        if self.top_level is not None:
            return self.top_level
        declared = self.json_schema.get("type")
        if isinstance(declared, str):
            return declared
        return None
