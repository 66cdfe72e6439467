"""The cases of `probe_reliability.py` on the output side: imported variants, judge templates,
finished run directories, caches, output targets, full disks, and the rest of the command line.

The model and the builders are in `probe_cases.py`.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from probe_cases import (
    GOOD,
    TEXT_A,
    TEXT_B,
    Case,
    CaseEnv,
    accept,
    csv_text,
    dump_yaml,
    either,
    error,
    examples_are,
    has_perturbation,
    judge,
    parquet,
    run,
)

VARIANTS = [{"example_id": "a", "perturbation": "truncation", "severity": 0.1, "seed": 0,
             "text": TEXT_A[:90]},
            {"example_id": "b", "perturbation": "truncation", "severity": 0.1, "seed": 0,
             "text": TEXT_B[:90]}]
WITH_VARIANTS = run("--variants", "variants.jsonl")


def variants(*changes: dict[str, Any], drop: str | None = None) -> list[dict[str, Any]]:
    """VARIANTS with the first row changed (and `drop` removed from it)."""
    out = [dict(r) for r in VARIANTS]
    for row, change in zip(out, changes, strict=False):
        row.update(change)
    if drop is not None:
        out[0].pop(drop, None)
    return out


def skips_some(out: str = "out") -> Any:
    """The run recorded at least one skip (a text over --max-chars)."""

    def check(root: Path) -> str | None:
        text = (root / out / "skips.jsonl").read_text(encoding="utf-8").strip()
        return None if text else "skips.jsonl is empty: the over-long text was not skipped"

    return check


def variant_cases() -> list[Case]:
    v = "variants"

    def bad(description: str, content: Any, *says: str, **more: Any) -> Case:
        return error(v, description, WITH_VARIANTS, *says, files={"variants.jsonl": content},
                     **more)

    return [
        accept(v, "valid imported variants (JSONL)", WITH_VARIANTS,
               files={"variants.jsonl": VARIANTS}, verify=has_perturbation("truncation")),
        accept(v, "valid imported variants (CSV)", run("--variants", "variants.csv"),
               files={"variants.csv": csv_text(
                   list(VARIANTS[0]), *[[str(x) for x in r.values()] for r in VARIANTS])},
               verify=has_perturbation("truncation")),
        accept(v, "perturbation=const:truncation for a file without that column",
               run("--variants", "variants.jsonl", "--variant-map",
                   "perturbation=const:truncation"),
               files={"variants.jsonl": variants(drop="perturbation")[:1]},
               verify=has_perturbation("truncation")),
        # the README promises they are added: scored under their own name
        accept(v, "variants under a perturbation name the suite lacks", WITH_VARIANTS,
               files={"variants.jsonl": variants({"perturbation": "my-rewrite"},
                                                 {"perturbation": "my-rewrite"})},
               verify=has_perturbation("my-rewrite")),
        bad("an example_id the data lacks", variants({"example_id": "zzz"}), "zzz"),
        bad("a duplicate variant", [VARIANTS[0], VARIANTS[0]], "duplicate"),
        bad("an empty text", variants({"text": ""}), "text"),
        bad("a row without text", variants(drop="text"), "text"),
        bad("text a number", variants({"text": 12}), "text"),
        bad("an imported seed: 1.7", variants({"seed": 1.7}), "seed"),
        bad("seed: abc", variants({"seed": "abc"}), "seed"),
        bad("a severity that is not a number", variants({"severity": "banana"}), "severity"),
        either(v, "a 5 MB imported text with the default --max-chars", WITH_VARIANTS,
               "max-chars", "max_chars", "characters",
               files={"variants.jsonl": variants({"text": "word " * 1_000_000})},
               verify=skips_some()),
        bad("an empty variants file", "", "variants.jsonl"),
        bad("a variants file that is not UTF-8", b'{"example_id": "a", "text": "caf\xe9"}\n',
            "variants.jsonl"),
        error(v, "a variants file that does not exist", run("--variants", "missing.jsonl"),
              "missing.jsonl"),
        error(v, "a folder given as --variants", run("--variants", "vdir"), "vdir",
              setup=lambda env: env.path("vdir").mkdir()),
        error(v, "--variant-map text=a field the file lacks",
              run("--variants", "variants.jsonl", "--variant-map", "text=rewritten"), "rewritten",
              files={"variants.jsonl": VARIANTS}),
        error(v, "a wrong-schema Parquet as --variants", run("--variants", "variants.parquet"),
              "example_id", files={"variants.parquet": parquet([{"a": 1, "b": "x"}])}),
        error(v, "a garbage Parquet as --variants", run("--variants", "variants.parquet"),
              "variants.parquet", files={"variants.parquet": b"not parquet"}),
    ]


# ---- template: judge prompt templates and criteria files ------------------------------------------

TEMPLATE = "Rate this text from 1 to 5.\n\n{text}\n\nAnswer with the number only.\n"


def with_template(name: str = "tpl.txt", **params: Any) -> tuple[str, ...]:
    return run(evaluators=[judge(prompt=name, form=None, **params)])  # the template is the form


def template_cases() -> list[Case]:
    t = "template"

    def bad(description: str, content: Any, *says: str, name: str = "tpl.txt",
            **params: Any) -> Case:
        return error(t, description, with_template(name, **params), *says, files={name: content})

    no_source = [{k: v for k, v in r.items() if k != "source"} for r in GOOD]
    return [
        accept(t, "a valid template", with_template(), files={"tpl.txt": TEMPLATE}),
        accept(t, "a valid YAML template", with_template("tpl.yaml"),
               files={"tpl.yaml": dump_yaml({"system": "You rate texts.", "user": TEMPLATE})}),
        bad("a non-UTF-8 template", b"Rate this text: {text}\nNote: caf\xe9\n", "tpl.txt"),
        bad("an empty template", "", "tpl.txt"),
        bad("an unknown placeholder", "Rate: {answr}\n", "answr"),
        bad("a template without {text}", "Rate the text from 1 to 5.\n", "text"),
        bad("a YAML template without user", dump_yaml({"system": "x"}), "user",
            name="tpl.yaml"),
        bad("a YAML template with an unknown key", dump_yaml({"user": TEMPLATE, "sytem": "x"}),
            "sytem", name="tpl.yaml"),
        bad("messages whose last turn is not the user's",
            dump_yaml([{"role": "user", "content": TEMPLATE},
                       {"role": "assistant", "content": "4"}]), "user", name="tpl.yaml"),
        bad("broken YAML template", "user: [unclosed\n", "tpl.yaml", name="tpl.yaml"),
        bad("output=regex: with a broken regex", TEMPLATE, "regex", output="regex:(unclosed"),
        bad("output=labels without labels", TEMPLATE, "labels", output="labels"),
        error(t, "a template that does not exist", with_template("missing-tpl.txt"),
              "missing-tpl.txt"),
        error(t, "a folder given as the template", with_template("tpldir"), "tpldir",
              setup=lambda env: env.path("tpldir").mkdir()),
        accept(t, "{source} on data without a source (exit 3)", with_template(),
               files={"tpl.txt": "Source: {source}\nText: {text}\nRate 1-5.\n",
                      "data.jsonl": no_source}, exits=(3,)),
        error(t, "broken criteria YAML", run(evaluators=[judge(criteria="crit.yaml")]),
              "crit.yaml", files={"crit.yaml": "overall: [unclosed\n"}),
        error(t, "criteria YAML that is a list", run(evaluators=[judge(criteria="crit.yaml")]),
              "crit.yaml", files={"crit.yaml": "- a\n- b\n"}),
    ]


# ---- rundir: commands that read a finished run ---------------------------------------------------

def damage(*steps: tuple[str, str], kind: str = "bleu") -> Any:
    """A setup: a copy of a finished run at run/, then each (file, how) damage: delete,
    truncate (half its bytes), garbage, or JSON text to write in its place."""

    def setup(env: CaseEnv) -> None:
        folder = env.run_dir(kind=kind, protect=False)
        for name, how in steps:
            path = folder / name
            if how == "delete":
                path.unlink()
            elif how == "truncate":
                path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
            elif how == "garbage":
                path.write_bytes(b"\x00garbage\xff" * 50)
            elif how == "wrong-schema":
                parquet([{"a": 1, "b": "x"}])(path)
            else:
                path.write_text(how, encoding="utf-8")

    return setup


def without(*keys: str) -> Any:
    """A setup: a copy of a finished run whose results.json lacks these keys."""

    def setup(env: CaseEnv) -> None:
        folder = env.run_dir(protect=False)
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        for key in keys:
            results.pop(key, None)
        (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")

    return setup


def a_run(env: CaseEnv) -> None:
    env.run_dir()


def two_runs(env: CaseEnv) -> None:
    env.run_dir()
    env.run_dir("run2", kind="two")


def rundir_cases() -> list[Case]:
    r = "rundir"
    checked = (0, 1)  # check: 1 is broken expectations, a result
    return [
        accept(r, "report of a finished run", ("report", "run"), setup=a_run,
               products=("run/report.html",)),
        error(r, "report with scores.parquet deleted", ("report", "run"), "scores.parquet",
              setup=damage(("scores.parquet", "delete"))),
        error(r, "report with variants.parquet deleted", ("report", "run"), "variants.parquet",
              setup=damage(("variants.parquet", "delete"))),
        error(r, "report with results.json deleted", ("report", "run"), "results.json",
              setup=damage(("results.json", "delete"))),
        error(r, "report with results.json garbage", ("report", "run"), "results.json",
              setup=damage(("results.json", "garbage"))),
        error(r, "report with results.json {}", ("report", "run"), "results.json",
              setup=damage(("results.json", "{}"))),
        error(r, "report with results.json a list", ("report", "run"), "results.json",
              setup=damage(("results.json", "[1, 2]"))),
        error(r, "report with scores.parquet truncated", ("report", "run"), "scores.parquet",
              setup=damage(("scores.parquet", "truncate"))),
        error(r, "report with scores.parquet garbage", ("report", "run"), "scores.parquet",
              setup=damage(("scores.parquet", "garbage"))),
        error(r, "report with scores.parquet of another schema", ("report", "run"),
              "scores.parquet", setup=damage(("scores.parquet", "wrong-schema"))),
        error(r, "report with variants.parquet truncated", ("report", "run"),
              "variants.parquet", setup=damage(("variants.parquet", "truncate"))),
        either(r, "report with examples.jsonl deleted", ("report", "run"), "examples.jsonl",
               setup=damage(("examples.jsonl", "delete")),
               verify=lambda root: None if (root / "run/report.html").exists()
               else "no report.html"),
        error(r, "report of an empty folder", ("report", "empty"), "empty",
              setup=lambda env: env.path("empty").mkdir()),
        error(r, "report of a path that does not exist", ("report", "no-such-run"),
              "no-such-run"),
        error(r, "report of a data file", ("report", "data.jsonl"), "data.jsonl",
              files={"data.jsonl": GOOD}),
        error(r, "report --out onto the run's scores.parquet",
              ("report", "run", "--out", "run/scores.parquet"), "scores.parquet", setup=a_run),
        error(r, "report --out onto a folder", ("report", "run", "--out", "run"), "run",
              setup=a_run),
        error(r, "report --max-variants -1", ("report", "run", "--max-variants", "-1"),
              "--max-variants", "max_variants", setup=a_run),
        accept(r, "check of a finished run", ("check", "run"), setup=a_run, exits=checked),
        accept(r, "check of a run's results.json", ("check", "run/results.json"),
               setup=a_run, exits=checked),
        error(r, "check of a results.json without analyses and evaluators", ("check", "run"),
              "results.json", setup=without("analyses", "evaluators")),
        error(r, "check with scores.parquet deleted", ("check", "run"), "scores.parquet",
              setup=damage(("scores.parquet", "delete"))),
        error(r, "check --require of bad syntax", ("check", "run", "--require", "nope"), "nope",
              setup=a_run),
        error(r, "check --require ...=maybe", ("check", "run", "--require",
                                               "bleu:truncation=maybe"), "maybe", setup=a_run),
        error(r, "check --require of an evaluator the run lacks",
              ("check", "run", "--require", "chrf:truncation=pass"), "chrf", setup=a_run),
        error(r, "check --max-failures -1", ("check", "run", "--max-failures", "-1"),
              "--max-failures", "max_failures", setup=a_run),
        error(r, "check --min-d abc", ("check", "run", "--min-d", "abc"), "--min-d", setup=a_run),
        error(r, "check --junit onto the run's results.json",
              ("check", "run", "--junit", "run/results.json"), "results.json", setup=a_run),
        accept(r, "compare of the same run twice", ("compare", "run", "run"), setup=a_run,
               products=("compare.html",)),
        accept(r, "compare of two runs", ("compare", "run", "run2"), setup=two_runs,
               products=("compare.html",)),
        error(r, "compare with a run that does not exist", ("compare", "run", "no-such-run"),
              "no-such-run", setup=a_run),
        error(r, "compare --out onto a run's results.json",
              ("compare", "run", "run", "--out", "run/results.json"), "results.json", setup=a_run),
        accept(r, "combine of a run with two evaluators", ("combine", "run2"),
               setup=two_runs),
        error(r, "combine --by nope", ("combine", "run2", "--by", "nope"), "nope", setup=two_runs),
        either(r, "combine of a run with one evaluator", ("combine", "run"), "evaluator",
               setup=a_run),
        accept(r, "export to JSONL", ("export", "run", "--variants", "v.jsonl"), setup=a_run,
               products=("v.jsonl",)),
        accept(r, "export to CSV with originals",
               ("export", "run", "--variants", "v.csv", "--originals"), setup=a_run,
               products=("v.csv",)),
        error(r, "export RUN --variants RUN/scores.parquet",
              ("export", "run", "--variants", "run/scores.parquet"), "scores.parquet",
              setup=a_run),
        error(r, "export RUN --variants RUN/variants.parquet",
              ("export", "run", "--variants", "run/variants.parquet"), "variants.parquet",
              setup=a_run),
        error(r, "export --variants v.txt", ("export", "run", "--variants", "v.txt"), ".txt",
              setup=a_run),
        error(r, "export --variants onto a folder", ("export", "run", "--variants", "vdir"),
              "vdir", setup=lambda env: (env.run_dir(), env.path("vdir").mkdir())),
        error(r, "exporting a wrong-schema variants.parquet",
              ("export", "run", "--variants", "v.jsonl"), "variants.parquet",
              setup=damage(("variants.parquet", "wrong-schema"))),
        error(r, "exporting a truncated variants.parquet",
              ("export", "run", "--variants", "v.jsonl"), "variants.parquet",
              setup=damage(("variants.parquet", "truncate"))),
        error(r, "export of a run that does not exist",
              ("export", "no-such-run", "--variants", "v.jsonl"), "no-such-run"),
        either(r, "a run beside a stale staging folder with a garbage manifest", run(),
               "manifest", files={".out.partial/manifest.json": "{garbage"},
               unprotected=(".out.partial/manifest.json",), verify=examples_are(2)),
    ]


# ---- cache: score and response caches --------------------------------------------------------------

def cache_garbage(env: CaseEnv) -> None:
    env.path("cache/scores.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xde\xad" * 2000)


def cache_truncated(env: CaseEnv) -> None:
    env.cache()
    path = env.path("cache/scores.sqlite")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def cache_cases() -> list[Case]:
    c = "cache"
    shard = ("cache", "merge", "shard", "--cache-dir", "merged")
    return [
        accept(c, "a warm cache (the same run again)", run(), setup=lambda env: env.cache(),
               verify=examples_are(2)),
        either(c, "a score cache of garbage", run(), "scores.sqlite", setup=cache_garbage,
               verify=examples_are(2)),
        either(c, "a score cache cut in half", run(), "scores.sqlite", setup=cache_truncated,
               verify=examples_are(2)),
        accept(c, "--no-cache beside a garbage cache", run("--no-cache"), setup=cache_garbage,
               verify=examples_are(2)),
        error(c, "scores.sqlite is a folder", run(), "scores.sqlite",
              setup=lambda env: env.path("cache/scores.sqlite").mkdir()),
        error(c, "--cache-dir is a file", run("--cache-dir", "cachefile"), "cachefile",
              files={"cachefile": "not a folder\n"}),
        error(c, "$EVALSTRESS_CACHE_DIR is a file", run(), "cachefile",
              files={"cachefile": "not a folder\n"}, env={"EVALSTRESS_CACHE_DIR": "{root}/cachefile"}),
        accept(c, "--cache-dir that does not exist yet", run("--cache-dir", "new/deep/cache"),
               products=("new/deep/cache/scores.sqlite",)),
        either(c, "a response cache of garbage with a judge", run(evaluators=[judge()]),
               "llm.sqlite", setup=lambda env: env.path("cache/llm.sqlite").write_bytes(
                   b"\x00" * 3000), verify=examples_are(2)),
        error(c, "read-only cache folder", run(), "cache",
              setup=lambda env: env.path("cache").chmod(0o555), needs_non_root=True),
        accept(c, "cache stats of an empty cache", ("cache", "stats")),
        accept(c, "cache stats of a used cache", ("cache", "stats"),
               setup=lambda env: env.cache()),
        error(c, "cache stats of a garbage cache", ("cache", "stats"), "scores.sqlite",
              setup=cache_garbage),
        error(c, "cache merge of a folder that does not exist", shard, "shard"),
        error(c, "cache merge of a garbage shard", shard, "scores.sqlite",
              files={"shard/scores.sqlite": b"\x00garbage" * 500}),
        accept(c, "cache merge of a shard", shard,
               setup=lambda env: (env.path("shard").mkdir(), env.cache(),
                                  env.path("cache/scores.sqlite").rename(
                                      env.path("shard/scores.sqlite"))),
               unprotected=("shard/scores.sqlite",), products=("merged/scores.sqlite",)),
        error(c, "cache explain of a request file of garbage", ("cache", "explain", "req.json"),
              "req.json", files={"req.json": "{not json"}),
        error(c, "cache explain of a missing request file", ("cache", "explain", "nope.json"),
              "nope.json"),
    ]


# ---- out: the output target ------------------------------------------------------------------------

SLOW_JUDGE = judge("slow", max_concurrency=1)


def out_cases() -> list[Case]:
    o = "out"
    return [
        error(o, "--out names a folder of foreign files (precious.txt)", run(), "precious.txt",
              files={"out/precious.txt": "keep me\n"}),
        error(o, "--out equal to the data's folder, --cache-dir inside it",
              run("--cache-dir", "d/cache", data="d/data.jsonl", out="d"), "--out",
              files={"d/data.jsonl": GOOD, "d/keep.txt": "keep me\n"}),
        error(o, "--out .", run(out="."), "--out"),
        error(o, "--out ..", run(data="../data.jsonl", out=".."), "--out", cwd="sub",
              files={"sub/keep.txt": "keep me\n", "data.jsonl": GOOD}),
        error(o, "--out is a file", run(out="outfile"), "outfile",
              files={"outfile": "keep me\n"}),
        error(o, "--out under a file", run(out="outfile/sub"), "outfile",
              files={"outfile": "keep me\n"}),
        error(o, "--out with a 300-character name", run(out="o" * 300), "--out", "255"),
        error(o, "--out is the cache folder", run(out="cache"), "cache"),
        error(o, "--out holds the data (a run's own examples.jsonl)",
              run(data="out/examples.jsonl"), "examples.jsonl",
              setup=lambda env: env.run_dir("out")),
        error(o, "--out holds the --config", ("run", "-c", "out/config.yaml"), "config",
              setup=lambda env: (env.run_dir("out"), env.write("out/config.yaml", dump_yaml(
                  {"data": "data.jsonl", "out": "out", "seeds": 1, "evaluators": ["bleu"],
                   "perturbations": ["truncation"]}))), files={"data.jsonl": GOOD}),
        error(o, "--out holds the --variants", run("--variants", "out/variants.jsonl"),
              "variants.jsonl", setup=lambda env: (env.run_dir("out"),
                                                   env.write("out/variants.jsonl", VARIANTS))),
        error(o, "--out is a link to a folder of foreign files", run(out="link"), "precious.txt",
              files={"real/precious.txt": "keep me\n"},
              setup=lambda env: env.path("link").symlink_to(env.path("real"))),
        error(o, "two runs writing the same --out at once", run(), "{bgpid}",
              background=run(evaluators=[SLOW_JUDGE]), wait_for=".out.partial"),
        error(o, "quickstart --out onto foreign files",
              ("quickstart", "--limit", "2", "--workers", "1", "--quiet", "--out", "out"),
              "precious.txt", files={"out/precious.txt": "keep me\n"}),
        error(o, "read-only parent of --out", run(out="ro/out"), "ro",
              setup=lambda env: (env.path("ro").mkdir(), env.path("ro").chmod(0o555)),
              needs_non_root=True),
        accept(o, "--out in folders that do not exist yet", run(out="a/b/c"),
               verify=examples_are(2, out="a/b/c")),
        accept(o, "--out an empty folder", run(), setup=lambda env: env.path("out").mkdir(),
               verify=examples_are(2)),
        accept(o, "--out a finished run (replaced)", run(),
               setup=lambda env: env.run_dir("out", protect=False), verify=examples_are(2)),
        accept(o, "--out foreign files with --force", run("--force"),
               files={"out/precious.txt": "yours to delete\n"},
               unprotected=("out/precious.txt",), verify=examples_are(2)),
        either(o, "--out '' (empty)", run(out=""), "--out",
               verify=lambda root: None if (root / "runs/data/results.json").exists()
               else "no run directory at runs/data"),
    ]


# ---- disk: writes that fail part-way (RLIMIT_FSIZE) --------------------------------------------

# A write past RLIMIT_FSIZE fails with EFBIG ("File too large"), as a write to a full disk fails
# with ENOSPC: the same moment of failure, without a small file system to fill (which needs
# root to mount). The command should end in one line naming the file, and keep what was there.

def disk_cases() -> list[Case]:
    k = "disk"
    fs = 12_000  # bytes: the run's report (~40 KB) cannot be written
    return [
        # a disk that fills while the run writes cannot be foreseen: the error comes with the
        # write, and the staging folder stays for the run to resume once there is room
        error(k, "a run whose report cannot be written", run("--no-cache"), "report.html",
              "File too large", "space", file_size_limit=fs, late_ok=True),
        error(k, "a run over a finished run, the disk full", run("--no-cache"), "report.html",
              "File too large", "space", file_size_limit=fs, late_ok=True,
              setup=lambda env: env.run_dir("out")),
        error(k, "the score cache cannot grow", run(), "scores.sqlite", file_size_limit=2_000),
        error(k, "export to a full disk", ("export", "run", "--variants", "v.jsonl"), "v.jsonl",
              file_size_limit=1_000, setup=a_run),
        error(k, "report to a full disk", ("report", "run"), "report.html",
              file_size_limit=fs, setup=a_run),
        error(k, "compare to a full disk", ("compare", "run", "run"), "compare.html",
              file_size_limit=4_000, setup=a_run),
    ]


# ---- misc: the rest of the command line, interrupts, keys -------------------------------------------

LEAK_KEY = "TESTSECRET123-gw-0000"


def misc_cases() -> list[Case]:
    m = "misc"
    interrupted = dict(background=None, wait_for=".out.partial", late_ok=True,
                       setup=lambda env: env.run_dir("out"))
    return [
        accept(m, "no arguments (help)", (), exits=(0, 2)),
        accept(m, "--version", ("--version",)),
        accept(m, "run --help", ("run", "--help")),
        accept(m, "list evaluators", ("list", "evaluators")),
        error(m, "an unknown command", ("runn",), "runn"),
        error(m, "list of an unknown kind", ("list", "metrics"), "metrics"),
        error(m, "correlate of a missing file", ("correlate", "missing.jsonl"), "missing.jsonl"),
        error(m, "self-bias without --model", ("self-bias", "data.jsonl"), "--model",
              files={"data.jsonl": GOOD}),
        error(m, "attack without --victim", ("attack", "data.jsonl"), "--victim",
              files={"data.jsonl": GOOD}),
        error(m, "criteria-levels without --judge", ("criteria-levels", "data.jsonl"), "--judge",
              files={"data.jsonl": GOOD}),
        error(m, "quickstart --limit 0", ("quickstart", "--limit", "0"), "--limit"),
        error(m, "quickstart --workers -1", ("quickstart", "--workers", "-1"), "--workers"),
        case_interrupt("SIGTERM during a run (exit 143)", signal.SIGTERM, 143, interrupted),
        case_interrupt("Ctrl-C during a run (exit 130)", signal.SIGINT, 130, interrupted),
        *[accept(m, f"an API key echoed by the server's 401 ({how})",
                 run(evaluators=[judge(f"echo-{how}", **extra)]), exits=(3,),
                 env={variable: LEAK_KEY}, secret=LEAK_KEY)
          for how, variable, extra in [("raw", "OPENAI_API_KEY", {}),
                                       ("json", "MY_KEY", {"api_key_env": "MY_KEY"}),
                                       ("wrapped", "OPENAI_API_KEY", {}),
                                       ("url", "OPENAI_API_KEY", {})]],
    ]


def case_interrupt(description: str, sent: int, code: int, more: dict[str, Any]) -> Case:
    """A slow judge run over a finished run, interrupted once its staging folder exists: it
    should stop with `code` and one line, and leave the finished run in place."""
    return error("misc", description, run(evaluators=[SLOW_JUDGE]), "interrupt", "stopped",
                 signal=sent, error_exit=code, **more)


def output_cases() -> list[Case]:
    return [*variant_cases(), *template_cases(), *rundir_cases(), *cache_cases(), *out_cases(),
            *disk_cases(), *misc_cases()]
