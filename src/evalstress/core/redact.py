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

Shapes miss keys of a gateway's own format ("TESTSECRET123-gw-0000"), so `redact` also removes
the keys themselves, by value, whatever they look like:

- the values of the key variables: `OPENAI_API_KEY` (read from the environment at redact time,
  so a worker process or an error raised before any client exists is covered) and every
  variable named by `api_key_env=NAME` (registered where a spec names it or a client reads it,
  `register_key_variable`), plus any key value that reaches the code (`register_secret`);
- in every form a server or an exception may give it back: raw, JSON-escaped (`\\/`,
  `\\u00XX`), Python-escaped (`\\xXX`), percent-encoded (`%XX`, `+` for a space),
  HTML-escaped (`&#NN;`), and wrapped over lines (whitespace, or a `\\n` escape, between any two
  of its characters);
- a value shorter than MIN_SECRET_LENGTH characters, or a placeholder that servers without
  authentication accept ("not-needed", "none", "EMPTY", ... see PLACEHOLDERS), is no secret and
  is left alone: replacing it would deface ordinary text.

Encodings cannot hide a key either. A server may give it back base64-encoded ("Invalid
credentials (token QmVhcmVyIHNr...)", often as the whole header value, `b64("Bearer KEY")`),
base64url, hex or reversed. So `redact` also:

- matches each known value's encoded forms by value: its hex (either case), its reverse, and
  its base64 and base64url in each of the three alignments it can have inside an encoded run
  (the characters that encode the key alone, whatever bytes come before or after it), with or
  without padding, percent-encoded or wrapped; the whole run of encoded characters around a
  match is replaced;
- decodes every run of base64/base64url or hex characters (MIN_ENCODED_RUN and longer, read
  from each of its first four characters, so text glued before it does not matter, and an
  encoding inside an encoding up to two deep) and replaces the run when the decoded text holds
  a known value or anything credential-shaped (`Bearer ...`, `sk-...`).

Where a server's text enters the program it is cut down to `server_excerpt`: redacted, one
line, no control characters, at most EXCERPT_CHARS long. A successful answer is checked with
`holds_secret` (by value only: a model may well write "password=..." in a text) before it is
cached or used. A key is read with `read_key`: surrounding whitespace stripped (a Windows
.env leaves a trailing `\\r`), an inner control character refused with the variable's name.

The values are matched by compiled regexes, rebuilt only when the set of values changes.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import threading
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

MARK = "[REDACTED]"

#: The variables evalstress reads a key from when a spec names none (`api_key_env=`).
DEFAULT_KEY_VARIABLES = ("OPENAI_API_KEY", "EVALSTRESS_SERVE_API_KEY")
#: A shorter value is no secret worth the damage of replacing it wherever it occurs.
MIN_SECRET_LENGTH = 6
#: Values servers without authentication accept (compared lowercased): no secret.
PLACEHOLDERS = frozenset({"not-needed", "none", "empty", "null", "dummy", "no-key", "nokey",
                          "placeholder", "changeme", "sk-no-key-required", "your-api-key",
                          "api-key", "apikey", "unused", "unset", "fake-key", "test-key"})

#: Characters of a server's own text a stored reason keeps, after redaction.
EXCERPT_CHARS = 200
#: The shortest run of base64 or hex characters decoded before matching: 16 characters hold
#: 12 bytes; shorter runs are ordinary words and numbers.
MIN_ENCODED_RUN = 16
#: How many encodings inside one another are followed (a key in base64 of hex of base64...).
ENCODING_DEPTH = 2

_lock = threading.Lock()
_variables: set[str] = set(DEFAULT_KEY_VARIABLES)
_values: set[str] = set()
#: the values the patterns were last compiled for, their pattern raw or escaped, and encoded
_pattern_cache: tuple[frozenset[str], re.Pattern[str] | None, re.Pattern[str] | None] = (
    frozenset(), None, None)


def is_secret_value(value: str | None) -> bool:
    """Whether `value` is worth redacting wherever it occurs (see the module's rule)."""
    text = (value or "").strip()
    return len(text) >= MIN_SECRET_LENGTH and text.lower() not in PLACEHOLDERS


def register_secret(value: str | None) -> None:
    """Redact `value` from now on, in every form (a key that reached the code)."""
    if value is not None and is_secret_value(value):
        with _lock:
            _values.add(value.strip())


def register_key_variable(name: str | None) -> None:
    """Redact the value of the environment variable `name`, now and whenever it changes."""
    if not name:
        return
    with _lock:
        _variables.add(str(name))
    register_secret(os.environ.get(str(name)))


def known_secrets() -> frozenset[str]:
    """The values redacted by value: those registered and those of the key variables now."""
    with _lock:
        names, values = list(_variables), set(_values)
    for name in names:
        value = os.environ.get(name)
        if value is not None and is_secret_value(value):
            values.add(value.strip())
    return frozenset(values)


def _hex(code: int, width: int) -> str:
    """`code` in hexadecimal, matching either case of each letter digit."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{code:0{width}x}")


#: The backslashes of an escape: one or more (an escape escaped again doubles them), taken as
#: a whole run that is never given back, so a long run of backslashes costs linear time.
_BACKSLASHES = r"(?<!\\)\\++"


def _escapes(ch: str) -> list[str]:
    """Regexes for the forms one character of a key takes once escaped (JSON, Python, URL,
    HTML)."""
    code = ord(ch)
    if ch == "\\":
        forms = [_BACKSLASHES]  # raw or escaped, a backslash is a run of them
    else:
        forms = [re.escape(ch)]
        if not ch.isalnum():
            forms.append(_BACKSLASHES + re.escape(ch))  # \/ \" (JSON, repr)
    if code <= 0xFFFF:
        forms.append(_BACKSLASHES + "u" + _hex(code, 4))
    else:  # a JSON surrogate pair
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms.append(_BACKSLASHES + "u" + _hex(high, 4) + _BACKSLASHES + "u" + _hex(low, 4))
    if code < 0x100:
        forms.append(_BACKSLASHES + "x" + _hex(code, 2))
    forms.append("".join("%" + _hex(byte, 2) for byte in ch.encode("utf-8")))
    if ch == " ":
        forms.append(r"\+")
    forms.append(f"&#0*{code};")
    forms.append("&#[xX]0*" + _hex(code, 1) + ";")
    named = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}.get(ch)
    if named:
        forms.append(f"&{named};")
    return forms


#: What may lie between two characters of a key wrapped over lines: whitespace, or the escape
#: of a line break inside a JSON or Python string.
_WRAP = r"(?:\s|" + _BACKSLASHES + "[nrt])*"


def _value_pattern(value: str) -> str:
    """A regex matching `value` raw, escaped or encoded (see `_escapes`) and wrapped."""
    return _WRAP.join("(?:" + "|".join(_escapes(ch)) + ")" for ch in value)


def _scan_guard(starts: set[str]) -> str:
    """A lookahead that lets a scan skip every position where no form can start: one of the
    `starts` characters, the first backslash of a run (an escape), `%XX` or an HTML entity.
    With it a 10 kB text scans in a millisecond or two, also one of 10,000 '%' or
    backslashes (without it, one try of every form at every position)."""
    plain = "".join(sorted(re.escape(c) for c in starts))
    return rf"(?=[{plain}]|(?<!\\)\\|%[0-9A-Fa-f]{{2}}|&[#A-Za-z])"


def _patterns() -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """The regexes of every known secret value, raw or escaped and encoded (None when no
    value is known); compiled again only when the set of values changes."""
    global _pattern_cache
    secrets = known_secrets()
    cached_for, raw, encoded = _pattern_cache
    if secrets == cached_for:
        return raw, encoded
    ordered = sorted(secrets, key=lambda v: (-len(v), v))  # a longer value wins an overlap
    raw = encoded = None
    if ordered:
        raw = re.compile(_scan_guard({v[0] for v in ordered}) + "(?:"
                         + "|".join(_value_pattern(v) for v in ordered) + ")")
        encoded = re.compile(_scan_guard({c for v in ordered for c in _encoded_starts(v)})
                             + "(?:" + "|".join(f for v in ordered for f in _encoded_patterns(v))
                             + ")")
    _pattern_cache = (secrets, raw, encoded)
    return raw, encoded


def redact_known(text: str) -> str:
    """`text` with every known secret value (in any of its forms) replaced by [REDACTED]."""
    if not text:
        return text
    raw, _ = _patterns()
    return text if raw is None else raw.sub(MARK, text)


# --- encodings ----------------------------------------------------------------------------------

#: The base64 symbols in any alphabet (standard + /, URL-safe - _) and percent-encoded; a
#: slash may also be JSON-escaped.
_B64_SYMBOLS = {"+": r"(?:\+|-|%2[bB])", "/": r"(?:/|_|" + _BACKSLASHES + r"/|%2[fF])"}
#: The units of an encoded run (base64, base64url, hex, padding), also percent-encoded or
#: JSON-escaped: a match is widened over them in both directions (reversed for the left).
_UNITS_AHEAD = re.compile(r"(?:[A-Za-z0-9+/_=\-]|%2[bBfF]|%3[dD]|\\+/)*")
_UNITS_BEHIND = re.compile(r"(?:[bBfF]2%|[dD]3%|/\\+|[A-Za-z0-9+/_=\-])*")
_RUN = re.compile(r"[A-Za-z0-9+/_\-]{" + str(MIN_ENCODED_RUN) + r",}={0,2}")
_HEX_RUN = re.compile(r"[0-9a-fA-F]+")


def base64_cores(raw: bytes) -> list[str]:
    """The base64 characters that encode `raw` alone, for each of the three alignments it can
    have in an encoded run (0, 1 or 2 bytes before it in its group of three): the characters
    that also carry bits of a neighbouring byte are left out, so each core is found in the
    encoding of any text that holds `raw`."""
    cores = []
    for lead in range(3):
        encoded = base64.b64encode(b"\0" * lead + raw).decode("ascii")
        cores.append(encoded[-(-8 * lead // 6): 8 * (lead + len(raw)) // 6])
    return cores


def _encoded_starts(value: str) -> set[str]:
    """The characters an encoded form of `value` (see `_encoded_patterns`) can start with,
    escapes aside (see `_scan_guard`)."""
    raw = value.encode("utf-8")
    starts = {value[-1]}  # reversed (its escapes: see `_scan_guard`)
    for core in base64_cores(raw):
        starts |= set(core[:1]) | ({"-"} if core[:1] == "+" else set()) | (
            {"_"} if core[:1] == "/" else set())
    digit = raw.hex()[0]
    return starts | {digit, digit.upper()}


def _encoded_patterns(value: str) -> list[str]:
    """Regexes for `value` encoded: base64/base64url in each alignment (wrapped over lines or
    percent-encoded too), hex in either case (bytes optionally separated) and reversed."""
    raw = value.encode("utf-8")
    forms = [_WRAP.join(_B64_SYMBOLS.get(c, c) for c in core) for core in base64_cores(raw)]
    forms.append("[:\\s-]?".join(_hex(byte, 2) for byte in raw))
    forms.append(_value_pattern(value[::-1]))
    return forms


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each of the (possibly overlapping) spans replaced by one MARK."""
    if not spans:
        return text
    out, at = [], 0
    for start, end in sorted(spans):
        if end <= at:
            continue
        out += [text[at:max(at, start)], MARK] if start >= at else []
        at = max(at, end)
    return "".join(out) + text[at:]


def _encoded_known_spans(text: str, pattern: re.Pattern[str] | None) -> list[tuple[int, int]]:
    """Where a known value appears encoded (`pattern`: see `_patterns`), each span widened to
    its whole encoded run (the characters at its edges carry bits of the value too)."""
    if pattern is None:
        return []
    spans = []
    for match in pattern.finditer(text):
        start, end = match.span()
        before = _UNITS_BEHIND.match(text[start - 1::-1] if start else "")
        after = _UNITS_AHEAD.match(text, end)
        spans.append((start - (before.end() if before else 0), after.end() if after else end))
    return spans


def decodings(run: str) -> Iterator[str]:
    """The texts a run of encoded characters may stand for: hex (both nibble alignments) when
    it is hex, and base64 or base64url read from each of its first four characters (text glued
    before the encoded part shifts it); undecodable bytes become U+FFFD."""
    if _HEX_RUN.fullmatch(run):
        for start in (0, 1):
            digits = run[start:len(run) - (len(run) - start) % 2]
            yield bytes.fromhex(digits).decode("utf-8", "replace")
    body = run.rstrip("=").replace("-", "+").replace("_", "/")
    for start in range(4):
        part = body[start:]
        part = part[:len(part) - 1] if len(part) % 4 == 1 else part
        try:
            yield base64.b64decode(part + "=" * (-len(part) % 4)).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            continue


#: the known values' patterns, raw or escaped and encoded (see `_patterns`)
_Patterns = tuple[re.Pattern[str] | None, re.Pattern[str] | None]


def _plain_leak(text: str, shapes: bool, patterns: _Patterns) -> bool:
    """Whether `text` holds a known value (raw, escaped or encoded) or, with `shapes`,
    anything credential-shaped."""
    raw, encoded = patterns
    if (raw is not None and raw.search(text)) or _encoded_known_spans(text, encoded):
        return True
    return shapes and _redact_shapes(text) != text


def _decoded_leak(text: str, shapes: bool, depth: int, patterns: _Patterns) -> bool:
    """Whether a decoded text holds a secret, following the encodings inside it."""
    if _plain_leak(text, shapes, patterns):
        return True
    return depth < ENCODING_DEPTH and any(_decoded_leak(inner, shapes, depth + 1, patterns)
                                          for run in _RUN.findall(text)
                                          for inner in decodings(run))


def _leaking_runs(text: str, shapes: bool, patterns: _Patterns) -> list[tuple[int, int]]:
    """The encoded runs of `text` whose decoding holds a secret."""
    return [match.span() for match in _RUN.finditer(text)
            if any(_decoded_leak(decoded, shapes, 1, patterns)
                   for decoded in decodings(match.group()))]


def holds_secret(text: str) -> bool:
    """Whether `text` holds a known key value, raw, escaped or encoded in any of the ways
    `redact` knows. Shapes do not count: a model's answer may say "password=hunter2"."""
    if len(text or "") < MIN_SECRET_LENGTH:
        return False
    patterns = _patterns()
    return patterns[0] is not None and (
        _plain_leak(text, False, patterns) or bool(_leaking_runs(text, False, patterns)))


def server_excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """What a stored reason keeps of a server's own text: redacted (also in its encodings),
    control characters and line breaks turned into single spaces, at most `limit` characters
    (cut after redacting, so a cut never leaves part of a key)."""
    cleaned = redact(str(text)[:4096])
    flat = " ".join("".join(" " if unicodedata.category(c)[0] == "C" else c
                            for c in cleaned).split())
    return flat if len(flat) <= limit else flat[:max(0, limit - 3)].rstrip() + "..."


def read_key(variable: str) -> str | None:
    """The API key in the environment variable `variable`, or None when it is unset or blank.

    Surrounding whitespace is stripped (a .env file written on Windows leaves a trailing
    carriage return). A control or non-ASCII character inside the key could never go into an
    `Authorization` header: ValueError, naming the variable and the character, not the key."""
    given = os.environ.get(variable)
    key = (given or "").strip()
    if not key:
        return None
    for at, ch in enumerate(key):
        if unicodedata.category(ch)[0] == "C" or not ch.isascii():
            raise ValueError(f"the API key in ${variable} has the character U+{ord(ch):04X} at "
                             f"position {at + 1} of {len(key)}: a key is one line of printable "
                             f"ASCII; fix the variable (the key is not shown)")
    register_secret(key)
    return key


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
    """`text` with every known key value and every credential-looking part replaced by
    [REDACTED]."""
    if not text:
        return text
    patterns = raw, encoded = _patterns()
    out = text if raw is None else raw.sub(MARK, text)
    out = _masked(out, _encoded_known_spans(out, encoded) + _leaking_runs(out, True, patterns))
    return _redact_shapes(out)


def _redact_shapes(text: str) -> str:
    """`text` with every credential-looking part replaced by [REDACTED] (no value needed)."""
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
        if str(key) == "api_key_env":  # the variable this spec reads its key from
            register_key_variable(str(value))
    for key, value in params.items():
        if _SECRET_KEYS.match(str(key)):
            if isinstance(value, str):
                register_secret(value)  # refused, yet it may still be echoed on its way out
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


__all__ = ["DEFAULT_KEY_VARIABLES", "ENCODING_DEPTH", "EXCERPT_CHARS", "MARK",
           "MIN_ENCODED_RUN", "MIN_SECRET_LENGTH", "PLACEHOLDERS", "base64_cores", "check_url",
           "decodings", "holds_secret", "is_secret_value", "known_secrets", "read_key", "redact",
           "redact_known", "redact_value", "refuse_secrets", "register_key_variable",
           "register_secret", "secret_in", "server_excerpt"]
