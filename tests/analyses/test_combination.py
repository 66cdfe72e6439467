from evalstress.analyses.combination import combine
from evalstress.analyses.outcomes import Outcome


def outcome(evaluator, aspect, test, verdict, analysis="blindspot"):
    return Outcome(analysis, evaluator, aspect, test, test, verdict, None, "")


def grid(passes, tests, failing_verdict="fail"):
    return [outcome(e, a, t, "pass" if t in passes[(e, a)] else failing_verdict)
            for (e, a) in passes for t in tests]


TESTS = ["truncation", "negation", "switching", "typos", "repetition", "injection"]


def test_smallest_cover_with_alternatives_and_uncovered_tests():
    # d passes a subset of a's tests, so it is never needed; a + b, a + c, b + c all cover 5
    passes = {("a", "x"): {"truncation", "negation", "switching", "typos"},
              ("b", "x"): {"truncation", "negation", "repetition"},
              ("c", "x"): {"switching", "typos", "repetition"},
              ("d", "x"): {"negation"}}
    result = combine(grid(passes, TESTS))
    assert result.best == ["a/x", "b/x"] and ["b/x", "c/x"] in result.alternatives
    assert result.covered == 5
    assert result.uncovered == ["blindspot:injection"]
    assert result.exact
    assert [s["covered"] for s in result.coverage_by_size] == [4, 5]


def test_exact_search_where_greedy_needs_three():
    # greedy takes a (4 tests), then b and c for t5 and t6; b + c alone cover all six
    passes = {("a", ""): {"t1", "t2", "t3", "t4"}, ("b", ""): {"t1", "t2", "t5"},
              ("c", ""): {"t3", "t4", "t6"}}
    tests = ["t1", "t2", "t3", "t4", "t5", "t6"]
    result = combine(grid(passes, tests))
    assert result.best == ["b", "c"] and result.covered == 6 and not result.uncovered


def test_inconclusive_and_not_applicable_are_not_passes():
    found = [outcome("rep", "rep-2", "repetition", "pass"),
             outcome("rep", "rep-2", "truncation", "not-applicable"),
             outcome("bleu", "", "truncation", "inconclusive"),
             outcome("bleu", "", "repetition", "fail")]
    result = combine(found)
    assert result.best == ["rep/rep-2"]
    assert result.uncovered == ["blindspot:truncation"]


def test_by_evaluator_passes_when_any_aspect_passes_and_uses_discernment():
    found = [outcome("rouge", "rouge1", "truncation", "fail"),
             outcome("rouge", "rougeL", "truncation", "pass"),
             outcome("bleu", "bleu", "switching", "pass"),
             outcome("judge", "", "typos@minor", "pass", analysis="discernment")]
    by_aspect = combine(found)
    assert "discernment:typos@minor" not in by_aspect.tests
    by_evaluator = combine(found, by="evaluator")
    assert sorted(by_evaluator.best) == ["bleu", "judge", "rouge"]
    assert by_evaluator.covered == 3


def test_greedy_fallback_is_flagged():
    passes = {(f"e{i}", ""): {f"t{i}", f"t{i + 1}"} for i in range(0, 12, 2)}
    tests = [f"t{i}" for i in range(13)]
    result = combine(grid(passes, tests), max_sets=3)
    assert not result.exact and result.covered == 12
