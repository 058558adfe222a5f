"""Every span passes the guard's masking on its way out: Forge's, the Temporal SDK's, any library's.

Forge masks what it puts on its own spans (activities/telemetry_spans.py); this layer is the
floor under every exporter whatever recorded the span. The Temporal SDK's RunActivity and
RunWorkflow spans carry a failed activity's or workflow's message in their status and an
`exception` event with its message and stack trace; a library's span may carry anything. Each
exporting processor `install()` adds (and a test's, so a test reads what would be exported) is
wrapped in `MaskingSpanProcessor`, which hands it a copy of each ended span with every credential
masked (compiler/ladder/secrets/mask.py, the guard's boundary detectors): the name, string and
string-sequence attribute values, the status description, each event's name and attributes, and
each link's attributes. A span holding nothing to mask is passed on as it is.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.trace import Link, Status
from opentelemetry.util.types import Attributes, AttributeValue

from compiler.ladder.secrets.mask import mask_text

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span

__all__ = ["MaskingSpanProcessor", "masked_span"]

# Span names and most attribute values repeat (activity names, run ids, tenants): masked once
# each, then found in the cache. Longer texts (a stack trace) are masked every time.
_CACHED_LENGTH = 256


@functools.lru_cache(maxsize=8192)
def _cached(text: str, key: str | None) -> str:
    return mask_text(text, key)[0]


def _text(text: str, key: str | None = None) -> str:
    if len(text) <= _CACHED_LENGTH:
        return _cached(text, key)
    return mask_text(text, key)[0]


def _value(value: AttributeValue, key: str) -> AttributeValue:
    if isinstance(value, str):
        return _text(value, key)
    if isinstance(value, Sequence) and any(isinstance(v, str) for v in value):
        masked = [_text(v, key) if isinstance(v, str) else v for v in value]
        return value if masked == list(value) else tuple(masked)
    return value


def _attributes(attributes: Attributes) -> Attributes | None:
    """The attributes with their values masked, or None when nothing was masked."""
    if not attributes:
        return None
    masked: dict[str, AttributeValue] = {}
    changed = False
    for key, value in list(attributes.items()):  # one pass over the SDK's locked mapping
        new = _value(value, key)
        changed = changed or (new is not value and new != value)
        masked[key] = new
    if not changed:
        return None
    fresh = BoundedAttributes(maxlen=None, attributes=masked, immutable=True)
    if isinstance(attributes, BoundedAttributes):
        fresh.dropped = attributes.dropped  # the exporter reports what the SDK dropped
    return fresh


def _event(event: Event) -> Event | None:
    name, attributes = _text(event.name), _attributes(event.attributes)
    if name == event.name and attributes is None:
        return None
    return Event(name, event.attributes if attributes is None else attributes, event.timestamp)


def _link(link: Link) -> Link | None:
    attributes = _attributes(link.attributes)
    return None if attributes is None else Link(link.context, attributes)


def _status(status: Status) -> Status | None:
    if not status.description:
        return None
    description = _text(status.description)
    return None if description == status.description else Status(status.status_code, description)


def masked_span(span: ReadableSpan) -> ReadableSpan:
    """`span` with every credential in its texts masked (`span` itself when it held none)."""
    # The SDK's properties return fresh views: what changed is told by None, not by identity.
    name = _text(span.name)
    attributes = _attributes(span.attributes)
    events = [_event(e) for e in span.events]
    links = [_link(link) for link in span.links]
    status = _status(span.status)
    changed = (
        name != span.name
        or attributes is not None
        or status is not None
        or any(e is not None for e in events)
        or any(link is not None for link in links)
    )
    if not changed:
        return span
    return ReadableSpan(
        name=name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=span.attributes if attributes is None else attributes,
        events=[new or old for new, old in zip(events, span.events, strict=True)],
        links=[new or old for new, old in zip(links, span.links, strict=True)],
        kind=span.kind,
        status=status or span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class MaskingSpanProcessor(SpanProcessor):
    """Hands `inner` (an exporting processor) each ended span masked (`masked_span`).

    `on_start` passes the live span through: an exporting processor exports nothing then.
    """

    def __init__(self, inner: SpanProcessor) -> None:
        self._inner = inner

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Pass the starting span to the inner processor."""
        self._inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        """Give the inner processor the span with its credentials masked."""
        self._inner.on_end(masked_span(span))

    def shutdown(self) -> None:
        """Shut the inner processor down (it exports what it still holds)."""
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the inner processor."""
        return self._inner.force_flush(timeout_millis)
