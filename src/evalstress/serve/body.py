"""What llama-cpp-python's server cannot take in a request body, found before it sees one.

The library answers a body that is not JSON, or JSON its request model rejects, with HTTP 500
whose message holds its file path and line; it answers a chat request without `messages` as if
the conversation were empty; and several bodies its model accepts fail inside it: a GBNF grammar
llama.cpp cannot parse or a token id outside the vocabulary crash the whole process (a
segmentation fault), and a `logit_bias` key that is no token id, message content that is not a
string, an empty or multiple completion prompt, or an embeddings request to a model loaded for
generation end in 500. Each is a client's error, answered here with a one-line message naming
the field (`BadRequest`, which the guard sends as HTTP 400).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

#: How many problems of one field a 400 lists before "..."
MAX_LISTED = 4
#: The routes that continue a `prompt`
COMPLETION_ROUTES = ("/v1/completions", "/v1/engines/copilot-codex/completions")
#: The routes whose answer names the model the request asked for (the file path when none)
NAMED_ROUTES = ("/v1/chat/completions", *COMPLETION_ROUTES)


#: A `logit_bias` key when the bias is by token id (not `logit_bias_type: tokens`)
TOKEN_ID = re.compile(r"[0-9]+")


def request_models() -> dict[str, type[BaseModel]]:
    """The request model each POST route of llama-cpp-python's server validates its body with."""
    from llama_cpp.server.types import (
        CreateChatCompletionRequest,
        CreateCompletionRequest,
        CreateEmbeddingRequest,
        DetokenizeInputRequest,
        TokenizeInputRequest,
    )

    return {"/v1/chat/completions": CreateChatCompletionRequest,
            "/v1/completions": CreateCompletionRequest,
            "/v1/engines/copilot-codex/completions": CreateCompletionRequest,
            "/v1/embeddings": CreateEmbeddingRequest,
            "/extras/tokenize": TokenizeInputRequest,
            "/extras/tokenize/count": TokenizeInputRequest,
            "/extras/detokenize": DetokenizeInputRequest}


class BadRequest(Exception):
    """A request body the server cannot use; `field` names the offending field, if one does."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def field_path(data: Any, loc: tuple[int | str, ...]) -> tuple[str, tuple[int | str, ...]]:
    """The path of a pydantic error location in the client's own JSON (`messages[0].role`), and
    the steps left out: the union members pydantic tried, which the client never wrote."""
    path = ""
    skipped: tuple[int | str, ...] = ()
    node = data
    for position, step in enumerate(loc):
        present = (step in node if isinstance(node, dict)
                   else isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node))
        if present:
            node = node[step]
        elif isinstance(node, dict) and position == len(loc) - 1:
            node = None  # the field that is missing
        else:
            skipped += (step,)
            continue
        path += f"[{step}]" if isinstance(step, int) else (f".{step}" if path else str(step))
    return path, skipped


def describe(error: ValidationError, data: Any) -> BadRequest:
    """One line for a rejected body: the first field at fault and what pydantic said of it.

    A union (a chat message is a system, user, assistant, tool or function message) fails once
    per member; the members whose `role` literal did not match are the wrong ones, so when a
    member's literal matched, its own problems are reported (a user message without `content`),
    else the literals allowed (a role that no member has)."""
    issues = [(issue, *field_path(data, tuple(issue["loc"])))
              for issue in error.errors(include_url=False)]
    wrong = {skipped for issue, _, skipped in issues if issue["type"] == "literal_error"}
    matched = [item for item in issues if item[2] not in wrong]
    issues = matched or issues
    where = issues[0][1]
    mine = [issue for issue, path, _ in issues if path == where]
    if all(issue["type"] == "literal_error" for issue in mine):
        allowed = ", ".join(dict.fromkeys(str(issue.get("ctx", {}).get("expected", "?"))
                                          for issue in mine))
        said = f"should be one of {allowed}"
    else:
        said_each = list(dict.fromkeys(str(issue["msg"]) for issue in mine))
        said = "; ".join(said_each[:MAX_LISTED]) + ("; ..." if len(said_each) > MAX_LISTED else "")
    return BadRequest(f"field '{where}': {said}" if where else said, where or None)


@dataclass(frozen=True)
class Served:
    """What the checks know of the served model: its name, the size of its vocabulary, and
    whether llama.cpp parses a grammar for it (each None when not known)."""

    name: str | None = None
    vocab_size: int | None = None
    grammar_parses: Callable[[str], bool] | None = None


def check_body(path: str, body: bytes, model: type[BaseModel], served: Served) -> bytes:
    """The body of a POST to `path` as the route should get it: raises BadRequest when it is not
    something the route can use, and names the served model in a completion request that
    names none (the library would answer with the file's path as its model)."""
    if not body.strip():
        raise BadRequest("the request body is empty; send a JSON object")
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"the request body is not JSON ({exc})") from None
    except RecursionError:
        raise BadRequest("the request body is JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the request body must be a JSON object, not {type(data).__name__}")
    if path == "/v1/chat/completions":
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            told = "is missing" if messages is None else "must be a non-empty list"
            raise BadRequest(f"field 'messages' {told}: send a list of "
                             "{\"role\": ..., \"content\": ...} objects", "messages")
    try:
        model.model_validate(data)
    except ValidationError as exc:
        raise describe(exc, data) from None
    check_use(path, data, served)
    if served.name is not None and path in NAMED_ROUTES and data.get("model") is None:
        return json.dumps({**data, "model": served.name}).encode()
    return body


def check_use(path: str, data: dict[str, Any], served: Served) -> None:
    """Raise BadRequest for a body the request model accepts but the library fails on."""
    where = lone_surrogate(data)
    if where is not None:
        raise BadRequest(f"field '{where}': holds a lone UTF-16 surrogate (\\ud800-\\udfff), "
                         f"which is no text", where)
    if path == "/v1/embeddings":
        raise BadRequest("this server loads the model to generate text: it computes no "
                         "embeddings")
    if path in COMPLETION_ROUTES:
        check_prompt(data.get("prompt", ""))
    if path == "/v1/chat/completions":
        check_messages(data["messages"])
        check_choice(data.get("tool_choice"), data.get("tools"), "tool_choice")
        check_choice(data.get("function_call"), data.get("functions"), "function_call")
    if path in COMPLETION_ROUTES or path == "/v1/chat/completions":
        check_logit_bias(data, served.vocab_size)
    grammar = data.get("grammar")
    if served.grammar_parses is not None and isinstance(grammar, str) \
            and not served.grammar_parses(grammar):
        raise BadRequest("field 'grammar': llama.cpp cannot parse this GBNF grammar (it needs "
                         "a 'root' rule and every rule it names)", "grammar")
    if path == "/extras/detokenize":
        for index, token in enumerate(data.get("tokens") or []):
            if not token_in_range(token, served.vocab_size):
                raise BadRequest(f"field 'tokens[{index}]': {token_ids(served.vocab_size)}",
                                 f"tokens[{index}]")


def check_messages(messages: list[Any]) -> None:
    """Every message has its text as a string (the chat template reads `content` of each)."""
    for index, message in enumerate(messages):
        where = f"messages[{index}].content"
        if isinstance(message, dict) and "content" not in message:
            raise BadRequest(f"field '{where}' is missing", where)
        content = message.get("content") if isinstance(message, dict) else None
        if content is not None and not isinstance(content, str):
            raise BadRequest(f"field '{where}': send the text as a string (this server reads "
                             f"text only)", where)


def check_choice(choice: Any, offered: Any, field: str) -> None:
    """A `tool_choice` or `function_call` that names a function names one the request offers."""
    if not isinstance(choice, dict):
        return
    named = choice.get("function", {}) if field == "tool_choice" else choice
    name = named.get("name") if isinstance(named, dict) else None
    names = set()
    for item in offered if isinstance(offered, list) else []:
        function = item.get("function", item) if isinstance(item, dict) else {}
        names.add(function.get("name") if isinstance(function, dict) else None)
    if name not in names:
        listed = "tools" if field == "tool_choice" else "functions"
        raise BadRequest(f"field '{field}': names a function that '{listed}' does not offer",
                         field)


def lone_surrogate(data: Any) -> str | None:
    """The path of the first string (key or value) that holds a lone surrogate, which JSON can
    carry as `\\ud800` but no text encoding can (walked without recursion: the body may be
    nested deeply)."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, node = stack.pop()
        items: list[tuple[str, Any]] = []
        if isinstance(node, dict):
            for key, value in node.items():
                child = f"{path}.{key}" if path else str(key)
                if not is_text(key):
                    return child
                items.append((child, value))
        elif isinstance(node, list):
            items = [(f"{path}[{index}]", value) for index, value in enumerate(node)]
        elif isinstance(node, str) and not is_text(node):
            return path
        stack.extend(reversed(items))
    return None


def is_text(value: str) -> bool:
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def check_prompt(prompt: Any) -> None:
    """One prompt, not empty: the library asserts both."""
    if isinstance(prompt, list):
        if len(prompt) > 1:
            raise BadRequest(f"field 'prompt': send one prompt per request, not a list of "
                             f"{len(prompt)}", "prompt")
        prompt = prompt[0] if prompt else ""
    if prompt == "":
        raise BadRequest("field 'prompt' is missing or empty: send the text to continue",
                         "prompt")


def check_logit_bias(data: dict[str, Any], vocab_size: int | None) -> None:
    """Keys of a `logit_bias` by token id must be token ids of the vocabulary."""
    bias = data.get("logit_bias")
    if not isinstance(bias, dict) or data.get("logit_bias_type") == "tokens":
        return
    for key in bias:
        if not TOKEN_ID.fullmatch(key) or not token_in_range(int(key), vocab_size):
            raise BadRequest(f"field 'logit_bias': the key '{key[:40]}' is not "
                             f"{token_ids(vocab_size)} (set \"logit_bias_type\": \"tokens\" "
                             f"to bias by text)", "logit_bias")


def token_in_range(token: int, vocab_size: int | None) -> bool:
    return token >= 0 and (vocab_size is None or token < vocab_size)


def token_ids(vocab_size: int | None) -> str:
    """What a token id must be, said as the end of a sentence."""
    return (f"a token id from 0 to {vocab_size - 1}" if vocab_size
            else "a token id, 0 or more")


