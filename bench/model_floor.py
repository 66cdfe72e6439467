"""Model-based scoring against the model's floor: evalstress's Scorer vs the fastest direct loop.

For each shipped model-based evaluator, on the same real texts in one run:
- GPT-PPL (the shipped SmolLM2-135M GGUF, dequantized by transformers) on WikiText paragraphs;
- BERTScore (the shipped MiniLM-L6) on SummEval highlights against their 10 references;
- the local judge (`judge:model=local`, llama-cpp-python in this process) on SummEval items.

"evalstress" is the engine's `Scorer` with a fresh score cache (and, for the judge, a fresh
response cache) each repeat, so nothing is a cache hit. "direct" is the library's own loop,
written here as fast as it goes: texts sorted by length (by prompt for the judge, so that
llama.cpp reuses the shared prefix), batched, tokenised once, and the best of a thread-count
sweep (`--threads`; torch's threads for transformers and bert-score, `n_threads` for llama.cpp).
The direct loops: a batched forward pass and a fused cross entropy (GPT-PPL); bert-score's
`BERTScorer.score` with the references as lists (BERTScore); the chat template, a prefill that
keeps the previous prompt's common prefix, and the softmax of the rating tokens' logits (the
judge's expected rating). Each loop's scores are compared with evalstress's. evalstress runs
at its defaults and, for the torch evaluators, with `threads=N` for each swept count other
than torch's own; the table gives the ratio of each to the direct loop's best (target 0.8).

Model loads are timed apart from scoring, and one warm-up text on each side is not timed. The
sides alternate (evalstress, evalstress threads=1, direct at each thread count, evalstress,
...), as the machine is shared and its load moves; throughput is each side's best repeat.
Peak memory: the evalstress path in a fresh process at N and 4N texts (`--no-memory` skips
it); the peak is the child's high-water mark of resident memory (`VmHWM`), model load
included.

Usage: PYTHONPATH=src python bench/model_floor.py [--only gpt-ppl,bertscore,judge]
       [--repeats 2] [--threads 1,2] [--ppl-texts 16] [--bert-texts 32] [--judge-texts 4]
       [--no-memory]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data")
TARGET = 0.8  # evalstress's throughput over the direct loop's (issue 46)
JUDGE_SPEC = "judge:model=local"
CASES = ("gpt-ppl", "bertscore", "judge")

Scores = list[tuple[float, ...]]


# --- the bench's arithmetic (tests/engine/test_bench_model_floor.py) -------------------------


def schedule(sides: Sequence[str], repeats: int) -> list[str]:
    """The order the sides run in: each repeat runs every side once, so a change in the
    machine's load falls on all of them (A B A B, not A A B B)."""
    return [side for _ in range(repeats) for side in sides]


def best_rate(texts: int, seconds: Sequence[float]) -> float:
    """Texts a second of the fastest repeat: on a shared machine the other repeats measure
    the neighbours' load as well."""
    return texts / min(seconds)


def verdict(ours: float, floor: float) -> str:
    """The ratio of evalstress's throughput to the direct loop's, against the target."""
    ratio = ours / floor
    return f"{ratio:.2f} ({'meets' if ratio >= TARGET else 'MISSES'} >= {TARGET})"


def growth(peaks: dict[int, float]) -> str:
    """Peak memory at the larger text count over the smaller: 1.0 is flat."""
    if len(peaks) < 2:
        return "-"
    small, large = min(peaks), max(peaks)
    return f"{peaks[large] / peaks[small]:.2f}"


def largest_gap(ours: Scores, theirs: Scores) -> float:
    """The largest relative difference between two score lists, value by value."""
    gap = 0.0
    for a, b in zip(ours, theirs, strict=True):
        for x, y in zip(a, b, strict=True):
            gap = max(gap, abs(x - y) / max(abs(y), 1e-12))
    return gap


# --- texts ------------------------------------------------------------------------------------


def requests_for(case: str, count: int) -> list[Any]:
    """The first `count` texts of the case's real data as score requests."""
    from evalstress.core.data import load_examples
    from evalstress.engine.scoring import request_for
    from evalstress.evaluators.base import ScoreRequest

    if case == "gpt-ppl":
        texts = []
        with (DATA / "wikitext_paragraphs.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                texts.append(json.loads(line)["text"])
                if len(texts) == count:
                    break
        return [ScoreRequest(text) for text in texts]
    examples = load_examples(DATA / "summeval.jsonl",
                             ["hypothesis=highlight", "references=references", "source=source"],
                             task="summarization", limit=count)
    return [request_for(e, e.hypothesis) for e in examples]


def spec_of(case: str, threads: int | None = None) -> str:
    """The evaluator spec of a case; `threads`: torch's CPU threads (GPT-PPL, BERTScore)."""
    if case == "judge":
        return JUDGE_SPEC
    return f"{case}:threads={threads}" if threads else case


# --- evalstress's path ------------------------------------------------------------------------


def loaded_evaluator(case: str, threads: int | None = None) -> Any:
    """A fresh evaluator of the case, its model loaded (shared by later ones in the process)."""
    from evalstress.evaluators import create_evaluator

    evaluator = create_evaluator(spec_of(case, threads))
    if case == "gpt-ppl":
        _ = evaluator.shared.model
    elif case == "bertscore":
        _ = evaluator._model, evaluator._tokenizer
    else:
        evaluator.client.backend.model()
    return evaluator


def evalstress_scores(case: str, requests: Sequence[Any], threads: int | None = None) -> Scores:
    """Score through the engine's Scorer with fresh caches: nothing is a cache hit."""
    from evalstress.engine.scoring import Scorer, open_cache

    evaluator = loaded_evaluator(case, threads)
    with tempfile.TemporaryDirectory(prefix="floor-") as folder:
        if case == "judge":
            evaluator.configure_cache(Path(folder), enabled=True)
        cache = open_cache(Path(folder) / "scores.sqlite")
        try:
            rows = Scorer(evaluator, cache).score(requests)
        finally:
            cache.close()
    return [tuple(float(rows[r.key][a].value) for a in evaluator.aspects) for r in requests]


# --- the direct loops -------------------------------------------------------------------------


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """torch's intra-op threads for the block (None: leave them as they are)."""
    import torch

    before = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class DirectPerplexity:
    """transformers' causal LM: length-sorted batches, one fused cross entropy per batch."""

    def __init__(self) -> None:
        import transformers

        from evalstress.core import models

        path = Path(models.resolve_model(models.DEFAULT_CAUSAL_LM))
        where = {"gguf_file": path.name} if path.suffix == ".gguf" else {}
        folder = str(path.parent) if path.suffix == ".gguf" else str(path)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **where)
        self.model = transformers.AutoModelForCausalLM.from_pretrained(folder, **where).eval()
        self.pad = self.tokenizer.pad_token_id or self.tokenizer.eos_token_id or 0

    def score(self, requests: Sequence[Any], batch: int = 8) -> Scores:
        import torch

        ids = self.tokenizer([r.text for r in requests], add_special_tokens=True)["input_ids"]
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        out: dict[int, float] = {}
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            width = max(len(ids[i]) for i in rows)
            tokens = torch.full((len(rows), width), self.pad, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for row, i in enumerate(rows):
                tokens[row, :len(ids[i])] = torch.tensor(ids[i])
                mask[row, :len(ids[i])] = 1
            with torch.inference_mode():
                logits = self.model(input_ids=tokens, attention_mask=mask).logits
                nll = torch.nn.functional.cross_entropy(
                    logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
                valid = mask[:, 1:].to(nll.dtype)
                means = (nll * valid).sum(dim=1) / valid.sum(dim=1)
            for row, i in enumerate(rows):
                out[i] = -math.exp(float(means[row]))
        return [(out[i],) for i in range(len(requests))]


class DirectBertScore:
    """bert-score's own scorer, built once; it sorts and de-duplicates the sentences itself."""

    def __init__(self) -> None:
        from bert_score import BERTScorer

        from evalstress.core import models

        self.scorer = BERTScorer(model_type=models.resolve_model("minilm"), num_layers=6)

    def score(self, requests: Sequence[Any], batch: int = 64) -> Scores:
        p, r, f = self.scorer.score([q.text for q in requests],
                                    [list(q.references) for q in requests], batch_size=batch)
        return list(zip(p.tolist(), r.tolist(), f.tolist(), strict=True))


class DirectJudge:
    """llama-cpp-python: the GGUF's chat template, a prefill that keeps the common prefix of
    the previous prompt, and the expected rating under the softmax of the rating tokens."""

    def __init__(self, threads: int) -> None:
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        from evalstress.evaluators import create_evaluator
        from evalstress.llm.local import DEFAULT_CONTEXT, shipped_gguf

        self.prompts = create_evaluator(JUDGE_SPEC)  # only for its prompt wording
        self.llama = Llama(str(shipped_gguf()), n_ctx=DEFAULT_CONTEXT, n_threads=threads,
                           n_threads_batch=threads, verbose=False)
        eos, bos = self.llama.token_eos(), self.llama.token_bos()
        text_of = self.llama._model.token_get_text
        self.formatter = Jinja2ChatFormatter(
            template=self.llama.metadata["tokenizer.chat_template"],
            eos_token=text_of(eos) if eos != -1 else "", bos_token=text_of(bos) if bos != -1
            else "", stop_token_ids=[eos])
        low, high = self.prompts.scale
        self.values = list(range(low, high + 1))
        self.labels = [self.llama.tokenize(str(v).encode(), add_bos=False, special=False)[0]
                       for v in self.values]

    def _prefill(self, tokens: list[int]) -> None:
        import numpy as np

        llama = self.llama
        held = llama.input_ids[: llama.n_tokens]
        limit = min(len(held), len(tokens))
        differ = np.flatnonzero(held[:limit] != np.asarray(tokens[:limit]))
        common = min(int(differ[0]) if differ.size else limit, len(tokens) - 1)
        if common > 0 and llama._ctx.kv_cache_seq_rm(-1, common, -1):
            llama.n_tokens = common
        else:
            llama.reset()
            common = 0
        llama.eval(tokens[common:])

    def score(self, requests: Sequence[Any]) -> Scores:
        import numpy as np

        aspects = self.prompts.aspects
        jobs = sorted(((i, a) for i in range(len(requests)) for a in aspects),
                      key=lambda job: (requests[job[0]].source, requests[job[0]].text, job[1]))
        out: dict[tuple[int, str], float] = {}
        for i, aspect in jobs:
            formatted = self.formatter(messages=self.prompts.messages(requests[i], aspect))
            tokens = self.llama.tokenize(formatted.prompt.encode("utf-8"),
                                         add_bos=not formatted.added_special, special=True)
            self._prefill(tokens)
            logits = np.ctypeslib.as_array(self.llama._ctx.get_logits(),
                                           shape=(self.llama.n_vocab(),))
            picked = logits[self.labels].astype(np.float64)
            weights = np.exp(picked - picked.max())
            out[(i, aspect)] = float(weights @ np.asarray(self.values) / weights.sum())
        return [tuple(out[(i, a)] for a in aspects) for i in range(len(requests))]


def direct_loop(case: str, threads: int) -> Any:
    if case == "gpt-ppl":
        return DirectPerplexity()
    if case == "bertscore":
        return DirectBertScore()
    return DirectJudge(threads)


# --- one case ---------------------------------------------------------------------------------


@dataclass
class Result:
    case: str
    texts: int
    load: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    gap: float = 0.0
    peaks: dict[int, float] = field(default_factory=dict)


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = work()
    return time.perf_counter() - start, value


def evalstress_sides(case: str, threads: Sequence[int]) -> list[str]:
    """evalstress at its defaults, and, where the spec takes `threads=` (torch's evaluators),
    at each swept count that is not torch's own."""
    if case == "judge":
        return ["evalstress"]
    import torch

    own = torch.get_num_threads()
    return ["evalstress", *(f"evalstress threads={t}" for t in threads if t != own)]


def measure(case: str, count: int, threads: Sequence[int], repeats: int) -> Result:
    """Both sides on the same texts, loads apart, one untimed warm-up text each, alternating."""
    requests = requests_for(case, count + 1)
    warm, requests = requests[:1], requests[1:]
    result = Result(case, len(requests))
    result.load["evalstress"], _ = timed(lambda: loaded_evaluator(case))
    evalstress_scores(case, warm)
    loops: dict[int, Any] = {}
    shared = None  # transformers and bert-score take the thread count per call, not per load
    for count_ in threads:
        if case == "judge" or shared is None:
            seconds, shared = timed(lambda c=count_: direct_loop(case, c))
            result.load.setdefault("direct", seconds)
        loops[count_] = shared
        with torch_threads(count_ if case != "judge" else None):
            loops[count_].score(warm)
    sides = [*evalstress_sides(case, threads),
             *(f"direct {t} thread{'s' * (t > 1)}" for t in threads)]
    ours: Scores = []
    theirs: Scores = []
    for side in schedule(sides, repeats):
        if side.startswith("evalstress"):
            given = int(side.split("=")[1]) if "=" in side else None
            seconds, ours = timed(lambda t=given: evalstress_scores(case, requests, t))
        else:
            count_ = int(side.split()[1])
            with torch_threads(count_ if case != "judge" else None):
                seconds, theirs = timed(lambda c=count_: loops[c].score(requests))
        result.seconds.setdefault(side, []).append(seconds)
        print(f"  {case} {side}: {seconds:.2f} s", flush=True)
    result.gap = largest_gap(ours, theirs)
    return result


# --- peak memory in a fresh process -----------------------------------------------------------


def peak_of_child(case: str, count: int) -> float:
    """Peak RSS (MB) of a fresh process that loads the case's model and scores `count` texts
    through evalstress: the child's own high-water mark (`VmHWM`). Not `wait4`'s ru_maxrss,
    which Linux carries over from the parent's pages at the fork, so a child started from
    this process, with its models loaded, would report this process's size."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, __file__, "--child", case, "--child-texts",
                           str(count)], env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the {case} child at {count} texts failed: {done.stderr[-800:]}")
    return float(done.stdout.split()[-1])


def high_water_mb() -> float:
    """This process's peak resident set since its start (exec), in MB."""
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")  # pragma: no cover


def child(case: str, count: int) -> None:
    evalstress_scores(case, requests_for(case, count))
    print(f"{high_water_mb():.1f}")


# --- the table --------------------------------------------------------------------------------


def table(results: Sequence[Result]) -> list[str]:
    """One row per evaluator: the direct loop's best, evalstress at its defaults and at its
    best setting (a `threads=` of the sweep), each with its ratio to the direct loop."""
    lines = ["| evaluator | texts | load s (evalstress / direct) | direct texts/s (best "
             "threads) | evalstress texts/s, defaults | ratio | evalstress texts/s, best "
             "setting | ratio | peak MB at N / 4N (growth) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        rates = {side: best_rate(r.texts, s) for side, s in r.seconds.items()}
        direct = max((s for s in rates if s.startswith("direct")), key=lambda s: rates[s])
        best = max((s for s in rates if s.startswith("evalstress")), key=lambda s: rates[s])
        setting = best.split(" ", 1)[1] if " " in best else "defaults"
        peaks = " / ".join(f"{r.peaks[n]:.0f}" for n in sorted(r.peaks)) or "-"
        lines.append(f"| {r.case} | {r.texts} | {r.load['evalstress']:.1f} / "
                     f"{r.load['direct']:.1f} | {rates[direct]:.2f} ({direct[7:]}) | "
                     f"{rates['evalstress']:.2f} | {verdict(rates['evalstress'], rates[direct])}"
                     f" | {rates[best]:.2f} ({setting}) | {verdict(rates[best], rates[direct])}"
                     f" | {peaks} ({growth(r.peaks)}) |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(CASES))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--ppl-texts", type=int, default=16)
    parser.add_argument("--bert-texts", type=int, default=32)
    parser.add_argument("--judge-texts", type=int, default=4)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--child-texts", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.child_texts)
        return
    counts = {"gpt-ppl": args.ppl_texts, "bertscore": args.bert_texts,
              "judge": args.judge_texts}
    threads = [int(t) for t in args.threads.split(",")]
    chosen = [c for c in args.only.split(",") if c]
    unknown = sorted(set(chosen) - set(CASES))
    if unknown:
        raise SystemExit(f"--only: unknown {', '.join(unknown)} (one of {', '.join(CASES)})")
    print(f"load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores", flush=True)
    results = []
    for case in chosen:
        result = measure(case, counts[case], threads, args.repeats)
        print(f"  {case}: largest relative score difference {result.gap:.1e}", flush=True)
        if not args.no_memory:
            for n in (counts[case], 4 * counts[case]):
                result.peaks[n] = peak_of_child(case, n)
                print(f"  {case}: peak {result.peaks[n]:.0f} MB at {n} texts", flush=True)
        results.append(result)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
