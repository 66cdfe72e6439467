"""The probes' wording: cues mark every probe sentence and no placebo sentence."""

from __future__ import annotations

from evalstress.core import biascues as cues
from evalstress.core.family import KNOWN


def test_no_placebo_sentence_carries_a_cue() -> None:
    for sentence in (*cues.NEUTRAL, *cues.ASKER_NEUTRAL, *cues.READERS_NEUTRAL):
        assert not any(cues.has_cue(kind, sentence) for kind in cues.CUES), sentence


def test_every_probe_sentence_carries_its_own_cue() -> None:
    assert all(cues.has_cue("bandwagon", s) for s in cues.BANDWAGON)
    assert all(cues.has_cue("sycophancy", s) for s in cues.SYCOPHANCY)
    assert all(cues.has_cue("verbosity", s) for s in cues.FILLER)
    assert all(cues.has_cue("authority", cues.AUTHORITY.format(authors=a, year=y, journal=j))
               for a, y, j in cues.CITATIONS)
    assert all(cues.has_cue("attribution", cues.ATTRIBUTION.format(who=w))
               for w in (*cues.NAMED_MODELS, *cues.PEOPLE))


def test_every_family_named_in_probes_is_one_the_family_rule_knows() -> None:
    assert set(cues.FAMILIES) <= set(KNOWN)


def test_a_self_cue_names_the_family_as_a_reader_would() -> None:
    assert cues.self_cue("claude") == "(This text was written by a Claude model.)"


def test_the_closest_neutral_sentence_is_the_nearest_in_length() -> None:
    target = 44
    chosen = cues.closest_neutral(target)
    assert all(abs(len(chosen) - target) <= abs(len(s) - target) for s in cues.NEUTRAL)
