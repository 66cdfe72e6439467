"""Imports every built-in evaluator module so their decorators register them."""

from evalstress.evaluators import (
    classifier,
    comet,
    distribution,
    embedding,
    external,
    lexical,
    lm,
    seq2seq,
)

__all__ = ["classifier", "comet", "distribution", "embedding", "external", "lexical", "lm",
           "seq2seq"]
