"""The atlas: the committed page is what `evalstress atlas` writes from the committed cards (a
pure function of them), every card of the atlas is there with the figures the page shows, and
(slow) BLEU's card made again end to end says what the committed one says."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from evalstress.card.atlas import ATLAS, atlas_page, entries, read_atlas, slug, work_cell
from evalstress.card.compare import read_card
from evalstress.card.findings import can_reach, ceiling, discernment_findings
from evalstress.card.sections import discernment_summary
from evalstress.cli import app
from evalstress.core.strict import UnknownNameError
from tests.card.conftest import runner

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "docs" / "atlas"
PAGE = ROOT / "docs" / "atlas.md"


def test_the_committed_page_is_what_the_command_writes_from_the_committed_cards() -> None:
    cards = read_atlas(PUBLISHED)
    assert [entry.name for entry, _ in cards] == [entry.name for entry in ATLAS]
    assert PAGE.read_text(encoding="utf-8") == atlas_page(cards, "atlas")


def test_the_command_writes_the_page_from_published_cards_alone(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "atlas.md"
    page.parent.mkdir()
    result = runner.invoke(app, ["atlas", "--page-only", "--published", str(PUBLISHED),
                                 "--page", str(page), "--quiet"])
    assert result.exit_code == 0, result.output
    written = page.read_text(encoding="utf-8")
    base = Path(os.path.relpath(PUBLISHED, page.parent)).as_posix()
    card_doc = Path(os.path.relpath(ROOT / "docs" / "card.md", page.parent)).as_posix()
    assert written == PAGE.read_text(encoding="utf-8").replace("](atlas/", f"]({base}/") \
        .replace("(in `atlas/` beside", f"(in `{base}/` beside") \
        .replace("](card.md)", f"]({card_doc})")
    linked = re.findall(r"\]\(([^)#]+)\)", written)
    assert linked and all((page.parent / link).resolve().exists() for link in linked), linked


def test_every_card_of_the_atlas_is_committed_small_with_what_the_page_shows() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for entry in ATLAS:
        folder = PUBLISHED / entry.name
        card = read_card(folder)  # follows the card schema
        assert card["evaluator"]["spec"] == entry.spec
        assert card["budget"]["name"] == entry.budget
        assert card["data"]["source"] == "built-in corpus"
        assert f"## {entry.title}\n" in text and f"(#{slug(entry.title)})" in text
        for figure in card["files"]["figures"]:
            assert (folder / figure).is_file() and f"atlas/{entry.name}/{figure}" in text
        assert {p.name for p in folder.iterdir()} == {"card.json", "figures"}  # no runs
        if entry.note:
            assert entry.note in text
    committed = sum(p.stat().st_size for p in PUBLISHED.rglob("*") if p.is_file())
    assert committed < 3_000_000


def test_only_names_atlas_evaluators() -> None:
    assert [e.name for e in entries(["bleu", "rouge2"])] == ["bleu", "rouge2"]
    with pytest.raises(UnknownNameError, match="Did you mean 'bleu'"):
        entries(["blue"])


def deterministic(card: dict[str, Any]) -> dict[str, Any]:
    """What a card made again must repeat: data, budget, evaluator, gate, findings and every
    method's results (not its timings, paths, backend or creation time)."""
    return {"data": card["data"], "budget": card["budget"],
            "evaluator": {k: v for k, v in card["evaluator"].items() if k != "signature"},
            "gate": card["gate"], "findings": card["findings"],
            "methods": {key: {k: v for k, v in section.items() if k not in ("cost", "backend")}
                        for key, section in card["methods"].items()},
            "figures": card["files"]["figures"]}


@pytest.mark.slow
def test_bleu_s_card_made_again_says_what_the_committed_one_says(tmp_path: Path) -> None:
    (entry,) = entries(["bleu"])
    committed = read_card(PUBLISHED / "bleu")
    result = runner.invoke(app, ["atlas", "--only", "bleu", "--work", str(tmp_path / "work"),
                                 "--published", str(tmp_path / "published"), "--page",
                                 str(tmp_path / "atlas.md"), "--cache-dir",
                                 str(tmp_path / "cache"), "--quiet"])
    assert result.exit_code == 0, result.output
    again = json.loads((tmp_path / "published" / "bleu" / "card.json").read_text("utf-8"))
    assert again["budget"]["name"] == entry.budget
    # a method added since the committed card was made (the bias probes) is not run for BLEU
    added = set(again["methods"]) - set(committed["methods"])
    assert all(again["methods"][key]["status"] == "not run" for key in added)
    for key in added:
        del again["methods"][key]
    assert deterministic(again) == deterministic(committed)
    for figure in committed["files"]["figures"]:  # the same figures, byte for byte
        assert (tmp_path / "published" / "bleu" / figure).read_bytes() == \
            (PUBLISHED / "bleu" / figure).read_bytes()


def _copy_published(to: Path, names: tuple[str, ...] = ("bleu",)) -> Path:
    """Committed cards copied under `to` (the page reads them)."""
    for name in names:
        folder = to / name
        (folder / "figures").mkdir(parents=True)
        for path in (PUBLISHED / name).rglob("*"):
            if path.is_file():
                (folder / path.relative_to(PUBLISHED / name)).write_bytes(path.read_bytes())
    return to


def test_the_page_never_overwrites_a_file_evalstress_did_not_write(tmp_path: Path) -> None:
    published = _copy_published(tmp_path / "published")
    page = tmp_path / "docs" / "atlas.md"
    page.parent.mkdir()
    page.write_text("# My own atlas\n")
    args = ["atlas", "--page-only", "--published", str(published), "--quiet", "--page"]
    result = runner.invoke(app, [*args, str(page)])
    assert result.exit_code == 2, result.output
    assert "atlas.md" in result.output and page.read_text() == "# My own atlas\n"
    assert runner.invoke(app, [*args, str(page), "--force"]).exit_code == 0
    written = page.read_text()
    assert runner.invoke(app, [*args, str(page)]).exit_code == 0  # ours now: rewritten
    assert page.read_text() == written
    card = published / "bleu" / "card.json"
    before = card.read_bytes()
    for target in (card, published / "bleu"):  # the card it reads, the folder it reads
        result = runner.invoke(app, [*args, str(target), "--force"])
        assert result.exit_code == 2, result.output
    assert card.read_bytes() == before


def test_a_page_that_is_a_folder_is_refused_leaving_no_temporary_file(tmp_path: Path) -> None:
    published = _copy_published(tmp_path / "published")
    docs = tmp_path / "docs"
    docs.mkdir()
    result = runner.invoke(app, ["atlas", "--page-only", "--published", str(published),
                                 "--page", str(docs), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "folder" in result.output and ".tmp" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "published"]


def test_published_cards_evalstress_did_not_write_are_refused_before_any_card(
        tmp_path: Path) -> None:
    published = tmp_path / "published"
    (published / "bleu").mkdir(parents=True)
    theirs = published / "bleu" / "card.json"
    theirs.write_text('{"another": "project"}')
    result = runner.invoke(app, ["atlas", "--only", "bleu", "--work", str(tmp_path / "work"),
                                 "--published", str(published), "--page",
                                 str(tmp_path / "atlas.md"), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "card.json" in result.output
    assert theirs.read_text() == '{"another": "project"}'
    assert not (tmp_path / "work").exists()  # refused before any card was made


def test_a_published_card_is_recorded_and_republished_without_force(tmp_path: Path) -> None:
    from evalstress.card.atlas import check_published, publish_card
    from evalstress.engine.outdir import OutDirError

    dest = tmp_path / "published" / "bleu"
    card = read_card(PUBLISHED / "bleu")
    publish_card(card, dest)
    check_published(dest)  # every file there is one evalstress wrote: replaced freely
    publish_card(card, dest)
    (dest / "figures" / "mine.svg").write_text("<svg/>")
    with pytest.raises(OutDirError, match=r"mine\.svg"):
        check_published(dest)


def supported(kind: str, text: str, rows: list[dict[str, Any]], threshold: float) -> None:
    """A discernment finding says no more than its rows: a weak unit could have reached the
    threshold at its n and did not; a minor above major pair is one perturbation, task and
    aspect whose two intervals lie apart."""
    if kind == "weak discernment":
        (unit,) = rows
        assert can_reach(unit, threshold) and unit["d"] < threshold, text
        assert f"allow up to {ceiling(unit):.2f}" in text
    else:
        assert kind == "minor above major", kind
        minor, major = rows
        assert [minor[k] for k in ("task", "perturbation", "aspect")] == \
            [major[k] for k in ("task", "perturbation", "aspect")]
        assert (minor["severity"], major["severity"]) == ("minor", "major")
        assert minor["relative_ci_low"] > major["relative_ci_high"], text
        assert can_reach(minor, threshold) and can_reach(major, threshold)


class NoExample:
    def __call__(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_every_discernment_and_gate_finding_of_the_atlas_says_no_more_than_its_rows() -> None:
    """The finding rules run on every committed card's recorded units (cards made before the
    D ceiling carry their old findings until remade: those are checked through the rules on
    their rows), and each gate verdict follows from its interval."""
    for entry in ATLAS:
        card = read_card(PUBLISHED / entry.name)
        ranking = card["gate"].get("ranking")
        if ranking and ranking.get("ci_low") is not None:
            low, high = ranking["ci_low"], ranking["ci_high"]
            assert ranking["verdict"] == ("pass" if low > 0.5 else "fail" if high < 0.5
                                          else "unclear"), entry.name
            assert low <= ranking["share"] <= high, entry.name
        section = card["methods"]["discernment"]
        if section.get("status") != "run":
            continue
        results = section["results"]
        threshold = float(results.get("threshold") or 1.0)
        for finding in discernment_findings(section, NoExample()):
            supported(finding.kind, finding.text, finding.rows, threshold)
        units = results["units"]
        able = sum(1 for u in units if can_reach(u, threshold))
        line = discernment_summary(units, threshold)
        if able:
            assert f" of {able} units reach" in line, (entry.name, line)
        else:
            assert " of " not in line.split(";")[0], (entry.name, line)
        if "too_few" in results:  # made under the ceiling rule: its own findings hold too
            assert section["summary"] == line
            for found in card["findings"]:
                if found["method"] == "discernment":
                    supported(found["kind"], found["text"], found["rows"], threshold)


def test_the_glance_names_blind_and_reversed_rows_from_their_intervals() -> None:
    from evalstress.card.atlas import outcomes

    rows = [{"perturbation": "a", "outcome": "blind"}, {"perturbation": "b", "outcome": "blind"},
            {"perturbation": "c", "outcome": "reversed"},
            {"perturbation": "d", "outcome": "inconclusive"},
            {"perturbation": "e", "outcome": "detects"}]
    assert outcomes(rows) == "reversed: c; blind: a, b; 1 inconclusive"
    assert outcomes([{"perturbation": "a", "rank_pass": False}]) == "\u2014"  # an older card
    # a row blind at light damage only is not among the blind ones: it is named apart
    rows.append({"perturbation": "f", "outcome": "partly blind", "blind_up_to": "0.1"})
    assert outcomes(rows) == ("reversed: c; blind: a, b; blind at light severities only: f; "
                              "1 inconclusive")


def test_a_work_card_of_another_budget_is_refused_before_any_card(tmp_path: Path) -> None:
    from evalstress.engine.outdir import record_files

    work = tmp_path / "work" / "bleu"
    work.mkdir(parents=True)
    (work / "card.json").write_text(json.dumps({"evaluator": {"spec": "bleu"},
                                                "budget": {"name": "paper"}}))
    record_files(work, ["card.json"], "card", "card")
    result = runner.invoke(app, ["atlas", "--only", "bleu", "--work", str(tmp_path / "work"),
                                 "--published", str(tmp_path / "published"), "--page",
                                 str(tmp_path / "atlas.md"), "--quiet"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"--work {work}: holds a card of other settings (budget paper there, standard " \
        "now)" in said and "add --force" in said
    assert not (work / "runs").exists() and not (tmp_path / "published").exists()


def test_the_side_by_side_comes_four_evaluator_columns_a_table_every_column_once() -> None:
    text = PAGE.read_text(encoding="utf-8")
    side = text[text.index("## Side by side"):text.index("\n## ", text.index("## Side by side")
                                                           + 5)]
    heads = [line.strip("|").split("|")[1:] for line in side.splitlines()
             if line.startswith("| test |")]
    columns = [cell.strip().rstrip("†") for head in heads for cell in head]
    cards = read_atlas(PUBLISHED)
    expected = [f"{entry.name} · {aspect}" if len(card["evaluator"]["aspects"]) > 1
                else entry.name for entry, card in cards for aspect in card["evaluator"]["aspects"]]
    assert columns == expected  # every column once, in the atlas's order
    assert len(heads) >= 3 and all(len(head) <= 4 for head in heads), heads


def test_the_glance_tables_time_says_how_much_the_make_scored_itself() -> None:
    """A card made from a warm score cache takes seconds; the page says so instead of letting
    that time pass for what a cold make costs."""
    cost = {"seconds": 5.0, "methods": {
        "blindspot": {"distinct": 24_968, "scored": 1_000, "calls": 0, "seconds": 0.0,
                      "reused": True, "first_seconds": 60.0},
        "criteria": {"distinct": 500, "scored": 500, "calls": 120, "seconds": 30.0},
        "correlation": {"seconds": 5.0}}}  # a study: no texts of its own counted
    assert work_cell(cost) == "1.6 min: 1,500 of 25,468 texts scored, 120 model calls"
    assert work_cell({"methods": {"blindspot": {"distinct": 10, "scored": 0}}}) \
        == "0 s: 0 of 10 texts scored"
