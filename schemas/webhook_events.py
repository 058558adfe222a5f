"""What a webhook may hear: event catalogue names, as plain constants.

Kept free of pydantic so `forge webhooks create --help` can list them without loading the
models (issue 34 §1); `schemas.webhooks` builds the models on them and re-exports both names.
"""

from typing import Literal

__all__ = ["WEBHOOK_EVENTS", "WebhookEventType"]

# A gate opened, a run finished, a run failed.
WebhookEventType = Literal["gate.requested.v1", "run.completed.v1", "run.failed.v1"]
WEBHOOK_EVENTS: tuple[str, ...] = WebhookEventType.__args__  # type: ignore[attr-defined]
