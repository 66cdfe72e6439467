"""A real run (real runner, analyses and outputs) on SummEval documents, with hostile texts in
ids, texts, evaluator reasons, and in the generation and adversarial blocks, for the report's
browser tests. Built once per session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalstress.analyses import run_analyses
from evalstress.core.data import Example
from evalstress.engine.runner import run
from evalstress.evaluators.base import create_evaluator
from evalstress.report import write_outputs
from evalstress.report.html import write_report
from evalstress.suites import Suite

XSS = '<img src=x onerror="window.__xss=1">'
CLOSE = "</script><script>window.__xss=2</script>"
PAYLOAD = f"{XSS}{CLOSE}"

SUITE = {
    "name": "report-e2e",
    "seeds": [0, 1],
    "perturbations": {"truncation": {"grid": [0.2, 0.5]}, "char-typo": {},
                      "word-span-deletion": {}, "sentence-reordering": {},
                      "repetition": {"grid": [10]}},
    "analyses": ["blindspot", "discernment", "criteria-confusion", "correlation", "style"],
    "options": {"aspect_map": {"bleu": "overall", "rouge1": "informativeness",
                               "rouge2": "informativeness", "rougeL": "coherence"},
                "n_boot": 50},
}


def summeval_examples(path: Path, count: int) -> list[Example]:
    """System summaries of the first documents, each with its experts' scores as meta."""
    out = []
    with path.open(encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if i >= count:
                break
            doc = json.loads(line)
            system = doc["systems"][i % len(doc["systems"])]
            human = {k: system[k] for k in ("coherence", "consistency", "fluency", "relevance")}
            ident = f"{doc['id']}"
            text = system["summary"]
            if i == 1:  # hostile id and text: must stay inert everywhere
                ident = f"doc{XSS}"
                text = f"{text} {PAYLOAD}"
            out.append(Example(ident, "summarization", doc["source"], text,
                               tuple(doc["references"]), {"human": human}))
    return out


def judge_like(request: Any) -> dict[str, float]:
    """A two-aspect scorer that refuses hostile texts with a hostile reason."""
    if "onerror" in request.text:
        raise ValueError(f"refused {PAYLOAD}")
    words = request.text.split()
    distinct = len(set(words)) / max(1, len(words))
    return {"fluency": 5 * distinct, "coherence": min(5.0, len(words) / 12)}


GENERATION = {
    "generator": {"model": "smollm2", "endpoints": "http://127.0.0.1:1/v1", "temperature": 0.7},
    "usage": {"requests": 30, "cache_hits": 4, "calls": 26, "retries": 1, "errors": 2,
              "rate_limited": 0, "prompt_tokens": 9000, "completion_tokens": 3100},
    "perturbations": {
        "llm-negation": {"planned": 12, "accepted": 9, "skipped": 3, "asks": 17, "reasks": 5,
                         "acceptance_rate": 0.75,
                         "rejections": {"refusal": 3, "unchanged": 4, PAYLOAD: 1}},
        "llm-empty": {"planned": 0, "accepted": 0, "skipped": 0, "asks": 0, "reasks": 0,
                      "acceptance_rate": None, "rejections": {}},
    },
    "imported": {"file": f"variants{XSS}.jsonl", "variants": 120},
}

ADVERSARIAL = {
    "params": {"tau_plus": 70, "tau_minus": 30, "delta": 40, "lambda": 1.0, "budget": 300,
               "candidates": 8, "trajectory": 10, "max_iterations": 30, "gold_samples": 8},
    "asr": [{"victim": "rouge", "direction": "good", "method": "adveval", "attempts": 20,
             "successes": 7, "asr": 0.35, "ci_low": 0.18, "ci_high": 0.57,
             "queries_per_success": 41.3, "mean_queries": 120.5},
            {"victim": "rouge", "direction": "bad", "method": "rule:negation", "attempts": 8,
             "successes": 2, "asr": 0.25, "ci_low": 0.07, "ci_high": 0.59,
             "queries_per_success": 11.0, "mean_queries": 300.0, "not_run": 12,
             "attempts_all": 20, "asr_all": 0.1, "ci_low_all": 0.03, "ci_high_all": 0.3}],
    "successes": [{"example_id": f"ex{XSS}", "victim": "rouge", "direction": "good",
                   "method": "adveval", "original": "The cat sat on the mat today.",
                   "text": f"The cat lay on the warm mat today {PAYLOAD}.", "gold": 82.0,
                   "victim_score": 12.5, "gold_original": 75.0, "victim_original": 40.0,
                   "iterations": 4, "queries": 32}],
    "missing": {f"gold: judge: refused {XSS}": 5, "victim: empty text": 2},
    "rejections": {"adveval": {"refusal": 3, "gold-missing": 5}, "rule:negation": {}},
    "protocol": "paper",
    "stop_rules": {"adveval": ["highest-feedback"], "rule:negation": ["highest-feedback"]},
    "victims": [{"label": "rouge", "reference_mode": "original", "clipped": 0,
                 "scale": {"low": 0.0, "high": 1.0, "higher_is_better": True,
                           "how": "declared", "data_dependent": False}},
                {"label": f"ter{XSS}", "reference_mode": "original", "clipped": 3,
                 "scale": {"low": 12.0, "high": 80.0, "higher_is_better": False,
                           "how": "min-max", "data_dependent": True, "originals": 20}}],
    "gold": [{"label": "judge", "reference_mode": "example", "clipped": 0,
              "scale": {"low": 0, "high": 100, "higher_is_better": True, "how": "declared",
                        "data_dependent": False}}],
}


def build_run(out: Path, shared_data: Path, *, count: int = 16) -> Path:
    examples = summeval_examples(shared_data / "summeval.jsonl", count)
    suite = Suite.from_dict(SUITE)
    evaluators = [create_evaluator("bleu"), create_evaluator("rouge"), create_evaluator("rep"),
                  create_evaluator({"name": "python", "target": judge_like,
                                    "aspects": "fluency coherence", "label": "judge_like"})]
    result = run(examples, suite, evaluators)
    analyses = run_analyses(suite.analyses, result, suite.options)
    write_outputs(result, analyses, out, config={"command": "run", "suite": suite.name,
                                                 "evaluators": ["bleu", "rouge", "rep",
                                                                f"python:{XSS}"]})
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    results["generation"] = GENERATION
    results["analyses"]["adversarial"] = ADVERSARIAL
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    write_report(out)
    return out


@pytest.fixture(scope="session")
def e2e_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import SHARED_DATA

    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return build_run(tmp_path_factory.mktemp("e2e"), SHARED_DATA)


def build_small_run(out: Path, *, count: int = 6) -> Path:
    """A quick real run: built-in corpus, lexical metrics (rep is meant for repetition only),
    the blind-spot suite with two seeds."""
    from evalstress.core.data import builtin_corpus
    from evalstress.suites import load_suite

    suite = load_suite("blindspot")
    suite.seeds = (0, 1)
    examples = builtin_corpus()[:count]
    evaluators = [create_evaluator("bleu"), create_evaluator("rouge"), create_evaluator("rep")]
    result = run(examples, suite, evaluators)
    analyses = run_analyses(suite.analyses, result, suite.options)
    write_outputs(result, analyses, out, config={"command": "run", "suite": suite.name,
                                                 "evaluators": ["bleu", "rouge", "rep"]})
    return out


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_small_run(tmp_path_factory.mktemp("small"))
