"""The greedy word-substitution search that TextFooler and BERT-Attack share, aimed at a
regression score in either direction, as paper 004 adapts both for its comparison.

1. Word importance: each content word (not a stop-word) is taken out in turn (`importance_text`:
   deleted for TextFooler, masked for BERT-Attack) and the victim scores the result; words
   whose removal moves the victim furthest the wanted way (down for `good`, up for `bad`) come
   first.
2. For each word in that order, the method proposes replacements (`options`); texts below the
   sentence-similarity floor against the start text are dropped (`sim`; 0 turns the check off);
   the victim scores the rest and the best is kept if it moves the victim the wanted way. Among
   replacements that reach the target, the one most similar to the start text wins.
3. The search stops when the victim reaches the score that would complete a success if the gold
   label held (tau+ - delta for good, tau- + delta for bad), when the words run out, when the
   share of changed words would pass `max_changed`, or when the budget is spent. The gold judge
   scores only the start and the final text, which the attack returns (`final-text`).

Towards `bad`, the search starts from another example's text by default, as paper 004 does for
these baselines (their label-preservation assumption needs a text that is bad already).
"""

from __future__ import annotations

from typing import Any

from evalstress.core.text import ParsedText, TextParser, rebuild_parsed
from evalstress.perturb.common import match_case
from evalstress.studies.attack.base import AttackRecord, AttackSetup, finish, start_point
from evalstress.studies.attack.embeddings import SentenceSimilarity
from evalstress.studies.attack.objective import victim_target
from evalstress.studies.attack.trajectory import Trajectory

RULE = "final-text"


class GreedySubstitution:
    """The shared search; subclasses name the method and give `importance_text` and `options`."""

    method = ""
    sim: float = 0.0
    max_changed: float = 1.0
    start: str = "random"
    device: str = "auto"
    _parser: TextParser | None = None
    _similarity: SentenceSimilarity | None = None

    def applies(self, direction: str) -> bool:
        return True

    def parser(self) -> TextParser:
        if self._parser is None:
            self._parser = TextParser()
        return self._parser

    def similarity(self, anchor: str, texts: list[str]) -> list[float]:
        """Sentence cosine of each text to the start text (MiniLM by default); all 1 when the
        floor is off, so no encoder loads."""
        if self.sim <= 0:
            return [1.0] * len(texts)
        if self._similarity is None:
            self._similarity = SentenceSimilarity(self.sentence_encoder(), self.device)
        return self._similarity(anchor, texts)

    def sentence_encoder(self) -> str:
        """The sentence-transformers model of the similarity floor."""
        return "minilm"

    def importance_text(self, parsed: ParsedText, i: int) -> str:
        raise NotImplementedError

    def options(self, parsed: ParsedText, i: int) -> list[str]:
        """Replacement words for token i of the start text (already without the word itself)."""
        raise NotImplementedError

    def prepare(self, parsed: ParsedText) -> None:
        """Work done once per start text before any option is asked (a masked LM's pass)."""

    def describe(self) -> dict[str, Any]:
        """Settings the record keeps beside the path."""
        return {"sim": self.sim}

    def run(self, setup: AttackSetup) -> AttackRecord:
        mode = self.start if setup.direction == "bad" else "original"
        start, text = start_point(setup, mode)
        trajectory = Trajectory(setup.evaluate([text], 0, [start]))
        if not trajectory.items:
            return finish(setup, self.method, trajectory, start=start, start_text=text,
                          stop="original-unscored", iterations=0, rule=RULE)
        first = trajectory.items[0]
        want = -1.0 if setup.direction == "good" else 1.0
        target = victim_target(setup.direction, setup.params)

        def reached(value: float) -> bool:
            return want * (value - target) >= 0

        parsed = self.parser().parse(text)
        tokens = parsed.tokens
        positions = [i for i, t in enumerate(tokens) if t.is_alpha and not t.is_stop]
        words = sum(1 for t in tokens if not t.is_punct)
        current: dict[int, str] = {}
        value, raw = first.victim, first.victim_raw
        path: list[dict[str, Any]] = []
        stop = setup.stopped(trajectory)
        if stop is None and reached(value):
            stop = "target"
        if stop is None and positions:
            scores = setup.victim_scores([self.importance_text(parsed, i) for i in positions])
            importance = {i: want * (s.value - value) for i, s in zip(positions, scores,
                                                                      strict=False)
                          if s.value is not None}
            order = sorted(importance, key=lambda i: (-importance[i], i))
            self.prepare(parsed)
            for i in order:
                if setup.budget.exhausted:
                    break
                if (len(current) + 1) > self.max_changed * max(1, words):
                    stop = "max-changed"
                    break
                word = tokens[i].text
                options = self.options(parsed, i)
                texts = [rebuild_parsed(parsed, {**current, i: match_case(o, word)})
                         for o in options]
                sims = self.similarity(text, texts) if texts else []
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
        return finish(setup, self.method, trajectory, start=start, start_text=text, stop=stop,
                      iterations=len(path), result=result, rule=RULE,
                      extra={"path": path, "target": target, **self.describe()})
