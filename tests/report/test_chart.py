"""The chart writer's round ticks and their labels, worked out by hand."""

from __future__ import annotations

import pytest

from evalstress.report.chart import nice_ticks, num, padded, tick_labels


def test_ticks_fall_on_round_steps_within_the_range() -> None:
    # 0.345 / 4 = 0.086: the next round step is 0.1
    assert nice_ticks(0.0, 0.345, 4) == pytest.approx([0.0, 0.1, 0.2, 0.3])
    # 14.9 / 5 = 2.98: the next round step is 5
    assert nice_ticks(2.3, 17.2, 5) == pytest.approx([5.0, 10.0, 15.0])
    # 4.6 / 5 = 0.92: step 1, from -1.2 up to 3.4
    assert nice_ticks(-1.2, 3.4, 5) == pytest.approx([-1.0, 0.0, 1.0, 2.0, 3.0])
    assert nice_ticks(7.0, 7.0) == [7.0]


def test_tick_labels_carry_the_decimals_their_step_needs() -> None:
    assert tick_labels([0.0, 0.1, 0.2, 0.30000000000000004]) == ["0.0", "0.1", "0.2", "0.3"]
    assert tick_labels([-2.5, 0.0, 2.5]) == ["−2.5", "0.0", "2.5"]
    assert tick_labels([0.0, 0.25, 0.5]) == ["0.00", "0.25", "0.50"]
    assert tick_labels([5.0, 10.0, 15.0]) == ["5", "10", "15"]


def test_coordinates_and_ranges() -> None:
    assert [num(v) for v in (3.0, -0.04, 2.25, 12.345)] == ["3", "0", "2.2", "12.3"]
    assert padded(0.0, 10.0) == pytest.approx((-0.5, 10.5))
    assert padded(4.0, 4.0) == pytest.approx((3.5, 4.5))  # a flat line gets a span of one
