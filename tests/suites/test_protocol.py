"""The paper protocol differs from the default exactly where paper 002's public code does."""

from __future__ import annotations

import pytest

from evalstress.perturb.base import registry
from evalstress.suites import Suite, has_paper_rule, load_suite
from tests.perturb.conftest import GOLDEN_POOL, MARKET, make_ctx

#: Perturbations whose paper rule the issue lists (per-test rules and probes) ...
LISTED = {"truncation", "verb-lemmatization", "token-drop", "repeated-token", "local-swap",
          "middle-swap", "noised-punctuation", "sentence-switching", "generic-entity",
          "entity-switching", "noun-switching", "positioned-error", "injection",
          "frequent-ngram"}
#: ... and the ones a reading of the same code found besides: independent per-unit coins
#: (article / preposition / stop-word removal, negation; article removal on whitespace words),
#: the capital a repeated 4-gram gets after a period, and verbs of any lemma switching places.
FOUND = {"article-removal", "preposition-removal", "stopword-removal", "negation",
         "repetition", "verb-switching"}

#: SummEval grids of the paper's public code (sum_mt/SUM/score.py), as the issue lists them.
SUMMEVAL_GRIDS = {
    "truncation": [0.1, 0.2, 0.3, 0.4, 0.5],
    "article-removal": [0.5, 1.0],
    "preposition-removal": [0.4, 0.7, 1.0],
    "stopword-removal": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
    "verb-lemmatization": [0.5, 1.0],
    "token-drop": [round(0.05 * k, 2) for k in range(1, 11)],
    "repeated-token": [round(0.05 * k, 2) for k in range(1, 11)],
    "local-swap": [0.05, 0.15, 0.3, 0.6],
    "middle-swap": [1, 2, 3],
    "noised-punctuation": [0.5, 1.0],
    "generic-entity": [0.5, 1.0],
    "negation": [0.5, 1.0],
    "sentence-replacement": [1, 2],
    "entity-switching": [1, 3],
    "noun-switching": [2, 7],
    "sentence-switching": [1, 2],
    "verb-switching": [8],
}


#: Paper 003's LLM-written type whose count its Table 2 states per task and ours differs from
#: (grammatical errors: one in a story ending, at least one in an answer, at least two in a
#: summary or a translation; fictional entities and rewriting match ours).
PAPER_003 = {"grammatical-errors"}
#: Paper 000's rule attacks: their severity `paper` is that paper's fixed rule.
PAPER_000 = {"sentence-exchange", "word-exchange", "spelling-mistake", "sentence-deletion"}


def test_the_perturbations_with_a_paper_rule_are_exactly_the_listed_ones() -> None:
    with_rule = {name for name, cls in registry().items() if has_paper_rule(cls)}
    assert with_rule == LISTED | FOUND | PAPER_003


def test_paper_protocol_changes_no_other_perturbation() -> None:
    names = [n for n, cls in registry().items() if cls.method == "rule"]
    default = Suite.from_dict({"perturbations": names})
    paper = default.with_protocol("paper")
    assert paper.protocol == "paper" and default.protocol == "default"
    for before, after in zip(default.perturbations, paper.perturbations, strict=True):
        if before.name in PAPER_000:  # the paper's fixed rule is their severity `paper`
            assert after.grid == ("paper",) and after.perturbation.params == \
                before.perturbation.params
            continue
        # other grids come from the suite, never the protocol, except the grid of a paper rule
        # that counts (middle-swap's sentences), which a ratio grid cannot feed
        assert after.grid == (tuple(type(before.perturbation).paper_grid) or before.grid)
        if before.name in LISTED | FOUND:
            assert after.perturbation.params == {**before.perturbation.params, "rule": "paper"}
            continue
        assert after.perturbation.params == before.perturbation.params
        for severity in before.grid[:2]:
            ctx = make_ctx(MARKET, pool=GOLDEN_POOL, source="A source text.",
                           meta={"wrong_ending": "It ended.", "wrong_answer": "No."})
            assert before.perturbation.apply(ctx, severity, 0) == \
                after.perturbation.apply(ctx, severity, 0)


def test_paper_summarization_suite_carries_the_codes_grids() -> None:
    suite = load_suite("paper-summarization")
    assert suite.protocol == "paper"
    grids = {p.name: list(p.grid) for p in suite.perturbations}
    for name, grid in SUMMEVAL_GRIDS.items():
        assert grids[name] == grid, name
    assert all(p.perturbation.params.get("rule") == "paper" for p in suite.perturbations
               if p.name in LISTED | FOUND)


def test_every_paper_suite_runs_under_the_paper_protocol() -> None:
    for name in ("paper-summarization", "paper-translation", "paper-translation-ted",
                 "paper-open-ended"):
        assert load_suite(name).protocol == "paper"


def test_rule_and_protocol_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="field 'protocol'"):
        Suite.from_dict({"perturbations": ["truncation"], "protocol": "papr"})
    with pytest.raises(ValueError, match=r"truncation\.rule"):
        Suite.from_dict({"perturbations": {"truncation": {"rule": "exact"}}})
    with pytest.raises(ValueError, match="no paper rule"):
        Suite.from_dict({"perturbations": {"char-typo": {"rule": "paper"}}})


def test_a_suite_may_keep_the_default_rule_of_one_perturbation_under_the_paper_protocol() -> None:
    suite = Suite.from_dict({"perturbations": {"truncation": {"rule": "default"},
                                               "token-drop": {}}, "protocol": "paper"})
    rules = {p.name: p.perturbation.params.get("rule") for p in suite.perturbations}
    assert rules == {"truncation": "default", "token-drop": "paper"}


def test_a_paper_suite_under_the_default_protocol_keeps_its_grids_and_drops_the_rules() -> None:
    paper = load_suite("paper-summarization")
    default = paper.with_protocol("default")
    assert default.protocol == "default"
    assert [p.grid for p in default.perturbations] == [p.grid for p in paper.perturbations]
    assert all("rule" not in p.perturbation.params for p in default.perturbations)
    kept = Suite.from_dict({"perturbations": {"truncation": {"rule": "paper"}}})
    assert kept.with_protocol("default").perturbations[0].perturbation.params["rule"] == "paper"


def test_translation_suites_leave_out_what_appendix_i_excludes() -> None:
    """Paper 002, appendix I: no sentence switching on WMT (one sentence per item), no verb or
    entity switching and no sentence replacement on WMT, no entity switching or generic entity on
    TED. Its code's consistency tests are noun switching, generic entities and negation on WMT;
    noun switching, negation, verb switching, sentence switching and replacement on TED."""
    wmt = {p.name: list(p.grid) for p in load_suite("paper-translation").perturbations}
    ted = {p.name: list(p.grid) for p in load_suite("paper-translation-ted").perturbations}
    assert not {"sentence-switching", "verb-switching", "entity-switching",
                "sentence-replacement"} & set(wmt)
    assert not {"entity-switching", "generic-entity"} & set(ted)
    assert {"noun-switching", "generic-entity", "negation"} <= set(wmt)
    assert {"noun-switching", "negation", "verb-switching", "sentence-switching",
            "sentence-replacement"} <= set(ted)
    assert wmt["noun-switching"] == [1, 6] and ted["noun-switching"] == [6]
    # the fluency tests and their grids are the same on both
    fluency = [n for n in wmt if n not in ("generic-entity", "negation", "noun-switching")]
    assert {n: wmt[n] for n in fluency} == {n: ted[n] for n in fluency}


def test_criteria_full_under_the_paper_protocol_runs_the_rule_attacks_at_severity_paper() -> None:
    full = load_suite("criteria-full")
    rules = {"sentence-exchange", "word-exchange", "spelling-mistake", "sentence-deletion"}
    paper = full.with_protocol("paper")
    grids = {p.name: p.grid for p in paper.perturbations}
    assert all(grids[name] == ("paper",) for name in rules)
    assert all(grids[p.name] == p.grid for p in full.perturbations if p.name not in rules)
    back = paper.with_protocol("default")
    assert [p.grid for p in back.perturbations] == [p.grid for p in full.perturbations]
    # a grid the suite's author wrote stays
    written = Suite.from_dict({"perturbations": {"word-exchange": {"grid": [1, 3]}},
                               "protocol": "paper"})
    assert written.perturbations[0].grid == (1, 3)


def test_one_seed_only_for_suites_of_papers_000_and_003() -> None:
    dhp = load_suite("dhp")
    assert dhp.seeds == (0, 1, 2, 3, 4)
    assert dhp.with_protocol("paper").seeds == (0,)
    assert dhp.with_protocol("paper").with_protocol("default").seeds == dhp.seeds
    mixed = Suite.from_dict({"perturbations": ["char-typo", "truncation"], "seeds": 3})
    assert mixed.with_protocol("paper").seeds == (0, 1, 2)  # paper 002 averages seeds


def test_the_paper_protocol_gives_a_counting_rule_its_own_grid() -> None:
    """middle-swap's paper rule counts sentences: blindspot-full under the paper protocol ran
    it at 0.2 sentences and stopped the run (exit 4); a grid the suite wrote stays."""
    from evalstress.suites import Suite, load_suite

    paper = load_suite("blindspot-full").with_protocol("paper")
    swap = next(p for p in paper.perturbations if p.name == "middle-swap")
    assert swap.grid == (1, 2, 3) and swap.perturbation.params.get("rule") == "paper"
    back = paper.with_protocol("default")
    assert next(p for p in back.perturbations if p.name == "middle-swap").grid == (
        0.2, 0.4, 0.6, 0.8, 1.0)
    written = Suite.from_dict({"perturbations": {"middle-swap": {"grid": [2]}}, "seeds": 1},
                              where="s.yaml").with_protocol("paper")
    assert written.perturbations[0].grid == (2,)


def test_a_paper_rule_missing_its_corpus_is_refused_before_any_work() -> None:
    from evalstress.core.strict import ConfigError
    from evalstress.job import RunSettings, build_job

    settings = RunSettings.resolve({"perturbations": ["frequent-ngram"], "protocol": "paper",
                                    "seeds": 1, "limit": 1})
    with pytest.raises(ConfigError, match="frequent-ngram under rule=paper needs a separate "
                                          "corpus"):
        build_job(settings)
