"""card.html and the figures: a page that fetches nothing and runs no script, each finding linked
to an element of the page and to its example, every figure with a text alternative that says
what it finds, ordered headings and header cells; card.md links the same figures as files."""

from __future__ import annotations

import itertools
import json
import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from evalstress.card.figures import draw_figure, figure_plans
from evalstress.card.html import excerpt_pair, render_card_html


class Page(HTMLParser):
    """What the tests read of a page: ids, links, headings, tags and their attributes."""

    def __init__(self, text: str):
        super().__init__()
        self.ids: set[str] = set()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.headings: list[int] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.tags.append((tag, found))
        if "id" in found:
            self.ids.add(found["id"])
        if re.fullmatch(r"h[1-6]", tag):
            self.headings.append(int(tag[1]))

    def all(self, tag: str) -> list[dict[str, str]]:
        return [attrs for name, attrs in self.tags if name == tag]


def test_the_page_fetches_nothing_and_links_each_finding_to_its_evidence(
        bleu_card: tuple[Path, str]) -> None:
    out, _ = bleu_card
    text = (out / "card.html").read_text(encoding="utf-8")
    card = json.loads((out / "card.json").read_text(encoding="utf-8"))
    page = Page(text)
    policy = [m["content"] for m in page.all("meta")
              if m.get("http-equiv") == "Content-Security-Policy"]
    assert policy and "default-src 'none'" in policy[0] and "script-src 'none'" in policy[0]
    assert page.all("script") == [] and page.all("link") == [] and page.all("img") == []
    for name, attrs in page.tags:  # every link stays inside the page
        for key in ("href", "src", "xlink:href"):
            if key in attrs:
                assert attrs[key].startswith("#"), (name, attrs)
    findings = [a for a in page.all("li") if a.get("class") == "finding"]
    assert len(findings) == len(card["findings"]) >= 3
    # 8 examples on the small budget: the findings say first that they are preliminary
    assert card["preliminary"] is True and "8 examples" in card["preliminary_reason"]
    assert text.index("<strong>Preliminary:</strong>") < text.index("class='finding'")
    targets = [a["href"][1:] for a in page.all("a")]
    for number, finding in enumerate(card["findings"], 1):
        assert f"finding-{number}" in page.ids
        if finding["example"] is not None:
            assert f"example-{number}" in targets and f"example-{number}" in page.ids
    assert all(target in page.ids for target in targets), set(targets) - page.ids
    # the blind spot of the first finding points at its row of the blind-spot table
    first = card["findings"][0]
    assert first["method"] == "blindspot"
    rows = [a["id"] for a in page.all("tr") if a.get("id")]
    assert any(t in rows for t in targets)
    # both scores of each example are on the page
    for finding in card["findings"]:
        example = finding["example"]
        if example:
            shown = " ".join(re.sub(r"<[^>]+>", " ", text).split())
            assert f"score {example['original_score']:.3f}" in shown
            assert f"score {example['variant_score']:.3f}" in shown


def test_figures_carry_their_finding_and_headings_are_ordered(
        bleu_card: tuple[Path, str]) -> None:
    out, _ = bleu_card
    page = Page((out / "card.html").read_text(encoding="utf-8"))
    svgs = page.all("svg")
    assert len(svgs) == 3 and len(page.all("figcaption")) == 3
    for svg in svgs:
        assert svg["role"] == "img" and len(svg["aria-label"]) > 80
    assert any("rank test fails for" in s["aria-label"] for s in svgs)
    levels = page.headings
    assert levels[0] == 1 and levels.count(1) == 1
    assert all(b <= a + 1 for a, b in itertools.pairwise(levels))
    assert len(page.all("thead")) == len(page.all("table"))
    assert page.all("th")  # real header cells, rows headed too
    assert any(th.get("scope") == "row" for th in page.all("th"))
    assert not [d for d in page.all("div") if d.get("role") == "alert"]  # trusted: no banner


def test_card_md_links_the_same_figures_as_files(bleu_card: tuple[Path, str]) -> None:
    out, _ = bleu_card
    card = json.loads((out / "card.json").read_text(encoding="utf-8"))
    markdown = (out / "card.md").read_text(encoding="utf-8")
    figures = card["files"]["figures"]
    assert figures == ["figures/blindspot.svg", "figures/discernment.svg",
                       "figures/criteria.svg"]
    tail = markdown[markdown.index("## Figures"):]
    for path in figures:
        assert f"]({path})" in tail
        svg = (out / path).read_text(encoding="utf-8")
        assert svg.startswith("<?xml") and "<title>" in svg
    assert card["files"]["card_html"].endswith("card.html")


def card_of(rows: list[dict[str, Any]], trusted: bool = True) -> dict[str, Any]:
    """A card with only a blind-spot section, as card.json holds it."""
    section = {"key": "blindspot", "title": "blind spots", "paper": "002", "status": "run",
               "reason": "", "summary": "", "results": {"rows": rows}, "files": {},
               "trusted": trusted, "trust_note": "" if trusted else "degenerate"}
    return {"evaluator": {"label": "m"}, "findings": [],
            "gate": {"trusted": trusted, "reasons": [] if trusted else ["degenerate: 1 only"]},
            "methods": {"blindspot": section}}


def severity(name: str, rank: int, change: float) -> dict[str, Any]:
    return {"severity": name, "severity_rank": rank, "relative_change": change,
            "relative_ci_low": change - 0.01, "relative_ci_high": change + 0.01}


ROWS = [{"aspect": "m", "perturbation": "truncation", "rank_pass": True, "monotonic_pass": True,
         "verdict": "pass", "severities": [severity("0.1", 0, 0.1), severity("0.5", 1, 0.4)]},
        {"aspect": "m", "perturbation": "sentence-switching", "rank_pass": False,
         "monotonic_pass": True, "verdict": "fail",
         "severities": [severity("1", 0, 0.0), severity("2", 1, 0.001)]}]


def test_a_figure_says_what_it_finds_and_draws_the_same_bytes_twice() -> None:
    card = card_of(ROWS)
    (plan,) = figure_plans(card)
    assert plan.path == "figures/blindspot.svg"
    assert "The rank test fails for sentence-switching" in plan.alt
    assert "truncation" not in plan.alt.split("fails for")[1]
    svg = draw_figure(card, plan)
    assert svg == draw_figure(card, plan)
    assert f"<title>{escape(plan.alt)}</title>" in svg and "sentence-switching" in svg
    untrusted = figure_plans(card_of(ROWS, trusted=False))[0]
    assert untrusted.alt.startswith("Untrusted (the sanity gate failed: degenerate)")


def test_an_untrusted_card_has_a_banner_and_greys_every_section() -> None:
    card = card_of(ROWS, trusted=False)
    card.update(evaluator={"label": "m", "spec": "m", "short_signature": "m|v1"},
                evalstress="0", created="now", cost={"seconds": 1.0},
                budget={"name": "small", "description": "a look"},
                data={"source": "built-in corpus", "examples": 2, "available": 2,
                      "tasks": {"story": 2}, "sha256": "0" * 64})
    card["gate"].update(verdict="fail", spread=[], ranking=None,
                        missing={"missing": 0, "rows": 4, "share": 0.0, "top_reason": "",
                                 "mostly_missing": False})
    page = Page(render_card_html(card, []))
    (banner,) = [d for d in page.all("div") if d.get("role") == "alert"]
    assert banner["class"] == "banner"
    sections = [s for s in page.all("section") if "method" in s.get("class", "")]
    assert sections and all("untrusted" in s["class"] for s in sections)
    text = render_card_html(card, [])
    assert "sanity gate failed" in text and "No findings" in text


def test_an_example_marks_the_changed_words_around_the_first_difference() -> None:
    before, after = excerpt_pair("the cat sat on the mat today", "the cat sit on the mat today")
    assert before.html == "the cat <del>sat</del> on the mat today"
    assert after.html == "the cat <ins>sit</ins> on the mat today"
    long = "word " * 200
    before, after = excerpt_pair(long + "alpha beta", long + "alpha gamma", limit=80)
    assert before.html.startswith("…") and "<del>beta</del>" in before.html
    assert "<ins>gamma</ins>" in after.html and len(after.html) < 200
    before, _ = excerpt_pair("a <b> & c", "a <b> & d")
    assert "&lt;b&gt; &amp;" in before.html  # texts are escaped
