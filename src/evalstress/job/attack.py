"""An attack study from a built `Attacker` to its run directory: the one path that `evalstress
attack` and the evaluator card share (staging folder, attacks.jsonl, results.json and
report.html, the rename into place, and whose answers are mostly missing)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalstress.analyses.adversarial import AdversarialResult
from evalstress.engine.rundir import fresh_staging
from evalstress.engine.runhealth import MissingShare, attack_missing_shares
from evalstress.report import write_study_outputs
from evalstress.studies.attack.base import AttackRecord
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.setup import check_reachable, close


@dataclass
class AttackStudy:
    """A finished attack: its run directory's files, the ASR result, every search's record and
    the missing answers of the gold, each victim and the generator."""

    paths: dict[str, Path]
    result: AdversarialResult
    records: list[AttackRecord]
    missing: list[MissingShare]


def run_attack_study(attacker: Attacker, out: Path, *, config: Mapping[str, Any],
                     force: bool = False) -> AttackStudy:
    """Run every search of `attacker` into a fresh staging folder of `out` (each finished search
    appended to attacks.jsonl at once), close its models, and write the run directory. The
    caller has checked and locked `out`. An endpoint that cannot answer is a ValueError before
    the staging folder (`check_reachable`); a ValueError from a search ends it, models
    closed."""
    try:
        check_reachable(attacker)
    except ValueError:
        close(attacker)
        raise
    files = fresh_staging(out)
    try:
        records = attacker.run(files.path("attacks.jsonl"))
    finally:
        close(attacker)
    result = attacker.result(records)
    paths = write_study_outputs(
        files, out, config=config, analyses={"adversarial": result},
        counts={"examples": result.info.get("examples"), "attacks": result.info.get("attacks"),
                "successes": len(result.successes)},
        title="evalstress attack", force=force)
    generator = attacker.generator
    missing = attack_missing_shares(records, generator.usage if generator is not None else None)
    return AttackStudy(paths, result, records, missing)
