"""Consistency noise of paper 002: break order, logic or agreement with the source."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from evalstress.core.params import BOOLEAN, declare
from evalstress.core.text import Entity, ParsedText, TextParser, Token, rebuild_parsed
from evalstress.perturb.base import (
    Perturbation,
    PerturbContext,
    Severity,
    Skip,
    perturbation,
    sample_count,
)
from evalstress.perturb.checklist_negation import negate_sentences
from evalstress.perturb.common import (
    PaperRule,
    choose,
    follows_paper,
    inflect,
    known_inflection,
    lemma_of,
    match_case,
    nonempty_sentences,
    replace_spans,
    sample_pairs,
    sentence_starts_after,
    sentence_words,
)

FACT_DAMAGES = ("faithfulness", "non-contradiction", "adequacy", "overall")
SURFACE_KEPT = ("fluency", "grammaticality")


@perturbation("sentence-switching")
class SentenceSwitching(PaperRule, Perturbation):
    PARAMS = declare(keep_last=BOOLEAN)
    family = "consistency"
    level = "sentence"
    damages = ("coherence", "readability", "overall")
    preserves = ("fluency", "grammaticality", "informativeness", "non-hallucination")
    severity_param = "pairs"
    grid = (1, 2, 3, 4)
    description = "Switch several random pairs of sentences, breaking temporal and logical order."
    paper_rule = ("two sentences are reversed; more take `pairs` sequential switches (never the "
                  "same pair twice in a row); open-ended texts (WikiText) keep their last "
                  "sentence in place")
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            keep_last = self.params.get("keep_last", ctx.example.task == "open-ended")
            return _paper_switch(nonempty_sentences(ctx.parsed), int(severity), bool(keep_last),
                                 rng)
        sentences = ctx.parsed.sentence_texts()
        movable = len(sentences) - 1 if self.params.get("keep_last") else len(sentences)
        if movable < 2:
            return Skip("fewer than two sentences that may move")
        order = list(range(len(sentences)))
        for _ in range(int(severity)):
            i, j = rng.sample(range(movable), 2)
            order[i], order[j] = order[j], order[i]
        if order == sorted(order):  # an even number of swaps may restore the order
            i, j = rng.sample(range(movable), 2)
            order[i], order[j] = order[j], order[i]
        return " ".join(sentences[k] for k in order)


def _paper_switch(sentences: list[str], pairs: int, keep_last: bool,
                 rng: random.Random) -> str | Skip:
    """Paper 002's sentence switching, as its code does it for CNN/DM and WikiText."""
    out = list(sentences)
    if len(out) < 2:
        return Skip("fewer than two sentences to switch")
    if len(out) == 2:
        out.reverse()
    elif keep_last and len(out) == 3:
        out[0], out[1] = out[1], out[0]
    else:
        last: tuple[int, int] | None = None
        done = 0
        for _ in range(100):  # the paper's code gives up after 100 draws
            if done == pairs:
                break
            i, j = rng.sample(range(len(out)), 2)
            if keep_last and len(out) - 1 in (i, j):
                continue
            if last in ((i, j), (j, i)):
                continue
            out[i], out[j] = out[j], out[i]
            last, done = (i, j), done + 1
    return " ".join(out)


#: Texts of one task that sentence-replacement draws from. Any other example's sentence is
#: irrelevant to the text, so a larger pool adds nothing but a serial parse of the whole dataset
#: before the first chunk (about an hour at 100,000 paragraphs) and its sentences in memory.
POOL_TEXTS = 1000


def task_sentence_pool(ctx: PerturbContext) -> list[tuple[str, str]]:
    """(example id, sentence) for the examples of the same task in the pool (at most
    `POOL_TEXTS` of them, those with the smallest id hash); built once a run.

    The pool's texts go through the shared parser's sentence-only parse, batch by batch, and
    only their sentences are kept: the pool costs its sentences in memory, not its parses.
    """
    key = f"sentence-pool:{ctx.example.task}"
    cached = ctx.resources.get(key)
    if cached is None:
        members = [e for e in ctx.pool if e.task == ctx.example.task]
        if len(members) > POOL_TEXTS:  # a fixed subset by id hash: same whatever the order
            ranks = [hashlib.sha1(e.id.encode("utf-8")).hexdigest() for e in members]
            keep = sorted(range(len(members)), key=lambda i: (ranks[i], i))[:POOL_TEXTS]
            members = [members[i] for i in sorted(keep)]
        # sentences only, a batch at a time: the pool's parses are not kept (flat memory)
        parses = ctx.parser.sentence_parses([e.hypothesis for e in members])
        cached = [(e.id, s) for e, p in zip(members, parses, strict=True)
                  for s in nonempty_sentences(p)]
        ctx.resources[key] = cached
    return cached


def draw_other(pool: Sequence[tuple[str, str]], own: str, rng: random.Random) -> str | None:
    """A random text of `pool` whose example id is not `own`, or None when there is none.

    Rejection sampling keeps a draw O(1) on a large pool; a scan settles the rare hard case.
    """
    if not pool:
        return None
    for _ in range(16):
        eid, text = pool[rng.randrange(len(pool))]
        if eid != own:
            return text
    others = [text for eid, text in pool if eid != own]
    return rng.choice(others) if others else None


def task_pool(ctx: PerturbContext) -> list[tuple[str, str]]:
    """(id, hypothesis) of the pool's examples of the same task; built once a run, so a draw
    from it costs O(1), not a pass over the dataset per variant."""
    key = f"task-pool:{ctx.example.task}"
    cached = ctx.resources.get(key)
    if cached is None:
        cached = [(e.id, e.hypothesis) for e in ctx.pool if e.task == ctx.example.task]
        ctx.resources[key] = cached
    return cached


def other_text(ctx: PerturbContext, rng: random.Random) -> str | None:
    """The hypothesis of another example of the task: not empty, not this one's text."""
    pool = task_pool(ctx)
    mine = ctx.text.strip()
    for _ in range(16):
        picked = draw_other(pool, ctx.example.id, rng)
        if picked is None:
            return None
        if picked.strip() and picked.strip() != mine:
            return picked
    others = [t for eid, t in pool if eid != ctx.example.id and t.strip()
              and t.strip() != mine]
    return rng.choice(others) if others else None


@perturbation("sentence-replacement")
class SentenceReplacement(Perturbation):
    family = "consistency"
    level = "sentence"
    damages = ("coherence", "non-hallucination", "faithfulness", "informativeness",
               "readability", "adequacy", "overall")
    preserves = SURFACE_KEPT
    severity_param = "sentences"
    grid = (1, 2, 3)
    dataset_wide = True
    description = ("Replace random sentences by irrelevant sentences from other examples of the "
                   "same task (needs a dataset pool; at most 1,000 of its texts, fixed by id "
                   "hash).")
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        sentences = nonempty_sentences(ctx.parsed)
        if not sentences:
            return Skip("no sentence in the text")
        pool = task_sentence_pool(ctx)
        own = ctx.example.id
        out = list(sentences)
        used: set[str] = set()
        for index in rng.sample(range(len(out)), min(int(severity), len(out))):
            picked = None
            for _ in range(4):  # prefer a sentence not used yet
                picked = draw_other(pool, own, rng)
                if picked is None or picked not in used:
                    break
            if picked is None:
                return Skip(f"no other '{ctx.example.task}' example in the pool to take "
                            "sentences from")
            used.add(picked)
            out[index] = picked
        return " ".join(out)


# -- negation -------------------------------------------------------------------------------

_CONTRACTED = {"'ll": "will", "'re": "are", "'m": "am", "'ve": "have", "’ll": "will",
               "’re": "are", "’m": "am", "’ve": "have"}
_AMBIGUOUS = {"'s": {"be": "is", "have": "has"}, "'d": {"have": "had"},
              "’s": {"be": "is", "have": "has"}, "’d": {"have": "had"}}


def _full_aux(token: Token) -> str | None:
    """The written-out auxiliary for a contracted one ('ll -> will); the text itself otherwise."""
    low = token.text.lower()
    if low in _CONTRACTED:
        return _CONTRACTED[low]
    if low in _AMBIGUOUS:
        return _AMBIGUOUS[low].get(token.lemma.lower(), "would")
    return token.text if token.is_alpha else None


def negate_sentence(parsed: ParsedText, start: int, end: int) -> dict[int, str] | None:
    """Token replacements that negate the main verb of one sentence, or None when impossible.

    "went" -> "did not go", "goes" -> "does not go", "is" -> "is not", "has gone" ->
    "has not gone", "can swim" -> "cannot swim"; a sentence already negated is left alone.
    """
    tokens = parsed.tokens
    root = next((i for i in range(start, end) if tokens[i].dep == "ROOT"), None)
    if root is None or tokens[root].pos not in ("VERB", "AUX"):
        return None
    children = [i for i in range(start, end) if tokens[i].head == root and i != root]
    if any(tokens[i].dep == "neg" for i in children):
        return None
    first_word = next((i for i in range(start, end) if tokens[i].is_alpha), root)
    auxes = [i for i in children if tokens[i].dep in ("aux", "auxpass") and i < root]
    target = auxes[0] if auxes else root if tokens[root].lemma.lower() == "be" else None
    if target is not None:
        full = _full_aux(tokens[target])
        if full is None:
            return None
        glued = full != tokens[target].text  # a contraction sits right after its subject
        negated = "cannot" if full.lower() == "can" else f"{full} not"
        if full.lower() == "can" and full[:1].isupper():
            negated = "Cannot"
        return {target: (" " if glued else "") + negated}
    verb = tokens[root]
    do = {"VBD": "did", "VBZ": "does", "VBP": "do", "VB": "do"}.get(verb.tag)
    if do is None or not verb.is_alpha:
        return None
    lemma = lemma_of(verb)
    if root == first_word:
        do = do.capitalize()
    return {root: f"{do} not {lemma}"}


@perturbation("negation")
class Negation(PaperRule, Perturbation):
    family = "consistency"
    level = "word"
    damages = ("non-contradiction", "faithfulness", "adequacy", "overall")
    preserves = (*SURFACE_KEPT, "coherence")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = ("Negate the main verb of a random portion of the sentences, with the right "
                   "auxiliary (went -> did not go, has gone -> has not gone).")
    paper_rule = ("each sentence is drawn with probability ratio and negated by CheckList's "
                  "rules (hasn't gone, won't go, didn't go, is not); a sentence CheckList "
                  "declines takes the code's fallback, which mostly takes a negation away "
                  "(did not go -> did go) or adds one after were/are")
    source_papers = ("002", "000")

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            return negate_sentences(ctx.parsed, float(severity), rng)
        parsed = ctx.parsed
        edits = parsed.memo("negations", lambda p: [
            e for s, t in p.sentences if (e := negate_sentence(p, s, t))])
        if not edits:
            return Skip("no sentence with a main verb that can be negated")
        chosen = choose(edits, float(severity), rng, paper=follows_paper(self))
        replacements: dict[int, str] = {}
        for edit in chosen:
            replacements.update(edit)
        return rebuild_parsed(parsed, replacements)


# -- named entities -----------------------------------------------------------------------------

GENERIC_PHRASES = {
    "PERSON": "a person", "NORP": "a group", "FAC": "a building", "ORG": "an organization",
    "GPE": "a place", "LOC": "a place", "PRODUCT": "a product", "EVENT": "an event",
    "WORK_OF_ART": "a work", "LAW": "a law", "LANGUAGE": "a language", "DATE": "a certain date",
    "TIME": "a certain time", "PERCENT": "some percent", "MONEY": "some amount of money",
    "QUANTITY": "some amount", "ORDINAL": "a certain", "CARDINAL": "some number",
}


@perturbation("generic-entity")
class GenericEntity(PaperRule, Perturbation):
    family = "consistency"
    level = "word"
    damages = ("informativeness", "adequacy", "overall")
    preserves = (*SURFACE_KEPT, "non-contradiction", "coherence")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = ("Replace a random portion of the named entities by a generic phrase "
                   "(Boston -> a place), destroying information.")
    paper_rule = ("six labels (person, organization, place x3, product), each entity with "
                  "probability ratio; an article before it goes and 'some' or 'a'/'an' opens "
                  "the phrase unless an article, an adjective/noun or a phrase just written "
                  "precedes")
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            return _paper_generic(ctx.parsed, float(severity), rng, ctx.parser)
        entities = [e for e in ctx.parsed.entities if e.label in GENERIC_PHRASES]
        if not entities:
            return Skip("no named entity in the text")
        chosen = rng.sample(entities, sample_count(len(entities), float(severity), rng))
        tokens = ctx.parsed.tokens
        spans = {}
        for ent in chosen:
            phrase = GENERIC_PHRASES[ent.label]
            spans[(ent.start, ent.end)] = match_case(phrase, tokens[ent.start].text) \
                if ent.start == 0 or tokens[ent.start - 1].text in ".!?" else phrase
        return replace_spans(ctx.parsed, spans)


#: Paper 002's generic phrases for its six entity labels: (articles to draw from, noun).
PAPER_GENERIC = {
    "PERSON": (("some", "a"), "person"), "ORG": (("some", "an"), "organization"),
    "GPE": (("some", "a"), "place"), "LOC": (("some", "a"), "place"),
    "FAC": (("some", "a"), "place"), "PRODUCT": (("some", "a"), "product"),
}
_PAPER_ARTICLES = frozenset({"some", "a", "an", "the"})


def _paper_generic(parsed: ParsedText, ratio: float, rng: random.Random,
                   parser: TextParser) -> str | Skip:
    """Paper 002's generic named entity: the entity's article goes, a generic phrase comes in."""
    entities = [e for e in parsed.entities if e.label in PAPER_GENERIC]
    if not entities:
        return Skip("no person, organization, place or product entity in the text")
    tokens = parsed.tokens
    tags = parsed.memo("paper-generic-tags", lambda p: _tags_before(p, parser))
    chosen = choose(entities, ratio, rng, paper=True)
    # the code writes one label's phrases at a time, left to right, its labels in a set's order
    # (arbitrary: Python salts string hashes per process); a phrase already written just before
    # an entity ends in its noun, so that entity takes no article
    labels = sorted({e.label for e in chosen})
    rng.shuffle(labels)
    turn = {label: k for k, label in enumerate(labels)}
    ending_at = {e.end: e for e in chosen}
    replacements: dict[int, str] = {}
    drop: set[int] = set()
    for ent in chosen:
        before, starts_sentence = _paper_slot(parsed, ent)
        if before < ent.start - 1:
            drop.add(ent.start - 1)
        articles, noun = PAPER_GENERIC[ent.label]
        written = ending_at.get(before + 1) if not starts_sentence else None
        if starts_sentence or before < 0:
            bare = False
        elif written is not None and turn[written.label] <= turn[ent.label]:
            bare = True  # "a place" was written there first
        elif tokens[before].text.lower() in _PAPER_ARTICLES:
            bare = True
        else:  # the code tags the text cut before the entity: an entity still to come is
            # its label there ("in PERSON")
            key = (ent.start, written.label) if written is not None else (ent.start, "")
            bare = tags.get(key) in ("ADJ", "NOUN")
        phrase = noun if bare else f"{rng.choice(articles)} {noun}"
        if starts_sentence:
            phrase = phrase.capitalize()
        replacements[ent.start] = phrase
        drop.update(range(ent.start + 1, ent.end))
    return rebuild_parsed(parsed, sentence_starts_after(parsed, drop, replacements), drop=drop)


#: tokens before an entity that decide its tag in paper 002's generic entity: the tagger looks
#: a few tokens back; on 1,406 entities of SummEval and WikiText the last 8 tokens gave the
#: tag of the whole text before the entity every time
_TAG_WINDOW = 8


def _paper_slot(parsed: ParsedText, ent: Entity) -> tuple[int, bool]:
    """The token before an entity once its article is gone (-1: none), and whether the entity
    then opens its sentence."""
    tokens = parsed.tokens
    opening = parsed.memo("sentence-openings", lambda p: {s for s, _ in p.sentences})
    before = ent.start - 1
    if before >= 0 and tokens[before].text.lower() in ("a", "an", "the") and tokens[before].ws:
        return before - 1, before in opening
    return before, ent.start in opening


def _tags_before(parsed: ParsedText, parser: TextParser) -> dict[tuple[int, str], str]:
    """For each entity of the six labels, the tag its preceding word gets in the text cut just
    before the entity (key: its start, ""), and, where that word ends another such entity, the
    tag of that entity's label standing in its place (key: its start, the label): paper 002's
    code tags those cuts (`nlp(pref_all)`), one window per case, tagged once per text."""
    pieces = parsed.pieces
    windows: dict[tuple[int, str], str] = {}
    ends = {e.end: e for e in parsed.entities if e.label in PAPER_GENERIC}
    for ent in parsed.entities:
        if ent.label not in PAPER_GENERIC:
            continue
        before, starts_sentence = _paper_slot(parsed, ent)
        if before < 0 or starts_sentence:
            continue
        first = max(0, before + 1 - _TAG_WINDOW)
        windows[(ent.start, "")] = "".join(pieces[first:before + 1]).strip() + " "
        earlier = ends.get(before + 1)
        if earlier is not None:
            first = max(0, earlier.start + 1 - _TAG_WINDOW)
            lead = "".join(pieces[first:earlier.start])
            windows[(ent.start, earlier.label)] = (lead + earlier.label).strip() + " "
    keys = list(windows)
    return dict(zip(keys, parser.last_tags_alone([windows[k] for k in keys]), strict=True))


@perturbation("entity-switching")
class EntitySwitching(PaperRule, Perturbation):
    family = "consistency"
    level = "word"
    damages = FACT_DAMAGES
    preserves = (*SURFACE_KEPT, "informativeness")
    severity_param = "pairs"
    grid = (1, 2, 3)
    description = ("Switch random pairs of different named entities of the same type "
                   "(Paris <-> Boston).")
    paper_rule = ("entities of any labels switch places, `pairs` sequential switches (never the "
                  "same pair twice in a row); a text with two or fewer entities stays as it is")
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            entities = ctx.parsed.entities
            order = _paper_slot_switches(len(entities), int(severity), rng)
            if order is None:
                return Skip("two or fewer named entities (the paper's rule leaves such texts "
                            "alone)")
            return replace_spans(ctx.parsed, {
                (ent.start, ent.end): entities[order[k]].text
                for k, ent in enumerate(entities) if order[k] != k})
        by_label: dict[str, list[int]] = {}
        entities = ctx.parsed.entities
        for index, ent in enumerate(entities):
            by_label.setdefault(ent.label, []).append(index)
        groups = [g for g in by_label.values()
                  if len({entities[i].text for i in g}) >= 2]
        if not groups:
            return Skip("no two different named entities of the same type to switch")
        spans: dict[tuple[int, int], str] = {}
        for _ in range(int(severity)):
            group = rng.choice(groups)
            free = [i for i in group if (entities[i].start, entities[i].end) not in spans]
            pairs = [(a, b) for a, b in sample_pairs(free, len(free) // 2, rng)
                     if entities[a].text != entities[b].text]
            if not pairs:
                continue
            a, b = pairs[0]
            spans[(entities[a].start, entities[a].end)] = entities[b].text
            spans[(entities[b].start, entities[b].end)] = entities[a].text
        if not spans:
            return Skip("no two different named entities of the same type to switch")
        return replace_spans(ctx.parsed, spans)


def _paper_slot_switches(n: int, pairs: int, rng: random.Random,
                         max_draws: int | None = None) -> list[int] | None:
    """Which item ends in each of n slots after `pairs` sequential random switches, as paper
    002's code does them (never the same pair twice in a row; its verb switching stops after
    `max_draws` draws); None for n <= 2."""
    if n <= 2:
        return None
    order = list(range(n))
    last: tuple[int, int] | None = None
    done = draws = 0
    while done < pairs and (max_draws is None or draws < max_draws):
        draws += 1
        i, j = rng.sample(range(n), 2)
        if last in ((i, j), (j, i)):
            continue
        order[i], order[j] = order[j], order[i]
        last, done = (i, j), done + 1
    return order


def _switch_words(ctx: PerturbContext, severity: Severity, rng: random.Random, pos: str,
                  what: str) -> str | Skip:
    """Swap pairs of words of one part of speech, each re-inflected to the other's slot."""
    parsed = ctx.parsed
    tokens = parsed.tokens
    found = parsed.memo(f"switch:{pos}", lambda p: [
        (i, lemma_of(p.tokens[i])) for row in sentence_words(p) for i in row
        if p.tokens[i].pos == pos and p.tokens[i].is_alpha])
    if len({lemma for _, lemma in found}) < 2:
        return Skip(f"fewer than two different {what}s to switch")
    replacements: dict[int, str] = {}
    lemma_at = dict(found)
    for _ in range(int(severity)):
        free = [i for i, _ in found if i not in replacements]
        pairs = [(a, b) for a, b in _distinct_pairs(free, lemma_at, rng)]
        if not pairs:
            break
        a, b = pairs[0]
        replacements[a] = match_case(inflect(lemma_at[b], tokens[a].tag, pos), tokens[a].text)
        replacements[b] = match_case(inflect(lemma_at[a], tokens[b].tag, pos), tokens[b].text)
    if not replacements:
        return Skip(f"fewer than two different {what}s to switch")
    return rebuild_parsed(parsed, replacements)


def _distinct_pairs(free: Sequence[int], lemma_at: dict[int, str],
                    rng: random.Random) -> list[tuple[int, int]]:
    """One random pair of positions whose lemmas differ (tries a few draws, then scans)."""
    if len(free) < 2:
        return []
    for _ in range(8):
        a, b = rng.sample(free, 2)
        if lemma_at[a] != lemma_at[b]:
            return [(a, b)]
    a = rng.choice(free)
    others = [b for b in free if lemma_at[b] != lemma_at[a]]
    if not others:
        return []
    return [(a, rng.choice(others))]


@perturbation("verb-switching")
class VerbSwitching(PaperRule, Perturbation):
    family = "consistency"
    level = "word"
    damages = FACT_DAMAGES
    preserves = (*SURFACE_KEPT, "informativeness")
    severity_param = "pairs"
    grid = (1, 2, 3)
    description = "Switch random pairs of verbs, each re-inflected to fit its new slot."
    paper_rule = ("verbs of any lemma switch places, `pairs` sequential switches (never the same "
                  "pair twice in a row, at most 100 draws); each moved verb takes the form of "
                  "its new slot where one is known and keeps its own surface form otherwise; a "
                  "text with two or fewer verbs stays as it is")
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            return _paper_word_switch(ctx.parsed, "VERB", int(severity), rng,
                                      max_draws=PAPER_VERB_DRAWS, reinflect=True)
        return _switch_words(ctx, severity, rng, "VERB", "verb")


#: paper 002's code gives up its verb switching after this many draws of a pair
PAPER_VERB_DRAWS = 100


def _paper_word_switch(parsed: ParsedText, pos: str, pairs: int, rng: random.Random, *,
                       max_draws: int | None = None, reinflect: bool = False) -> str | Skip:
    """Paper 002's noun or verb switching: the words of part of speech `pos` move between
    their slots, `pairs` sequential switches. A noun keeps its surface form; with `reinflect`
    (verbs) a moved word takes its new slot's form where lemminflect's lexicon has it."""
    tokens = parsed.tokens
    kind = pos.lower()
    slots = parsed.memo(f"paper_{kind}s", lambda p: [
        i for i, t in enumerate(p.tokens) if t.pos == pos])
    order = _paper_slot_switches(len(slots), pairs, rng, max_draws)
    if order is None:
        return Skip(f"two or fewer {kind}s (the paper's rule leaves such texts alone)")
    replacements = {}
    for slot, mover in enumerate(order):
        if mover == slot:
            continue
        moved = tokens[slots[mover]]
        form = known_inflection(lemma_of(moved), tokens[slots[slot]].tag) if reinflect else None
        replacements[slots[slot]] = match_case(form, moved.text) if form else moved.text
    return rebuild_parsed(parsed, replacements)


@perturbation("noun-switching")
class NounSwitching(PaperRule, Perturbation):
    family = "consistency"
    level = "word"
    damages = FACT_DAMAGES
    preserves = (*SURFACE_KEPT, "informativeness")
    severity_param = "pairs"
    grid = (1, 2, 3)
    description = ("Switch random pairs of common nouns, keeping each slot's number "
                   "(office <-> staff).")
    paper_rule = ("the nouns' surface forms switch (no re-inflection), `pairs` sequential "
                  "switches; a text with two or fewer nouns stays as it is")
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            return _paper_word_switch(ctx.parsed, "NOUN", int(severity), rng)
        return _switch_words(ctx, severity, rng, "NOUN", "noun")
