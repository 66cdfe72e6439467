"""What a judge's numbers came from, as a card records it: the model asked for and the models
that answered, the endpoint without credentials, digests of the prompt and of the output
contract, and the sampling settings.

- The prompt digest is the sha256 of the messages the judge sends for a placeholder text,
  source and reference, one set per aspect (system turn, instructions, criterion text at its
  level and wording, the user's own template when it has one): any change to what the model
  reads changes it, and nothing of the data does.
- The contract digest is the sha256 of how an answer must look and is read: the form, the
  scale, a user's output contract, the constraint and the grammar or JSON schema sent with it.
- The endpoint is its URL with any user, password, query and fragment removed and what
  remains redacted (`core.redact`); its name in cache keys (`llm.identity`) beside it. An
  in-process model is named by that key (the sha256 of its file).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from evalstress.core.redact import redact
from evalstress.core.version import __version__
from evalstress.evaluators.base import ScoreRequest
from evalstress.evaluators.judge import JudgeEvaluator

#: the placeholder request whose messages the prompt digest hashes
PLACEHOLDER = ScoreRequest("{text}", "{source}", ("{reference}",), "summarization")
#: what the request settings that shape an answer's form are called in a request
CONTRACT_PARAMS = ("grammar", "response_format")


def digest(value: Any) -> str:
    """sha256 of a value written as canonical JSON."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def bare_url(url: str) -> str:
    """An endpoint URL without user, password, query or fragment, redacted."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return redact(urlunsplit((parts.scheme, netloc, parts.path, "", "")))


def prompt_messages(judge: JudgeEvaluator) -> dict[str, Any]:
    """The messages of the placeholder request per aspect (G-Eval's written steps, which the
    judge writes while it scores, are named by their setting instead)."""
    if judge.auto_steps is not None:
        return {"steps": "auto", "aspects": list(judge.aspects), "form": judge.form,
                "level": judge.criteria_level,
                "criteria": {a: judge.criterion_text(a) for a in judge.aspects}}
    return {aspect: judge.messages(PLACEHOLDER, aspect) for aspect in judge.aspects}


def contract_record(judge: JudgeEvaluator) -> dict[str, Any]:
    params = judge.request_params()
    return {"form": judge.form, "scale": list(judge.scale), "constrain": judge.constrain,
            "contract": judge.contract.describe() if judge.contract is not None else None,
            "pair_contract": (judge.pair_contract.describe()
                              if judge.pair_contract is not None else None),
            **{k: params[k] for k in CONTRACT_PARAMS if k in params}}


def sampling_record(judge: JudgeEvaluator) -> dict[str, Any]:
    """The settings that decide how answers are drawn: top_p is null when the judge does not
    send it (the endpoint's own default applies)."""
    params = judge.request_params()
    return {"temperature": judge.temperature, "n": judge.n, "top_p": params.get("top_p"),
            "max_tokens": judge.max_tokens, "logprobs": judge.logprobs,
            "top_logprobs": judge.top_logprobs if judge.logprobs else None,
            "constrain": judge.constrain, "seed": judge.seed, "aggregate": judge.how}


def judge_identity(judge: JudgeEvaluator) -> dict[str, Any]:
    """The judge's identity record; `served` lists the model names its answers gave so far
    (ask it something first)."""
    client = judge.client
    local = client.backend is not None
    urls = [] if local else [bare_url(e.base_url) for e in client.pool.endpoints]
    templates = {name: t.digest for name, t in (("prompt", judge.template),
                                                ("pair_prompt", judge.pair_template))
                 if t is not None}
    return {"model": client.model,
            "served": sorted(client.served_models),
            "base_url": None if local else "|".join(urls),
            "endpoint": client.identity,
            "prompt_sha256": digest(prompt_messages(judge)),
            "templates": templates,
            "contract_sha256": digest(contract_record(judge)),
            "sampling": sampling_record(judge),
            "evalstress": __version__}


def served_by(evaluator: object) -> list[str]:
    """The model names an evaluator's answers gave so far ([] for one that asks no model):
    what a method records so the card's identity can be completed from the answers."""
    client = getattr(evaluator, "client", None)
    return sorted(getattr(client, "served_models", None) or {})
