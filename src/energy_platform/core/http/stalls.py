"""A streamed answer whose client stops reading is ended, and what its body holds is let go.

TCP's flow control makes a body's producer wait while its client does not read: right for
memory, wrong for a producer that holds something shared meanwhile (an export holds a pooled
connection and a snapshot). The body goes out in pieces, and a piece the client has not taken
within the allowed time ends the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable

PIECE = 65_536
"""Bytes handed to the server at a time: the time a piece waits measures the client, not the
size of the producer's chunks (a UTC day of an export's lines is megabytes)."""

# Closings under way: the event loop keeps only weak references to its tasks.
_closing: set[asyncio.Task[None]] = set()


async def until_stalled(
    chunks: AsyncGenerator[bytes, None], stall_s: float, on_stall: Callable[[], None]
) -> AsyncGenerator[bytes, None]:
    """``chunks`` as a streamed body, in pieces of at most :data:`PIECE` bytes, each of which
    its client must take within ``stall_s`` seconds. When one waits longer, ``chunks`` is
    closed at once (its ``finally`` gives back what it holds while the client still sits),
    ``on_stall`` is called, and the answer ends without its final chunk: the client sees a
    broken body, never a short one that looks whole."""
    loop = asyncio.get_running_loop()
    stalled = False

    def stall(task: asyncio.Task[object] | None) -> None:
        nonlocal stalled
        stalled = True
        on_stall()
        # ``chunks`` waits at its yield (its consumer is the one stuck), so it may be closed
        # from another task; the stuck send is cancelled, which ends the answer.
        closing = asyncio.create_task(_close(chunks))
        _closing.add(closing)
        closing.add_done_callback(_closing.discard)
        if task is not None:
            task.cancel()

    try:
        async for chunk in chunks:
            for start in range(0, len(chunk), PIECE):
                timer = loop.call_later(stall_s, stall, asyncio.current_task())
                try:
                    yield chunk[start : start + PIECE]
                finally:
                    timer.cancel()
    finally:
        if not stalled:
            await chunks.aclose()


async def _close(chunks: AsyncGenerator[bytes, None]) -> None:
    await chunks.aclose()
