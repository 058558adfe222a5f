"""A background task a worker (or the API) runs every so often while it is up.

The guard's recorder and the webhook dispatcher are both this: a tick every `every` seconds
inside an `async with`, cancelled cleanly when the block ends. A tick handles its own
failures (each says what it keeps for the next tick).
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

__all__ = ["repeating"]


@contextlib.asynccontextmanager
async def repeating(
    name: str, every: float, tick: Callable[[], Awaitable[object]]
) -> AsyncIterator[None]:
    """Run `tick` every `every` seconds inside the block (first after one interval)."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(every)
            await tick()

    task = asyncio.create_task(loop(), name=name)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
