"""Maskings this process noted (logs, failures, CLI lines) written as guard events.

A worker records them every second while it runs and once more when it stops; the CLI once,
when its command ends (activities/masked_output.py says what is noted and why it waits).
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from activities import masked_output
from activities.store.events import EventStore
from activities.store.output_masking import record_noted
from workers.process.periodic import repeating

__all__ = ["RECORD_EVERY_S", "record_now", "recording"]

RECORD_EVERY_S = 1.0
log = logging.getLogger(__name__)


def record_now(events: EventStore) -> int:
    """Write what is noted now; a store that fails keeps the notes for the next try.

    Returns how many were written (0 when the store failed: that is logged, never raised).
    """
    if not masked_output.pending():
        return 0
    try:
        return record_noted(events)
    except Exception as exc:  # noqa: BLE001 - a worker keeps working; the notes are kept
        log.warning("could not record masked output as guard events (kept for later): %s", exc)
        return 0


@contextlib.asynccontextmanager
async def recording(events: EventStore, every: float = RECORD_EVERY_S) -> AsyncIterator[None]:
    """Record noted maskings every `every` seconds inside the block, and once on leaving it."""

    async def tick() -> None:
        await asyncio.to_thread(record_now, events)

    try:
        async with repeating("forge-guard-recorder", every, tick):
            yield
    finally:
        await tick()
