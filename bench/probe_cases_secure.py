"""The cases of `probe_reliability.py` on what evalstress publishes and prints (issue 43): an API
key the server echoes encoded (leak-encoded), markup from the data in card.md and the pages
made from cards (markdown), `evalstress serve` (serve, in `probe_cases_serve.py`), and control
characters from the data on the terminal (terminal).

The fake judge server echoes `LEAK_KEY` in the forms of `ENCODED_ECHOES` (model
`echo-HOW`: in a 401 body; `echo200-HOW`: in a 200 answer, which the response cache keeps);
the probe searches every file the command wrote, SQLite caches cell by cell, and the terminal
for the key in any of its forms. Markup is found by rendering each Markdown output with the
library and extensions mkdocs uses (mkdocs.yml) and looking for a tag or attribute that came
from the data (every hostile string carries the word `pwned`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import yaml

from probe_cases import TEXT_A, TEXT_B, Case, CaseEnv, accept, either, error, judge, run
from probe_cases_runs import LEAK_KEY, VARIANTS
from probe_cases_serve import serve_cases

ROOT = Path(__file__).resolve().parent.parent


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


#: how a careless gateway echoes the key it was sent, by name (model echo-NAME, echo200-NAME)
ENCODED_ECHOES: dict[str, Callable[[str], str]] = {
    "plain": lambda k: f"your token {k} is not valid",
    "b64": lambda k: f"Invalid credentials (token {b64(k)})",
    "b64bearer": lambda k: f"Invalid credentials (authorization {b64('Bearer ' + k)})",
    "b64shift1": lambda k: f"rejected: {b64('k' + k)}",
    "b64shift2": lambda k: f"rejected: {b64('k=' + k)}",
    "b64basic": lambda k: f"basic auth failed: {b64('user:' + k)}",
    "b64url": lambda k: "token=" + base64.urlsafe_b64encode(("x:" + k).encode()).decode()
    .rstrip("="),
    "hex": lambda k: f"key fingerprint {k.encode().hex()}",
    "HEX": lambda k: f"KEY {k.encode().hex().upper()}",
    "percent": lambda k: "presented=" + "".join(f"%{b:02X}" for b in k.encode()),
}


# ---- leak-encoded: the key echoed encoded, stored or published -----------------------------------

def leak_cases() -> list[Case]:
    c = "leak-encoded"
    key = {"OPENAI_API_KEY": LEAK_KEY}

    def echoed(how: str, transport: str = "aiohttp") -> Case:
        return accept(c, f"the key echoed in a 401 body as {how} ({transport})",
                      run(evaluators=[judge(f"echo-{how}")]), exits=(3,), secret=LEAK_KEY,
                      env={**key, "EVALSTRESS_LLM_TRANSPORT": transport})

    def whitespace(description: str, value: str, variable: str = "OPENAI_API_KEY",
                   **params: Any) -> Case:
        return either(c, f"a key with {description}", run(evaluators=[judge(**params)]),
                      variable, env={variable: value}, secret=LEAK_KEY,
                      verify=lambda root: None if (root / "out/results.json").exists()
                      else "no results.json")

    return [
        *[echoed(how) for how in ENCODED_ECHOES if how != "plain"],
        *[echoed(how, "openai") for how in ("b64", "b64bearer")],
        # an answer that holds the key is neither cached nor used: its score is missing with
        # that reason, so a judge that echoes the key in every answer ends in exit 3
        *[accept(c, f"the key echoed in a 200 answer ({how}; the response cache)",
                 run(evaluators=[judge(f"echo200-{how}")]), exits=(3,), env=key,
                 secret=LEAK_KEY)
          for how in ("plain", "b64bearer", "hex")],
        whitespace("a trailing \\r\\n (a Windows .env)", LEAK_KEY + "\r\n"),
        whitespace("a trailing \\n", LEAK_KEY + "\n"),
        whitespace("spaces around it", f"  {LEAK_KEY} "),
        whitespace("a trailing \\r\\n in api_key_env", LEAK_KEY + "\r\n", "MY_KEY",
                   api_key_env="MY_KEY"),
        either(c, "a card of a judge whose 401 echoes b64('Bearer KEY')",
               ("card", judge("echo-b64bearer"), "--budget", "small", "--workers", "1",
                "--quiet", "--out", "card"), "401", "key", "credential", "unauthori",
               exits=(3,), env=key, secret=LEAK_KEY, timeout=300.0),
    ]


# ---- markdown: markup from the data in what evalstress publishes -----------------------------------

#: strings of markup a text, an id or a label of the data may hold
HOSTILE = ("<script>pwned()</script>", "<svg onload=pwned()>", "<img src=x onerror=pwned()>",
           "</summary></details><iframe src=pwned></iframe>", "[click](javascript:pwned())",
           '<a href="javascript:pwned()">x</a>')
HOSTILE_LABEL = "<img src=x onerror=pwned()>"


#: attributes whose value a browser loads or runs (a title or alt text is only shown)
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data", "srcdoc"}


class _Tags(HTMLParser):
    """What an HTML page holds that came from the data: an element or attribute carrying
    `pwned`, and closing details/summary tags beyond those opened."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.opened = {"details": 0, "summary": 0}
        self.closed = {"details": 0, "summary": 0}
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        if tag in self.opened:
            self.opened[tag] += 1
        for name, value in attrs:
            # a same-page fragment (`#slug`, the heading anchors mkdocs' toc writes from the
            # heading's text) neither loads nor runs anything
            fragment = name in URL_ATTRIBUTES and (value or "").startswith("#")
            active = name.startswith("on") or (name in URL_ATTRIBUTES and not fragment)
            if "pwned" in name or (active and "pwned" in (value or "")):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False
        if tag in self.closed:
            self.closed[tag] += 1

    def handle_data(self, data: str) -> None:
        if self._in_script and "pwned" in data:
            self.found.append(f"<script>{data.strip()[:40]}</script>")


def html_problem(html: str, where: str) -> str | None:
    """The tags from the data in an HTML page, as a problem line, or None."""
    tags = _Tags()
    tags.feed(html)
    tags.close()
    found = list(dict.fromkeys(tags.found))
    found += [f"{tags.closed[t] - tags.opened[t]} extra </{t}>" for t in tags.opened
              if tags.closed[t] > tags.opened[t]]
    return f"{where} carries markup from the data: {', '.join(found[:4])}" if found else None


def rendered(text: str) -> str:
    """Markdown as mkdocs renders it: Python-Markdown with mkdocs.yml's extensions (snippets
    left out: it includes files, which is the site's business, not the text's)."""
    import markdown

    names: list[str] = []
    configs: dict[str, Any] = {}
    for item in yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))[
            "markdown_extensions"]:
        name, config = next(iter(item.items())) if isinstance(item, dict) else (item, None)
        if name == "pymdownx.snippets":
            continue
        names.append(name)
        if config:
            configs[name] = config
    return markdown.markdown(text, extensions=names, extension_configs=configs)


def markup_free(*markdown_files: str, html_files: tuple[str, ...] = ()) -> Callable[
        [Path], str | None]:
    """A verify: no tag from the data in these Markdown files (rendered) and HTML pages."""

    def check(root: Path) -> str | None:
        for name in markdown_files:
            problem = html_problem(rendered((root / name).read_text(encoding="utf-8")),
                                   f"{name} (rendered)")
            if problem:
                return problem
        for name in html_files:
            problem = html_problem((root / name).read_text(encoding="utf-8"), name)
            if problem:
                return problem
        return None

    return check


def hostile_rows() -> list[dict[str, Any]]:
    """Eight rows over four tasks whose texts, references, sources and ids carry markup."""
    texts = [TEXT_A, TEXT_B]
    tasks = ["summarization", "dialogue", "story", "qa"]
    return [{"id": f"r{i}{HOSTILE[i % len(HOSTILE)]}", "task": tasks[i % 4],
             "hypothesis": f"{HOSTILE[i % len(HOSTILE)]} {texts[i % 2]} "
                           f"{HOSTILE[(i + 1) % len(HOSTILE)]} {texts[(i + 1) % 2]}",
             "references": [f"{texts[i % 2][:60]} {HOSTILE[(i + 2) % len(HOSTILE)]}"],
             "source": f"Notes {HOSTILE[(i + 3) % len(HOSTILE)]}"} for i in range(8)]


def hostile_card(card: dict[str, Any], strings: tuple[str, ...], label: str) -> dict[str, Any]:
    """A card whose every text that is not evalstress's own (labels, the data's source, task
    names, findings' texts and examples, the gate's reasons) carries `strings`."""
    card = json.loads(json.dumps(card))
    evaluator = card["evaluator"]
    evaluator["label"] = label
    evaluator["short_signature"] += strings[0]
    evaluator["spec"] = f"bleu:name={label}"
    card["data"]["source"] = f"data{strings[1 % len(strings)]}.jsonl"
    card["data"]["tasks"] = {f"{task}{strings[2 % len(strings)]}": n
                             for task, n in card["data"]["tasks"].items()}
    card["gate"]["reasons"] = [*card["gate"].get("reasons", []), f"note {strings[-1]}"]
    for i, finding in enumerate(card["findings"]):
        finding["text"] += " " + strings[i % len(strings)]
        example = finding.get("example")
        if example:
            example["example_id"] = f"ex{strings[(i + 1) % len(strings)]}"
            example["original"] = f"{strings[(i + 2) % len(strings)]} {example['original']}"
            example["variant"] = f"{example['variant']} {strings[(i + 3) % len(strings)]}"
    return card


def write_hostile_card(relative: str, strings: tuple[str, ...] = HOSTILE,
                       label: str = HOSTILE_LABEL) -> Callable[[CaseEnv], None]:
    """A setup: the base card's card.json made hostile, at `relative` (a card.json path)."""

    def setup(env: CaseEnv) -> None:
        card = json.loads((env.base("card") / "card.json").read_text(encoding="utf-8"))
        env.write(relative, json.dumps(hostile_card(card, strings, label), indent=1),
                  protect=False)

    return setup


def markdown_cases() -> list[Case]:
    m = "markdown"
    card = ("card", "--budget", "small", "--workers", "1", "--quiet", "--out", "card")
    return [
        accept(m, "card.md and card.html of data whose texts, ids and sources hold markup",
               (*card[:1], "bleu", *card[1:], "--data", "data.jsonl"),
               files={"data.jsonl": hostile_rows()},
               verify=markup_free("card/card.md", html_files=("card/card.html",))),
        either(m, "card.md of an evaluator named <img onerror> (bleu:name=...)",
               (*card[:1], f"bleu:name={HOSTILE_LABEL}", *card[1:]), "name",
               verify=markup_free("card/card.md", html_files=("card/card.html",))),
        accept(m, "card-compare --md of a card whose texts hold markup",
               ("compare", "hostile/card.json", "--md", "cmp.md"),
               setup=write_hostile_card("hostile/card.json"), verify=markup_free("cmp.md")),
        accept(m, "card-compare --html of a card whose texts hold markup",
               ("compare", "hostile/card.json", "--out", "cmp.html"),
               setup=write_hostile_card("hostile/card.json"),
               verify=markup_free(html_files=("cmp.html",))),
        accept(m, "atlas --page-only from a published card whose texts hold markup",
               ("atlas", "--page-only", "--published", "pub", "--page", "page.md"),
               setup=write_hostile_card("pub/bleu/card.json"), verify=markup_free("page.md")),
        accept(m, "card-compare of two cards, one labelled with a markdown link",
               ("compare", "hostile/card.json", "other/card.json", "--md", "cmp.md"),
               setup=lambda env: (write_hostile_card("hostile/card.json")(env),
                                  write_hostile_card("other/card.json", HOSTILE[3:],
                                                     "[x](javascript:pwned())")(env)),
               verify=markup_free("cmp.md")),
    ]


# ---- terminal: control characters from the data --------------------------------------------------

#: a terminal title change, a bell and a screen wipe
CONTROL = "\x1b]0;pwned\x07\x1b[2J"
#: what must not reach the terminal raw: the escape character (the sequences' start)
RAW = ("\x1b", "\x9b")


def terminal_cases() -> list[Case]:
    t = "terminal"
    loud = run(quiet=False)
    long_row = {"id": f"long{CONTROL}", "hypothesis": "word " * 40_000,
                "references": ["A reference."]}
    good = [{"id": "a", "hypothesis": TEXT_A, "references": ["The council passed it."]},
            {"id": "b", "hypothesis": TEXT_B, "references": ["A bakery won."]}]
    return [
        error(t, "a duplicate id holding escape sequences", loud, "duplicate", raw=RAW,
              files={"data.jsonl": [{**good[0], "id": f"x{CONTROL}"},
                                    {**good[1], "id": f"x{CONTROL}"}]}),
        error(t, "a task value holding escape sequences", loud, "task", raw=RAW,
              files={"data.jsonl": [{**good[0], "task": f"sum{CONTROL}"}, good[1]]}),
        accept(t, "an over-long row whose id holds escape sequences (the skip warning)", loud,
               raw=RAW, files={"data.jsonl": [*good, long_row]}),
        error(t, "a variant for an id the data lacks, holding escape sequences",
              run("--variants", "variants.jsonl", quiet=False), "example_id", "pwned", raw=RAW,
              files={"variants.jsonl": [{**VARIANTS[0], "example_id": f"z{CONTROL}"}]}),
        error(t, "a field name of --map holding escape sequences",
              run("-m", f"hypothesis=col{CONTROL}", quiet=False), "hypothesis", "col",
              raw=RAW),
        accept(t, "card-compare printing a card labelled with escape sequences",
               ("compare", "hostile/card.json"), raw=RAW,
               setup=write_hostile_card("hostile/card.json", (CONTROL,), f"bleu{CONTROL}")),
        accept(t, "atlas --page-only naming a card labelled with escape sequences",
               ("atlas", "--page-only", "--published", "pub", "--page", "page.md"), raw=RAW,
               setup=write_hostile_card("pub/bleu/card.json", (CONTROL,), f"b{CONTROL}")),
        error(t, "a data file whose broken line holds escape sequences", loud, "line 2",
              raw=RAW, files={"data.jsonl": json.dumps(good[0]) + f"\n{{{CONTROL}\n"}),
    ]


def secure_cases() -> list[Case]:
    return [*leak_cases(), *markdown_cases(), *serve_cases(), *terminal_cases()]
