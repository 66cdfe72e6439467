"""OpenAI-compatible LLM access: async client, endpoint limits, response cache, accounting."""

from evalstress.llm.accounting import Usage, count_tokens, message_tokens
from evalstress.llm.cache import ResponseCache, explain, key_parts, response_key
from evalstress.llm.client import ChatResponse, LLMClient, LLMError

__all__ = ["ChatResponse", "LLMClient", "LLMError", "ResponseCache", "Usage", "count_tokens",
           "explain", "key_parts", "message_tokens", "response_key"]
