"""Attack a set of examples: every victim x direction x method, one search per example.

Gold and victims get their 0-100 scales first (`normalise`: given, reference set, declared, or
min-max over all the originals; under `--protocol paper` a victim paper 004's code attacks gets
the code's own map, `paper_scales`). Each
finished attack is appended to attacks.jsonl at once, so a killed run keeps what it finished;
rerunning the same command replays the finished searches from the caches without a call and
goes on where it stopped.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evalstress.analyses.adversarial import AdversarialResult
from evalstress.core.data import Example
from evalstress.core.records import Progress
from evalstress.llm.generate import TextGenerator
from evalstress.studies.attack.base import AttackRecord, AttackSetup
from evalstress.studies.attack.methods import Method
from evalstress.studies.attack.normalise import ScaleReference
from evalstress.studies.attack.objective import AttackParams, Direction
from evalstress.studies.attack.paper_scales import PaperScale, paper_scale
from evalstress.studies.attack.scoring import Gold, Victim


class Attacker:
    """Runs the attacks and gathers their records."""

    def __init__(self, examples: Sequence[Example], victims: Sequence[Victim], gold: Gold,
                 methods: Sequence[Method], directions: Sequence[Direction],
                 params: AttackParams, *, ranges: Mapping[str, tuple[float, float]] | None = None,
                 scale_references: Mapping[str, ScaleReference] | None = None,
                 generator: TextGenerator | None = None,
                 progress: Progress | None = None, fresh_gold: Gold | None = None):
        if not examples:
            raise ValueError("no examples to attack")
        if not victims:
            raise ValueError("an attack needs at least one victim (--victim)")
        self.examples, self.victims, self.gold = list(examples), list(victims), gold
        self.methods, self.directions, self.params = list(methods), list(directions), params
        self.ranges = dict(ranges or {})
        #: reference sets by victim label or evaluator name; "" for every undeclared victim
        self.references = dict(scale_references or {})
        for option, names in (("--range", list(self.ranges)),
                              ("--scale-reference", [n for n in self.references if n])):
            unknown = [name for name in names if not any(
                name in (v.label, v.evaluator.name) for v in self.victims)]
            if unknown:
                raise ValueError(f"{option} names no victim: {', '.join(unknown)}; victims: "
                                 f"{', '.join(v.label for v in self.victims)}")
        if params.rescore_final and fresh_gold is None:
            raise ValueError("rescore_final needs a fresh gold to ask (build_attacker makes "
                             "one from the gold specs)")
        #: the gold on fresh samples that rates a search's returned text (`rescore_final`)
        self.fresh_gold = fresh_gold
        #: per victim, the released code's map under the paper protocol where the code has one
        #: and the user chose no scale; checked here, before any model is called. Only paper
        #: 004's methods use it: appendix-j (paper 002) picks edits by the victim's order alone
        only_appendix_j = bool(self.methods) and all(m.name == "appendix-j" for m in self.methods)
        paper_004 = params.paper and not only_appendix_j
        self.paper_scales: list[PaperScale | None] = [
            paper_scale(v.evaluator, v.aspect, label=v.label)
            if paper_004 and self._range(v) is None and self._named(v) is None else None
            for v in self.victims]
        self.generator = generator
        self.progress = progress or Progress()
        self.seconds = 0.0

    @property
    def protocol(self) -> str:
        """Whose details the searches follow: the parameters' protocol, recorded as is."""
        return self.params.protocol

    def _range(self, victim: Victim) -> tuple[float, float] | None:
        return self.ranges.get(victim.label) or self.ranges.get(victim.evaluator.name)

    def _named(self, victim: Victim) -> ScaleReference | None:
        return self.references.get(victim.label) or self.references.get(victim.evaluator.name)

    def units(self) -> list[tuple[Example, Victim, Direction, Method]]:
        return [(e, v, d, m) for e in self.examples for v in self.victims
                for d in self.directions for m in self.methods if m.applies(d)]

    def run(self, out: Path | None = None) -> list[AttackRecord]:
        started = time.perf_counter()
        shared = self.references.get("")
        self.gold.calibrate(self.examples, shared=shared)
        if self.fresh_gold is not None:
            self.fresh_gold.adopt_scales(self.gold)
        for victim, paper in zip(self.victims, self.paper_scales, strict=True):
            victim.calibrate(self.examples, self._range(victim), named=self._named(victim),
                             shared=shared, paper=paper)
        units = self.units()
        records: list[AttackRecord] = []
        handle = None
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            handle = out.open("w", encoding="utf-8")
        self.progress.start("attacking", len(units))
        try:
            for example, victim, direction, method in units:
                setup = AttackSetup(example, victim, self.gold, direction, self.params,
                                    self.examples, self.fresh_gold)
                record = method.run(setup)
                records.append(record)
                if handle is not None:
                    handle.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
                    handle.flush()
                self.progress.advance("attacking")
        finally:
            self.progress.finish("attacking")
            if handle is not None:
                handle.close()
            self.seconds = time.perf_counter() - started
        return records

    def result(self, records: Sequence[AttackRecord]) -> AdversarialResult:
        rejections: dict[str, Counter[str]] = {}
        for record in records:
            rejections.setdefault(record.method, Counter()).update(record.rejections)
        info: dict[str, Any] = {
            "victims": [v.describe() for v in self.victims], "gold": self.gold.describe(),
            "methods": sorted({r.method for r in records}), "directions": list(self.directions),
            "examples": len(self.examples), "attacks": len(records),
            "rejections": {m: dict(c) for m, c in rejections.items()},
            "missing": dict(sum((Counter(r.missing) for r in records), Counter())),
            "stops": dict(Counter(f"{r.method}: {r.stop}" for r in records)),
            "protocol": self.protocol,
            "stop_rules": {m: sorted({r.stop_rule for r in records if r.method == m})
                           for m in sorted({r.method for r in records})},
            "seconds": round(self.seconds, 2)}
        if self.generator is not None:
            info["generator"] = self.generator.signature()
            info["usage"] = asdict(self.generator.usage)
        above, below = (">", "<") if self.params.paper else (">=", "<=")
        notes = [
            f"ASR = successes / attempts under paper 004 eq. 3 (scores on 0-100: gold {above} "
            f"tau+ and gold - victim >= delta for good; gold {below} tau- and victim - gold >= "
            "delta for bad); 95% Wilson intervals; queries = texts handed to the victim per "
            "attack, the start included, a repeat counted again (cached or not).",
            "The gold judge stands in for human readers: a success is only as real as the "
            "gold's rating (paper 004 checks its gold by hand)."]
        fitted = [m.label for m in [*self.victims, *self.gold.members]
                  if m.scale is not None and m.scale.data_dependent]
        if fitted:
            notes.append(f"data-dependent scale for {', '.join(fitted)}: min-max over the "
                         "attacked originals, so their 0-100 scores (and ASR) change with the "
                         "examples attacked; give --range NAME=LO:HI or --scale-reference "
                         "[NAME=]FILE for a fixed scale")
        notes.append("stop rule: " + "; ".join(
            f"{m}: {', '.join(rules)}" for m, rules in info["stop_rules"].items())
            + " (first-success stops at the first eq. 3 success and returns it; "
            "highest-feedback, paper 004's, returns the highest S and judges that text; "
            "final-text: a greedy baseline returns the text it ended on)")
        notes.extend(self._paper_scale_notes())
        sized = sorted({r.method for r in records if "query_budget" in r.extra})
        if self.params.budget is None:
            notes.append(f"budget: none given, so {self.params.victim_budget} victim queries per "
                         "search (paper 004's)" + (
                             f", except {', '.join(sized)}: what its search needs to reach its "
                             "noise target (extra.query_budget of each record)" if sized else ""))
        clipped = [v.label for v in self.victims if v.clipped]
        if clipped:
            notes.append(f"victim scores outside their range were clipped to 0-100 for "
                         f"{', '.join(clipped)} (see victims[].clipped)")
        return AdversarialResult.from_records(records, self.params.to_dict(), info=info,
                                              notes=notes)

    def _paper_scale_notes(self) -> list[str]:
        """Under the paper protocol: which victims took the released code's map, and which
        kept another scale because the code attacks no such metric (or the user chose one)."""
        if not self.params.paper:
            return []
        coded = [f"{v.label} ({v.scale.rule})" for v in self.victims
                 if isinstance(v.scale, PaperScale)]
        other = [f"{v.label} ({v.scale.how if v.scale is not None else 'none'})"
                 for v in self.victims if not isinstance(v.scale, PaperScale)]
        notes = []
        if coded:
            notes.append("victims on paper 004's code's 0-100 map: " + "; ".join(coded))
        if other:
            notes.append("victims not on paper 004's code's map keep our scale (the code "
                         "attacks no such metric, or --range or --scale-reference chose one): "
                         + "; ".join(other))
        return notes
