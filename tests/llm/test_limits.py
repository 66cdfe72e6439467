"""The endpoint pool under cancellation: every waiter ends when cancelled, no slot is lost."""

from __future__ import annotations

import asyncio
import time

from evalstress.llm.limits import Endpoint, EndpointPool


def test_cancelled_waiters_all_end_at_once() -> None:
    """A Ctrl-C cancels hundreds of requests queued for a slot, some with a deadline timer
    (the retry path); all of them must end, none may keep waiting. "At once" is counted in
    turns of the event loop, not seconds: every waiter has ended after one turn."""

    async def main() -> None:
        pool = EndpointPool([Endpoint("http://a", 1)])
        held = await pool.acquire()
        far = time.monotonic() + 60
        waiters = [asyncio.create_task(pool.acquire(far if i % 2 else None)) for i in range(300)]
        await asyncio.sleep(0.05)
        assert not any(task.done() for task in waiters)  # all queued behind the held slot
        for task in waiters:
            task.cancel()
        await asyncio.sleep(0)  # one turn: each cancelled waiter runs once
        assert sum(not task.done() for task in waiters) == 0
        results = await asyncio.gather(*waiters, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        await pool.release(held)
        assert pool.endpoints[0].in_flight == 0

    asyncio.run(main())


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
    """The waiter is woken by the pause's end, not by a later poll: it gets its slot before a
    timer set at three times the pause fires in the same loop (timers fire in order, however
    loaded the machine is)."""

    async def main() -> tuple[float, list[str]]:
        endpoint = Endpoint("http://a", 2)
        pool = EndpointPool([endpoint])
        endpoint.rate_limited(0.2)  # a 429 asked for 0.2 s of quiet
        started = time.monotonic()
        finished: list[str] = []
        acquire = asyncio.create_task(pool.acquire())
        later = asyncio.create_task(asyncio.sleep(3 * 0.2))
        acquire.add_done_callback(lambda _: finished.append("acquire"))
        later.add_done_callback(lambda _: finished.append("three pauses"))
        got = await acquire
        waited = time.monotonic() - started
        await later
        assert got is endpoint
        return waited, finished

    waited, finished = asyncio.run(main())
    assert waited >= 0.15  # the pause was kept
    assert finished == ["acquire", "three pauses"]


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
