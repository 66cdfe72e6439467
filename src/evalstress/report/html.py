"""The HTML report: one self-contained file (inline CSS, SVG and one small script; no links out,
no fonts or images to fetch) that opens offline and can be mailed as it is.

Layout: a one-line header, banners when scores are missing or tests cannot reach significance,
the overview grid (evaluator x test, coloured by verdict and effect; a click opens the test),
which evaluators to combine, then one section per analysis, the LLM-written perturbations, the
adversarial search, a variant browser (original vs variant with the diff and every score) and
the run's signature. `write_report(run_dir)` rebuilds it from a run directory.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from evalstress.analyses.outcomes import Outcome, outcomes
from evalstress.core.storage import atomic_write_parts
from evalstress.core.wording import plural
from evalstress.report import sections
from evalstress.report.common import esc, json_for_script_parts, short_labels, verdict_css_vars
from evalstress.report.plots import curves_svg, discernment_svg
from evalstress.report.renderers import SECTIONS, SectionContext
from evalstress.report.rundir import MAX_VARIANTS, browser_payload, labelled, load_results

ORDER = ("blindspot", "discernment", "criteria-confusion", "correlation", "adversarial", "style")


@cache
def asset(name: str) -> str:
    return (resources.files("evalstress.report") / "assets" / name).read_text(encoding="utf-8")


def style() -> str:
    """The report's CSS: the verdicts' colours as custom properties, then report.css."""
    return f":root{{{verdict_css_vars()}}}\n{asset('report.css')}"


def script_hash() -> str:
    """The CSP source that lets exactly the report's own script run, and no other."""
    digest = hashlib.sha256(asset("report.js").encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def banners(results: Mapping[str, Any], found: Sequence[Outcome]) -> list[str]:
    """Warnings a reader must see before any number: missing scores, inconclusive tests."""
    out = []
    requested = missing = 0
    for info in (results.get("evaluators") or {}).values():
        stats = (info or {}).get("stats") or {}
        requested += int(stats.get("requested") or 0)
        missing += int(stats.get("missing") or 0)
    if not requested:
        missing = int((results.get("counts") or {}).get("missing_scores") or 0)
    if missing:
        # missing counts score rows (one per aspect), requested counts texts: a rough share
        share = f" (over {requested:,} texts sent to evaluators)" if requested else ""
        reasons = sorted(results.get("missing_reasons") or [], key=lambda r: -int(r["count"]))
        short = short_labels(results)
        top = "; ".join(f"{short.get(str(r.get('evaluator')), r.get('evaluator'))}: "
                        f"{str(r.get('reason'))[:160]} ({r.get('count')})" for r in reasons[:3])
        severe = " severe" if requested and missing / requested > 0.5 else ""
        out.append(f"<div class='banner{severe}' role='alert'><b>{missing:,} missing "
                   f"scores</b>{esc(share)}. Tests built on them may be INCONCLUSIVE. "
                   f"{esc(top)} <a href='#signature'>details</a></div>")
    short = short_labels(results)
    for entry in (results.get("health") or {}).get("degenerate") or []:
        label = short.get(str(entry.get("evaluator")), str(entry.get("evaluator")))
        did = "answered" if entry.get("by") == "answer" else "scored"
        out.append(f"<div class='banner severe' role='alert'><b>{esc(label)} / "
                   f"{esc(entry.get('aspect'))} is degenerate</b>: it {did} "
                   f"{esc(entry.get('value'))} for {entry.get('count')} of "
                   f"{entry.get('scored')} texts, so the verdicts of "
                   f"{esc(', '.join(entry.get('analyses') or []) or 'this run')} about it rest "
                   "on no variation: read them as saying nothing.</div>")
    unsure = [o for o in found if o.verdict == "inconclusive"]
    if unsure:
        reasons = list(dict.fromkeys(o.detail.split(";")[0] for o in unsure))
        out.append(f"<div class='banner' role='alert'><b>{plural(len(unsure), 'test is', 'tests are')} "
                   "INCONCLUSIVE</b>: too few examples to reach significance, or too many "
                   f"missing scores, so no pass or fail is given. e.g. {esc(reasons[0])}"
                   + (f" (and {plural(len(reasons) - 1, 'other reason')})" if len(reasons) > 1 else "")
                   + "</div>")
    notes = [str(n) for data in (results.get("analyses") or {}).values()
             if isinstance(data, Mapping) for n in data.get("notes") or []]
    if not results.get("analyses"):
        out.append("<div class='banner'>This run has no analyses.</div>")
    return out + ([f"<p class='note'>{plural(len(notes), 'analysis note')} below.</p>"] if notes else [])


def render_html(results: Mapping[str, Any], *, title: str = "evalstress report",
                browser: Mapping[str, Any] | None = None) -> str:
    """The report for a results.json mapping; `browser` is the variant browser's data
    (`rundir.browser_payload`), absent when the run directory has no variants."""
    return "".join(page_parts(results, title=title, browser=browser))


def page_parts(results: Mapping[str, Any], *, title: str = "evalstress report",
               browser: Mapping[str, Any] | None = None) -> Iterator[str]:
    """`render_html`'s page in pieces, in order: `write_html` writes them one by one, so the
    page and its variant data are never one string in memory."""
    short = short_labels(results)
    found = outcomes(results)
    analyses = results.get("analyses") or {}
    body: list[tuple[str, str]] = []
    body.append(("overview", sections.overview(found, short)))
    combo = sections.combination(found, short)
    if combo:
        body.append(("combination", combo))
    names = [n for n in ORDER if n in analyses] + [n for n in analyses if n not in ORDER]
    context = SectionContext(found, short, curves_svg, discernment_svg)
    renderers = SECTIONS.all()
    for name in names:
        data = analyses[name]
        render = renderers.get(name)
        body.append((name, _guard(render, data, context) if render is not None
                     and isinstance(data, Mapping) else sections.raw_json(data)))
    if results.get("generation"):
        body.insert(_after(body, ("criteria-confusion", "discernment", "blindspot")),
                    ("generation", _guard(sections.generation, results["generation"])))
    if browser:
        body.append(("browser", "<p class='note'>Filter by perturbation, severity or example; "
                                "deletions are struck through in the original, insertions "
                                "marked in the variant; change = variant − original.</p>"
                                "<div id='browser-root'></div>"))
    body.append(("signature", sections.signature(results, short)))
    counts = results.get("counts") or {}
    suite = (results.get("suite") or {}).get("name", "")
    meta = " · ".join(x for x in (
        f"suite {suite}" if suite else "",
        plural(counts["examples"], "example") if isinstance(counts.get("examples"), int) else "",
        plural(counts["variants"], "variant") if isinstance(counts.get("variants"), int) else "",
        f"{len(results.get('evaluators') or {})} evaluators",
        str(results.get("created") or "")) if x)
    toc = " ".join(f"<a href='#{esc(name)}'>{esc(sections.SECTION_TITLES.get(name, name))}</a>"
                   for name, _ in body)
    yield ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
           "<meta name='viewport' content='width=device-width, initial-scale=1'>"
           "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
           f"style-src 'unsafe-inline'; script-src '{script_hash()}'; img-src data:\">"
           f"<title>{esc(title)}</title><style>{style()}</style></head><body><main>"
           f"<header class='top'><h1>{esc(title)}</h1><span class='meta'>{esc(meta)}</span>"
           f"</header><nav class='toc'>{toc}</nav>")
    yield from banners(results, found)
    for name, html in body:
        yield (f"<section id='{esc(name)}'><h2>{esc(sections.SECTION_TITLES.get(name, name))}"
               f"</h2>{html}")
        data = analyses.get(name) if name in analyses else None
        for note in (data.get("notes") or []) if isinstance(data, Mapping) else []:
            yield f"<p class='note'>note: {esc(note)}</p>"
        yield "</section>"
    yield "</main>"
    if browser:
        yield "<script type='application/json' id='variants-data'>"
        yield from json_for_script_parts(browser)
        yield f"</script><script>{asset('report.js')}</script>"
    yield "</body></html>"


def _after(body: list[tuple[str, str]], names: Sequence[str]) -> int:
    for name in names:
        for i, (section, _) in enumerate(body):
            if section == name:
                return i + 1
    return len(body)


def _guard(fn: Callable[..., str], *args: Any) -> str:
    """A section whose data is malformed shows why instead of sinking the whole report."""
    try:
        return fn(*args)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return (f"<p class='note'>could not render this section ({esc(type(exc).__name__)}: "
                f"{esc(exc)})</p>" + sections.raw_json(args[0]))


def write_html(results: Mapping[str, Any], path: str | Path, *,
               title: str = "evalstress report", browser: Mapping[str, Any] | None = None) -> Path:
    out = Path(path)  # a new file renamed over it: a link at `path` is never followed
    atomic_write_parts(out, page_parts(results, title=title, browser=browser))
    return out


def write_report(run_dir: str | Path, out: str | Path | None = None, *,
                 max_variants: int = MAX_VARIANTS, title: str | None = None,
                 results: Mapping[str, Any] | None = None,
                 browser_reader: Callable[[], dict[str, Any] | None] | None = None) -> Path:
    """Rebuild report.html from a run directory's files (those engine/rundir.py writes; the
    results.json among them follows docs/results.schema.json). `results`: its results.json as
    already read (and checked, `rundir.read_run`) by the caller; `browser_reader` returns
    `rundir.browser_data` of this folder when another process reads it meanwhile."""
    folder = Path(run_dir)
    if results is None:
        results = load_results(folder)
    browser = (labelled(browser_reader(), results) if browser_reader is not None
               else browser_payload(folder, max_variants=max_variants, results=results))
    suite = (results.get("suite") or {}).get("name") or (results.get("config") or {}).get(
        "command", "run")
    return write_html(results, out or folder / "report.html",
                      title=title or f"evalstress report: {suite}", browser=browser)
