"""Capsules (seed 000 Part VIII, §8.2): a proven run sealed into a versioned, replayable program.

A capsule version is immutable. Its `capsule_hash` is the sha256 of the RFC 8785 JSON of its
`CapsuleContent` (compiler/capsule/seal.py), never of its name or version number: extracting the
same run into the same name again finds the version with that hash instead of adding one. The
compiled plan and every program a step ran live in the artifact store, named in the content by
their sha256, so the hash seals their bytes too.
"""

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel, PlainData
from schemas.plan import PARAM_NAME_PATTERN, Scalar, ScalarType
from schemas.scope import RunScoped, Scope, ScopeId

CAPSULE_SCHEMA = "forge.capsule/1"
EXPORT_SCHEMA = "forge.capsule-export/1"
CAPSULE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
CapsuleMode = Literal["sealed", "structural"]
ProgramSource = Literal["frozen", "adapter", "session", "evaluator", "gate", "recipe"]


class InputColumn(FrozenModel):
    name: str
    type: str = Field(description="the type the source run's preflight receipt inferred")


class InputParameter(FrozenModel):
    """A file the capsule runs on: its contract is what the source run's preflight observed."""

    name: str
    path: str = Field(description="where the run reads it (input/...)")
    required: bool = True
    kind_key: str | None = None
    validator: str | None = Field(default=None, description="csv, json_rows, json, ...")
    columns: list[InputColumn] = Field(
        default_factory=list, description="columns a new input must have (tables only)"
    )
    row_shape: Literal["rows", "object", "text", "binary"] | None = None
    observed_rows: int | None = Field(default=None, description="rows in the source run's input")
    source_sha256: str | None = Field(default=None, description="the source run's input bytes")


class ScalarParameter(FrozenModel):
    """A scalar parameter: its type, the source run's value (the default) and who read it."""

    name: str = Field(pattern=PARAM_NAME_PATTERN)
    type: ScalarType
    default: Scalar | None = None
    description: str = ""
    read_by: list[str] = Field(default_factory=list, description="steps that read it")


class CodeCell(FrozenModel):
    """One program a step ran, in order: a Code-Act turn, or a step's frozen code."""

    turn: int = Field(ge=1)
    code: ArtifactRef
    exit_code: int | None = None
    verified: bool = Field(description="the platform verified the outputs after it")


class StepProgram(FrozenModel):
    """What one step of the capsule runs: its sealed contract and the code it ran."""

    step_key: str
    contract_hash: str
    backend: str
    source: ProgramSource
    cells: list[CodeCell] = Field(
        default_factory=list, description="session steps: every program of the accepted attempt"
    )
    structural: bool = Field(
        default=False, description="gets fresh code from the executor on every capsule run"
    )
    params_read: list[str] = Field(default_factory=list)
    evaluates: bool = Field(
        default=False,
        description="its code called the governed evaluator in the source run: a capsule run "
        "sends the step to a worker serving the evaluator's model",
    )


class StepReceipts(FrozenModel):
    preflight: ArtifactRef
    postflight: ArtifactRef


class CapsuleProvenance(FrozenModel):
    """Which run the capsule was extracted from, and the evidence that it passed."""

    source_run_id: str
    plan_hash: str
    profile_snapshot_hash: str
    library_snapshot_hash: str
    receipts: dict[str, StepReceipts] = Field(default_factory=dict)
    source_inputs: dict[str, str] = Field(
        default_factory=dict, description="input name -> sha256 of the source run's file"
    )


class CapsuleContent(FrozenModel):
    """Everything a capsule version holds (seed 000 §8.2); the capsule hash is over this."""

    schema_version: Literal["forge.capsule/1"] = "forge.capsule/1"
    goal_template: str
    parameter_schema: dict[str, Any] = Field(description="JSON Schema of the run's parameters")
    parameter_bindings: dict[str, PlainData] = Field(
        default_factory=dict, description="the default of each scalar parameter"
    )
    inputs: list[InputParameter] = Field(default_factory=list)
    scalars: list[ScalarParameter] = Field(default_factory=list)
    plan_template: ArtifactRef = Field(description="the compiled plan (forge.compiled/1)")
    plan_hash: str
    contracts: dict[str, str] = Field(description="step_key -> contract_hash, every step")
    programs: list[StepProgram]
    governance: dict[str, PlainData] = Field(
        description="the frozen profile's egress, budgets, gates, HITL and skill policy"
    )
    isolation_policy: dict[str, PlainData] = Field(description="the frozen sandbox policy")
    provenance: CapsuleProvenance


class CapsuleVersion(FrozenModel):
    """One stored version of a tenant's capsule."""

    tenant_id: ScopeId
    name: str = Field(pattern=CAPSULE_NAME_PATTERN)
    version: int = Field(ge=1)
    capsule_hash: str
    content: CapsuleContent
    created_at: datetime
    created_by: str
    created: bool = Field(default=False, description="this call added the version")

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


class CapsuleExport(FrozenModel):
    """`forge capsule export`: a version and every blob it names, to import elsewhere."""

    schema_version: Literal["forge.capsule-export/1"] = "forge.capsule-export/1"
    name: str = Field(pattern=CAPSULE_NAME_PATTERN)
    version: int = Field(ge=1)
    capsule_hash: str
    content: CapsuleContent
    blobs: dict[str, str] = Field(description="sha256 -> base64 of the bytes")


CAPSULE_EXTRACTED = "capsule.extracted.v1"
CAPSULE_IMPORTED = "capsule.imported.v1"


class CapsuleRecorded(FrozenModel):
    """Payload of capsule.extracted.v1 and capsule.imported.v1.

    Stream `capsules:<tenant>:<name>`.
    """

    name: str
    version: int = Field(ge=1)
    capsule_hash: str
    source_run_id: str
    created: bool = Field(description="False: the content was already that version (a no-op)")


class CapsuleRunSpec(FrozenModel):
    """What a capsule run runs: the version (by its hash) and which steps get fresh code."""

    name: str = Field(pattern=CAPSULE_NAME_PATTERN)
    version: int = Field(ge=1)
    capsule_hash: str
    mode: CapsuleMode = "sealed"
    fresh: list[str] = Field(
        default_factory=list,
        description="steps that get new code from the executor (structural steps and --fresh)",
    )


class CapsuleInstantiateInput(RunScoped):
    """capsule__instantiate: load and re-verify a capsule version for one run."""

    run_id: str
    scope: Scope
    capsule: CapsuleRunSpec
    cause_event_id: str


# `forge capsule diff NAME@A NAME@B` (compiler/capsule/diff.py): what changed between versions.
ChangeKind = Literal["added", "removed", "changed"]
StepChangeKind = Literal["added", "removed", "changed", "unchanged"]


class ValueChange(FrozenModel):
    """One difference at `path`: a field name, a column, a dotted key or a JSON pointer."""

    path: str
    change: ChangeKind
    old: PlainData = Field(default=None, description="absent when the change is `added`")
    new: PlainData = Field(default=None, description="absent when the change is `removed`")


class StepChange(FrozenModel):
    """One step of either version: its contract hashes, changed fields and code diff."""

    step_key: str
    change: StepChangeKind
    contract_a: str | None = None
    contract_b: str | None = None
    fields: list[ValueChange] = Field(
        default_factory=list, description="backend, source, structural, params_read"
    )
    cells_a: int = Field(default=0, ge=0)
    cells_b: int = Field(default=0, ge=0)
    code_diff: str = Field(default="", description="unified diff of the programs that differ")


class InputChange(FrozenModel):
    """An input file parameter added, removed, or changed in its columns or its contract."""

    name: str
    change: ChangeKind
    columns: list[ValueChange] = Field(
        default_factory=list, description="column name -> its type, added/removed/retyped"
    )
    fields: list[ValueChange] = Field(default_factory=list)


class ScalarChange(FrozenModel):
    """A scalar parameter added, removed, or changed (type, default, description, readers)."""

    name: str
    change: ChangeKind
    fields: list[ValueChange] = Field(default_factory=list)


class CapsuleDiff(FrozenModel):
    """What differs between two capsule versions; `identical` when their hashes are equal."""

    ref_a: str = Field(description="NAME@A")
    ref_b: str = Field(description="NAME@B")
    capsule_hash_a: str
    capsule_hash_b: str
    identical: bool
    plan_hash: ValueChange | None = None
    goal_template: ValueChange | None = None
    steps: list[StepChange] = Field(
        default_factory=list, description="A's steps in order, then the steps only B has"
    )
    inputs: list[InputChange] = Field(default_factory=list)
    scalars: list[ScalarChange] = Field(default_factory=list)
    parameter_schema: list[ValueChange] = Field(
        default_factory=list,
        description="JSON-pointer changes not already shown as an input or scalar change",
    )
    governance: list[ValueChange] = Field(default_factory=list, description="dotted keys")
    isolation_policy: list[ValueChange] = Field(default_factory=list, description="dotted keys")

    @property
    def steps_added(self) -> list[str]:
        return [s.step_key for s in self.steps if s.change == "added"]

    @property
    def steps_removed(self) -> list[str]:
        return [s.step_key for s in self.steps if s.change == "removed"]

    @property
    def steps_kept(self) -> list[str]:
        return [s.step_key for s in self.steps if s.change in ("changed", "unchanged")]
