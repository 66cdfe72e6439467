"""The generation prompt of the search (paper 004, sec. 3.3), in our own words.

It holds the task instruction (what kind of text to write, how long, the goal of beating every
earlier attempt, the answer format), the optional evaluation criteria, the source, and the
trajectory: the best earlier attempts with their feedback scores in ascending order. The same
wording serves both directions, as in the paper's released prompts: the direction lives only in
the scores.

Per task (`TASK_PROMPTS`): what the generator writes, what the source is called, and a length
bound. The summary bounds are those of the paper's released prompts (three sentences and 40
words for a document, two sentences and 30 words for a conversation); the others are ours.
Under the paper protocol (`TASK_PROMPTS_PAPER`) the tasks of the released code ask for what its
PaLM-2 prompts ask: a factually consistent summary of a document, and a dialogue response or a
question with no length bound.
Two tasks read their source in parts:
- `dialogue-response`: the conversation, one turn a line as `Speaker: words`; the prompt names
  who speaks next (the last speaker other than the one who spoke last).
- `question-generation`: the passage, then a last line `Answer: ...` giving the answer the
  question must have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalstress.core.data import Example
from evalstress.studies.attack.trajectory import Candidate

TAG = "text"


@dataclass(frozen=True)
class TaskPrompt:
    """What the generator writes for a task, what the source is called, and how long."""

    kind: str
    source_name: str
    sentences: int | None = None
    words: int | None = None

    def length(self) -> str:
        """The length bound as the prompt states it ('' when the task has none)."""
        if self.sentences == 1 and self.words:
            return f"Keep it to one sentence of at most {self.words} words."
        if self.sentences and self.words:
            return f"Keep it to at most {self.sentences} sentences and {self.words} words."
        if self.words:
            return f"Keep it to at most {self.words} words."
        return ""


TASK_PROMPTS = {
    "summarization": TaskPrompt("a summary of the document", "Document", 3, 40),
    "dialogue": TaskPrompt("a summary of the conversation", "Conversation", 2, 30),
    "dialogue-response": TaskPrompt("the next turn of the conversation, one reply that fits "
                                    "what was said", "Conversation", 2, 30),
    "question-generation": TaskPrompt("a question about the passage that the passage answers, "
                                      "with the given answer as its answer", "Passage", 1, 25),
    "data-to-text": TaskPrompt("a description in prose of every fact in the data, and no "
                               "other fact", "Data", 3, 60),
    "story": TaskPrompt("a continuation of the story", "Story so far"),
    "qa": TaskPrompt("an answer to the question about the passage", "Passage and question"),
    "translation": TaskPrompt("an English translation of the source text", "Source text"),
    "open-ended": TaskPrompt("a text for the task the source describes", "Task"),
}

#: Where the paper protocol asks what the released code's prompts ask, in our words.
TASK_PROMPTS_PAPER = {
    **TASK_PROMPTS,
    "summarization": TaskPrompt("a factually consistent summary of the document", "Document",
                                3, 40),
    "dialogue-response": TaskPrompt("the next turn of the conversation, one reply that fits "
                                    "what was said", "Conversation"),
    "question-generation": TaskPrompt("a question about the passage that the passage answers, "
                                      "with the given answer as its answer", "Passage"),
}

SYSTEM = ("You write texts for a given task and improve them using scores from earlier "
          "attempts. You always answer with the new text between <text> and </text>.")


def _score(value: float) -> str:
    return f"{value:.1f}"


def _speaker(line: str) -> str | None:
    head, sep, rest = line.partition(":")
    if sep and rest.strip() and 0 < len(head.split()) <= 3:
        return head.strip()
    return None


def next_speaker(conversation: str) -> str | None:
    """Who speaks after the last turn: the latest speaker other than the last one, if the
    turns are written `Speaker: words`, one a line."""
    speakers = [s for line in conversation.splitlines() if line.strip()
                if (s := _speaker(line.strip())) is not None]
    if not speakers:
        return None
    return next((s for s in reversed(speakers) if s != speakers[-1]), None)


def split_answer(source: str) -> tuple[str, str | None]:
    """(passage, answer) of a question-generation source whose last line is `Answer: ...`."""
    lines = source.rstrip().splitlines()
    if lines and lines[-1].strip().lower().startswith("answer:"):
        answer = lines[-1].strip()[len("answer:"):].strip()
        return "\n".join(lines[:-1]).strip(), answer or None
    return source.strip(), None


def _source_parts(example: Example, prompt: TaskPrompt) -> list[str]:
    source = example.source.strip()
    if not source:
        return []
    if example.task == "dialogue-response":
        speaker = next_speaker(source)
        turn = (f"The text you write is the next turn, spoken by {speaker}." if speaker else
                "The text you write is the next turn.")
        return [f"{prompt.source_name}:\n{source}", turn]
    if example.task == "question-generation":
        passage, answer = split_answer(source)
        parts = [f"{prompt.source_name}:\n{passage}"]
        if answer:
            parts.append(f"The answer your question must have:\n{answer}")
        return parts
    return [f"{prompt.source_name}:\n{source}"]


def build_messages(example: Example, history: Sequence[Candidate], *,
                   criteria: str | None = None, paper: bool = False) -> list[dict[str, str]]:
    """Chat messages asking for one new candidate; `history` is already the top-k, ascending.
    `paper`: word the task as the released code does (`TASK_PROMPTS_PAPER`)."""
    prompts = TASK_PROMPTS_PAPER if paper else TASK_PROMPTS
    prompt = prompts.get(example.task, prompts["open-ended"])
    parts = [" ".join(filter(None, [f"Your task is to write {prompt.kind}.", prompt.length()]))]
    if criteria:
        parts.append(f"A good text meets these criteria:\n{criteria.strip()}")
    attempts = "\n\n".join(f"Text:\n{c.text}\nScore: {_score(c.feedback)}" for c in history)
    parts.append("Earlier attempts and their scores, from the lowest score to the highest "
                 f"(a higher score is better):\n\n{attempts}")
    parts.extend(_source_parts(example, prompt))
    parts.append(" ".join(filter(None, [
        "Write a new text that differs from every attempt above and would score higher than "
        "all of them.", prompt.length(),
        f"Put the new text between <{TAG}> and </{TAG}> and write nothing else."])))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]
