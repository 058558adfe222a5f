"""The HTTP API's requests and answers (issue 19): what `/openapi.json` publishes.

Every request model refuses unknown fields (a misspelt field is an error, never ignored).
Inputs name content the tenant already holds or may read: `sha256:<hex>` of an upload
(`POST /v1/uploads`), or `s3://BUCKET/KEY` in a bucket Forge reads inputs from; never a path
on the server.
"""

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BeforeValidator, Field, field_validator, model_validator

from schemas.access import ApiKey, Role
from schemas.base import FrozenModel
from schemas.bounds import JSON_INT_MAX, OBJECTIVE_MAX, Count, JsonFloat, JsonInt
from schemas.events import Event
from schemas.run import Decision, RunResult, RunStatusView, StepStatus

__all__ = [
    "ArtifactItem",
    "ArtifactList",
    "DecisionRequest",
    "EventPage",
    "GateItem",
    "GateList",
    "KeyCreate",
    "KeyList",
    "RunAccepted",
    "RunDetail",
    "RunPage",
    "RequestTime",
    "RunRequest",
    "RunSummary",
    "Upload",
    "UploadRef",
]

_FILENAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"


class UploadRef(FrozenModel):
    """An upload named by its sha256, with the file name it should have in the run."""

    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    filename: str | None = Field(default=None, pattern=_FILENAME)


# "sha256:<64 hex>" (an upload), "s3://bucket/key", or an upload with its file name.
InputRef = str | UploadRef


def _as_text(value: Any) -> Any:
    """Refuse a number where a date-time is due: pydantic would read it as a Unix time."""
    if isinstance(value, int | float):
        raise ValueError("a date-time is RFC 3339 text, e.g. 2030-01-01T00:00:00Z")
    return value


# A date-time a request sends: RFC 3339 text (or a datetime, from Python), with its offset.
RequestTime = Annotated[AwareDatetime, BeforeValidator(_as_text)]


def _no_wide_int(value: Any) -> Any:
    """Refuse an integer beyond JSON's exact range here, where the float branch would round it."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > JSON_INT_MAX:
        raise ValueError(f"integers are at most {JSON_INT_MAX} in magnitude; send it as a string")
    return value


ParamValue = Annotated[str | JsonInt | JsonFloat | bool, BeforeValidator(_no_wide_int)]
RunState = Literal["running", "completed", "failed", "cancelled"]


class RunRequest(FrozenModel):
    """Start a run: a plan (forge.plan/1 document), or an objective to plan."""

    plan: dict[str, Any] | None = Field(default=None, description="a plan document")
    plan_name: str = Field(default="plan.json", pattern=_FILENAME)
    objective: str | None = Field(default=None, min_length=1, max_length=OBJECTIVE_MAX)
    inputs: dict[str, InputRef] = Field(default_factory=dict)
    params: dict[str, ParamValue] = Field(default_factory=dict)
    profile: str | None = None
    max_tokens: Count | None = None
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _one_source(self) -> "RunRequest":
        if (self.plan is None) == (self.objective is None):
            raise ValueError("give a plan or an objective (exactly one)")
        return self


_TRACE_ID = (
    "the run's OpenTelemetry trace id (32 hex digits, derived from the run id) when the API "
    "records telemetry (FORGE_TELEMETRY); also in the Forge-Trace-Id header"
)


class RunAccepted(FrozenModel):
    """A run that was started: follow it at `GET /v1/runs/{run_id}`."""

    run_id: str
    status: Literal["running"] = "running"
    plan_hash: str | None = None
    steps: int | None = Field(default=None, description="compiled steps (plan runs)")
    trace_id: str | None = Field(default=None, description=_TRACE_ID)


class RunSummary(FrozenModel):
    """One run in a list."""

    run_id: str
    status: RunState
    started_at: AwareDatetime
    objective: str | None = None
    capsule: str | None = Field(default=None, description="name@version of a capsule run")
    actor: str = Field(description="who started it")


class RunPage(FrozenModel):
    """A page of runs, newest first; pass `next_cursor` as `cursor` for the next page."""

    runs: list[RunSummary]
    next_cursor: str | None = None


class RunDetail(FrozenModel):
    """A run's status view: live while it runs, its result once it ended."""

    run_id: str
    status: str = Field(description="Forge's outcome, or Temporal's status before it has steps")
    workflow_status: str
    view: RunStatusView | None = None
    result: RunResult | None = None
    error: str | None = None
    source: Literal["workflow", "events"] = Field(
        default="workflow",
        description="who answered: the run itself (`workflow`), or, while no worker serves it "
        "and its status query goes unanswered, its event log (`events`: no `view`, and `steps` "
        "holds each step's last logged state)",
    )
    steps: dict[str, StepStatus] | None = Field(
        default=None, description="source=events only: step_key -> its last state in the log"
    )
    trace_id: str | None = Field(default=None, description=_TRACE_ID)


class EventPage(FrozenModel):
    """A run's events in order; pass `next_after` as `after` for the ones after them."""

    events: list[Event]
    next_after: int | None = None


class Upload(FrozenModel):
    """Content stored in the tenant's artifact store: name it as an input by its sha256."""

    sha256: str
    size_bytes: int
    filename: str
    media_type: str | None = None


class ArtifactItem(FrozenModel):
    """One published version of a run's output; download it by its path."""

    path: str
    version: int
    sha256: str
    size_bytes: int
    media_type: str | None = None
    step_key: str
    contract_hash: str
    published_at: AwareDatetime


class ArtifactList(FrozenModel):
    """What a run published, every version, by path."""

    artifacts: list[ArtifactItem]


class GateItem(FrozenModel):
    """A pending gate, with what the approver should look at."""

    gate: str = Field(description="`<run_id>:<gate_id>`, the id to decide it by")
    run_id: str
    gate_id: str
    approver_role: str
    contract_hash: str = Field(description="send it back with the decision")
    requested_at: AwareDatetime
    prompt: str
    gated_steps: list[str]
    evidence: list[str]
    reminders: int


class GateList(FrozenModel):
    gates: list[GateItem]


class DecisionRequest(FrozenModel):
    """A decision on an open gate, on the contract the approver reviewed."""

    decision: Decision
    contract_hash: str = Field(min_length=1)
    comment: str = Field(min_length=1, max_length=10_000, description="why; recorded")


# Printable, not blank, no blank at either end: a name a person reads back and types again.
_VISIBLE = r"[^\s\x00-\x1f\x7f-\x9f]"
_NAME_TEXT = rf"^{_VISIBLE}(?:[^\x00-\x1f\x7f-\x9f]*{_VISIBLE})?$"
GATE_ROLE_PATTERN = rf"^{_VISIBLE}{{1,64}}$"


class KeyCreate(FrozenModel):
    """A new key of the caller's tenant."""

    role: Role
    name: str = Field(
        min_length=1, max_length=200, pattern=_NAME_TEXT, description="who or what uses it"
    )
    gate_roles: list[Annotated[str, Field(pattern=GATE_ROLE_PATTERN)]] = Field(
        default_factory=list,
        description="gate approver roles it may decide in: visible characters, no blanks",
    )
    expires_at: RequestTime | None = Field(
        default=None, description="when it stops working; in the future (a past time is 422)"
    )

    @field_validator("expires_at")
    @classmethod
    def _in_the_future(cls, value: datetime | None) -> datetime | None:
        # The API's body and `forge keys create` both check through this model.
        if value is not None and value <= datetime.now(UTC):
            raise ValueError(
                "is in the past: a key that never works would be issued; give a future time, "
                "or none for a key that does not expire"
            )
        return value


class KeyList(FrozenModel):
    keys: list[ApiKey]
