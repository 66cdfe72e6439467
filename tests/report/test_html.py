import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evalstress.report.common import json_for_script, short_labels
from evalstress.report.html import render_html, write_report
from evalstress.report.rundir import RunDirError, browser_payload, load_results
from tests.report.conftest import ADVERSARIAL, PAYLOAD, XSS


class Tags(HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Tags()
    parser.feed(html)
    return parser.tags


def hostile_results() -> dict:
    row = {"evaluator": f"judge:{XSS}", "aspect": XSS, "perturbation": f"trunc{PAYLOAD}",
           "higher_is_better": True, "gold": 1.0, "tolerance": 0.01, "rank_pass": False,
           "monotonic_pass": True, "passed": False, "verdict": "fail",
           "points": [{"severity": "0.1", "noise_ratio": 0.1, "mean": 1.0, "std": 0.0,
                       "gold": 1.0, "delta": 0.0, "n_examples": 3}]}
    return {"counts": {"examples": 3}, "evaluators": {f"judge:{XSS}": {"stats": {
        "requested": 10, "missing": 8}, "meant_for": None}},
        "missing_reasons": [{"evaluator": f"judge:{XSS}", "aspect": XSS, "reason": PAYLOAD,
                             "count": 8}],
        "analyses": {"blindspot": {"rows": [row], "notes": [PAYLOAD]},
                     f"mystery{XSS}": {"value": PAYLOAD}}}


def test_every_text_is_escaped_and_nothing_loads_from_outside():
    html = render_html(hostile_results(), title=f"T{XSS}")
    found = tags(html)
    assert not [t for t, a in found if t in ("img", "iframe", "link", "object", "embed")]
    assert not [a for _, a in found if any(k.startswith("on") for k in a)]
    assert not [a for _, a in found if a.get("src") or str(a.get("href", "#")).startswith(
        ("http", "//", "javascript"))]
    assert "<script" not in html  # no browser data: no script at all
    assert "&lt;img src=x onerror=&quot;window.__xss=1&quot;&gt;" in html
    assert "Content-Security-Policy" in html


@pytest.mark.slow
def test_overview_cells_link_to_rows_that_exist(small_run: Path):
    html = (small_run / "report.html").read_text(encoding="utf-8")
    targets = re.findall(r"<td class='c c-[a-z-]+'[^>]*><a href='#([^']+)'", html)
    assert targets
    ids = {a.get("id") for _, a in tags(html)}
    assert set(targets) <= ids
    # rep is meant for repetition only: its other tests are "not applicable", not blind spots
    assert re.search(r"c-not-applicable'[^>]*><a href='#[^']+' title='rep/rep-2 · truncation: "
                     r"NOT-APPLICABLE", html)


def test_banners_for_missing_scores_and_inconclusive_tests():
    results = hostile_results()
    results["analyses"]["discernment"] = {"units": [{
        "evaluator": "j", "perturbation": "typos", "severity": "minor", "p": 0.25, "d": 0.46,
        "tests": [{"aspect": "fluency", "n": 2, "wilcoxon": {"n": 2, "pvalue": 0.25}}]}],
        "summaries": []}
    html = render_html(results)
    assert "8 missing scores" in html and "over 10 texts sent to evaluators" in html
    assert "banner severe" in html  # most scores missing
    assert "1 test is INCONCLUSIVE" in html
    assert "v v-inconclusive" in html and ">INCONCLUSIVE<" in html


def test_short_labels_hide_urls_and_keep_distinct_evaluators_apart():
    results = {"evaluators": {
        "judge:base_url=http://127.0.0.1:39211/v1,model=smollm2,timeout=30": {},
        "judge:base_url=http://127.0.0.1:40000/v1,model=qwen,timeout=30": {},
        "bertscore:model=/very/long/path/to/weights,num_layers=6": {}, "bleu": {}}}
    short = short_labels(results)
    assert list(short.values()) == ["judge(model=smollm2)", "judge(model=qwen)", "bertscore",
                                    "bleu"]
    html = render_html({**results, "analyses": {}})
    assert "title=\"judge:base_url=http://127.0.0.1:39211/v1,model=smollm2,timeout=30\"" in html


def test_short_labels_keep_labels_that_are_already_short():
    labels = ["judge(local, prompt=json-judge.yaml)", "judge(local)", "python(pkg.mod:score)",
              "bleu(tokenize=intl)"]
    assert list(short_labels({"evaluators": {label: {} for label in labels}}).values()) == labels


def test_json_in_a_script_element_cannot_close_it():
    text = json_for_script({"t": "</script><!-- \u2028 & >"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"t": "</script><!-- \u2028 & >"}


@pytest.mark.slow
def test_the_report_is_written_in_pieces_that_make_the_same_page(
        small_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """report.html is written piece by piece, never as one string of the whole page and its
    variant data (a large run's report held several copies of it at once), and the file is
    byte for byte the page rendered whole."""
    import evalstress.report.html as html_module

    pieces: list[str] = []
    real = html_module.__dict__.get("atomic_write_parts")

    def spy(path: Path, parts):
        def counted():
            for part in parts:
                pieces.append(part)
                yield part
        return real(path, counted()) if real is not None else None

    monkeypatch.setattr(html_module, "atomic_write_parts", spy, raising=False)
    out = write_report(small_run, tmp_path / "again.html")
    results = load_results(small_run)
    whole = render_html(results, title="evalstress report: blindspot",
                        browser=browser_payload(small_run, results=results))
    assert out.read_bytes() == whole.encode("utf-8")
    assert "".join(pieces) == whole
    opens = next(i for i, p in enumerate(pieces) if p.endswith("id='variants-data'>"))
    closes = next(i for i, p in enumerate(pieces) if p.startswith("</script>"))
    data = "".join(pieces[opens + 1:closes])
    assert data.startswith('{"total":') and len(data) > 100_000
    assert max(len(p) for p in pieces[opens + 1:closes]) < len(data) / 20


@pytest.mark.slow
def test_rebuilt_report_has_every_section_of_the_run(small_run: Path, tmp_path: Path):
    out = write_report(small_run, tmp_path / "again.html")
    html = out.read_text(encoding="utf-8")
    for section in ("overview", "combination", "blindspot", "browser", "signature"):
        assert f"<section id='{section}'>" in html
    assert html.count("<svg") >= 3  # one curve figure per evaluator aspect at least
    assert "noise ratio" in html and "texts ›" in html
    assert len(html) < 5_000_000


@pytest.mark.slow
def test_browser_sample_is_stratified_capped_and_joined_to_scores(small_run: Path):
    payload = browser_payload(small_run, max_variants=40, results=load_results(small_run))
    assert payload is not None
    assert payload["total"] > 400 and payload["shown"] == len(payload["variants"]) == 40
    per = {}
    for v in payload["variants"]:
        per[(v[2], v[3])] = per.get((v[2], v[3]), 0) + 1
    assert max(per.values()) - min(per.values()) <= 1  # an even share per stratum
    names = [c["name"] for c in payload["columns"]]
    assert "bleu/bleu" in names and "rouge/rougeL" in names
    example = payload["examples"][payload["variants"][0][1]]
    assert example["text"] and len(example["scores"]) == len(names)
    assert all(len(v[7]) == len(names) for v in payload["variants"])
    again = browser_payload(small_run, max_variants=40, results=load_results(small_run))
    assert again == payload  # deterministic


def test_unreadable_runs_name_the_file(tmp_path: Path):
    with pytest.raises(RunDirError, match="no such file"):
        load_results(tmp_path)
    (tmp_path / "results.json").write_text("{\n oops", encoding="utf-8")
    with pytest.raises(RunDirError, match=r"results.json, line 2, column 2: not valid JSON: "
                                          r"expected a field name"):
        load_results(tmp_path)
    (tmp_path / "results.json").write_text('{"a": "x\ty"}', encoding="utf-8")  # a raw tab
    with pytest.raises(RunDirError) as caught:
        load_results(tmp_path)
    assert "results.json, line 1, column 9: not valid JSON: invalid control character" \
        in str(caught.value)
    assert "character at" not in str(caught.value)  # not Python's message cut short
    (tmp_path / "results.json").write_text('{"schema_version": "2.0", "analyses": {}}')
    with pytest.raises(RunDirError, match="newer than this evalstress reads"):
        load_results(tmp_path)


def test_only_the_reports_own_script_may_run():
    import base64
    import hashlib

    from evalstress.report.html import render_html as render

    html = render({"analyses": {}}, browser={"total": 0, "shown": 0, "columns": [],
                                             "examples": {}, "variants": [], "notes": {}})
    policy = re.search(r"script-src '(sha256-[^']+)'", html)
    assert policy and "unsafe-inline'; script-src 'sha256" in html
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert policy.group(1) == f"sha256-{digest}"


def _tiny_run_dir(folder: Path) -> dict[str, dict[str, float]]:
    """3 strata x 10 variants over 5 examples, two evaluator aspects, one missing score with its
    reason and one judge explanation; returns each variant's expected scores by id."""
    import pandas as pd

    variants, rows, expected = [], [], {}
    examples = [{"id": f"e{i}", "task": "summarization", "source": "", "hypothesis": f"text {i}",
                 "references": []} for i in range(5)]
    for e in examples:
        for aspect, value in (("bleu", 50.0), ("chrf", 60.0)):
            rows.append({"example_id": e["id"], "perturbation": "original", "severity": "",
                         "seed": -1, "evaluator": aspect, "aspect": aspect, "score": value,
                         "higher_is_better": True, "status": "ok", "reason": "",
                         "explanation": ""})
    for p in ("drop", "swap", "typo"):
        for n in range(10):
            ident = f"{p}-{n}"
            example = f"e{n % 5}"
            variants.append({"id": ident, "example_id": example, "perturbation": p,
                             "severity": "0.1", "seed": n // 5, "noise_ratio": 0.1,
                             "text": f"{p} {n}", "diff": ""})
            expected[ident] = {"bleu": float(n), "chrf": 100.0 - n}
            for aspect in ("bleu", "chrf"):
                missing = ident == "swap-3" and aspect == "chrf"
                rows.append({"example_id": example, "perturbation": p, "severity": "0.1",
                             "seed": n // 5, "evaluator": aspect, "aspect": aspect,
                             "score": float("nan") if missing else expected[ident][aspect],
                             "higher_is_better": True, "status": "missing" if missing else "ok",
                             "reason": "timeout" if missing else "",
                             "explanation": "reads well" if ident == "drop-4" else ""})
    (folder / "variants.jsonl").write_text("".join(json.dumps(v) + "\n" for v in variants))
    (folder / "examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples))
    pd.DataFrame(rows).to_parquet(folder / "scores.parquet", index=False)
    return expected


def test_browser_takes_the_smallest_id_hashes_per_stratum_and_their_scores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Hand-computed sample: 6 shown over 3 equal strata -> in each stratum the 2 ids with the
    smallest sha1; their scores come from scores.parquet even when read in small batches."""
    import hashlib

    import evalstress.report.rundir as rundir

    expected = _tiny_run_dir(tmp_path)
    monkeypatch.setattr(rundir, "BATCH_ROWS", 7)  # the table spans many batches
    payload = browser_payload(tmp_path, max_variants=6)
    assert payload is not None and payload["total"] == 30 and payload["shown"] == 6
    want = set()
    for p in ("drop", "swap", "typo"):
        ids = sorted((f"{p}-{n}" for n in range(10)),
                     key=lambda i: hashlib.sha1(i.encode()).hexdigest())
        want.update(ids[:2])
    assert {v[0] for v in payload["variants"]} == want
    assert [c["name"] for c in payload["columns"]] == ["bleu/bleu", "chrf/chrf"]
    for ident, _, _, _, _, _, _, scores, _ in payload["variants"]:
        assert scores[0] == expected[ident]["bleu"]
        assert scores[1] == (None if ident == "swap-3" else expected[ident]["chrf"])
    assert all(payload["examples"][v[1]]["scores"] == [50.0, 60.0] for v in payload["variants"])
    everything = browser_payload(tmp_path, max_variants=30)
    assert everything is not None
    assert everything["notes"]["swap-3"] == {"1": "missing: timeout"}
    assert everything["notes"]["drop-4"] == {"0": "reads well", "1": "reads well"}


def test_browser_names_a_damaged_score_table(tmp_path: Path):
    import pandas as pd

    _tiny_run_dir(tmp_path)
    pd.DataFrame({"example_id": ["e0"]}).to_parquet(tmp_path / "scores.parquet")
    with pytest.raises(RunDirError, match=r"scores.parquet: missing columns \['aspect'"):
        browser_payload(tmp_path)
    (tmp_path / "scores.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(RunDirError, match=r"scores\.parquet: cannot read"):
        browser_payload(tmp_path)


def test_a_spread_of_float_rounding_prints_as_zero():
    """Seeds that scored the same texts the same way differ only in the last bits of their mean:
    the table shows no spread, where a real one still shows."""
    results = hostile_results()
    row = results["analyses"]["blindspot"]["rows"][0]
    row["points"] = [{**row["points"][0], "mean": 14.694, "std": 1.8e-15},
                     {**row["points"][0], "noise_ratio": 0.2, "mean": 13.5, "std": 0.25}]
    html = render_html(results)
    assert "14.694±0.00 → 13.500±0.25" in html
    assert "e-15" not in html


def test_the_blindspot_note_names_the_tests_that_decided():
    """Under the paper protocol the tests ran strict: the note must not describe a tolerance
    that decided nothing."""
    results = hostile_results()
    results["analyses"]["blindspot"]["strict"] = True
    strict = render_html(results)
    assert "Strict tests (the paper's)" in strict
    assert "by more than the tolerance" not in strict
    results["analyses"]["blindspot"]["strict"] = False
    assert "by more than the tolerance" in render_html(results)


def test_an_unset_attack_parameter_reads_not_set():
    """With no --budget each search sizes its own: the parameter line says so in words."""
    results = hostile_results()
    results["analyses"]["adversarial"] = copy.deepcopy(ADVERSARIAL)
    results["analyses"]["adversarial"]["params"]["budget"] = None
    html = render_html(results)
    assert "budget = not set" in html
    assert "budget = None" not in html
