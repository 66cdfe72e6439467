"""Precision and recall of the LLM attacks' acceptance checks, on a tuning and a held-out set.

Every attack of `perturb/prompts/` has labelled replies in two sets: `tests/perturb/labelled/`,
the tuning set the checks were tightened on (its figures are partly fitted), and
`tests/perturb/heldout/`, written afterwards on other originals and never used to change a
check. Each reply goes through the acceptance the generation stage uses
(`llm_checks.judge_answer`); the tables give, per attack, the correct and wrong replies, the
accepted wrong ones (FP), the rejected correct ones (FN), precision of "accept" and recall, each
with its Wilson 95% interval. The held-out figures are the ones the product quotes: `--write`
stores them in `src/evalstress/perturb/validator_precision.json`, which
`tests/perturb/test_heldout.py` holds equal to this measurement. An attack whose held-out
precision is below the floor (0.95) writes unverified variants unless a verifier checks them.

`--verifier SPEC` adds a verifier model (a generator spec, e.g. `model=local,temperature=0`):
the replies the checks accept are put to it with the questions a run asks
(`perturb.verifier`), and the tables show checks and verifier together; with `--write` the
held-out figures are stored under the verifier's model name and temperature, and a run with that
verifier quotes them. `--errors` lists the misjudged replies of the tuning set only: reading
the held-out misses to change a check would make them tuning replies too.

Usage: python bench/bench_validators.py [--attack NAME ...] [--errors] [--verifier SPEC]
       [--prompts FILE] [--json OUT] [--write]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalstress.core.extras import is_local_model
from evalstress.core.text import TextParser
from evalstress.core.version import __version__
from evalstress.perturb.labelled import (
    LabelledAnswer,
    Measurement,
    Verdict,
    checks_table,
    load_labelled,
    measure,
)
from evalstress.perturb.llm import AttackSpec, Resolved, builtin_attacks, load_prompt_file
from evalstress.perturb.precision import FLOOR, TABLE_FILE

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "perturb" / "labelled"
HELDOUT = ROOT / "tests" / "perturb" / "heldout"
TABLE = ROOT / "src" / "evalstress" / "perturb" / TABLE_FILE
SET_NOTE = ("tests/perturb/heldout: replies written after the checks were last tuned, on "
            "originals of their own; never used to change a check")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ci(interval: tuple[float | None, float | None]) -> str:
    low, high = interval
    return "-" if low is None or high is None else f"[{low:.2f}, {high:.2f}]"


def table(results: Mapping[str, Measurement], *, status: bool = False) -> str:
    """The per-attack table (and the total over attacks); `status` adds whether the attack's
    variants count as verified by the checks (precision at or above the floor)."""
    head = ["attack", "correct", "wrong", "FP", "FN", "precision", "95% CI", "recall", "95% CI"]
    if status:
        head.append("variants")
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    total = Measurement("all")
    for name, m in sorted(results.items()):
        total.add(m)
        cells = [name, str(m.correct), str(m.wrong), str(m.false_positives),
                 str(m.false_negatives), _fmt(m.precision), _ci(m.precision_interval),
                 _fmt(m.recall), _ci(m.recall_interval)]
        if status:
            cells.append("verified" if m.precision is not None and m.precision >= FLOOR
                         else "unverified")
        rows.append("| " + " | ".join(cells) + " |")
    cells = ["**all**", str(total.correct), str(total.wrong), str(total.false_positives),
             str(total.false_negatives), _fmt(total.precision), _ci(total.precision_interval),
             _fmt(total.recall), _ci(total.recall_interval)] + ([""] if status else [])
    rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def verifier_verdict(spec: str, parser: TextParser | None = None) -> Verdict:
    """A verdict function asking the verifier model the questions a run asks
    (`perturb.verifier`), held to yes or no by a grammar when the model runs in this
    process."""
    from evalstress.llm.client import LLMError
    from evalstress.llm.generate import GenerationJob, TextGenerator
    from evalstress.perturb.verifier import GRAMMAR, decide, verifier_questions

    generator = TextGenerator.from_spec(spec)
    extra = {"grammar": GRAMMAR} if is_local_model(generator.model) else {}
    reader = parser or TextParser()

    def verdict(case: LabelledAnswer, text: str, resolved: Resolved) -> bool:
        questions = verifier_questions(case.attack, case.text, text, resolved, reader)
        answers = generator.generate_many([GenerationJob.of(q, 0, **extra) for q in questions])
        texts = [a.text for a in answers if not isinstance(a, LLMError)]
        return len(texts) == len(answers) and decide(texts) is True

    verdict.model = generator.model  # type: ignore[attr-defined]
    verdict.temperature = generator.temperature  # type: ignore[attr-defined]
    return verdict


def write_table(checks: Mapping[str, Any] | None = None, verifier: Mapping[str, Any] | None = None,
                path: Path = TABLE) -> None:
    """Store held-out measurements in the shipped table: the checks' (replacing them), or a
    verifier's (under its model name), keeping the rest of the file."""
    current = json.loads(path.read_text("utf-8")) if path.exists() else {}
    today = datetime.date.today().isoformat()
    if checks is not None:
        current.update({"measured": today, "evalstress": __version__, "set": SET_NOTE,
                        "checks": dict(sorted(checks.items()))})
    if verifier is not None:
        current.setdefault("verifiers", {})[verifier["model"]] = {
            "measured": today, "evalstress": __version__, "temperature": verifier["temperature"],
            "questions": "perturb/verifier.py", "attacks": dict(sorted(verifier["attacks"].items()))}
    ordered = {k: current[k] for k in ("about", "measured", "evalstress", "set", "checks",
                                       "verifiers") if k in current}
    path.write_text(_dump(ordered) + "\n", "utf-8")


def _dump(value: Any, indent: str = "") -> str:
    """JSON with one line per attack: a mapping of plain values (or lists of them) is written
    on one line, any other mapping one key per line."""
    if not isinstance(value, Mapping) or not any(isinstance(v, Mapping) for v in value.values()):
        return json.dumps(value, ensure_ascii=False)
    inner = indent + " "
    lines = [f"{inner}{json.dumps(k)}: {_dump(v, inner)}" for k, v in value.items()]
    return "{\n" + ",\n".join(lines) + f"\n{indent}}}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, default=FOLDER, help="the tuning set")
    parser.add_argument("--heldout", type=Path, default=HELDOUT, help="the held-out set")
    parser.add_argument("--attack", action="append", default=None)
    parser.add_argument("--errors", action="store_true",
                        help="list every misjudged reply of the tuning set")
    parser.add_argument("--verifier", default=None, help="generator spec of a verifier model")
    parser.add_argument("--prompts", default=None, help="a prompt file overriding the attacks")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--write", action="store_true",
                        help=f"store the held-out figures in src/evalstress/perturb/{TABLE_FILE}")
    args = parser.parse_args()
    if args.write and (args.attack or args.prompts):
        parser.error("--write measures the built-in attacks in full: drop --attack and --prompts")
    attacks: dict[str, AttackSpec] = dict(builtin_attacks())
    if args.prompts:
        attacks.update(load_prompt_file(args.prompts).overrides)
    text_parser = TextParser()
    sets = {"tuning": load_labelled(args.folder), "held-out": load_labelled(args.heldout)}
    if args.attack:
        sets = {k: {n: v for n, v in cases.items() if n in args.attack}
                for k, cases in sets.items()}
    results: dict[str, dict[str, Measurement]] = {}
    for label, cases in sets.items():
        started = time.perf_counter()
        results[label] = measure(cases, attacks, text_parser)
        fitted = ("the checks were tightened on it: partly fitted" if label == "tuning"
                  else "never used to change a check: the figures the product quotes")
        print(f"\nacceptance checks, {label} set ({fitted}), "
              f"{sum(map(len, cases.values()))} labelled replies, "
              f"{time.perf_counter() - started:.1f} s\n")
        print(table(results[label], status=label == "held-out"))
    verified: dict[str, dict[str, Measurement]] = {}
    if args.verifier:
        verdict = verifier_verdict(args.verifier, text_parser)
        for label, cases in sets.items():
            started = time.perf_counter()
            verified[label] = measure(cases, attacks, text_parser, verdict)
            print(f"\nchecks + verifier ({args.verifier}), {label} set, "
                  f"{time.perf_counter() - started:.1f} s\n")
            print(table(verified[label], status=label == "held-out"))
    if args.errors:
        for name, m in sorted(results["tuning"].items()):
            for case, why in m.errors:
                print(f"\n{name} [{case.where}, {case.kind}]: {why}\n  {case.answer.strip()[:300]}")
    if args.json:
        args.json.write_text(json.dumps(
            {label: {k: v.to_dict() for k, v in found.items()} for label, found in
             results.items()}, indent=2))
    if args.write:
        write_table(checks=checks_table(results["held-out"]), verifier=None if not verified
                    else {"model": verdict.model,  # type: ignore[attr-defined]
                          "temperature": verdict.temperature,  # type: ignore[attr-defined]
                          "attacks": checks_table(verified["held-out"])})
        print(f"\nwrote {TABLE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
