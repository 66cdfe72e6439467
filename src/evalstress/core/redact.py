"""Secrets never reach a file: keys are redacted from what we write, and refused where typed.

A server may echo the key it was sent in an error ("Incorrect API key: Bearer sk-..."), and a
user may paste a key into a spec or a URL. Both would end up in results.json, scores.parquet,
attacks.jsonl, reports and logs, which people share. So:

- `redact` replaces anything that looks like a credential (API keys with a known prefix,
  `Bearer ...`, `Authorization: ...`, `api_key=...`-style pairs, secret query parameters and the
  `user:pass@` of a URL) with `[REDACTED]`; error reasons pass through it where they are made
  (the LLM transport and client) and again where they are stored (score rows, results.json);
- `refuse_secrets` rejects a spec that carries one (`judge:api_key=sk-...`, a `base_url` with
  `user:pass@` or `?key=`), saying to use an environment variable (`api_key_env=NAME`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

MARK = "[REDACTED]"

#: Keys with a recognisable shape (OpenAI, Anthropic, Hugging Face, GitHub, Google, AWS, Slack).
_KEY_SHAPES = (
    r"sk-[A-Za-z0-9_\-]{12,}",
    r"hf_[A-Za-z0-9]{20,}",
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"AIza[0-9A-Za-z_\-]{30,}",
    r"AKIA[0-9A-Z]{16}",
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",
)
_KEYS = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(_KEY_SHAPES) + r")")
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)(?!\[REDACTED\])[A-Za-z0-9._~+/=\-]{6,}")
_AUTH_HEADER = re.compile(r"(?i)\b(authorization|x-api-key|api-key)(\"?\s*[:=]\s*\"?)"
                          r"(?!\[REDACTED\])(?:(?:bearer|basic|token)\s+)?[^\s\"',;}]+")
#: name=value pairs (spec values, query strings, JSON) whose name says it is a secret: compound
#: names also with a colon (JSON, headers), the short ones only with "=" (prose uses "key:").
_COMPOUND = (r"api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|"
             r"client[_-]?secret|session[_-]?token|secret[_-]?key|private[_-]?key")
_SHORT = r"secret|password|passwd|pwd|token|key|sig|signature|credentials?"
_SECRET_NAMES = f"{_COMPOUND}|{_SHORT}"
_PAIR = re.compile(r"(?i)(?<![A-Za-z0-9_\-])(" + _COMPOUND + r")(\"?\s*[=:]\s*\"?)"
                   r"(?!\[REDACTED\])([^\s&\"',;}]{4,})")
_SHORT_PAIR = re.compile(r"(?i)(?<![A-Za-z0-9_\-])(" + _SHORT + r")(=)"
                         r"(?!\[REDACTED\])([^\s&\"',;}]{4,})")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@:]+:[^/\s@]*@")


def redact(text: str) -> str:
    """`text` with every credential-looking part replaced by [REDACTED]."""
    if not text:
        return text
    out = _USERINFO.sub(lambda m: f"{m[1]}{MARK}@", text)
    out = _AUTH_HEADER.sub(lambda m: f"{m[1]}{m[2]}{MARK}", out)
    out = _BEARER.sub(lambda m: f"{m[1]}{m[2]}{MARK}", out)
    out = _PAIR.sub(lambda m: f"{m[1]}{m[2]}{MARK}", out)
    out = _SHORT_PAIR.sub(lambda m: f"{m[1]}{m[2]}{MARK}", out)
    return _KEYS.sub(MARK, out)


def redact_value(value: Any) -> Any:
    """`redact` applied to every string inside lists, tuples and mappings (keys kept)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    return value


#: Spec keys that would hold a secret itself (`api_key_env` names a variable: allowed).
_SECRET_KEYS = re.compile(r"(?i)^(?:" + _SECRET_NAMES + r"|authorization|bearer)$")


def secret_in(value: str) -> str | None:
    """What kind of secret `value` carries, or None."""
    text = str(value)
    parts = urlsplit(text) if "://" in text else None
    if parts is not None and (parts.username is not None or parts.password is not None):
        return "a user name or password in the URL (user:pass@)"
    if redact(text) != text:
        return "something that looks like a key or token"
    return None


def refuse_secrets(params: Mapping[str, Any], what: str) -> None:
    """Raise ValueError when a spec carries a secret: it would be stored with the run."""
    advice = ("put the key in an environment variable and name it with api_key_env=NAME "
              "(default OPENAI_API_KEY); specs are written to results.json and reports")
    for key, value in params.items():
        if _SECRET_KEYS.match(str(key)):
            raise ValueError(f"{what}: '{key}=' would put a secret in the spec: {advice}")
        found = secret_in(str(value)) if isinstance(value, str) else None
        if found is not None:
            raise ValueError(f"{what}: the value of '{key}' holds {found}: {advice}")


def check_url(url: str, what: str) -> None:
    """Refuse an endpoint URL that is no http(s) URL (it would only fail after every retry,
    long after the spec was read) or that has credentials in it (user:pass@ or a secret query
    parameter)."""
    for part in str(url).split("|"):
        parsed = urlsplit(part.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"{what}: base_url '{redact(part.strip())}' is not an http(s) URL "
                             "with a host, e.g. http://127.0.0.1:8080/v1 or "
                             "https://api.openai.com/v1")
        found = secret_in(part.strip())
        if found is not None:
            raise ValueError(f"{what}: base_url {redact(part.strip())} holds {found}: put the "
                             "key in an environment variable (api_key_env=NAME, default "
                             "OPENAI_API_KEY) and give the URL without it")


__all__ = ["MARK", "check_url", "redact", "redact_value", "refuse_secrets", "secret_in"]
