"""card.md (and the other Markdown evalstress writes from a card: card-compare's table, the
atlas page) shows every text of the data as it is: rendered with the Markdown library and the
extensions mkdocs uses, and by a CommonMark reader as GitHub reads it, no tag or attribute
written in the data reaches the HTML, and the reader still sees the text itself."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import markdown
import pytest
import yaml
from markdown_it import MarkdownIt

from evalstress.card.atlas import ATLAS, atlas_page
from evalstress.card.compare import compare_cards, compare_markdown
from evalstress.card.markdown import code, render_markdown, text

ROOT = Path(__file__).resolve().parents[2]
#: a committed card (the atlas's BLEU card): a whole card without running anything
CARD = ROOT / "docs" / "atlas" / "bleu" / "card.json"

LABEL = "bleu:name=<img src=x onerror=alert(1)>"
SPEC = "bleu:name=`<img src=x onerror=alert(2)>`"
ORIGINAL = ("    <i>indented, not code</i>\n<script>alert(3)</script>\n# not a heading\n"
            "</summary></details>"
            "<svg onload=alert(4)>\n- not a list\n!!! warning \"not an admonition\"")
VARIANT = ("[click](javascript:alert(5)) | a | b\n|---|---|\n```\n<iframe src=x></iframe>\n"
           "**not bold** <!-- not a comment -->")
EXAMPLE_ID = "</summary></details><b onclick=alert(6)>id_1</b>"
PERTURBATION = "<img onerror=alert(7) src=y>"
REASON = "<a href=javascript:alert(8)>degenerate</a>: 1 | 2 *only*"
SOURCE = "<svg onload=alert(9)>.jsonl"
#: what the data says, as the reader must see it (line breaks read as spaces)
SHOWN = ["<i>indented, not code</i>", "<script>alert(3)</script>",
         "</summary></details><svg onload=alert(4)>",
         "[click](javascript:alert(5)) | a | b", "<iframe src=x></iframe>",
         "**not bold** <!-- not a comment -->", EXAMPLE_ID, "<img src=x onerror=alert(1)>",
         "`<img src=x onerror=alert(2)>`", SOURCE]
#: every tag card.md writes itself (the data's script, svg, iframe, b, ... are none of these)
OURS = {"h1", "h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td", "blockquote",
        "details", "summary", "ul", "ol", "li", "strong", "em", "code", "a", "img", "hr", "div"}


def hostile_card() -> dict[str, Any]:
    """The committed BLEU card with the data's texts and the evaluator's label replaced by
    texts written to break out of Markdown and HTML."""
    card = json.loads(CARD.read_text(encoding="utf-8"))
    card["evaluator"].update(label=LABEL, spec=SPEC, short_signature=SPEC + "|v1")
    card["data"]["source"] = SOURCE
    card["data"]["tasks"] = {"<i>task</i>|x": 3, **card["data"]["tasks"]}
    card["gate"]["reasons"] = [REASON]
    finding = card["findings"][0]
    finding["example"] = {"example_id": EXAMPLE_ID, "perturbation": PERTURBATION,
                          "severity": "</summary>", "original": ORIGINAL, "variant": VARIANT,
                          "original_score": 1.0, "variant_score": 0.5, "files": []}
    card["methods"]["blindspot"]["results"]["rows"][0]["perturbation"] = PERTURBATION
    card["methods"]["adversarial"]["reason"] = REASON
    return card


def github_like(source: str) -> str:
    """HTML as a CommonMark reader with GitHub's tables and strikethrough makes it (raw HTML
    passed through, as before GitHub's sanitizer): the Markdown inside <details> is read as
    Markdown here, where Python-Markdown keeps the whole block as HTML."""
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]
                                                          ).render(source)


def mkdocs(source: str) -> str:
    return mkdocs_markdown().convert(source)


RENDERERS = {"mkdocs": mkdocs, "github-like": github_like}


def mkdocs_markdown() -> markdown.Markdown:
    """The Markdown converter mkdocs makes: the extensions mkdocs.yml enables, with their
    settings."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    names, settings = [], {}
    for item in config["markdown_extensions"]:
        name, options = next(iter(item.items())) if isinstance(item, dict) else (item, None)
        names.append(name)
        if options:
            settings[name] = options
    return markdown.Markdown(extensions=names, extension_configs=settings)


class Page(HTMLParser):
    """The tags, attributes and text of an HTML page, as a browser's parser reads them."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.comments: list[str] = []
        self.words: list[str] = []
        self.feed(html)
        self.close()
        self.text = " ".join(" ".join(self.words).split())

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    def handle_data(self, data: str) -> None:
        self.words.append(data)


def assert_no_markup_from_the_data(page: Page) -> None:
    assert {tag for tag, _ in page.tags} <= OURS
    for tag, attrs in page.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        for name in ("href", "src"):
            assert "javascript" not in (attrs.get(name) or ""), (tag, attrs)
        if tag == "img":
            assert (attrs.get("src") or "").startswith("figures/"), attrs
    assert page.comments == []


@pytest.mark.parametrize("render", RENDERERS.values(), ids=RENDERERS.keys())
def test_card_md_shows_the_data_s_markup_as_text(render: Callable[[str], str]) -> None:
    page = Page(render(render_markdown(hostile_card())))
    assert_no_markup_from_the_data(page)
    for said in SHOWN:
        assert " ".join(said.split()) in page.text
    assert f"Evaluator card: {LABEL}" in page.text
    assert "# not a heading" in page.text and "- not a list" in page.text
    assert '!!! warning "not an admonition"' in page.text
    assert REASON in page.text and PERTURBATION in page.text


@pytest.mark.parametrize("render", RENDERERS.values(), ids=RENDERERS.keys())
def test_the_comparison_table_and_the_atlas_page_show_it_as_text_too(
        render: Callable[[str], str]) -> None:
    card = hostile_card()
    other = copy.deepcopy(card)
    other["budget"]["name"] = "<script>alert(10)</script>"
    table = compare_markdown(compare_cards([card, other], [LABEL, "b|<i>"]))
    page = Page(render(table))
    assert_no_markup_from_the_data(page)
    assert LABEL in page.text and "b|<i>" in page.text
    assert "<script>alert(10)</script>" in page.text
    entry = next(e for e in ATLAS if e.name == "bleu")
    card["gate"]["verdict"] = "warn"  # the page names the gate's reasons then
    page = Page(render(atlas_page([(entry, card)])))
    assert {tag for tag, _ in page.tags} <= OURS | {"pre", "span"}  # the page's own commands
    assert not any(n.startswith("on") for _, attrs in page.tags for n in attrs)
    assert "`<img src=x onerror=alert(2)>`" in page.text and REASON in page.text


@pytest.mark.parametrize("said", ["a|b", "<b>x</b>", "_x_", "*x*", "`x`", "x\\y", "# x", "- x",
                                  "1. x", "[x](y)", "~~x~~", "&amp;", "a\nb", "\x1b[2J"])
def test_text_and_code_read_back_as_written(said: str) -> None:
    """One line of text, in a paragraph or a code span, reads back as written (line breaks as
    spaces, a control character as its escape)."""
    expected = " ".join(said.split()).replace("\x1b", "\\x1b")
    for written in (text(said), code(said)):
        for render in RENDERERS.values():
            assert Page(render(f"say {written} now")).text == f"say {expected} now"


def test_the_four_way_verdict_and_the_corrected_level_read_as_printed() -> None:
    from evalstress.analyses.blindspot_stats import outcome_text
    from evalstress.card.markdown import level_text

    assert outcome_text({"outcome": "inconclusive", "n_to_settle": 3815}) == \
        "inconclusive (n about 3815)"
    assert outcome_text({"outcome": "inconclusive", "n_to_settle": None}) == \
        "inconclusive (no n settles it)"
    assert outcome_text({"outcome": "detects", "monotonic_outcome": "rises"}) == "detects; rises"
    assert outcome_text({"verdict": "pass"}) is None  # a card made before the four-way verdicts
    assert outcome_text({"outcome": "inconclusive", "n_to_settle": 100_000}) == \
        "inconclusive (n 100,000 or more)"
    assert outcome_text({"outcome": "partly blind", "blind_up_to": "0.1",
                         "detects_from": "0.3"}) == "blind up to 0.1 (detects from 0.3)"
    # the card's row table shows it in its "from intervals" column
    row = {"perturbation": "stopword-removal", "aspect": "bleu", "verdict": "fail",
           "rank_pass": False, "monotonic_pass": True, "outcome": "partly blind",
           "blind_up_to": "0.1", "detects_from": "0.3", "severities": []}
    from evalstress.card.markdown import blindspot_lines
    assert any("| blind up to 0.1 (detects from 0.3) |" in line
               for line in blindspot_lines({"rows": [row]}))
    assert level_text({"level": 0.95}) == "95% CI"
    assert level_text({"level": 1 - 0.05 * 45 / 64}) == "96.5% CI"  # BH: 45 of 64 rejected


def test_findings_say_when_they_are_preliminary_and_label_their_examples() -> None:
    card = json.loads(CARD.read_text(encoding="utf-8"))
    card["preliminary"] = True
    card["preliminary_reason"] = "made on the 'small' budget with 8 examples"
    lines = render_markdown(card).split("\n")
    head = lines.index("## Findings")
    assert lines[head + 2] == ("**Preliminary:** made on the 'small' budget with 8 "
                               "examples.")
    said = "\n".join(lines)
    assert "*Examples:* each finding's before/after example is typical" in said
    assert "typical: the median change of" in said and "most extreme: the largest" in said
    # the blind-spot table states each row's smallest detectable change at its n
    row = card["methods"]["blindspot"]["results"]["rows"][0]
    top = max(row["severities"], key=lambda s: s["severity_rank"])
    assert "smallest detectable change" in said
    assert "Smallest detectable change: the smallest true mean change a test of this n finds " \
        "with 80% power" in said
    assert f"{top['test']['mde']:.3g} (n {top['test']['n']})" in said
    card["preliminary"] = False
    assert "Preliminary" not in render_markdown(card)
