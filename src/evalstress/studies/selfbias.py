"""Self-evaluation bias (paper 002, section 5.4): does an evaluator favour texts its own backbone
wrote?

Each backbone plays two parts: a generator (continuations of prompts with top-k sampling,
k = 50, for causal LMs; summaries of sources with beam search, 5 beams, for seq2seq models, as
the paper decodes) and the backbone of an evaluator (GPT-PPL for causal LMs, BARTScore
faithfulness for seq2seq models). The paper's GPT-PPL setting gives the two parts different
weights of one base model: the generator fine-tuned (on WikiText), the evaluator off the shelf;
`Backbone(name, model, evaluator_model=...)` does that, and without `evaluator_model` one model
plays both parts. Every evaluator scores every system's texts, human texts
included, and the table is the paper's Tables 5 and 6: rows are evaluators, columns systems, the
evaluator's own system marked.

Per evaluator row: the rank of its own system among the model systems, its margin over the best
other model system, and `self_preferred` (its own system ranks first). The bias shows when an
evaluator ranks its own system first while the referees do not: `consensus_rank` is the mean
rank of that system by the evaluators that own no system (the paper's OPT-2.7b row), or by the
other evaluators when there is no such referee (1 = best).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalstress.engine.runhealth import MissingShare, frame_missing_shares
from evalstress.perturb.base import derive_seed

HUMAN = "human"


@dataclass
class SelfBiasRow:
    evaluator: str
    own_system: str
    scores: dict[str, float]  # system -> mean score (higher is better)
    std: dict[str, float]  # system -> standard deviation over texts
    own_rank: int  # 1 = best among the model systems
    margin: float | None  # own score minus the best other model system's score
    self_preferred: bool
    consensus_rank: float | None  # mean rank of the own system by the referees


@dataclass
class SelfBiasResult:
    systems: list[str]
    rows: list[SelfBiasRow]
    n_texts: int
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: per evaluator, its missing scores (the run health check reads them)
    missing: list[MissingShare] = field(default_factory=list)

    @property
    def biased(self) -> list[str]:
        """Evaluators that put their own system first although the others do not."""
        return [r.evaluator for r in self.rows if r.self_preferred
                and r.consensus_rank is not None and r.consensus_rank > 1]

    def to_dict(self) -> dict[str, Any]:
        return {"analysis": "self-bias", "systems": self.systems, "n_texts": self.n_texts,
                "rows": [asdict(r) for r in self.rows], "biased": self.biased,
                "settings": self.settings, "notes": self.notes,
                "missing": {m.evaluator: {"missing": m.missing, "rows": m.rows,
                                          "top_reason": m.top_reason} for m in self.missing},
                "reading": "rows are evaluators, columns systems; an evaluator is biased when it "
                           "ranks its own backbone's system first while the other evaluators "
                           "rank that system lower (consensus_rank > 1)"}


def self_bias(scores: pd.DataFrame, own: Mapping[str, str], *,
              settings: Mapping[str, Any] | None = None) -> SelfBiasResult:
    """The evaluator x system table from a long frame of scores.

    `scores` has columns evaluator, system, example_id, score (higher is better); `own` maps an
    evaluator to the system its backbone generated. Texts with a missing score drop out of that
    cell only.
    """
    systems = list(dict.fromkeys(scores["system"]))
    models = [s for s in systems if s != HUMAN]
    cells = scores.dropna(subset=["score"]).groupby(["evaluator", "system"])["score"]
    means, stds = cells.mean(), cells.std(ddof=0)
    evaluators = list(dict.fromkeys(scores["evaluator"]))
    ranks: dict[str, dict[str, int]] = {}
    for ev in evaluators:
        ordered = sorted((s for s in models if (ev, s) in means.index),
                         key=lambda s: -float(means[(ev, s)]))
        ranks[ev] = {s: k + 1 for k, s in enumerate(ordered)}
    rows = []
    referee_rows = []
    for ev in evaluators:
        if ev not in own:
            referee_rows.append(SelfBiasRow(
                ev, "", {s: float(means[(ev, s)]) for s in systems if (ev, s) in means.index},
                {s: float(stds[(ev, s)]) for s in systems if (ev, s) in stds.index},
                0, None, False, None))
    for ev in evaluators:
        mine = own.get(ev)
        if mine is None or (ev, mine) not in means.index:
            continue
        others = [float(means[(ev, s)]) for s in models if s != mine and (ev, s) in means.index]
        margin = float(means[(ev, mine)]) - max(others) if others else None
        referees = [o for o in evaluators if o not in own] or [o for o in evaluators if o != ev]
        peers = [ranks[o][mine] for o in referees if mine in ranks[o]]
        rows.append(SelfBiasRow(
            ev, mine,
            {s: float(means[(ev, s)]) for s in systems if (ev, s) in means.index},
            {s: float(stds[(ev, s)]) for s in systems if (ev, s) in stds.index},
            ranks[ev][mine], margin, ranks[ev][mine] == 1,
            float(np.mean(peers)) if peers else None))
    notes = []
    if len(evaluators) < 2:
        notes.append("one evaluator only: its own-system preference cannot be set against "
                     "another ranking (consensus_rank is empty)")
    return SelfBiasResult(systems, rows + referee_rows, int(scores["example_id"].nunique()),
                          dict(settings or {}), notes)


# -- generation with local backbones -------------------------------------------------------------


def continuations(model: str, prompts: Sequence[str], *, max_new_tokens: int = 60,
                  top_k: int = 50, seed: int = 0, device: str = "auto") -> list[str]:
    """Top-k sampled continuations (paper 002: k = 50) of each prompt by a local causal LM;
    each prompt's draw is seeded from `seed` and its position, so reruns give the same texts."""
    import torch

    from evalstress.core import models as shared_models

    loaded = shared_models.load("causal-lm", model, device)
    tokenizer, lm = loaded.tokenizer, loaded.model
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    out = []
    for index, prompt in enumerate(prompts):
        torch.manual_seed(derive_seed(seed, "continuation", index) % (2 ** 63))
        enc = tokenizer(prompt, return_tensors="pt").to(loaded.device)
        with torch.no_grad():
            ids = lm.generate(**enc, do_sample=True, top_k=top_k, top_p=1.0, temperature=1.0,
                              max_new_tokens=max_new_tokens, pad_token_id=pad)
        out.append(tokenizer.decode(ids[0, enc["input_ids"].shape[1]:],
                                    skip_special_tokens=True).strip())
    return out


def summaries(model: str, sources: Sequence[str], *, beams: int = 5, max_new_tokens: int = 80,
              max_length: int = 1024, device: str = "auto") -> list[str]:
    """Beam-search outputs (paper 002: 5 beams) of a local seq2seq model for each source."""
    import torch

    from evalstress.core import models as shared_models

    loaded = shared_models.load("seq2seq", model, device)
    out = []
    for source in sources:
        enc = loaded.tokenizer(source, return_tensors="pt", truncation=True,
                               max_length=max_length).to(loaded.device)
        with torch.no_grad():
            ids = loaded.model.generate(**enc, num_beams=beams, do_sample=False,
                                        max_new_tokens=max_new_tokens)
        out.append(loaded.tokenizer.decode(ids[0], skip_special_tokens=True).strip())
    return out


def split_prompt(text: str, words: int) -> tuple[str, str]:
    """(the first `words` whitespace words, the rest): a prompt and its human continuation."""
    parts = text.split()
    return " ".join(parts[:words]), " ".join(parts[words:])


# -- the whole test: generate, score, tabulate ----------------------------------------------------


@dataclass
class Backbone:
    """A system's generator (`model`) and the weights behind the evaluator that shares its base
    model (`evaluator_model`; empty: the generator's own weights)."""

    name: str
    model: str
    evaluator_model: str = ""

    @property
    def scorer(self) -> str:
        """The weights the evaluator of this backbone runs on."""
        return self.evaluator_model or self.model


def run_self_bias(examples: Sequence[Any], backbones: Sequence[Backbone], *, kind: str,
                  referees: Sequence[Any] = (), extra_systems: Mapping[str, Mapping[str, str]]
                  | None = None, prompt_words: int = 32, max_new_tokens: int = 60,
                  seed: int = 0, beams: int = 5, cache: Any = None,
                  progress: Any = None) -> tuple[SelfBiasResult, list[dict[str, str]]]:
    """Generate with each backbone, score every system with every backbone's evaluator (and the
    referee evaluators), and tabulate. kind = lm (continuations, GPT-PPL) or seq2seq (summaries
    of the sources, BARTScore faithfulness). Returns the result and the texts scored."""
    from evalstress.engine.scoring import Scorer
    from evalstress.evaluators.base import ScoreRequest, create_evaluator

    if kind not in ("lm", "seq2seq"):
        raise ValueError(f"self-bias kind '{kind}' is unknown; choose lm or seq2seq")
    if not backbones:
        raise ValueError("self-bias needs at least one backbone model")
    texts: dict[str, dict[str, str]] = {}  # system -> example id -> text
    contexts: dict[str, tuple[str, str]] = {}  # example id -> (source, task)
    if kind == "lm":
        split = {e.id: split_prompt(e.hypothesis, prompt_words) for e in examples}
        used = [e for e in examples if split[e.id][1]]
        prompts = [split[e.id][0] for e in used]
        texts[HUMAN] = {e.id: split[e.id][1] for e in used}
        for bb in backbones:
            outs = continuations(bb.model, prompts, max_new_tokens=max_new_tokens, seed=seed)
            texts[bb.name] = {e.id: t for e, t in zip(used, outs, strict=True)}
        contexts = {e.id: ("", e.task) for e in used}
    else:
        used = [e for e in examples if e.source]
        texts[HUMAN] = {e.id: e.hypothesis for e in used}
        for bb in backbones:
            outs = summaries(bb.model, [e.source for e in used], beams=beams,
                             max_new_tokens=max_new_tokens)
            texts[bb.name] = {e.id: t for e, t in zip(used, outs, strict=True)}
        contexts = {e.id: (e.source, e.task) for e in used}
    for system, by_id in (extra_systems or {}).items():
        texts[system] = {i: t for i, t in by_id.items() if i in contexts}
    evaluators: list[tuple[str, Any, str]] = []
    for bb in backbones:
        spec = ({"name": "gpt-ppl", "model": bb.scorer} if kind == "lm" else
                {"name": "bartscore", "model": bb.scorer, "variants": "faithfulness"})
        evaluators.append((bb.name, create_evaluator(spec), "neg_ppl" if kind == "lm"
                           else "faithfulness"))
    for referee in referees:
        evaluators.append((referee.label, referee, referee.aspects[0]))
    records = []
    requests = {(system, eid): ScoreRequest(text, contexts[eid][0], (), contexts[eid][1])
                for system, by_id in texts.items() for eid, text in by_id.items() if text}
    for label, ev, aspect in evaluators:
        scored = Scorer(ev, cache, progress).score(requests.values())
        for (system, eid), request in requests.items():
            value = scored[request.key].get(aspect)
            ok = value is not None and value.ok
            sign = 1.0 if ev.higher_is_better(aspect) else -1.0
            records.append({"evaluator": label, "system": system, "example_id": eid,
                            "score": sign * float(value.value) if ok and value is not None
                            and value.value is not None else float("nan"),
                            "reason": None if ok else (value.reason if value is not None
                                                       else "no score returned")})
        ev.close()
    frame = pd.DataFrame(records, columns=["evaluator", "system", "example_id", "score",
                                           "reason"])
    result = self_bias(frame, {bb.name: bb.name for bb in backbones}, settings={
        "kind": kind, "backbones": {bb.name: bb.model for bb in backbones},
        "evaluator_backbones": {bb.name: bb.scorer for bb in backbones},
        "referees": [label for label, _, _ in evaluators[len(backbones):]],
        "prompt_words": prompt_words if kind == "lm" else None, "max_new_tokens": max_new_tokens,
        "decoding": "top-k sampling, k=50" if kind == "lm" else f"beam search, {beams} beams",
        "seed": seed, "evaluator": "gpt-ppl (negated perplexity)" if kind == "lm"
        else "bartscore faithfulness (source -> text)"})
    rows = [{"system": system, "example_id": eid, "text": text}
            for system, by_id in texts.items() for eid, text in by_id.items()]
    result.missing = frame_missing_shares(frame)
    empty = sum(1 for row in rows if not row["text"])
    if empty:
        result.notes.append(f"{empty} empty texts (generations with no word) were not scored")
    return result, rows


def self_bias_table(result: SelfBiasResult) -> Any:
    """The paper's comparison table for the terminal: evaluators x systems, own cell marked."""
    from rich.table import Table

    table = Table(title="Self-evaluation bias (paper 002, sec. 5.4): mean score per system, "
                        "higher is better", header_style="bold")
    table.add_column("evaluator")
    for system in result.systems:
        table.add_column(system, justify="right")
    table.add_column("own rank", justify="center")
    table.add_column("referee rank", justify="center")
    for row in result.rows:
        cells = []
        for system in result.systems:
            value = row.scores.get(system)
            text = "-" if value is None else f"{value:.3f}"
            cells.append(f"[bold]{text}*[/]" if system == row.own_system else text)
        table.add_row(row.evaluator, *cells, str(row.own_rank or "-"),
                      "-" if row.consensus_rank is None else f"{row.consensus_rank:.1f}")
    biased = ", ".join(result.biased) or "none"
    table.caption = (f"* the evaluator's own system. Ranks among model systems (1 = best); the "
                     f"referee rank is the own system's mean rank by the evaluators that own no "
                     f"system (else by the others). Biased: {biased}.")
    return table
