"""The rule perturbations paper 004 compares with (after Sai et al. 2021, Khalid & Lee 2022).

Invariant rules should keep a good text good (tried towards `good`): synonym substitution of
adjectives from WordNet, expansion and contraction. Deterioration rules should make it bad
(tried towards `bad`): jumble (the catalogue's `local-swap`), change of name, negation of the
previous utterance (dialogue), question to assertion and question word change (questions).
Rules the catalogue already has are reused from it; the others are perturbations of the same
protocol, kept here because they exist for this comparison.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from evalstress.core.text import ParsedText, rebuild_parsed
from evalstress.core.wordnet import synonyms
from evalstress.perturb.base import (
    Perturbation,
    PerturbContext,
    Severity,
    Skip,
    get_perturbation,
    sample_count,
)
from evalstress.perturb.common import inflect, lemma_of, match_case, replace_spans
from evalstress.perturb.consistency import negate_sentence
from evalstress.studies.attack.objective import Direction


class SynonymAdjective(Perturbation):
    """Replace a portion of the adjectives by a WordNet synonym (invariant)."""

    name = "synonym"
    family = "invariant"
    damages = ()
    preserves = ("faithfulness", "fluency", "coherence", "overall")
    grid = (0.25, 0.5, 1.0)
    description = "Replace a portion of the adjectives by a WordNet synonym of the adjective."
    source_papers = ("004",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:

        parsed = ctx.parsed
        options = {i: syn for i, t in enumerate(parsed.tokens)
                   if t.pos == "ADJ" and t.is_alpha and (syn := synonyms(t.text, "a"))}
        if not options:
            return Skip("no adjective with a WordNet synonym")
        chosen = rng.sample(sorted(options), sample_count(len(options), float(severity), rng))
        return rebuild_parsed(parsed, {i: match_case(rng.choice(options[i]),
                                                     parsed.tokens[i].text) for i in chosen})


_EXPAND = {"'ll": "will", "'re": "are", "'m": "am", "'ve": "have", "n't": "not"}
_EXPAND_S = {"be": "is", "have": "has"}
_EXPAND_D = {"have": "had"}
_STEM = {"ca": "can", "wo": "will", "sha": "shall"}


def _expansions(parsed: ParsedText) -> dict[int, dict[int, str]]:
    """Per contracted token, the edits that write it out in full."""
    tokens = parsed.tokens
    out: dict[int, dict[int, str]] = {}
    for i, token in enumerate(tokens):
        low = token.text.lower().replace("’", "'")
        if i == 0 or tokens[i - 1].ws:
            continue  # a contraction is glued to the word before it
        if low == "n't":
            before = tokens[i - 1].text
            stem = _STEM.get(before.lower())
            if stem == "can":
                out[i] = {i - 1: match_case("can", before), i: "not"}
            else:
                fixed = match_case(stem, before) if stem else before
                out[i] = {i - 1: fixed, i: " not"}
        elif low in _EXPAND and token.pos in ("AUX", "VERB"):
            out[i] = {i: " " + _EXPAND[low]}
        elif low == "'s" and token.pos == "AUX":
            out[i] = {i: " " + _EXPAND_S.get(token.lemma.lower(), "is")}
        elif low == "'d" and token.pos == "AUX":
            out[i] = {i: " " + _EXPAND_D.get(token.lemma.lower(), "would")}
    return out


class Expansion(Perturbation):
    """Write contractions out in full: it's -> it is, don't -> do not (invariant)."""

    name = "expansion"
    family = "invariant"
    preserves = ("faithfulness", "fluency", "coherence", "overall")
    grid = (0.5, 1.0)
    description = "Write a portion of the contractions out in full (don't -> do not)."
    source_papers = ("004",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        edits = _expansions(ctx.parsed)
        if not edits:
            return Skip("no contraction to expand")
        chosen = rng.sample(sorted(edits), sample_count(len(edits), float(severity), rng))
        replacements: dict[int, str] = {}
        for key in chosen:
            replacements.update(edits[key])
        return rebuild_parsed(ctx.parsed, replacements)


_NEGATED = {"do": "don't", "does": "doesn't", "did": "didn't", "is": "isn't", "are": "aren't",
            "was": "wasn't", "were": "weren't", "have": "haven't", "has": "hasn't",
            "had": "hadn't", "will": "won't", "would": "wouldn't", "can": "can't",
            "could": "couldn't", "should": "shouldn't", "must": "mustn't"}
_SUBJECT_AUX = {("i", "am"): "'m", ("i", "have"): "'ve", ("you", "are"): "'re",
                ("we", "are"): "'re", ("they", "are"): "'re", ("you", "have"): "'ve",
                ("we", "have"): "'ve", ("they", "have"): "'ve", ("it", "is"): "'s",
                ("he", "is"): "'s", ("she", "is"): "'s", ("that", "is"): "'s",
                ("there", "is"): "'s"}
_WILL = ("i", "you", "we", "they", "he", "she", "it")


def _contractions(parsed: ParsedText) -> list[tuple[dict[int, str], list[int]]]:
    """(replacements, dropped tokens) for each place a contraction fits."""
    tokens = parsed.tokens
    out: list[tuple[dict[int, str], list[int]]] = []
    for i in range(len(tokens) - 1):
        here, after = tokens[i], tokens[i + 1]
        low = here.text.lower()
        if low in _NEGATED and after.text.lower() == "not" and here.pos in ("AUX", "VERB"):
            out.append(({i: match_case(_NEGATED[low], here.text)}, [i + 1]))
        elif here.pos == "PRON" and after.pos == "AUX" and here.ws:
            pair = (low, after.text.lower())
            suffix = _SUBJECT_AUX.get(pair) or ("'ll" if pair[1] == "will" and low in _WILL
                                               else None)
            if suffix:
                out.append(({i: here.text + suffix}, [i + 1]))
    return out


class Contraction(Perturbation):
    """Contract where English allows it: it is -> it's, do not -> don't (invariant)."""

    name = "contraction"
    family = "invariant"
    preserves = ("faithfulness", "fluency", "coherence", "overall")
    grid = (0.5, 1.0)
    description = "Contract a portion of the places that allow it (do not -> don't)."
    source_papers = ("004",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        places = _contractions(ctx.parsed)
        if not places:
            return Skip("nothing to contract")
        chosen = rng.sample(places, sample_count(len(places), float(severity), rng))
        replacements: dict[int, str] = {}
        drop: list[int] = []
        for edits, dropped in chosen:
            replacements.update(edits)
            drop.extend(dropped)
        return rebuild_parsed(ctx.parsed, replacements, drop)


#: Names for `change-name`, written for evalstress (given names and family names).
GIVEN_NAMES = ("Alma", "Bruno", "Celia", "Dario", "Elena", "Farid", "Greta", "Hugo", "Ines",
               "Jonas", "Kira", "Luca", "Mara", "Nils", "Olga", "Pavel", "Rosa", "Soren", "Tilda",
               "Viktor", "Wanda", "Yusuf", "Zora", "Anton")
FAMILY_NAMES = ("Adler", "Brandt", "Castillo", "Dorsey", "Eklund", "Ferreira", "Galloway",
                "Holm", "Ibarra", "Jansen", "Kowalski", "Lindqvist", "Moreau", "Novak", "Okafor",
                "Pereira", "Quinn", "Rasmussen", "Sandoval", "Tanaka", "Ulrich", "Varga")


class ChangeName(Perturbation):
    """Give a portion of the people in the text other names, consistently (deterioration)."""

    name = "change-name"
    family = "deterioration"
    damages = ("faithfulness", "non-hallucination", "overall")
    preserves = ("fluency",)
    grid = (0.5, 1.0)
    description = "Rename a portion of the people (PERSON entities), every mention alike."
    source_papers = ("004",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        parsed = ctx.parsed
        people = [e for e in parsed.entities if e.label == "PERSON"]
        # one person per surname: "Andros Townsend" and a later "Townsend" are renamed alike
        surnames = sorted({e.text.split()[-1] for e in people if e.text.split()})
        if not surnames:
            return Skip("no person named in the text")
        chosen = rng.sample(surnames, sample_count(len(surnames), float(severity), rng))
        taken = {w.lower() for e in people for w in e.text.split()}
        new: dict[str, tuple[str, str]] = {}
        for surname in chosen:
            for _ in range(50):
                given, family = rng.choice(GIVEN_NAMES), rng.choice(FAMILY_NAMES)
                if not {given.lower(), family.lower()} & taken:
                    break
            new[surname] = (given, family)
            taken.update((given.lower(), family.lower()))

        spans = {}
        for e in people:
            words = e.text.split()
            if words and words[-1] in new:
                given, family = new[words[-1]]
                spans[(e.start, e.end)] = family if len(words) == 1 else f"{given} {family}"
        covered = {i for start, end in spans for i in range(start, end)}
        for i, token in enumerate(parsed.tokens):  # mentions the entity tagger missed
            if i not in covered and token.pos == "PROPN" and token.text in new:
                spans[(i, i + 1)] = new[token.text][1]
        return replace_spans(parsed, spans)


def last_utterance(source: str) -> str | None:
    """The last non-empty line of a dialogue, without a 'Speaker:' prefix."""
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    if len(lines) < 1:
        return None
    line = lines[-1]
    head, sep, rest = line.partition(":")
    if sep and rest.strip() and len(head.split()) <= 3:
        line = rest.strip()
    return line or None


class NegatePrevious(Perturbation):
    """Answer with the negation of the dialogue's last utterance (deterioration)."""

    name = "negate-previous"
    family = "deterioration"
    damages = ("coherence", "overall")
    grid = (1.0,)
    description = "Replace the response by the negated last utterance of the dialogue."
    source_papers = ("004",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if ctx.example.task not in ("dialogue-response", "dialogue") \
                or len(ctx.example.source.splitlines()) < 2:
            return Skip("needs a dialogue source with turns on separate lines")
        utterance = last_utterance(ctx.example.source)
        if utterance is None:
            return Skip("the dialogue has no last utterance")
        parsed = ctx.parser.parse(utterance)
        for start, end in parsed.sentences:
            edit = negate_sentence(parsed, start, end)
            if edit:
                return rebuild_parsed(parsed, edit)
        return Skip("the last utterance has no verb that can be negated")


WH_WORDS = ("what", "who", "where", "when", "why", "how", "which", "whose", "whom")
_WH_ADVERB = {"where": "somewhere", "when": "at some point", "why": "for some reason",
              "how": "somehow"}
_DO = {"did": "VBD", "does": "VBZ", "do": "VBP"}


def _question(parsed: ParsedText) -> tuple[int, int] | None:
    for start, end in parsed.sentences:
        if end > start and parsed.tokens[end - 1].text == "?":
            return start, end
    return None


def _assert(parsed: ParsedText, start: int, end: int) -> str | None:
    """The question between start and end as a statement, or None when its shape is unknown."""
    tokens = parsed.tokens
    words = [i for i in range(start, end - 1)]
    if not words:
        return None
    first = tokens[words[0]]
    low = first.text.lower()
    adverb = ""
    if low in WH_WORDS:
        head = tokens[first.head]
        if first.dep in ("nsubj", "nsubjpass") or (first.dep == "det" and
                                                    head.dep in ("nsubj", "nsubjpass")):
            new = {"who": "someone", "what": "something"}.get(low, "the") \
                if first.dep != "det" else "the"
            pieces = [new + first.ws] + [tokens[i].text + tokens[i].ws for i in words[1:]]
            text = "".join(pieces).strip()
            return text[:1].upper() + text[1:] + "."
        if low not in _WH_ADVERB:
            return None
        adverb = _WH_ADVERB[low]
        words = words[1:]
        if not words:
            return None
        first = tokens[words[0]]
        low = first.text.lower()
    if first.pos != "AUX":
        return None
    subject = [i for i in words[1:] if tokens[i].dep in ("nsubj", "nsubjpass", "expl")]
    if not subject:
        return None
    cut = subject[0] + 1
    while cut < words[-1] + 1 and tokens[cut].head == subject[0] and tokens[cut].dep != "ROOT":
        cut += 1
    subject_words = [tokens[i].text for i in range(words[1], cut)]
    rest = [tokens[i] for i in range(cut, words[-1] + 1)]
    if low in _DO and rest and rest[0].pos == "VERB":
        verb = inflect(lemma_of(rest[0]), _DO[low], "VERB")
        middle = [verb, *(t.text for t in rest[1:])]
    else:
        middle = [first.text.lower(), *(t.text for t in rest)]
    text = " ".join([*subject_words, *middle, *([adverb] if adverb else [])])
    return text[:1].upper() + text[1:] + "."


class QuestionToAssertion(Perturbation):
    """Turn the question into a statement: 'Is it good?' -> 'It is good.' (deterioration)."""

    name = "question-to-assertion"
    family = "deterioration"
    damages = ("overall",)
    grid = (1.0,)
    description = "Rewrite the (first) question of the text as a statement."
    source_papers = ("004",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        parsed = ctx.parsed
        found = _question(parsed)
        if found is None:
            return Skip("the text asks no question")
        statement = _assert(parsed, *found)
        if statement is None:
            return Skip("the question has a shape this rule cannot turn around")
        start, end = found
        pieces = list(parsed.pieces)
        pieces[start:end] = [statement + parsed.tokens[end - 1].ws]
        return "".join(pieces).strip()


class QuestionWordChange(Perturbation):
    """Swap the question word for another: what -> where (deterioration)."""

    name = "question-word-change"
    family = "deterioration"
    damages = ("overall",)
    grid = (1.0,)
    description = "Replace the first question word (what, who, where, ...) by another one."
    source_papers = ("004",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        parsed = ctx.parsed
        where = next((i for i, t in enumerate(parsed.tokens) if t.text.lower() in WH_WORDS), None)
        if where is None:
            return Skip("no question word in the text")
        old = parsed.tokens[where].text
        new = rng.choice([w for w in WH_WORDS if w != old.lower()])
        return rebuild_parsed(parsed, {where: match_case(new, old)})


#: Paper 004's rules, the direction each is tried towards, and where it comes from.
RULES: Mapping[str, tuple[Direction, str]] = {
    "synonym": ("good", "attack"), "expansion": ("good", "attack"),
    "contraction": ("good", "attack"), "jumble": ("bad", "local-swap"),
    "change-name": ("bad", "attack"), "negate-previous": ("bad", "attack"),
    "question-to-assertion": ("bad", "attack"), "question-word-change": ("bad", "attack"),
}
_CLASSES: Mapping[str, type[Perturbation]] = {
    c.name: c for c in (SynonymAdjective, Expansion, Contraction, ChangeName, NegatePrevious,
                        QuestionToAssertion, QuestionWordChange)}


def get_rule(name: str) -> Perturbation:
    """The rule's perturbation (catalogue rules come from the catalogue)."""
    if name not in RULES:
        import difflib

        close = difflib.get_close_matches(name, list(RULES), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ValueError(f"unknown rule '{name}'{hint} Rules: {', '.join(RULES)}")
    origin = RULES[name][1]
    if origin != "attack":
        return get_perturbation(origin)
    return _CLASSES[name]()
