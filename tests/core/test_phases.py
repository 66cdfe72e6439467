"""Phase timings: off unless recorded; a recording sums each phase's blocks, in start order."""

from __future__ import annotations

import time

from evalstress.core.phases import phase, recording, watching


def test_phases_are_summed_in_the_order_they_started() -> None:
    with recording() as record:
        with phase("b"):
            time.sleep(0.02)
        with phase("a"):
            time.sleep(0.01)
        with phase("b"):
            time.sleep(0.02)
    assert list(record) == ["b", "a"]
    assert record["b"] >= 0.04 and 0.01 <= record["a"] < record["b"]


def test_nothing_is_recorded_outside_a_recording_and_an_error_still_counts() -> None:
    with recording() as record:
        try:
            with phase("failed"):
                raise ValueError("boom")
        except ValueError:
            pass
    with phase("unseen"):
        pass
    assert list(record) == ["failed"]


def test_a_watcher_sees_each_phase_start_and_end_nested_and_failed() -> None:
    seen: list[tuple[str, str]] = []
    with watching(lambda event, name: seen.append((event, name))), phase("outer"):
        try:
            with phase("inner"):
                raise ValueError("boom")
        except ValueError:
            pass
    with phase("after"):
        pass
    assert seen == [("start", "outer"), ("start", "inner"), ("end", "inner"),
                    ("end", "outer")]
