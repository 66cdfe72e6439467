"""The endpoint pool under cancellation: every waiter ends when cancelled, no slot is lost."""

from __future__ import annotations

import asyncio
import time

from evalstress.llm.limits import Endpoint, EndpointPool


def test_cancelled_waiters_all_end_at_once() -> None:
    """A Ctrl-C cancels hundreds of requests queued for a slot, some with a deadline timer
    (the retry path); all of them must end, none may keep waiting."""

    async def main() -> float:
        pool = EndpointPool([Endpoint("http://a", 1)])
        held = await pool.acquire()
        far = time.monotonic() + 60
        waiters = [asyncio.create_task(pool.acquire(far if i % 2 else None)) for i in range(300)]
        await asyncio.sleep(0.05)
        started = time.monotonic()
        for task in waiters:
            task.cancel()
        results = await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 2)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        await pool.release(held)
        assert pool.endpoints[0].in_flight == 0
        return time.monotonic() - started

    assert asyncio.run(main()) < 1.0


def test_a_wakeup_received_while_cancelled_goes_to_the_next_waiter() -> None:
    """The slot freed for waiter A must reach waiter B when A is cancelled in the same step."""

    async def main() -> None:
        pool = EndpointPool([Endpoint("http://a", 1)])
        held = await pool.acquire()
        first = asyncio.create_task(pool.acquire())
        second = asyncio.create_task(pool.acquire())
        await asyncio.sleep(0.01)
        await pool.release(held)  # wakes `first`...
        first.cancel()  # ...which is cancelled before it runs
        endpoint = await asyncio.wait_for(second, 1)
        assert endpoint.in_flight == 1
        assert first.cancelled()

    asyncio.run(main())


def test_a_pause_wakes_its_waiters_when_it_ends() -> None:
    async def main() -> float:
        endpoint = Endpoint("http://a", 2)
        pool = EndpointPool([endpoint])
        endpoint.rate_limited(0.2)  # a 429 asked for 0.2 s of quiet
        started = time.monotonic()
        got = await asyncio.wait_for(pool.acquire(), 2)
        assert got is endpoint
        return time.monotonic() - started

    waited = asyncio.run(main())
    assert 0.15 <= waited < 1.5


def test_deadline_passes_with_a_timeout_error() -> None:
    async def main() -> None:
        pool = EndpointPool([Endpoint("http://a", 1)])
        await pool.acquire()
        try:
            await pool.acquire(time.monotonic() + 0.05)
        except TimeoutError:
            return
        raise AssertionError("the deadline passed without a TimeoutError")

    asyncio.run(main())
