"""The report in a real browser: Debian's Chromium (scripts/setup.sh installs it), driven by
Playwright for Python. Never downloads a browser; skips with the reason where none is there."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.browser_checks import (
    ALTERNATIVES,
    CONTRASTS,
    EMPTY_HEADERS,
    HEADINGS,
    NARROW,
    low_contrasts,
    narrow_problems,
    skipped_levels,
)

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--disable-component-update", "--disable-sync"]
SECTIONS = ("overview", "combination", "blindspot", "discernment", "criteria-confusion",
            "generation", "correlation", "adversarial", "style", "browser", "signature")


@contextmanager
def browser_page(profile: Path, width: int = 1400, height: int = 900) -> Iterator[Any]:
    playwright_api = pytest.importorskip(
        "playwright.sync_api", reason="Playwright for Python is not installed (dev extra)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: run scripts/setup.sh (apt-get install chromium)")
    profile.mkdir(parents=True, exist_ok=True)  # an empty user-data-dir for this test alone
    with playwright_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": width, "height": height})
        try:
            page = context.new_page()
            page.problems = []  # type: ignore[attr-defined]
            page.on("console", lambda m: m.type in ("error", "warning") and
                    page.problems.append(f"console {m.type}: {m.text}"))
            page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
            yield page
        finally:
            context.close()


def open_report(page: Any, run: Path) -> None:
    page.goto((run / "report.html").as_uri())
    page.wait_for_selector("#browser-list .card")


def test_report_opens_cleanly_with_every_section(e2e_run: Path, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        open_report(page, e2e_run)
        assert page.problems == []
        for section in SECTIONS:
            heading = page.locator(f"section#{section} > h2")
            assert heading.count() == 1 and heading.is_visible(), section
        assert page.locator("table.grid").count() == 3
        assert page.locator("figure.curves svg").count() >= 5
        assert "missing scores" in page.locator(".banner").first.inner_text()
        # one click from the grid to the test it summarises
        cell = page.locator("table.grid td.c-fail a").first
        target = cell.get_attribute("href")
        cell.click()
        assert page.evaluate("location.hash") == target
        assert page.locator(target).count() == 1
        assert page.problems == []


def test_browser_filters_by_perturbation_severity_and_example(e2e_run: Path,
                                                               tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        open_report(page, e2e_run)
        total = page.evaluate("JSON.parse(document.getElementById('variants-data')"
                              ".textContent).variants.length")
        page.select_option("#filter-perturbation", "char-typo")
        cards = page.locator("#browser-list .card")
        assert 0 < cards.count() <= 20
        assert set(cards.evaluate_all("cs => cs.map(c => c.dataset.perturbation)")) == {"char-typo"}
        page.select_option("#filter-severity", "major")
        assert set(cards.evaluate_all("cs => cs.map(c => c.dataset.severity)")) == {"major"}
        count = page.inner_text("#browser-count")
        assert count.split()[0].isdigit() and int(count.split()[0]) < total
        # a variant shows the original with deletions and the variant with insertions
        assert cards.first.locator(".pane").count() == 2
        assert cards.first.locator("ins, del").count() >= 1
        assert cards.first.locator("table tr").count() == 1 + 9  # bleu, rouge x3, rep x3, judge x2
        # "texts ›" beside a test sets the filter
        page.select_option("#filter-severity", "")
        page.locator("#blindspot a.texts[data-perturbation='truncation']").first.click()
        assert page.input_value("#filter-perturbation") == "truncation"
        assert set(cards.evaluate_all("cs => cs.map(c => c.dataset.perturbation)")) == {
            "truncation"}
        assert page.problems == []


def test_hostile_texts_ids_and_explanations_stay_inert(e2e_run: Path, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        open_report(page, e2e_run)
        page.fill("#filter-example", "onerror")
        cards = page.locator("#browser-list .card")
        assert cards.count() >= 1
        # the perturbations damage the payloads in some variants: look across the cards
        texts = cards.all_inner_texts()
        assert all('doc<img src=x onerror="window.__xss=1">' in t for t in texts)  # the id
        assert any("</script><script>window.__xss=2</script>" in t for t in texts)  # the text
        assert any("refused <img src=x" in t for t in texts)  # the reason of a missing score
        assert page.evaluate("window.__xss") is None
        assert page.locator("img").count() == 0
        assert page.locator("script").count() == 2  # the data and the browser, nothing else
        for section in ("generation", "adversarial", "signature"):
            assert '<img src=x onerror="window.__xss=1">' in page.inner_text(f"#{section}")
        # an attack's missing scores and rejected candidates are shown, not only its ASR
        lost = page.locator("#adversarial .banner.missing-scores")
        assert lost.is_visible()
        said = " ".join(lost.inner_text().split())
        assert said.startswith("7 scores came back missing")
        assert said.index("judge: refused") < said.index("victim: empty text")  # 5 before 2
        rejected = page.locator("#adversarial table", has_text="candidates rejected")
        assert rejected.count() == 1
        # the commoner reason first; a method with nothing rejected has no row
        assert rejected.locator("tbody tr").all_inner_texts() == [
            "adveval\tgold-missing: 5, refusal: 3"]
        # which scale and which stop rule each victim got; a data-dependent scale is flagged
        fitted = page.locator("#adversarial .banner.data-dependent")
        assert fitted.is_visible()
        assert "Data-dependent scale for ter" in " ".join(fitted.inner_text().split())
        scales = page.locator("#adversarial table", has_text="raw high (100)")
        assert scales.locator("tbody tr").count() == 3  # two victims and the gold
        assert "min-max over the attacked originals" in scales.inner_text()
        assert "lower (flipped)" in scales.inner_text()
        rules = " ".join(page.locator("#adversarial .stop-rules").inner_text().split())
        assert rules.startswith("Protocol paper.")
        assert "highest-feedback" in page.inner_text("#adversarial ul")
        # ASR over the attacked examples and over all given: 0.25 of 8, 0.10 of 20
        asr = page.locator("#adversarial table", has_text="ASR [95% CI] of all given")
        row = asr.locator("tbody tr", has_text="rule:negation").inner_text()
        assert "0.25" in row and "0.1" in row and "20" in row
        assert page.problems == []


def test_overview_is_above_the_fold_at_1400px(e2e_run: Path, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile", width=1400, height=900) as page:
        open_report(page, e2e_run)
        shot = tmp_path / "overview.png"
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000
        box = page.evaluate("""() => {
            const r = e => e.getBoundingClientRect();
            const grids = [...document.querySelectorAll('#overview table.grid')].map(r);
            return {overview: r(document.getElementById('overview')).top,
                    firstGrid: grids[0], grids: grids.length,
                    scrollWidth: document.documentElement.scrollWidth};
        }""")
        assert box["overview"] < 450
        assert box["firstGrid"]["bottom"] <= 900 and box["firstGrid"]["right"] <= 1400
        assert box["scrollWidth"] <= 1400  # nothing pushes the verdicts sideways


#: each row of the overview's grids must span at least this share of a 1400 px window
GRID_SHARE = 0.6


def test_report_meets_wcag_aa_at_1400px(e2e_run: Path, tmp_path: Path) -> None:
    """Contrast of every visible text, a text alternative for every picture that carries its
    finding, no empty header cell, no skipped heading level, and an overview that uses the
    window's width."""
    with browser_page(tmp_path / "profile", width=1400, height=900) as page:
        open_report(page, e2e_run)
        contrasts = page.evaluate(CONTRASTS)
        assert len(contrasts) > 100
        low = low_contrasts(contrasts)
        assert low == [], f"{len(low)} texts under AA contrast, e.g. {low[:5]}"
        pictures = page.evaluate(ALTERNATIVES)
        assert sum(p["tag"] == "svg" for p in pictures) >= 5
        bare = [p for p in pictures if len(p["text"]) < 20]
        assert bare == [], f"{len(bare)} pictures without a text alternative: {bare[:5]}"
        curves = [p["text"] for p in pictures if p["where"] == "blindspot"]
        # each curve figure says in words which perturbation moved the score, and by how much
        assert curves and all("truncation" in t and "%" in t for t in curves), curves
        # the first figure (bleu) says what the overview's first cell says (+10% reads rises)
        said = re.search(r"truncation: score (drops|rises) (\d+)%", curves[0])
        cell = page.locator("#overview table.grid[data-analysis='blindspot'] tbody tr").first
        shown = cell.locator("td i").first.inner_text()
        assert said and shown == f"{'+' if said[1] == 'rises' else '-'}{said[2]}%", (said, shown)
        empty = page.evaluate(EMPTY_HEADERS)
        assert empty == [], f"{len(empty)} empty header cells, e.g. {empty[:3]}"
        assert skipped_levels(page.evaluate(HEADINGS)) == []
        # grids side by side share a row; each row of grids, the last one too, spans most of
        # the window rather than a narrow column of cells
        rows = page.evaluate("""() => {
            const rows = {};
            for (const g of document.querySelectorAll('#overview table.grid')) {
                const b = g.getBoundingClientRect(), row = rows[b.top] || [1e9, -1e9];
                rows[b.top] = [Math.min(row[0], b.left), Math.max(row[1], b.right)]; }
            return Object.values(rows).map(r => r[1] - r[0]);
        }""")
        assert rows and min(rows) >= GRID_SHARE * 1400, f"grid rows span {rows} of 1400 px"
        span = min(rows)
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400
        print(f"\nreport.html: lowest contrast {min(c['ratio'] for c in contrasts):.2f}:1 over "
              f"{len(contrasts)} texts; {len(pictures)} pictures described; overview grids "
              f"span {span:.0f} px ({span / 1400:.0%} of 1400)")


def test_report_and_run_comparison_read_on_a_phone_and_a_desktop(e2e_run: Path,
                                                                 tmp_path: Path) -> None:
    """At 390 px (a phone) and 1400 px neither page scrolls sideways: the grids and the
    tables scroll in their own boxes, the figures keep 300 px or their own width."""
    from evalstress.report.compare import render_compare

    results = json.loads((e2e_run / "results.json").read_text(encoding="utf-8"))
    compared = tmp_path / "compare.html"
    compared.write_text(render_compare(results, results), encoding="utf-8")
    for width in (390, 1400):
        with browser_page(tmp_path / f"profile-{width}", width=width, height=800) as page:
            open_report(page, e2e_run)
            measured = page.evaluate(NARROW, 300)
            assert narrow_problems(measured) == [], (width, measured)
            assert measured["figures"] >= 5 and page.problems == []
            if width < 400:
                assert len(measured["wide"]) >= 3, measured  # tables wider than the phone
            page.goto(compared.as_uri())
            measured = page.evaluate(NARROW, 300)
            assert narrow_problems(measured) == [] and measured["tables"] >= 2, (width, measured)
