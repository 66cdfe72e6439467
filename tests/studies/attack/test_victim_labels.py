"""Victims keep labels apart: two judges that share a model but not an endpoint are two victims,
while one evaluator attacked on two aspects keeps one label (the aspect tells them apart)."""

from __future__ import annotations

from evalstress.evaluators.base import create_evaluator
from evalstress.studies.attack.setup import distinct_victims


def test_victims_of_different_specs_get_different_labels() -> None:
    specs = ["judge:model=m,base_url=http://a:1/v1", "judge:model=m,base_url=http://b:1/v1",
             "judge:model=m,base_url=http://a:1/v1", "rouge", "rouge"]
    evaluators = [create_evaluator(spec) for spec in specs]
    distinct_victims(evaluators)
    assert [e.label for e in evaluators] == [
        "judge(m, base_url=http://a:1/v1)", "judge(m, base_url=http://b:1/v1)",
        "judge(m, base_url=http://a:1/v1)", "rouge", "rouge"]
