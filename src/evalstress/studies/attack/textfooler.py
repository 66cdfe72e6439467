"""A greedy word-substitution attack in the style of TextFooler (Jin et al. 2020), aimed at a
regression score in either direction, as paper 004 adapts it for its comparison.

1. Word importance by deletion: each content word (not a stop-word) is deleted in turn and the
   victim scores the result; words whose deletion moves the victim furthest the wanted way
   (down for `good`, up for `bad`) come first.
2. For each word in that order, candidates are its WordNet synonyms (same part of speech,
   re-inflected) and its nearest neighbours in the embedding table of the local MiniLM that
   WordNet lists with the same part of speech; candidates whose text falls below the sentence
   similarity threshold against the start text are dropped; the victim scores the rest and the
   best replacement is kept if it moves the victim the wanted way.
3. The search stops when the victim reaches the score that would complete a success if the gold
   label held (tau+ - delta for good, tau- + delta for bad), when the words run out, or when the
   budget is spent. The gold judge scores only the start and the final text.

Towards `bad`, the search starts from another example's text by default, as paper 004 does for
its victim-only baselines (whose label-preservation assumption needs a text that is bad already).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalstress.core.text import TextParser, rebuild_parsed
from evalstress.perturb.common import inflect, match_case
from evalstress.studies.attack.base import AttackRecord, AttackSetup, finish, start_point
from evalstress.studies.attack.embeddings import EmbeddingNeighbours, SentenceSimilarity
from evalstress.studies.attack.objective import victim_target
from evalstress.studies.attack.trajectory import Trajectory
from evalstress.studies.attack.wordnet import WORDNET_POS, knows, synonyms

METHOD = "textfooler"
_INFLECTED = {"NNS", "VBD", "VBZ", "VBG", "VBN", "VBP", "JJR", "JJS"}


@dataclass
class TextFooler:
    """Settings: `sim` (sentence cosine floor, TextAttack's 0.84 by default), `neighbours` and
    `min_cos` (embedding candidates), `start` for the bad direction (random or original)."""

    sim: float = 0.84
    neighbours: int = 50
    min_cos: float = 0.5
    model: str = "minilm"
    start: str = "random"
    device: str = "auto"

    def __post_init__(self) -> None:
        self._parser = TextParser()
        self._similarity = SentenceSimilarity(self.model, self.device)
        self._neighbours: EmbeddingNeighbours | None = None

    def neighbour_table(self) -> EmbeddingNeighbours:
        if self._neighbours is None:
            from evalstress.evaluators import models

            loaded = models.load("base", self.model, self.device)
            self._neighbours = EmbeddingNeighbours(loaded.model, loaded.tokenizer)
        return self._neighbours

    def candidates(self, word: str, upos: str, tag: str) -> list[str]:
        """Synonyms (re-inflected like the word) then embedding neighbours with the same part
        of speech in WordNet; each once, never the word itself."""
        pos = WORDNET_POS.get(upos)
        if pos is None:
            return []
        base = word.lower()
        inflected = tag in _INFLECTED and upos in ("NOUN", "VERB")
        lemma = base
        if inflected:
            from lemminflect import getLemma

            lemma = (getLemma(base, upos=upos) or (base,))[0]
        out: dict[str, None] = {}
        for synonym in synonyms(lemma, pos):
            form = inflect(synonym, tag, upos) if inflected else synonym
            out.setdefault(form.lower(), None)
        for neighbour, _ in self.neighbour_table().neighbours(base, self.neighbours,
                                                               self.min_cos):
            if knows(neighbour, pos):
                out.setdefault(neighbour.lower(), None)
        out.pop(base, None)
        return list(out)

    def applies(self, direction: str) -> bool:
        return True

    def run(self, setup: AttackSetup) -> AttackRecord:
        mode = self.start if setup.direction == "bad" else "original"
        start, text = start_point(setup, mode)
        trajectory = Trajectory(setup.evaluate([text], 0, [start]))
        if not trajectory.items:
            return finish(setup, METHOD, trajectory, start=start, start_text=text,
                          stop="original-unscored", iterations=0)
        first = trajectory.items[0]
        want = -1.0 if setup.direction == "good" else 1.0
        target = victim_target(setup.direction, setup.params)

        def reached(value: float) -> bool:
            return want * (value - target) >= 0

        parsed = self._parser.parse(text)
        tokens = parsed.tokens
        positions = [i for i, t in enumerate(tokens) if t.is_alpha and not t.is_stop]
        current: dict[int, str] = {}
        value, raw = first.victim, first.victim_raw
        path: list[dict[str, Any]] = []
        stop = setup.stopped(trajectory)
        if stop is None and reached(value):
            stop = "target"
        if stop is None and positions:
            deleted = [rebuild_parsed(parsed, drop=[i]) for i in positions]
            scores = setup.victim_scores(deleted)
            importance = {i: want * (s.value - value) for i, s in zip(positions, scores,
                                                                      strict=False)
                          if s.value is not None}
            order = sorted(importance, key=lambda i: (-importance[i], i))
            for i in order:
                if setup.budget.exhausted:
                    break
                word = tokens[i].text
                options = self.candidates(word, tokens[i].pos, tokens[i].tag)
                texts = [rebuild_parsed(parsed, {**current, i: match_case(o, word)})
                         for o in options]
                sims = self._similarity(text, texts) if texts else []
                kept = [(o, t, s) for o, t, s in zip(options, texts, sims, strict=True)
                        if s >= self.sim]
                scored = setup.victim_scores([t for _, t, _ in kept])
                results = [(o, s, m) for (o, _, s), m in zip(kept, scored, strict=False)
                           if m.value is not None]
                if not results:
                    continue
                hits = [r for r in results if reached(r[2].value or 0.0)]
                choice = (max(hits, key=lambda r: r[1]) if hits else
                          max(results, key=lambda r: want * (r[2].value or 0.0)))
                new_value = choice[2].value
                assert new_value is not None
                if want * (new_value - value) <= 0:
                    continue
                current[i] = match_case(choice[0], word)
                value, raw = new_value, choice[2].raw
                path.append({"position": i, "old": word, "new": current[i],
                             "similarity": round(choice[1], 4), "victim": value})
                if reached(value):
                    stop = "target"
                    break
            else:
                stop = stop or "words"
        final = rebuild_parsed(parsed, current) if current else text
        result = None
        if final != text:
            result = setup.judge_final(final, len(path), value, raw,
                                       f"{len(path)} substitutions")
            if result is not None:
                trajectory.add(result)
        stop = stop or ("budget" if setup.budget.exhausted else "words")
        return finish(setup, METHOD, trajectory, start=start, start_text=text, stop=stop,
                      iterations=len(path), result=result, extra={"path": path, "target": target,
                                                   "sim": self.sim})
