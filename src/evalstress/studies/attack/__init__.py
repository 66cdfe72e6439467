"""Adversarial search against evaluators (paper 004), its baselines, and paper 002's greedy
attack. See `run.Attacker` for the driver and `evalstress attack --help` for the command."""

from evalstress.studies.attack.base import AttackRecord, AttackSetup, Budget
from evalstress.studies.attack.objective import AttackParams, feedback, succeeded
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import Gold, Victim, gold_evaluator

__all__ = ["AttackParams", "AttackRecord", "AttackSetup", "Attacker", "Budget", "Gold", "Victim",
           "feedback", "gold_evaluator", "succeeded"]
