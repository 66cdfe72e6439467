"""The sequential DHP design: same significant / non-significant calls, fewer judge calls."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from evalstress.analyses.discernment import discernment_analysis
from evalstress.analyses.sequential import SequentialDesign, conditional_power, obf_spent
from evalstress.core.data import load_examples
from evalstress.engine.runner import run
from evalstress.report import write_outputs
from evalstress.suites import load_suite
from tests.analyses.dhp_fixture import RuleJudge


def test_spending_and_conditional_power_by_hand() -> None:
    assert obf_spent(1.0, 0.05) == 0.05
    # 2 - 2 Phi(1.95996 / sqrt(0.5)) = 2 - 2 Phi(2.77181)
    assert obf_spent(0.5, 0.05) == pytest.approx(2 - 2 * 0.997212, abs=1e-5)
    assert obf_spent(0.2, 0.05) == pytest.approx(2 * 5.863e-6, rel=1e-3)  # z = 4.3827
    # p = 0.5 means Z = 0: Phi(-1.64485 / sqrt(0.5)) = Phi(-2.32617) = 0.0100
    assert conditional_power(0.5, 0.5, 0.05) == pytest.approx(0.0100, abs=2e-4)
    # a strong trend: Z = 2.326 at t = 0.5 -> Phi((3.290 - 1.645) / 0.7071) = Phi(2.326)
    assert conditional_power(0.01, 0.5, 0.05) == pytest.approx(
        stats.norm.cdf((2.32635 / math.sqrt(0.5) - 1.64485) / math.sqrt(0.5)), abs=1e-4)


@pytest.mark.long_run  # a whole DHP run twice: about 18 s
def test_sequential_design_keeps_the_conclusions_with_fewer_calls(shared_data: Path,
                                                                  tmp_path: Path) -> None:
    examples = load_examples(shared_data / "summeval.jsonl",
                             ["hypothesis=highlight", "references=references"],
                             task="summarization", limit=60)
    # every rule perturbation of paper 003 on summaries (the built-in dhp suite plans three of
    # them for this task), so the fixture has enough units of both conclusions
    suite_file = tmp_path / "dhp-all.yaml"
    suite_file.write_text("name: dhp-all\nseeds: [0, 1, 2, 3, 4]\nperturbations:\n"
                          "  char-deletion: {}\n  char-typo: {}\n  word-span-deletion: {}\n"
                          "  sentence-reordering: {}\n  random-ending: {}\n"
                          "analyses: [discernment]\n", encoding="utf-8")
    suite = load_suite(str(suite_file))
    naive_judge = RuleJudge(examples)
    naive = run(examples, suite, [naive_judge])
    full = {(u.task, u.perturbation, u.severity, "rule-judge", t.aspect):
            t.wilcoxon.pvalue is not None and t.wilcoxon.pvalue <= 0.05
            for u in discernment_analysis(naive.scores).units for t in u.tests}
    design = SequentialDesign(len(examples), looks=5)
    judge = RuleJudge(examples)
    result = run(examples, suite, [judge], chunk_size=design.chunk_size,
                 policy=design)
    assert design.conclusions() == full
    assert sum(full.values()) >= 6 and sum(not v for v in full.values()) >= 6  # both kinds
    assert judge.texts <= 0.7 * naive_judge.texts
    stopped_early = [u for u in design.to_dict()["units"] if u["stopped"]["look"] < 5]
    assert stopped_early
    # the discernment analysis runs on what was collected, and results.json reports the design
    analysis = discernment_analysis(result.scores)
    assert {(u.perturbation, u.severity) for u in analysis.units} == {
        (k[1], k[2]) for k in full}
    write_outputs(result, {"discernment": analysis}, tmp_path / "run")
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert results["sequential"]["looks"] == 5
    assert len(results["sequential"]["units"]) == len({(k[1], k[2]) for k in full})


def test_the_runner_s_tapering_last_chunks_are_interim_looks_not_the_final_one() -> None:
    import pyarrow as pa

    from evalstress.engine.pipeline import chunk_positions

    # 60 examples at 5 looks: chunks of 12 that taper to 12, 12, 12, 10, 4, 4, 2, 2, 1, 1; a
    # unit whose variant is barely worse (p stays above every bound) is open to the end
    design = SequentialDesign(60, looks=5, futility=0.0)
    for chunk in chunk_positions(60, design.chunk_size):
        rows = []
        for i in chunk:
            base = {"task": "summarization", "evaluator": "j", "aspect": "overall",
                    "status": "ok", "higher_is_better": True, "example_id": f"e{i}"}
            rows += [{**base, "perturbation": "original", "severity": "", "score": 5.0},
                     {**base, "perturbation": "typo", "severity": "minor",
                      "score": 5.0 - (0.5 if i % 2 else -0.4)}]
        design.observe(pa.Table.from_pylist(rows))
    looks = design.to_dict()["looks_taken"]
    assert [look["examples_seen"] for look in looks] == [12, 24, 36, 46, 50, 54, 56, 58, 59, 60]
    # the fifth look (50 of 60) spends O'Brien-Fleming's increment, not the whole alpha
    assert looks[4]["efficacy_bound"] == pytest.approx(obf_spent(50 / 60, 0.05)
                                                       - obf_spent(46 / 60, 0.05))
    assert looks[-1]["efficacy_bound"] == 0.05  # the last look, on every example, is final
