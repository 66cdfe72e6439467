"""Where the seconds of a small run go, and what a big one costs per variant over its floor.

1. Phases of a whole run (`evalstress run`'s path: settings -> build_job -> run_job), each size
   in a fresh process so that imports and model loads count as a user pays them: import,
   loading the examples, building the evaluators (models load), the warm-up, the spaCy load,
   scoring (plan, perturb, score, join the chunk parts), analyses, report.html, the rename into
   --out, and the process's peak RSS. Sizes: 1 and 57 examples of the built-in corpus, 1,000
   WikiText paragraphs (/work/shared/data/wikitext_paragraphs.jsonl; each paragraph is its own
   reference, so reference-based metrics have one), else the built-in corpus repeated with
   distinct ids (and the same texts: the score cache then answers the repeats).
2. Helper start-up: seconds from creating a pool of `--workers` - 1 spawn helpers to their first
   answer (interpreter, imports, evaluators, spaCy), against the seconds one example costs in a
   serial run: the run's own process works meanwhile, so helpers pay off beyond
   `start / per-example` examples.
3. Per variant at the largest size, in this process: perturbation, parse and each metric as
   evalstress runs them, against the floor: one spaCy parse per example plus the metric
   library's own time (sacreBLEU, fastchrf or sacreBLEU chrF, rouge-score) on the same
   variants.

Usage: python bench/bench_overhead.py [--sizes 1,57,1000] [-p truncation ...] [-e bleu ...]
       [--seeds 1] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))
WIKITEXT = Path("/work/shared/data/wikitext_paragraphs.jsonl")


def data_file(size: int, folder: Path) -> Path | None:
    """None (the built-in corpus) up to its size; beyond it WikiText paragraphs, or the corpus
    repeated, written as JSONL."""
    from evalstress.core.data import builtin_corpus

    corpus = builtin_corpus()
    if size <= len(corpus):
        return None
    if WIKITEXT.exists():
        rows = [json.loads(line) for line in WIKITEXT.read_text("utf-8").splitlines() if line]
        rows = [{"id": r["id"], "task": "open-ended", "source": "", "hypothesis": r["text"],
                 "references": [r["text"]]} for r in rows[:size]]
    else:
        rows = [{**corpus[i % len(corpus)].to_dict(), "id": f"copy{i}"} for i in range(size)]
    path = folder / f"data-{size}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- 1. phases of a whole run, one size per process ----------------------------------------

def child(args: argparse.Namespace) -> None:
    """One run of `args.size` examples; prints its phases as JSON on the last line."""
    start = time.perf_counter()
    from evalstress.core.phases import recording
    from evalstress.job import RunSettings, build_job, run_job
    imported = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        data = data_file(args.size, Path(folder))
        flags: dict[str, Any] = {
            "data": data, "limit": args.size, "evaluators": args.evaluator,
            "perturbations": args.perturbation or None, "suite": args.suite,
            "seeds": args.seeds, "out": Path(folder) / "run", "workers": args.workers,
            "quiet": True, "no_cache": True}
        with recording() as phases:
            job = build_job(RunSettings.resolve(flags, None, face="run"))
            run_job(job)
    total = time.perf_counter() - start
    print(json.dumps({"import": imported, **phases, "in-process total": total,
                      "peak RSS (MB)": peak_rss_mb()}))


def phases_table(args: argparse.Namespace, sizes: list[int]) -> dict[int, dict[str, float]]:
    found: dict[int, dict[str, float]] = {}
    for size in sizes:
        command = [sys.executable, __file__, "--child", str(size), "--seeds", str(args.seeds),
                   "--workers", str(args.workers), "--suite", args.suite,
                   *(f"-e{e}" for e in args.evaluator),
                   *(f"-p{p}" for p in args.perturbation)]
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": str(SRC)})
        wall = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"the run of {size} examples failed:\n{done.stderr[-2000:]}")
        found[size] = {**json.loads(done.stdout.strip().splitlines()[-1]),
                       "process wall (with interpreter start)": wall}
    names = list(dict.fromkeys(name for row in found.values() for name in row))
    print(f"\n1. Phases of a run (seconds; workers {args.workers}, suite "
          f"{args.perturbation or args.suite}, seeds {args.seeds}, evaluators "
          f"{', '.join(args.evaluator)})")
    print(f"  {'phase':<52}" + "".join(f"{f'{s} ex.':>12}" for s in sizes))
    for name in names:
        print(f"  {name:<52}" + "".join(f"{found[s].get(name, 0.0):12.2f}" for s in sizes))
    return found


# --- 2. worker start-up against the cost of an example ----------------------------------------

def _answer(_: int) -> int:
    return os.getpid()


def worker_start(args: argparse.Namespace, serial_per_example: float) -> None:
    import pickle
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from evalstress.engine.chunkwork import WorkerSpec, recipe_for
    from evalstress.engine.workerstart import start_worker
    from evalstress.evaluators.base import create_evaluator

    recipes = [r for r in (recipe_for(create_evaluator(e)) for e in args.evaluator) if r]
    spec = WorkerSpec(recipes, None, "scores", parse=True)  # as a run with rule units asks
    workers = max(args.workers, 2) - 1  # helpers beside the run's own process
    timings = []
    for _ in range(3):
        began = time.perf_counter()
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn"),
                                 initializer=start_worker,
                                 initargs=(os.getpid(), pickle.dumps(spec))) as pool:
            list(pool.map(_answer, range(workers)))
            timings.append(time.perf_counter() - began)
    start = min(timings)
    # the run's own process works from the start; a helper joins after `start` seconds and
    # pays off once the run lasts longer than that (its start overlaps the parent's warm-up)
    even = start / serial_per_example
    print(f"\n2. Helper start-up ({workers} spawn helpers, min of 3): {start:.2f} s to the "
          f"first answers (imports, evaluators, spaCy); a serial example costs "
          f"{serial_per_example * 1000:.0f} ms: helpers pay off beyond ~{even:.0f} examples")


# --- 3. per variant, against the floor --------------------------------------------------------

def library_scorer(name: str) -> Any:
    """The metric library's own scoring of (texts, references per text), as its documentation
    has one call it (fastchrf: one batch), or None for a metric without a floor here."""
    if name == "bleu":
        from sacrebleu.metrics import BLEU

        bleu = BLEU(effective_order=True)
        return lambda texts, refs: [bleu.sentence_score(t, list(r)).score
                                    for t, r in zip(texts, refs, strict=True)]
    if name == "chrf":
        try:
            import fastchrf

            return lambda texts, refs: fastchrf.pairwise_chrf([[t] for t in texts],
                                                              [list(r) for r in refs])
        except ImportError:
            from sacrebleu.metrics import CHRF

            chrf = CHRF()
            return lambda texts, refs: [chrf.sentence_score(t, list(r)).score
                                        for t, r in zip(texts, refs, strict=True)]
    if name == "rouge":
        from rouge_score import rouge_scorer

        rouge = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
        return lambda texts, refs: [[rouge.score(x, t) for x in r]
                                    for t, r in zip(texts, refs, strict=True)]
    return None


def per_variant(args: argparse.Namespace, size: int) -> None:
    from evalstress.core.data import builtin_corpus, load_examples
    from evalstress.core.text import TextParser, load_spacy
    from evalstress.engine.planning import plan_dataset
    from evalstress.evaluators.base import ScoreRequest, create_evaluator
    from evalstress.suites import custom_suite, load_suite

    with tempfile.TemporaryDirectory() as folder:
        data = data_file(size, Path(folder))
        examples = builtin_corpus()[:size] if data is None else load_examples(data, None)
    suite = (custom_suite(args.perturbation, seeds=args.seeds) if args.perturbation
             else load_suite(args.suite))
    load_spacy()
    parser = TextParser()
    began = time.perf_counter()
    parser.parse_many([e.hypothesis for e in examples])
    parse = time.perf_counter() - began
    began = time.perf_counter()
    plan = plan_dataset(examples, suite, parser=parser)  # the parses are in the memo
    perturb = time.perf_counter() - began
    variants = len(plan.variants)
    by_id = {e.id: e for e in examples}
    requests = [ScoreRequest(v.text, by_id[v.example_id].source, by_id[v.example_id].references,
                             by_id[v.example_id].task) for v in plan.variants]
    print(f"\n3. Per variant at {size} examples ({variants} variants; microseconds)")
    print(f"  {'step':<34}{'evalstress':>12}{'floor':>12}{'ratio':>8}")
    print(f"  {'parse (one per example)':<34}{parse / variants * 1e6:12.1f}"
          f"{parse / variants * 1e6:12.1f}{1.0:8.2f}")
    print(f"  {'perturbation':<34}{perturb / variants * 1e6:12.1f}{'':>12}{'':>8}")
    floor_total, ours_total = parse, parse + perturb
    for name in args.evaluator:
        evaluator = create_evaluator(name)
        began = time.perf_counter()
        for start in range(0, len(requests), 256):
            evaluator.score(requests[start:start + 256])
        ours = time.perf_counter() - began
        ours_total += ours
        scorer = library_scorer(name)
        if scorer is None:
            print(f"  {name:<34}{ours / variants * 1e6:12.1f}{'?':>12}{'':>8}")
            continue
        began = time.perf_counter()
        scorer([r.text for r in requests], [r.references for r in requests])
        floor = time.perf_counter() - began
        floor_total += floor
        print(f"  {name:<34}{ours / variants * 1e6:12.1f}{floor / variants * 1e6:12.1f}"
              f"{ours / floor:8.2f}")
    print(f"  {'all':<34}{ours_total / variants * 1e6:12.1f}{floor_total / variants * 1e6:12.1f}"
          f"{ours_total / floor_total:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,57,1000")
    parser.add_argument("--suite", default="blindspot")
    parser.add_argument("-p", "--perturbation", action="append", default=[])
    parser.add_argument("-e", "--evaluator", action="append", default=[])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--skip", default="", help="parts to leave out: 2,3")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.evaluator = args.evaluator or ["bleu"]
    if args.child is not None:
        args.size = args.child
        child(args)
        return
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} cores, load average {load:.1f} at the start")
    sizes = [int(s) for s in args.sizes.split(",")]
    found = phases_table(args, sizes)
    skip = set(args.skip.split(","))
    largest = max(sizes)
    if "2" not in skip:
        score = found[largest]["score (plan, perturb, score, join parts)"]
        worker_start(args, score / largest)
    if "3" not in skip:
        per_variant(args, largest)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
