"""Adversarial search against evaluators (paper 004), its baselines, and paper 002's greedy
attack. See `run.Attacker` for the driver and `evalstress attack --help` for the command."""

from evalstress.attack.base import AttackRecord, AttackSetup, Budget
from evalstress.attack.objective import AttackParams, feedback, succeeded
from evalstress.attack.run import Attacker
from evalstress.attack.scoring import Gold, Victim, gold_evaluator

__all__ = ["AttackParams", "AttackRecord", "AttackSetup", "Attacker", "Budget", "Gold", "Victim",
           "feedback", "gold_evaluator", "succeeded"]
