"""Imports every built-in evaluator module so their decorators register them.

Model-based modules import torch and transformers lazily, inside the evaluators, so listing
evaluators or running lexical metrics never loads them.
"""

from evalstress.evaluators import (
    classifier,
    comet,
    distribution,
    embedding,
    external,
    judge,
    lexical,
    lm,
    moverscore,
    planted,
    prism,
    seq2seq,
)

__all__ = ["classifier", "comet", "distribution", "embedding", "external", "judge", "lexical",
           "lm", "moverscore", "planted", "prism", "seq2seq"]
