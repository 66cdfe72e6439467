"""The cases of `probe_reliability.py` on which files evalstress may touch and when it says no
(issue 43): symbolic links where it writes (symlink), files of the user's inside or beside
what it writes (ownership), what can be checked before any work (upfront), JSON and YAML
nested too deep to parse (json-depth), and small slips (small).

Every link points into `victim/`, whose files are protected: a write through a link changes
a protected file, which is data loss. Where evalstress may either refuse or go on without
touching the user's file, the case is `either`: a refusal must name the file, a run must leave
the file as it was (and its own outputs whole).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from probe_cases import (
    GOOD,
    TEXT_A,
    TEXT_B,
    Case,
    CaseEnv,
    accept,
    either,
    error,
    examples_are,
    judge,
    run,
)
from probe_cases_runs import VARIANTS

#: the user's files a link points to
VICTIMS = {"victim/victim.conf": "port = 22\n", "victim/dir/keep.txt": "the user's file\n"}
SMALL_CARD = ("--budget", "small", "--workers", "1", "--quiet")


def card(spec: str = "bleu", *extra: str, out: str = "card") -> tuple[str, ...]:
    """`evalstress card SPEC` with the small budget, one process, quiet, into `out`."""
    return ("card", spec, *SMALL_CARD, "--out", out, *extra)


def linked(*links: tuple[str, str], then: Callable[[CaseEnv], Any] | None = None) -> Callable[
        [CaseEnv], None]:
    """A setup: `then` first (a finished run, a card), then each (link, target) made."""

    def setup(env: CaseEnv) -> None:
        if then is not None:
            then(env)
        for link, target in links:
            env.link(link, target)

    return setup


def base_card_json(relative: str, *, protect: bool = False) -> Callable[[CaseEnv], None]:
    """A setup: the base card's card.json copied to `relative`."""

    def setup(env: CaseEnv) -> None:
        env.write(relative, (env.base("card") / "card.json").read_text(encoding="utf-8"),
                  protect=protect)

    return setup


def exists(*paths: str) -> Callable[[Path], str | None]:
    """A verify: these outputs are there."""

    def check(root: Path) -> str | None:
        missing = [p for p in paths if not (root / p).exists()]
        return f"no {', '.join(missing)}" if missing else None

    return check


def both(*checks: Callable[[Path], str | None]) -> Callable[[Path], str | None]:
    def check(root: Path) -> str | None:
        return next((p for p in (c(root) for c in checks) if p), None)

    return check


# ---- symlink: links where evalstress writes --------------------------------------------------------

def symlink_cases() -> list[Case]:
    s = "symlink"
    conf, folder = "victim/victim.conf", "victim/dir"

    def through(description: str, argv: tuple[str, ...], link: str, target: str, *says: str,
                then: Callable[[CaseEnv], Any] | None = None, users: bool = False,
                **more: Any) -> Case:
        """A link at `link` to `target`; `users`: the link is the user's own item (in a
        folder evalstress replaces), protected itself as well."""
        made = linked((link, target), then=then)

        def setup(env: CaseEnv) -> None:
            made(env)
            if users:
                env.keep(link)

        return either(s, description, argv, *(says or (Path(link).name,)),
                      files={**VICTIMS, **more.pop("files", {})}, setup=setup, **more)

    a_run = lambda env: env.run_dir("run")  # noqa: E731
    an_out = lambda env: env.run_dir("out", protect=False)  # noqa: E731
    a_card = base_card_json("card/card.json")
    published = base_card_json("pub/bleu/card.json")
    page = ("atlas", "--page-only", "--published", "pub", "--page", "page.md")
    return [
        through("run: .out.lock is a link to the user's file", run(), ".out.lock", conf,
                verify=examples_are(2)),
        through("card: .card.lock is a link to the user's file", card(), ".card.lock", conf,
                verify=exists("card/card.md"), timeout=300.0),
        through("run: .out.partial is a link to the user's folder", run(), ".out.partial",
                folder, verify=examples_are(2)),
        through("run over a finished run: .out.old is a link to the user's folder", run(),
                ".out.old", folder, then=an_out, verify=examples_are(2)),
        through("run over a finished run holding the user's link to a file", run(),
                "out/my-config.conf", conf, then=an_out, users=True, verify=examples_are(2)),
        through("report: the run's report.html is a link to the user's file",
                ("report", "run"), "run/report.html", conf, then=a_run,
                verify=exists("run/report.html")),
        through("report --out onto a link", ("report", "run", "--out", "r.html"), "r.html",
                conf, then=a_run),
        through("compare --out onto a link", ("compare", "run", "run", "--out", "c.html"),
                "c.html", conf, then=a_run),
        through("export --variants onto a link", ("export", "run", "--variants", "v.jsonl"),
                "v.jsonl", conf, then=a_run),
        through("check --junit onto a link", ("check", "run", "--junit", "j.xml"), "j.xml",
                conf, then=a_run, exits=(0, 1)),
        through("card-compare --md onto a link", ("compare", "card", "--md", "cmp.md"),
                "cmp.md", conf, then=a_card),
        through("card-compare --html onto a link",
                ("compare", "card", "--out", "cmp.html"), "cmp.html", conf, then=a_card),
        through("card-compare --md: its temporary .cmp.md.tmp is a link",
                ("compare", "card", "--md", "cmp.md"), ".cmp.md.tmp", conf, "cmp.md",
                then=a_card),
        through("atlas --page-only --page onto a link", page, "page.md", conf,
                then=published),
        through("atlas --page-only: its temporary .page.md.tmp is a link", page,
                ".page.md.tmp", conf, "page.md", then=published),
        through("card --out a link to a folder of the user's files, --force",
                card("bleu", "--force", out="card-link"), "card-link", folder,
                timeout=300.0),
        through("run --out a link to a folder of the user's files, --force",
                run("--force", out="out-link"), "out-link", folder),
    ]


# ---- ownership: the user's files inside and beside what evalstress writes ----------------------------

def ownership_cases() -> list[Case]:
    o = "ownership"
    mine = "the user's notes\n"

    def added(files: dict[str, str], folder: Callable[[CaseEnv], Any]) -> Callable[
            [CaseEnv], None]:
        """A setup: `folder` (a finished run or card), then the user's `files` in it."""

        def setup(env: CaseEnv) -> None:
            folder(env)
            for relative, text in files.items():
                env.write(relative, text)

        return setup

    def rerun(description: str, files: dict[str, str], *says: str) -> Case:
        """A run over a finished run at out/ to which the user added `files`."""
        return either(o, description, run(), *says, verify=examples_are(2),
                      setup=added(files, lambda env: env.run_dir("out", protect=False)))

    def forged(description: str, marker: str) -> Case:
        return either(o, description, run(), "precious.txt",
                      files={"out/.evalstress-run": marker, "out/precious.txt": "keep me\n"},
                      unprotected=("out/.evalstress-run",), verify=examples_are(2))

    docs_card = base_card_json("docs/atlas/bleu/card.json", protect=True)
    return [
        rerun("a file the user added to a run directory, on rerun", {"out/notes.txt": mine},
              "notes.txt"),
        rerun("a folder the user added to a run directory, on rerun",
              {"out/analysis/plot.ipynb": "{}\n", "out/analysis/notes.md": mine}, "analysis"),
        rerun("a hidden file the user added to a run directory (.notes)",
              {"out/.notes": mine}, ".notes"),
        forged("a forged empty .evalstress-run in a folder of the user's files", ""),
        forged("a forged .evalstress-run of JSON in a folder of the user's files",
               json.dumps({"evalstress": "0.9.0", "command": "run"}) + "\n"),
        either(o, "a forged results.json naming evalstress in a folder of the user's files",
               run(), "precious.txt", files={"out/results.json": '{"evalstress": "0.9.0"}\n',
                                             "out/precious.txt": "keep me\n"},
               unprotected=("out/results.json",), verify=examples_are(2)),
        either(o, "run --out over a card folder", run(out="mycard"), "mycard", "card",
               setup=lambda env: env.card_dir("mycard"), verify=examples_are(2, out="mycard")),
        error(o, "card --out over a run directory", card(out="out"), "out", "run",
              setup=lambda env: env.run_dir("out")),
        either(o, "a card rerun over a card folder holding the user's notes", card(),
               "notes.txt", verify=exists("card/card.md"), timeout=300.0,
               setup=added({"card/notes.txt": mine},
                           lambda env: env.card_dir("card", protect=False))),
        either(o, "a card rerun: the user's file inside a method's run directory", card(),
               "notes.txt", verify=exists("card/card.md"), timeout=300.0,
               setup=added({"card/runs/blindspot/notes.txt": mine},
                           lambda env: env.card_dir("card", protect=False))),
        either(o, "atlas --page-only over a docs/atlas.md the user wrote",
               ("atlas", "--page-only"), "atlas.md",
               files={"docs/atlas.md": "# Our own atlas\n\nWritten by hand.\n"},
               setup=docs_card, verify=exists("docs/atlas.md")),
        either(o, "atlas --only bleu over a docs/atlas/bleu/card.json of another project",
               ("atlas", "--only", "bleu", "--quiet"), "card.json", "docs/atlas",
               files={"docs/atlas/bleu/card.json": '{"ours": "not evalstress"}\n'},
               verify=exists("docs/atlas.md"), timeout=400.0),
        error(o, "atlas --page-only --page onto the card.json it reads",
              ("atlas", "--page-only", "--page", "docs/atlas/bleu/card.json"), "card.json",
              setup=docs_card),
        error(o, "card-compare --md onto an input card.json",
              ("compare", "card", "other/card.json", "--md", "other/card.json"),
              "card.json", setup=lambda env: (env.card_dir("card"),
                                              base_card_json("other/card.json",
                                                             protect=True)(env))),
        error(o, "card-compare --md onto the card.md of an input card",
              ("compare", "card", "--md", "card/card.md"), "card.md",
              setup=lambda env: env.card_dir("card")),
        either(o, "a folder .out.old of the user's files beside --out", run(), ".out.old",
               files={".out.old/mine.txt": mine},
               setup=lambda env: env.run_dir("out", protect=False),
               verify=examples_are(2)),
        either(o, "a folder .out.partial of the user's files (no manifest)", run(),
               ".out.partial", files={".out.partial/mine.txt": mine}, verify=examples_are(2)),
        error(o, "run --force --no-cache --out onto the cache folder",
              run("--force", "--no-cache", out="cache"), "cache"),
    ]


# ---- upfront: what can be checked before any work ---------------------------------------------------

NO_KEY = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE")


def refs(value: Any) -> list[dict[str, Any]]:
    """GOOD with every row's references set to `value` (None: the field left out)."""
    return [{k: v for k, v in {**r, "references": value}.items() if v is not None}
            for r in GOOD]


def card_rows(extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Four rows for a card over two tasks, and `extra` as a fifth."""
    rows = [{"id": f"c{i}", "task": ("summarization", "story")[i % 2],
             "hypothesis": (TEXT_A, TEXT_B)[i % 2] + f" Item {i}.",
             "references": [("The council passed the budget.", "A bakery won a prize.")[i % 2]]}
            for i in range(4)]
    return rows + ([extra] if extra else [])


#: words of a data line that tells of a row left out
SKIP_WORDS = ("skip", "max-chars", "max_chars", "left out", "too long", "excluded", "over ")


def data_line_counts_skips(root: Path) -> str | None:
    """card.md's data line says a row was skipped (not "N of N examples" as if all ran)."""
    text = (root / "card/card.md").read_text(encoding="utf-8")
    line = next((li for li in text.splitlines() if li.startswith("| data |")), "")
    return None if any(w in line.lower() for w in SKIP_WORDS) else \
        f"card.md's data line says nothing of the skipped row: {line[:160]!r}"


def upfront_cases() -> list[Case]:
    u = "upfront"
    huge = {"id": "huge", "task": "summarization", "hypothesis": "word " * 10_000_000,
            "references": ["A reference."]}
    long = {**huge, "hypothesis": "word " * 2_000}
    return [
        error(u, "card of judge:model=gpt-4o-mini with no key and no network",
              card("judge:model=gpt-4o-mini,form=score-only"), "OPENAI_API_KEY",
              unset=NO_KEY, timeout=400.0),
        error(u, "run of judge:model=gpt-4o-mini with no key and no network",
              run(evaluators=["judge:model=gpt-4o-mini,form=score-only"]), "OPENAI_API_KEY",
              unset=NO_KEY),
        error(u, "card of a judge at a port nobody listens on",
              card("judge:model=m,base_url=http://127.0.0.1:9/v1,max_attempts=1,"
                   "form=score-only,timeout=2"), "127.0.0.1:9", "connect", timeout=400.0),
        either(u, "card of a judge whose server answers 401 to every request",
               card(judge("deny-401")), "401", "key", "unauthori", exits=(3,),
               max_calls=("deny-401", 50), timeout=400.0),
        error(u, "run of BLEU on rows whose references are all []", run(), "references",
              files={"data.jsonl": refs([])}),
        error(u, "run of BLEU on rows whose references are all ['']", run(), "references",
              files={"data.jsonl": refs([""])}),
        error(u, "run of BLEU on rows without references", run(), "references",
              files={"data.jsonl": refs(None)}),
        error(u, "card of BLEU on rows whose references are all empty",
              card("bleu", "--data", "data.jsonl"), "references",
              files={"data.jsonl": [{**r, "references": []} for r in card_rows()]},
              timeout=300.0),
        either(u, "a file .out.old beside --out", run(), ".out.old",
               files={".out.old": "the user's file\n"},
               setup=lambda env: env.run_dir("out", protect=False),
               verify=examples_are(2)),
        either(u, "a file .out.partial beside --out", run(), ".out.partial",
               files={".out.partial": "the user's file\n"}, verify=examples_are(2)),
        either(u, "a folder at .out.lock", run(), ".out.lock",
               files={".out.lock/mine.txt": "the user's file\n"}, verify=examples_are(2)),
        either(u, "card of data with a 50 MB row (skipped, and said so)",
               card("bleu", "--data", "data.jsonl"), "max-chars", "max_chars", "huge",
               files={"data.jsonl": card_rows(huge)}, verify=data_line_counts_skips,
               memory_guard=True, timeout=400.0),
        accept(u, "card --max-chars 1000 over a 10,000-character row",
               card("bleu", "--data", "data.jsonl", "--max-chars", "1000"),
               files={"data.jsonl": card_rows(long)}, verify=data_line_counts_skips,
               timeout=300.0),
    ]


# ---- json-depth: JSON and YAML nested 100,000 deep --------------------------------------------------

DEPTH = 100_000
DEEP_JSON = '{"a": ' * DEPTH + "1" + "}" * DEPTH
DEEP_YAML = "[" * DEPTH + "]" * DEPTH


def deep(relative: str, then: Callable[[CaseEnv], Any] | None = None) -> Callable[
        [CaseEnv], None]:
    """A setup: `then`, then the file at `relative` replaced by JSON nested DEPTH deep."""

    def setup(env: CaseEnv) -> None:
        if then is not None:
            then(env)
        env.write(relative, DEEP_JSON, protect=False)

    return setup


def depth_cases() -> list[Case]:
    j = "json-depth"
    a_run = lambda env: env.run_dir(protect=False)  # noqa: E731

    def deep_error(description: str, argv: tuple[str, ...], *says: str, **more: Any) -> Case:
        return error(j, description, argv, *says, memory_guard=True, **more)

    return [
        deep_error("card-compare of a card.json nested 100,000 deep",
                   ("compare", "deep/card.json"), "card.json",
                   setup=deep("deep/card.json")),
        deep_error("report of a results.json nested 100,000 deep", ("report", "run"),
                   "results.json", setup=deep("run/results.json", a_run)),
        deep_error("check of a results.json nested 100,000 deep", ("check", "run"),
                   "results.json", setup=deep("run/results.json", a_run)),
        deep_error("compare of a results.json nested 100,000 deep", ("compare", "run", "run"),
                   "results.json", setup=deep("run/results.json", a_run)),
        either(j, "export of a run whose results.json is nested 100,000 deep",
               ("export", "run", "--variants", "v.jsonl"), "results.json", memory_guard=True,
               setup=deep("run/results.json", a_run), verify=exists("v.jsonl")),
        deep_error("cache explain of a request nested 100,000 deep",
                   ("cache", "explain", "req.json"), "req.json", setup=deep("req.json")),
        deep_error("atlas --page-only from a published card.json nested 100,000 deep",
                   ("atlas", "--page-only", "--published", "pub", "--page", "page.md"),
                   "card.json", setup=deep("pub/bleu/card.json")),
        deep_error("a --config YAML nested 100,000 deep", ("run", "-c", "config.yaml"),
                   "config.yaml", files={"config.yaml": DEEP_YAML}),
        deep_error("a suite YAML nested 100,000 deep",
                   run("--suite", "suite.yaml", perturbations=(), seeds=None), "suite.yaml",
                   files={"suite.yaml": DEEP_YAML}),
        deep_error("judge criteria YAML nested 100,000 deep",
                   run(evaluators=[judge(criteria="crit.yaml")]), "crit.yaml",
                   files={"crit.yaml": DEEP_YAML}),
        deep_error("a variants line nested 100,000 deep", run("--variants", "variants.jsonl"),
                   "variants.jsonl", files={"variants.jsonl": json.dumps(VARIANTS[0]) + "\n"
                                            + DEEP_JSON + "\n"}),
        deep_error("card --data with a line nested 100,000 deep",
                   card("bleu", "--data", "data.jsonl"), "data.jsonl", "line 2",
                   files={"data.jsonl": json.dumps(GOOD[0]) + "\n" + DEEP_JSON + "\n"}),
        either(j, "a staging folder whose manifest.json is nested 100,000 deep", run(),
               "manifest", setup=deep(".out.partial/manifest.json"), memory_guard=True,
               verify=examples_are(2)),
        either(j, "a card rerun over a method's results.json nested 100,000 deep", card(),
               "results.json", memory_guard=True, timeout=300.0,
               setup=deep("card/runs/blindspot/results.json",
                          lambda env: env.card_dir("card", protect=False)),
               verify=exists("card/card.md")),
    ]


# ---- small: temporary files, descriptions, exit codes ------------------------------------------------

def small_cases() -> list[Case]:
    m = "small"
    boom = {"boom.py": "raise RuntimeError('boom at import')\ndef score(x):\n    return 1.0\n"}
    plugin = run(evaluators=["python:target=boom:score"])

    def truncated(relative: str) -> Callable[[CaseEnv], None]:
        def setup(env: CaseEnv) -> None:
            text = (env.base("card") / "card.json").read_text(encoding="utf-8")
            env.write(relative, text[: text.rfind("\n", 0, len(text) // 2) + 1],
                      protect=False)  # cut at a line's end, as a full disk leaves it

        return setup

    return [
        error(m, "atlas --page-only --page onto a folder",
              ("atlas", "--page-only", "--published", "pub", "--page", "pagedir"), "pagedir",
              not_says=(".pagedir.tmp",),
              setup=lambda env: (base_card_json("pub/bleu/card.json")(env),
                                 env.path("pagedir").mkdir())),
        error(m, "card-compare --html onto a folder", ("compare", "card", "--out",
                                                       "cmpdir/"), "cmpdir",
              setup=lambda env: (base_card_json("card/card.json")(env),
                                 env.path("cmpdir").mkdir())),
        error(m, "card-compare --md onto a folder", ("compare", "card", "--md", "cmpdir"),
              "cmpdir", setup=lambda env: (base_card_json("card/card.json")(env),
                                           env.path("cmpdir").mkdir())),
        error(m, "card-compare of a truncated card.json", ("compare", "card"),
              "card.json", not_says=("JSONL",), setup=truncated("card/card.json")),
        error(m, "atlas --page-only from a truncated published card.json",
              ("atlas", "--page-only", "--published", "pub", "--page", "page.md"),
              "card.json", not_says=("JSONL",), setup=truncated("pub/bleu/card.json")),
        either(m, "--debug on an unexpected error (exit 4 with its traceback)",
               ("--debug", *plugin), "boom", files=boom, exits=(4,), traceback_ok=True),
        either(m, "EVALSTRESS_DEBUG=1 on an unexpected error (exit 4 with its traceback)",
               plugin, "boom", files=boom, exits=(4,), traceback_ok=True,
               env={"EVALSTRESS_DEBUG": "1"}),
        either(m, "an unexpected error without --debug (exit 4, one line)", plugin, "boom",
               files=boom, exits=(4,)),
    ]


def owned_cases() -> list[Case]:
    return [*symlink_cases(), *ownership_cases(), *upfront_cases(), *depth_cases(),
            *small_cases()]
