"""The atlas on real data: the cards of the offline evaluators on the public sets the papers
used (SummEval, WMT21 de-en, TED zh-en, WikiText-103), made by `evalstress atlas --data-dir
DIR`, published in docs/atlas-real/<name> and shown on docs/atlas-real.md.

The data stays outside the package: the command reads it from the folder it is given, and only
the cards (numbers, short quoted examples) are published. Each card runs under the papers'
protocols (paper 002's code's suite for the task, its five seeds; one perturbed text per
example for papers 000 and 003) on at most `EXAMPLES` examples of the set, the first ones in
the file's order (the whole set where it has that many). SummEval's 16 systems' summaries with
their expert scores add the human-correlation block (`card.systems`).

Cards whose evaluator needs minutes of model time per hundred texts on this project's 2-core
machine are listed with `pending`: `--only NAME` makes them, and the page lists the others as
not yet made, with the dry run's estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from evalstress.card.atlas import (
    ATLAS,
    AtlasEntry,
    check_page,
    check_published,
    make_cards,
)
from evalstress.card.dryrun import CardTime, time_card
from evalstress.card.make import plan_card
from evalstress.card.plan import BUDGETS, Budget, CardPlan
from evalstress.card.run import CardOptions
from evalstress.core.data import DataError
from evalstress.core.strict import check_names

#: where the real-data atlas works, publishes its cards, and writes its page
WORK = Path("runs/atlas-real")
PUBLISHED = Path("docs/atlas-real")
PAGE = Path("docs/atlas-real.md")
#: examples per card: the first of the file (SummEval and TED have exactly this many)
EXAMPLES = 100


@dataclass(frozen=True)
class RealSet:
    """A public data set of ../shared/data: its file, the task, which field is the hypothesis
    and which the references (`mapping`, as --map takes it), and the paper suite that fits."""

    key: str
    file: str
    title: str
    task: str
    mapping: tuple[str, ...]
    roles: str
    suite: str
    rows: int


SETS = {s.key: s for s in (
    RealSet("summeval", "summeval.jsonl", "SummEval (CNN/DailyMail)", "summarization",
            ("hypothesis=highlight", "references=references"),
            "hypothesis: the CNN/DM highlight; references: the 10 other human summaries",
            "paper-summarization", 100),
    RealSet("wmt21", "wmt21_de_en.jsonl", "WMT21 German-English", "translation",
            ("hypothesis=ref_a", "references=ref_b"),
            "hypothesis: human translation A; reference: human translation B",
            "paper-translation", 1000),
    RealSet("ted", "ted_zh_en.jsonl", "TED Chinese-English paragraphs", "translation",
            ("hypothesis=ref_a", "references=ref_b"),
            "hypothesis: human translation A; reference: human translation B",
            "paper-translation-ted", 100),
    RealSet("wikitext", "wikitext_paragraphs.jsonl", "WikiText-103 paragraphs", "open-ended",
            ("hypothesis=text",),
            "hypothesis: a paragraph of set a (the first 1,000 rows); no reference",
            "paper-open-ended", 2000),
)}


@dataclass(frozen=True)
class RealEntry:
    """One card of the real atlas: its folder name, the evaluator (an entry of the built-in
    atlas: spec, title, what it is), the data set, and `pending`: why it is not made by
    default (its estimated time), empty for the cards made by default."""

    name: str
    metric: AtlasEntry
    dataset: str
    pending: str = ""
    #: seconds a text measured for this evaluator on this set, for the dry run where the
    #: card's estimate has no rate of its own (None: the card's rates)
    rate: float | None = None

    @property
    def data(self) -> RealSet:
        return SETS[self.dataset]

    @property
    def title(self) -> str:
        return f"{self.metric.title} on {self.data.title}"

    def as_atlas_entry(self) -> AtlasEntry:
        """The entry as the built-in atlas's page code takes it (a heading and a folder)."""
        return AtlasEntry(self.name, self.metric.spec, self.title, self.metric.what)


METRICS = {e.name: e for e in ATLAS}


def _entry(metric: str, dataset: str, pending: str = "", rate: float | None = None
           ) -> RealEntry:
    return RealEntry(f"{metric}-{dataset}", METRICS[metric], dataset, pending, rate)


#: where the rates of the pending cards were measured
LOAD = "on this project's 2-core machine at a load average of about 10"
#: the cards, in the page's order; the pending ones with the dry run's estimate
#: (`evalstress atlas --data-dir DIR --only NAME --dry-run`) and its measured rate
REAL_ATLAS = (
    *(_entry(m, "summeval") for m in ("bleu", "chrf", "rouge1", "rouge2", "rougeL")),
    _entry("bertscore", "summeval", rate=1.82, pending=(
        "estimated 843 min: 27,771 texts, each against SummEval's 10 references, at 1.82 s a "
        f"text (MiniLM, measured on 28 highlights {LOAD})")),
    *(_entry(m, d) for d in ("wmt21", "ted") for m in ("bleu", "chrf", "rouge1", "rouge2",
                                                         "rougeL")),
    # made by default: its measured rate, MiniLM against one reference (bench/README.md)
    _entry("bertscore", "wmt21", rate=0.084),
    _entry("ter", "wmt21", rate=0.021),
    _entry("ter", "ted", rate=6.0, pending=(
        "estimated 2,344 min: 23,438 texts at 6.0 s a text (sacreBLEU's TER searches word "
        f"shifts, slow on 4-10-sentence paragraphs; measured on 10 paragraphs {LOAD})")),
    _entry("ter", "summeval", rate=4.3, pending=(
        "estimated 1,990 min: 27,771 texts, each against 10 references, at 4.3 s a text "
        f"(measured on 10 highlights {LOAD})")),
    _entry("gpt-ppl", "wikitext", rate=14.8, pending=(
        "estimated 8,144 min: 33,014 texts of about 256 tokens at 14.8 s a text "
        f"(SmolLM2-135M on the CPU, measured on 10 paragraphs {LOAD}; an idle machine "
        "is several times faster)")),
    _entry("judge-local", "summeval", pending=(
        "estimated 695 min: 27,771 texts at the judge's measured 1.5 s a text "
        "(docs/atlas.md's small card)")),
)


def real_budget(data: RealSet) -> Budget:
    """The paper budget on the first EXAMPLES examples, with the set's paper suite."""
    paper = BUDGETS["paper"]
    return replace(paper, examples=EXAMPLES,
                   suites={**paper.suites, "blindspot": data.suite},
                   description=f"the first {EXAMPLES} examples of the set under the papers' "
                               f"protocols (002: {data.suite}, five seeds; 000 and 003: one "
                               "seed)")


def real_entries(only: Sequence[str] | None = None) -> list[RealEntry]:
    """The cards made by default, or those named in `only` (pending ones too; an unknown name:
    a did-you-mean)."""
    if not only:
        return [e for e in REAL_ATLAS if not e.pending]
    check_names("real-data atlas card", {name: None for name in only},
                [e.name for e in REAL_ATLAS], "--only")
    return [e for e in REAL_ATLAS if e.name in only]


def data_file(entry: RealEntry, data_dir: Path) -> Path:
    """The entry's data file in `data_dir`; a DataError naming the option when it is absent."""
    path = data_dir / entry.data.file
    if not path.is_file():
        raise DataError(path, None, None, f"not found: --data-dir {data_dir} holds no "
                        f"{entry.data.file} (the public sets of ../shared/data: "
                        f"{', '.join(s.file for s in SETS.values())})")
    return path


def plan_real(entry: RealEntry, data_dir: Path, exhaustive: bool = False) -> CardPlan:
    """The entry's card, planned (spec, data and budget checked) before any work."""
    return plan_card(entry.metric.spec, data=data_file(entry, data_dir),
                     field_map=list(entry.data.mapping), task=entry.data.task,
                     budget=real_budget(entry.data), exhaustive=exhaustive)


def estimate_card_time(plan: CardPlan, work: Path, rate: float | None = None, *,
                       cache_dir: Path | None = None, measure: bool = True) -> CardTime:
    """The dry run of a card, timed here (`dryrun.time_card`): the texts it would score (net
    of the score cache in `cache_dir`) and its seconds, from its evaluator's rate measured now
    (`measure`), else the shipped rate, else `rate` seconds a text (the entry's)."""
    return time_card(plan, CardOptions(work, cache_dir=cache_dir, workers=1),
                     measure=measure, shipped=rate)


def build_real_atlas(chosen: Sequence[RealEntry], data_dir: Path, *, work: Path = WORK,
                     published: Path = PUBLISHED, page: Path = PAGE,
                     cache_dir: Path | None = None, force: bool = False,
                     say: Callable[[str], None] = lambda line: None, backend: str = "local",
                     ray_address: str | None = None, exhaustive: bool = False
                     ) -> dict[str, float]:
    """Plan every chosen card and check every file it would replace (before any runs), then
    make each in `work/<name>` and publish it in `published/<name>` (the caller then writes
    the page: `realpage.write_real_page`); returns each card's seconds in this call."""
    check_page(page, published, force=force)
    for entry in chosen:
        check_published(published / entry.name, force=force)
    return make_cards([(entry.name, plan_real(entry, data_dir, exhaustive),
                        f"card of {entry.metric.spec} on {entry.data.file}") for entry in chosen],
                      work=work, published=published, cache_dir=cache_dir, force=force, say=say,
                      backend=backend, ray_address=ray_address)
