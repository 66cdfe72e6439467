"""Precision and recall of the LLM attacks' acceptance checks on the project's labelled answers.

Every attack of `perturb/prompts/` has labelled replies in `tests/perturb/labelled/<attack>.yaml`:
correct rewrites and wrong ones (unchanged, over-rewritten, the wrong attack, cut off, a refusal
or the model's remarks left in, a fact nobody asked for). Each reply goes through the acceptance
the generation stage uses (`llm_checks.judge_answer`); the table gives, per attack, the correct
and wrong replies, the accepted wrong ones (FP), the rejected correct ones (FN), precision of
"accept" and recall. `tests/perturb/test_labelled.py` holds the floors (precision >= 0.95,
recall >= 0.9 per attack).

`--verifier SPEC` adds the optional verifier model (a generator spec, e.g. `model=local`): the
answers the checks accept are put to it, as `--verifier` does in a run, and the table shows the
checks and the verifier together.

Usage: python bench/bench_validators.py [--attack NAME ...] [--errors] [--verifier SPEC]
       [--prompts FILE] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalstress.core.text import TextParser
from evalstress.perturb.labelled import LabelledAnswer, Measurement, load_labelled, measure
from evalstress.perturb.llm import AttackSpec, Resolved, builtin_attacks, load_prompt_file

FOLDER = Path(__file__).resolve().parents[1] / "tests" / "perturb" / "labelled"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(results: dict[str, Measurement]) -> str:
    rows = ["| attack | correct | wrong | FP | FN | precision | recall |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, m in sorted(results.items()):
        rows.append(f"| {name} | {m.correct} | {m.wrong} | {m.false_positives} | "
                    f"{m.false_negatives} | {_fmt(m.precision)} | {_fmt(m.recall)} |")
    total = Measurement("all")
    for m in results.values():
        total.true_positives += m.true_positives
        total.false_positives += m.false_positives
        total.false_negatives += m.false_negatives
        total.true_negatives += m.true_negatives
    rows.append(f"| **all** | {total.correct} | {total.wrong} | {total.false_positives} | "
                f"{total.false_negatives} | {_fmt(total.precision)} | {_fmt(total.recall)} |")
    return "\n".join(rows)


def verifier_verdict(spec: str):  # type: ignore[no-untyped-def]
    """A verdict function asking the verifier model, with the run's own verifier prompt."""
    from evalstress.engine.generation import read_verdict
    from evalstress.llm.client import LLMError
    from evalstress.llm.generate import GenerationJob, TextGenerator
    from evalstress.perturb.llm_checks import verifier_messages

    generator = TextGenerator.from_spec(spec)

    def verdict(case: LabelledAnswer, text: str, resolved: Resolved) -> bool:
        [answer] = generator.generate_many([GenerationJob.of(
            verifier_messages(case.text, text, resolved), 0)])
        if isinstance(answer, LLMError):
            return False
        return read_verdict(answer.text) is True

    return verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, default=FOLDER)
    parser.add_argument("--attack", action="append", default=None)
    parser.add_argument("--errors", action="store_true", help="list every misclassified reply")
    parser.add_argument("--verifier", default=None, help="generator spec of a verifier model")
    parser.add_argument("--prompts", default=None, help="a prompt file overriding the attacks")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    attacks: dict[str, AttackSpec] = dict(builtin_attacks())
    if args.prompts:
        attacks.update(load_prompt_file(args.prompts).overrides)
    cases = load_labelled(args.folder)
    if args.attack:
        cases = {k: v for k, v in cases.items() if k in args.attack}
    started = time.perf_counter()
    results = measure(cases, attacks, TextParser())
    print(f"acceptance checks, {sum(map(len, cases.values()))} labelled replies, "
          f"{time.perf_counter() - started:.1f} s\n")
    print(table(results))
    if args.verifier:
        started = time.perf_counter()
        with_verifier = measure(cases, attacks, TextParser(), verifier_verdict(args.verifier))
        print(f"\nchecks + verifier ({args.verifier}), {time.perf_counter() - started:.1f} s\n")
        print(table(with_verifier))
    if args.errors:
        for name, m in sorted(results.items()):
            for case, why in m.errors:
                print(f"\n{name} [{case.where}, {case.kind}]: {why}\n  {case.answer.strip()[:300]}")
    if args.json:
        args.json.write_text(json.dumps({k: v.to_dict() for k, v in results.items()}, indent=2))


if __name__ == "__main__":
    main()
