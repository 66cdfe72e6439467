"""docs/bias-power.md is what bench/bias_power.py renders from its committed numbers, and a
cell of it measured again agrees."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bias_power", ROOT / "bench" / "bias_power.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_rendered_from_its_numbers() -> None:
    module = bench()
    data = json.loads(module.DATA.read_text(encoding="utf-8"))
    assert module.PAGE.read_text(encoding="utf-8") == module.render(data)
    assert data["strengths"] == list(module.STRENGTHS)
    assert data["examples"] == list(module.EXAMPLES)


def test_a_strong_bias_measured_again_is_found_as_the_page_says() -> None:
    module = bench()
    data = json.loads(module.DATA.read_text(encoding="utf-8"))
    cell = next(c for c in data["cells"] if c["strength"] == 0.5 and c["examples"] == 57)
    assert cell["power"] == 1.0
    from evalstress.analyses.bias import bias_analysis
    from evalstress.card.data import spread_over_tasks
    from evalstress.core.data import builtin_corpus

    texts = module.texts_of(spread_over_tasks(builtin_corpus(), 57))
    for replicate in range(2):
        result = bias_analysis(module.table(texts, 0.5, replicate), seed=replicate)
        row = next(r for r in result.rows if r.probe == "authority")
        assert row.outcome == "detects" and row.low <= 0.5 <= row.high
