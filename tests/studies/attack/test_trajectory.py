"""The trajectory the generator sees: the top 10 by feedback, shown in ascending order."""

from __future__ import annotations

from evalstress.studies.attack.trajectory import Candidate, Trajectory


def cand(text: str, s: float, success: bool = False) -> Candidate:
    return Candidate(text, 1, 50.0, 50.0, s, success)


def test_top_ten_of_fifteen_in_ascending_order() -> None:
    scores = [5, -3, 12, 40, 7, 7, 0, 33, 18, 25, -10, 60, 2, 9, 14]
    t = Trajectory(cand(f"t{i}", s) for i, s in enumerate(scores))
    top = t.top(10)
    # by hand: the ten largest are 60, 40, 33, 25, 18, 14, 12, 9, 7, 7
    assert [c.feedback for c in top] == [7, 7, 9, 12, 14, 18, 25, 33, 40, 60]
    assert len(t.top(3)) == 3 and [c.feedback for c in t.top(3)] == [33, 40, 60]
    assert len(Trajectory([cand("a", 1)]).top(10)) == 1


def test_ties_cut_by_arrival_and_shown_earlier_nearer_the_top() -> None:
    t = Trajectory([cand("first", 7), cand("second", 7), cand("third", 7)])
    assert [c.text for c in t.top(2)] == ["second", "first"]  # ascending: best (earliest) last


def test_best_prefers_a_success_over_a_higher_feedback() -> None:
    t = Trajectory([cand("orig", 10), cand("loud", 65), cand("win", 45, success=True),
                    cand("win2", 44, success=True)])
    best = t.best()
    assert best is not None and best.text == "win"
    assert Trajectory([cand("a", 1), cand("b", 3)]).best().text == "b"  # type: ignore[union-attr]
    assert "loud" in t and "nope" not in t
