import re

from evalstress.report.html import render_html, svg_curve


def results():
    return {"counts": {"examples": 2}, "analyses": {
        "blindspot": {"tolerance": {"rule": "tol"}, "notes": [], "rows": [
            {"evaluator": "bleu", "aspect": "bleu", "perturbation": "truncation", "gold": 30.0,
             "rank_pass": True, "monotonic_pass": False, "passed": False,
             "points": [{"noise_ratio": 0.2, "mean": 20.0}, {"noise_ratio": 0.1, "mean": 25.0}]}]},
        "discernment": {"notes": ["a <note>"], "units": [], "summaries": [
            {"evaluator": "judge", "task": "*", "group": "minor", "d_avg": 1.5, "d_min": 0.4,
             "d_avg_ew": None, "d_min_ew": None, "d_min_at": "typos@minor"}]},
        "mystery": {"value": 1}}}


def test_report_is_self_contained_and_has_the_tables():
    html = render_html(results(), title="T")
    assert not re.search(r"<script|<link|\bsrc=|url\(|https?://", html)
    assert "<style>" in html and html.count("<table>") >= 2
    assert "<svg" in html and "<polyline" in html
    assert "typos@minor" in html and "class='fail'>0.40<" in html
    assert "a &lt;note&gt;" in html  # escaped
    assert "&quot;value&quot;: 1" in html  # unknown analyses shown as JSON


def test_svg_curve_starts_at_gold():
    svg = svg_curve([(0.5, 1.0)], 2.0)
    assert svg.startswith("<svg") and svg.count("<circle") == 2
