"""The frozen base model every Forge schema derives from."""

from pydantic import BaseModel, ConfigDict, JsonValue


class FrozenModel(BaseModel):
    """Immutable, strict model: unknown fields are an error, instances never change."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# What crosses a boundary as opaque data (seed 003 §3): JSON values only. A field typed with it
# refuses a callable, a client or any other live object at validation, where `Any` would not.
PlainData = JsonValue
