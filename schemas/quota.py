"""A tenant's quota usage (issue 20 §3): what `GET /v1/quota` and `forge tenants show` report."""

from pydantic import AwareDatetime, Field

from schemas.base import FrozenModel
from schemas.scope import ScopeId

__all__ = ["QuotaUsage"]


class QuotaUsage(FrozenModel):
    """A tenant's limits and what it uses of them now (None: no limit of that kind)."""

    tenant_id: ScopeId
    max_concurrent_runs: int | None = Field(description="runs at once; None is unlimited")
    max_tokens_per_day: int | None = Field(description="model tokens per UTC day; None: unlimited")
    live_runs: list[str] = Field(description="runs admitted under the quota and not ended")
    tokens_today: int = Field(
        description="tokens counted today: what ended runs used, the ceiling of live ones"
    )
    tokens_left: int | None = Field(description="what a run started now may use at most")
    resets_at: AwareDatetime = Field(description="when the day's token count starts again")
