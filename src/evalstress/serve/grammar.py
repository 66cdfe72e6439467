"""Checks a request's GBNF grammar and token ids before llama-cpp-python's server sees them.

The server hands a request's `grammar` to llama.cpp unchecked; a grammar llama.cpp cannot parse
yields no sampler, and the server then crashes the whole process with a segmentation fault on
the next token. Parsing it here first, against the served file's vocabulary (loaded alone: a few
megabytes, a fraction of a second), turns that into a 400 for the one request. The same
vocabulary gives the range of token ids: one outside it crashes the process too.
"""

from __future__ import annotations

import weakref
from pathlib import Path

ROOT_RULE = b"root"  # the rule llama-cpp-python starts a request's grammar from


class GrammarCheck:
    """Whether llama.cpp can build a sampler from a grammar, for the vocabulary of one GGUF, and
    how many tokens that vocabulary has (`size`)."""

    def __init__(self, gguf: Path) -> None:
        import llama_cpp

        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        model = llama_cpp.llama_model_load_from_file(str(gguf).encode(), params)
        if not model:
            raise ValueError(f"{gguf}: llama.cpp cannot read its vocabulary")
        self._llama = llama_cpp
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self.size = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        weakref.finalize(self, llama_cpp.llama_model_free, model)

    def parses(self, grammar: str) -> bool:
        """True when llama.cpp parses the grammar from its `root` rule (llama.cpp writes its
        reason for a failure to stderr, the server's log)."""
        try:
            text = grammar.encode()
        except UnicodeEncodeError:  # a lone surrogate, which JSON can carry
            return False
        sampler = self._llama.llama_sampler_init_grammar(self._vocab, text, ROOT_RULE)
        if not sampler:
            return False
        self._llama.llama_sampler_free(sampler)
        return True
