"""Runs the asyncio implementation for the synchronous API: one event loop in a daemon thread per
process, shared by every synchronous client."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
import threading
from typing import Any, AsyncIterator, Awaitable, Generator, Optional, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: Optional[asyncio.AbstractEventLoop] = None
_pid = 0
# How long an interrupted call may take to clean up.
_CLEANUP = 30.0


def loop() -> asyncio.AbstractEventLoop:
    """The SDK's event loop, started on first use (and again in a forked child)."""
    global _loop, _pid
    with _lock:
        if _loop is None or _pid != os.getpid():
            _loop = asyncio.new_event_loop()
            _pid = os.getpid()
            threading.Thread(target=_loop.run_forever, name="kubox-sdk-loop", daemon=True).start()
        return _loop


def run(coro: Awaitable[T]) -> T:
    """Runs ``coro`` on the SDK's loop and returns its result. Ctrl-C (or any exception in the
    waiting thread) cancels it there and waits, up to ``_CLEANUP`` seconds, for it to finish
    cleaning up (a claim interrupted while waiting deletes its SandboxClaim)."""
    lp = loop()
    task: "list[asyncio.Task[Any]]" = []

    async def wrapper() -> T:
        task.append(asyncio.current_task())  # type: ignore[arg-type]
        return await coro

    fut = asyncio.run_coroutine_threadsafe(wrapper(), lp)
    try:
        return fut.result()
    except BaseException:
        if not fut.done():
            if task:
                lp.call_soon_threadsafe(task[0].cancel)
                concurrent.futures.wait([fut], timeout=_CLEANUP)
            else:
                fut.cancel()
        raise


def iterate(agen: AsyncIterator[T]) -> Generator[T, None, None]:
    """The items of an async iterator, one ``run`` each; the iterator is closed when the loop
    over it ends early."""
    try:
        while True:
            try:
                yield run(agen.__anext__())
            except StopAsyncIteration:
                return
    finally:
        aclose = getattr(agen, "aclose", None)
        # At interpreter exit the loop thread may be gone: waiting for it would hang the exit.
        if aclose is not None and not sys.is_finalizing() and _loop is not None and _loop.is_running():
            run(aclose())
