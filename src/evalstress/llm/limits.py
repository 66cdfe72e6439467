"""Per-endpoint concurrency limits that back off on 429 and recover on success (AIMD).

Several endpoints serving one model form a pool: each request takes the endpoint with the most
free room, so load spreads by capacity, and an endpoint told to wait (Retry-After) gets nothing
until its pause ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Endpoint:
    """One base URL with its own concurrency ceiling and current (adaptive) limit."""

    base_url: str
    max_concurrency: int = 16
    limit: float = 0.0  # current limit; starts at max_concurrency
    in_flight: int = 0
    paused_until: float = 0.0  # monotonic time before which nothing is sent
    served: int = 0

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency of {self.base_url} must be >= 1")
        self.base_url = self.base_url.rstrip("/")
        if self.limit <= 0:
            self.limit = float(self.max_concurrency)

    def room(self, now: float) -> float:
        if now < self.paused_until:
            return 0.0
        return (int(self.limit) - self.in_flight) / max(self.limit, 1.0)

    def rate_limited(self, retry_after: float | None) -> None:
        """Multiplicative decrease, and a pause as long as the server asked for."""
        self.limit = max(1.0, self.limit / 2)
        if retry_after:
            self.paused_until = max(self.paused_until, time.monotonic() + retry_after)

    def succeeded(self) -> None:
        """Additive increase: about one more slot per `limit` successes, up to the ceiling."""
        if self.limit < self.max_concurrency:
            self.limit = min(float(self.max_concurrency), self.limit + 1.0 / self.limit)


class EndpointPool:
    """Hands out endpoint slots; a slot is held for one HTTP attempt.

    Waiters queue as plain futures (first come, first served): a release or the end of a pause
    wakes the first. No `asyncio.Condition` and no `wait_for`: on Python 3.11 a cancelled
    `wait_for(cond.wait())` can swallow the cancellation, and a Ctrl-C then waited forever for
    tasks that never ended. Here a cancelled waiter leaves the queue at once and hands a wake-up
    it had already received to the next waiter."""

    def __init__(self, endpoints: Sequence[Endpoint]):
        if not endpoints:
            raise ValueError("at least one endpoint is needed")
        self.endpoints = list(endpoints)
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def identity(self) -> str:
        """The name of the group in cache keys: its sorted base URLs."""
        return ",".join(sorted({e.base_url for e in self.endpoints}))

    def _take(self, now: float) -> Endpoint | None:
        best = max(self.endpoints, key=lambda e: e.room(now))
        if best.room(now) > 0:
            best.in_flight += 1
            return best
        return None

    def _wake_next(self) -> None:
        """Wake the first waiter still waiting (it re-checks the room itself)."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done() and not waiter.get_loop().is_closed():
                waiter.set_result(None)
                return

    async def acquire(self, deadline: float | None = None) -> Endpoint:
        """Wait for a slot on the endpoint with the most room; TimeoutError past `deadline`.

        `deadline=None` waits as long as the queue needs: a request's own deadline starts when
        it is first dispatched, so waiting behind the rest of a large batch never uses it up."""
        loop = asyncio.get_running_loop()
        while True:
            now = time.monotonic()
            endpoint = self._take(now)
            if endpoint is not None:
                if any(e.room(now) > 0 for e in self.endpoints):
                    self._wake_next()  # pass on room a raised limit or a pause's end left
                return endpoint
            if deadline is not None and now >= deadline:
                raise TimeoutError("no endpoint slot before the deadline")
            pauses = [e.paused_until - now for e in self.endpoints if e.paused_until > now]
            limits = [*pauses, *([deadline - now] if deadline is not None else [])]
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            timer = (loop.call_later(max(min(limits), 0.001), _wake, waiter) if limits
                     else None)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake_next()  # a wake-up meant for us goes to the next in line
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
                raise
            finally:
                if timer is not None:
                    timer.cancel()

    async def release(self, endpoint: Endpoint) -> None:
        endpoint.in_flight -= 1
        endpoint.served += 1
        self._wake_next()  # one freed slot wakes one waiter (no thundering herd)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
