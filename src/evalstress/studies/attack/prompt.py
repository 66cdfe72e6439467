"""The generation prompt of the search (paper 004, sec. 3.3), in our own words.

It holds the task instruction (what kind of text to write, the goal of beating every earlier
attempt, the answer format), the optional evaluation criteria, the source, and the trajectory:
the best earlier attempts with their feedback scores in ascending order. The same wording serves
both directions, as in the paper's released prompts: the direction lives only in the scores.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalstress.core.data import Example
from evalstress.studies.attack.trajectory import Candidate

TAG = "text"

#: What the generator writes, per task, and what the source is called.
KINDS = {
    "summarization": ("a summary of the document", "Document"),
    "dialogue": ("a summary of the conversation", "Conversation"),
    "story": ("a continuation of the story", "Story so far"),
    "qa": ("an answer to the question about the passage", "Passage and question"),
    "translation": ("an English translation of the source text", "Source text"),
    "data-to-text": ("a description in prose of the data", "Data"),
    "open-ended": ("a text for the task the source describes", "Task"),
}

SYSTEM = ("You write texts for a given task and improve them using scores from earlier "
          "attempts. You always answer with the new text between <text> and </text>.")


def _score(value: float) -> str:
    return f"{value:.1f}"


def build_messages(example: Example, history: Sequence[Candidate], *,
                   criteria: str | None = None) -> list[dict[str, str]]:
    """Chat messages asking for one new candidate; `history` is already the top-k, ascending."""
    kind, source_name = KINDS.get(example.task, KINDS["open-ended"])
    parts = [f"Your task is to write {kind}."]
    if criteria:
        parts.append(f"A good text meets these criteria:\n{criteria.strip()}")
    attempts = "\n\n".join(f"Text:\n{c.text}\nScore: {_score(c.feedback)}" for c in history)
    parts.append("Earlier attempts and their scores, from the lowest score to the highest "
                 f"(a higher score is better):\n\n{attempts}")
    if example.source.strip():
        parts.append(f"{source_name}:\n{example.source.strip()}")
    parts.append(f"Write a new text that differs from every attempt above and would score higher "
                 f"than all of them. Put the new text between <{TAG}> and </{TAG}> and write "
                 "nothing else.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]
