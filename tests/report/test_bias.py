"""`evalstress run --suite bias` against a judge persona: results.json, the terminal and
report.html show each probe's effect above its placebo and its verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.personas import persona
from tests.card.conftest import runner


def test_a_run_of_the_bias_suite_reports_the_planted_bias(tmp_path: Path) -> None:
    with FakeServer(responder=persona("sycophancy:0.5"), models=("gpt-4o-mini",)) as server:
        spec = (f"judge:model=gpt-4o-mini,base_url={server.base_url},form=score-only,"
                "backoff=0.01")
        result = runner.invoke(app, ["run", "--suite", "bias", "-e", spec, "--limit", "12",
                                     "--out", str(tmp_path / "run"), "--cache-dir",
                                     str(tmp_path / "cache"), "--workers", "1"])
    assert result.exit_code == 0, result.output
    rows = json.loads((tmp_path / "run" / "results.json").read_text("utf-8"))[
        "analyses"]["bias"]["rows"]
    found = {r["probe"]: r for r in rows}
    assert found["sycophancy"]["outcome"] == "detects"
    assert found["sycophancy"]["effect"] == pytest.approx(0.5)  # the fair rating cancels
    assert all(r["outcome"] == "blind" for name, r in found.items() if name != "sycophancy")
    assert "Bias probes: effect above placebo" in result.output
    assert "biased toward the asker's stated approval" in result.output
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "biased toward the asker&#x27;s stated approval" in page or \
        "biased toward the asker's stated approval" in page
