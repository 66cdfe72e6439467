"""Call and token accounting, and the token estimate behind `--dry-run`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evalstress.core.redact import redact


@dataclass
class Usage:
    """What a client spent: network attempts, responses, cache hits, retries, failures, tokens."""

    requests: int = 0  # responses asked for (cached or not)
    cache_hits: int = 0
    calls: int = 0  # HTTP attempts sent
    retries: int = 0
    errors: int = 0  # requests that failed after all attempts
    rate_limited: int = 0  # 429 answers
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_endpoint: dict[str, int] = field(default_factory=dict)
    #: requests that failed after all attempts, by the kind of their last failure
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    #: every attempt that failed, retried or not, by kind (rate-limit, timeout, connection, ...)
    failed_attempts: dict[str, int] = field(default_factory=dict)
    #: answers another run sharing the cache was already fetching: waited for, not paid for
    waited_for_other_run: int = 0
    #: the model names the answers gave (their `model` field; cached answers keep theirs),
    #: with how many answers gave each: what the card's identity completes itself from
    served: dict[str, int] = field(default_factory=dict)

    def add_tokens(self, usage: Mapping[str, Any] | None) -> None:
        if usage:
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)

    def attempt_failed(self, kind: str) -> None:
        self.failed_attempts[kind] = self.failed_attempts.get(kind, 0) + 1

    def request_failed(self, kind: str) -> None:
        self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1

    def merge(self, other: Usage) -> None:
        for name in ("requests", "cache_hits", "calls", "retries", "errors", "rate_limited",
                     "prompt_tokens", "completion_tokens", "waited_for_other_run"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.by_endpoint, other.by_endpoint),
                             (self.errors_by_kind, other.errors_by_kind),
                             (self.failed_attempts, other.failed_attempts),
                             (self.served, other.served)):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@functools.cache
def _tiktoken_counter() -> Callable[[str], int] | None:
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        encoding = tiktoken.get_encoding("cl100k_base")
    except Exception:  # the encoding file may need a download: fall back to the heuristic
        return None
    return lambda text: len(encoding.encode(text))


def count_tokens(text: str) -> int:
    """tiktoken's cl100k count when installed (and its file is local); else ceil(chars / 4).

    Four characters per token is the usual rule of thumb for English with BPE vocabularies; it is
    an estimate for budgeting, never used for scores.
    """
    counter = _tiktoken_counter()
    if counter is not None:
        return counter(text)
    return (len(text) + 3) // 4


def message_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Prompt tokens of a chat: content tokens plus 4 per message for the chat template."""
    return sum(count_tokens(str(m.get("content", ""))) + 4 for m in messages)


def evaluator_usage(evaluators: Iterable[Any]) -> dict[str, Usage]:
    """The live `Usage` of each evaluator that talks to an LLM (judges), by label: read when
    results.json is written, so calls made by analyses after scoring count too."""
    found = {}
    for evaluator in evaluators:
        usage = getattr(evaluator, "usage", None)
        if isinstance(usage, Usage):
            found[str(evaluator.label)] = usage
    return found


def usage_block(usage: Usage) -> dict[str, Any]:
    """results.json's per-evaluator `usage`: calls, cache hits, retries, 429s, errors by kind,
    tokens and calls per endpoint."""

    out = usage.to_json()
    out["by_endpoint"] = {redact(url): n for url, n in usage.by_endpoint.items()}
    return out
