"""Pre- and postflight receipts: what the platform saw on disk, never the model's word."""

from typing import Literal

from pydantic import Field

from schemas.base import FrozenModel, PlainData


class ParseValidation(FrozenModel):
    ok: bool
    error: str | None = None


class FileReceipt(FrozenModel):
    path: str
    exists: bool
    size_bytes: int | None = None
    sha256: str | None = None
    kind_key: str | None = None
    parse_validation: ParseValidation | None = None
    schema_summary: dict[str, PlainData] = Field(default_factory=dict)
    placeholder_sentinels: list[str] = Field(default_factory=list)


class Receipt(FrozenModel):
    step_id: str
    step_key: str
    contract_hash: str
    phase: Literal["preflight", "postflight"]
    files: list[FileReceipt]
