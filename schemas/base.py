"""The frozen base model every Forge schema derives from."""

from pydantic import BaseModel, ConfigDict


class FrozenModel(BaseModel):
    """Immutable, strict model: unknown fields are an error, instances never change."""

    model_config = ConfigDict(frozen=True, extra="forbid")
