"""What the backends send and how they read what comes back (core.models.generation):
finish reasons (live and Batches), a thinking-off answer filed as reasoning, stop strings
on thinking turns, greedy sampling and per-request seeds, per-family max_tokens, Claude
as text-only ReAct (native tools an option), and the enqueue context check.

Each case runs against the loopback servers with realistic raw replies."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.errors import ConfigError
from core.limits import too_long
from core.models.base import FINISH_LENGTH, FINISH_REFUSAL, FINISH_STOP, EpisodeView
from core.models.generation import (
    THINKING_TIMEOUT_S,
    cut_at_stop,
    default_act_max_tokens,
    family,
    request_seed,
)
from core.models.registry import ModelSpec, load_registry, make_client
from core.models.specs import AnthropicSpec, OpenAISpec
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, setup_for
from jobs.grid import check_context
from tests.helpers.backends import ANTHROPIC_KEY, FAST, anthropic_spec
from tests.servers import AnthropicApp, LoopbackServer, OpenAIApp

STOP = ["Observation:", "observation:"]
ACTION = "Thought: I know it.\nAction: finish\nAction Input: Lake Orrin"
MSGS = [{"role": "system", "content": "You answer questions."},
        {"role": "user", "content": "Question: Where is Vellmore?"}]


def served(url: str, model: str = "loopback-model", **extra: Any) -> ModelSpec:
    """A served model without a sampling table (so the defaults apply)."""
    return ModelSpec("m", "openai", {"model": model, "endpoints": [f"{url}/v1"], **FAST,
                                     **extra})


def view(seed: int = 0, replicate: int = 0) -> EpisodeView:
    return EpisodeView(demo_questions()[0], seed, 4, replicate=replicate)


def generate(spec: ModelSpec, kind: str = "act", stop: list[str] | None = None,
             v: EpisodeView | None = None, client: Any = None) -> Any:
    client = client or make_client(spec)
    session = client.start(v or view())
    return asyncio.run(session.generate(MSGS, kind=kind, max_tokens=spec.act_max_tokens or 64,
                                        stop=STOP if stop is None else stop))


def raw(message: dict[str, Any], finish: str = "stop") -> Any:
    """A server that answers every call with this message and finish_reason."""
    return lambda body: {"index": 0, "message": dict(message), "finish_reason": finish}


@pytest.fixture
def app() -> OpenAIApp:
    return OpenAIApp()


@pytest.fixture
def server(app: OpenAIApp) -> Iterator[LoopbackServer]:
    with LoopbackServer(app, hang_s=5) as srv:
        yield srv


# --- reading what comes back: the conformance table -----------------------------------

CASES = [  # (id, thinking, message, finish_reason, text, reasoning, finish)
    ("plain", False, {"content": ACTION}, "stop", ACTION, "", FINISH_STOP),
    ("cut-in-answer", False, {"content": "Thought: I know it.\nAction: fin"}, "length",
     "Thought: I know it.\nAction: fin", "", FINISH_LENGTH),
    ("content-null-reasoning_content", False,
     {"content": None, "reasoning_content": ACTION}, "stop", ACTION, "", FINISH_STOP),
    ("content-null-reasoning", False, {"content": None, "reasoning": ACTION}, "stop",
     ACTION, "", FINISH_STOP),
    ("content-blank-reasoning_content", False,
     {"content": "\n", "reasoning_content": ACTION}, "stop", ACTION, "", FINISH_STOP),
    ("think-tags-thinking-off", False,
     {"content": f"<think>\nweighing it\n</think>\n\n{ACTION}"}, "stop", ACTION,
     "weighing it", FINISH_STOP),
    ("thinking-field", True, {"content": ACTION, "reasoning_content": "weighing it"}, "stop",
     ACTION, "weighing it", FINISH_STOP),
    ("thinking-content-null", True, {"content": None, "reasoning_content": "weighing it"},
     "length", "", "weighing it", FINISH_LENGTH),
    ("thinking-cut-in-think", True, {"content": "<think>\nweighing it, still"}, "length",
     "", "weighing it, still", FINISH_LENGTH),
    ("thinking-hallucinated-observation", True,
     {"content": f"<think>I recall Observation: maybe</think>\n{ACTION}\nObservation: fake"},
     "length", ACTION, "I recall Observation: maybe", FINISH_STOP),
]


@pytest.mark.parametrize("thinking, message, finish_reason, text, reasoning, finish",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_raw_reply_reads_as_listed(app: OpenAIApp, server: LoopbackServer, thinking: bool,
                                        message: dict[str, str | None], finish_reason: str,
                                        text: str, reasoning: str, finish: str) -> None:
    app.choice = raw({"role": "assistant", **message}, finish_reason)
    gen = generate(served(server.url, thinking=thinking))
    assert (gen.text, gen.reasoning, gen.finish) == (text, reasoning, finish)


def test_an_answer_filed_as_reasoning_warns_once_per_model(app: OpenAIApp, server: LoopbackServer,
                                                           caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    app.choice = raw({"role": "assistant", "content": None, "reasoning_content": ACTION})
    spec = served(server.url)
    client = make_client(spec)
    with caplog.at_level(logging.WARNING, logger="lab.models"):
        for _ in range(3):
            assert generate(spec, client=client).text == ACTION
        other = make_client(spec)  # another client (a worker's next model): warns again
        generate(spec, client=other)
    warnings = [r.getMessage() for r in caplog.records if "reasoning" in r.getMessage()]
    assert len(warnings) == 2 and all("--reasoning-parser" in w for w in warnings)


def test_thinking_on_keeps_the_split_and_never_warns(app: OpenAIApp, server: LoopbackServer,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    app.choice = raw({"role": "assistant", "content": None, "reasoning_content": ACTION})
    with caplog.at_level(logging.WARNING, logger="lab.models"):
        gen = generate(served(server.url, thinking=True))
    assert gen.text == "" and gen.reasoning == ACTION
    assert not [r for r in caplog.records if "reasoning parser" in r.getMessage()]


# --- what is sent -----------------------------------------------------------------------

def test_a_thinking_turn_sends_no_stop_strings_and_8192_tokens(app: OpenAIApp,
                                                               server: LoopbackServer) -> None:
    spec = served(server.url, model="Qwen/Qwen3-32B", thinking=True)
    generate(spec)
    generate(spec, kind="judge", stop=[])
    act, judge = app.requests
    assert "stop" not in act and act["max_tokens"] == 8192  # the harness's whole thinking turn
    assert act["chat_template_kwargs"] == {"enable_thinking": True}
    assert judge["chat_template_kwargs"] == {"enable_thinking": False}
    bare = {"model": "Qwen/Qwen3-32B", "endpoints": [f"{server.url}/v1"]}
    timeout = [cast(OpenAISpec, ModelSpec("t", "openai", {**bare, **extra}).config).retry.timeout_s
               for extra in (
        {"thinking": True}, {"thinking": True, "timeout_s": 30.0}, {})]
    assert timeout == [THINKING_TIMEOUT_S, 30.0, 60.0]
    generate(served(server.url, model="Qwen/Qwen3-32B"))  # not thinking: stop strings sent
    assert app.requests[-1]["stop"] == STOP and app.requests[-1]["max_tokens"] == 1024


def test_greedy_and_a_seed_without_a_sampling_table(app: OpenAIApp, server: LoopbackServer) -> None:
    generate(served(server.url))
    body = app.requests[-1]
    assert (body["temperature"], body["top_p"]) == (0.0, 1.0)
    assert isinstance(body["seed"], int) and 0 <= body["seed"] < 2 ** 31
    generate(served(server.url, sampling="default", seed="none"))
    assert not {"temperature", "top_p", "seed"} & set(app.requests[-1])
    generate(served(server.url, seed=42))
    assert app.requests[-1]["seed"] == 42
    generate(served(server.url, sampling={"temperature": 0.7, "seed": 7}))
    assert app.requests[-1]["seed"] == 7 and app.requests[-1]["temperature"] == 0.7


def test_seeds_are_stable_within_a_replicate_and_new_across_replicates(app: OpenAIApp,
                                                                       server: LoopbackServer
                                                                      ) -> None:
    spec = served(server.url)
    for rep in (0, 0, 1, 2):
        generate(spec, v=view(seed=3, replicate=rep))
    seeds = [b["seed"] for b in app.requests]
    assert seeds[0] == seeds[1] and len(set(seeds)) == 3
    assert seeds[0] == request_seed(MSGS, 3, 0)
    assert request_seed(MSGS, 4, 0) != seeds[0]  # another cell seed draws another
    assert request_seed(MSGS[:1], 3, 0) != seeds[0]  # another prompt draws another


def test_the_replicate_reaches_the_session_through_setup_for(app: OpenAIApp, server: LoopbackServer
                                                            ) -> None:
    spec = served(server.url)
    questions = demo_questions()
    cells = [CellSpec(spec, parse_condition("none"), parse_regime("clean"), None, 4, 0, rep)
             for rep in (0, 1)]
    client = make_client(spec)
    setups = [setup_for(c, questions[0], ForeignPool(questions), client) for c in cells]
    assert [s.replicate for s in setups] == [0, 1]
    assert all(s.act_max_tokens == 400 for s in setups)
    from core.runner import run_one
    for s in setups:
        asyncio.run(run_one(s, client))
    first = [b["seed"] for b in app.requests if len(b["messages"]) == 2]
    assert len(first) == 2 and first[0] != first[1]


@pytest.mark.parametrize("model, backend, expected", [
    ("Qwen/Qwen3-8B", "openai", 1024), ("qwen3-32b", "openai", 1024),
    ("meta-llama/Llama-3.1-8B-Instruct", "openai", 400), ("Meta-Llama-3.1-8B", "openai", 400),
    ("Qwen/Qwen2.5-7B-Instruct", "openai", 400), ("SmolLM2-135M", "openai", 400),
    ("claude-sonnet-5", "anthropic", 1024),
])
def test_acting_max_tokens_by_family(model: str, backend: str, expected: int) -> None:
    assert default_act_max_tokens(backend, model) == expected
    params = {"model": model, **({"endpoints": ["http://127.0.0.1:9/v1"]}
                                  if backend == "openai" else {})}
    spec = ModelSpec("x", backend, params)
    assert spec.act_max_tokens == expected
    assert ModelSpec("x", backend, {**params, "max_tokens": 77}).act_max_tokens == 77
    assert family("Qwen/Qwen2.5-7B") == "qwen2.5" and family("gpt-x") is None


def test_generation_settings_enter_the_spec_hash() -> None:
    base = {"model": "Qwen/Qwen3-8B", "endpoints": ["http://127.0.0.1:9/v1"]}
    spec = ModelSpec("q", "openai", base)
    assert spec.spec()["generation"] == {
        "act_max_tokens": 1024, "thinking_budget": 0,
        "sampling": {"temperature": 0.7, "top_p": 0.8, "top_k": 20}, "seed": "prompt"}
    hashes = {ModelSpec("q", "openai", {**base, **extra}).spec_hash() for extra in (
        {}, {"max_tokens": 512}, {"seed": 1}, {"sampling": "default"},
        {"thinking": True}, {"thinking": True, "thinking_budget": 4096})}
    assert len(hashes) == 6
    claude = {"model": "claude-x"}
    assert ModelSpec("c", "anthropic", claude).spec_hash() != ModelSpec(
        "c", "anthropic", {**claude, "tools": "native"}).spec_hash()
    haiku = {"model": "claude-haiku-4-5"}
    assert ModelSpec("h", "anthropic", haiku).spec()["generation"]["sampling"] == {
        "temperature": 0.0}
    assert ModelSpec("h", "anthropic", {**haiku, "thinking": True, "thinking_budget": 2048}
                     ).spec()["generation"]["sampling"] == {}
    sonnet = ModelSpec("s", "anthropic", {"model": "claude-sonnet-5"})
    assert cast(AnthropicSpec, sonnet.config).request_sampling == {}
    sim = load_registry(None)["sim-own5"]
    assert "generation" not in sim.spec()


@pytest.mark.parametrize("line, message", [
    ("max_tokens = 0", r"max_tokens must be in \[1, 10000000\]"),
    ('max_tokens = "400"', "max_tokens must be an integer"),
    ("seed = -1", "seed must be an integer >= 0"),
    ('seed = "random"', "seed must be an integer >= 0"),
    ('tools = "native"', "unknown field 'tools'"),
])
def test_registry_checks_generation_fields(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "lab.toml"
    path.write_text(f'[models.m]\nbackend = "openai"\nmodel = "m"\n'
                    f'endpoints = ["http://127.0.0.1:9/v1"]\n{line}\n')
    with pytest.raises(ConfigError, match=message):
        load_registry(path)


def test_registry_accepts_claude_tools_and_refuses_other_modes(tmp_path: Path) -> None:
    path = tmp_path / "lab.toml"
    path.write_text('[models.c]\nbackend = "anthropic"\nmodel = "c"\ntools = "native"\n'
                    'max_tokens = 2048\n')
    spec = load_registry(path)["c"]
    assert (cast(AnthropicSpec, spec.config).tools, spec.act_max_tokens) == ("native", 2048)
    path.write_text('[models.c]\nbackend = "anthropic"\nmodel = "c"\ntools = "xml"\n')
    with pytest.raises(ConfigError, match="tools must be one of text, native"):
        load_registry(path)


def test_cut_at_stop() -> None:
    assert cut_at_stop("a\nObservation: b\nobservation: c", STOP) == ("a", True)
    assert cut_at_stop("no stop here", STOP) == ("no stop here", False)
    assert cut_at_stop("x</search> rest", ["</search>", ""]) == ("x", True)


# --- Claude -------------------------------------------------------------------------------

@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[AnthropicApp, LoopbackServer]]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    app = AnthropicApp(responder=lambda body: [{"type": "text", "text": ACTION}])
    with LoopbackServer(app, hang_s=5) as srv:
        yield app, srv


def test_claude_is_text_only_react_by_default(claude: tuple[AnthropicApp, LoopbackServer]) -> None:
    app, srv = claude
    spec = anthropic_spec(srv.url)
    gen = generate(spec)
    generate(spec, kind="judge", stop=[])
    act, judge = app.requests
    assert "tools" not in act and "tool_choice" not in act
    assert "tools" not in judge and "tool_choice" not in judge
    assert act["stop_sequences"] == STOP and act["max_tokens"] == 1024
    assert gen.text == ACTION and gen.finish == FINISH_STOP


def test_claude_native_tools_are_an_option(claude: tuple[AnthropicApp, LoopbackServer]) -> None:
    app, srv = claude
    generate(anthropic_spec(srv.url, tools="native"))
    assert {t["name"] for t in app.requests[-1]["tools"]} == {"search", "lookup", "finish"}
    assert app.requests[-1]["tool_choice"]["type"] == "auto"


@pytest.mark.parametrize("stop_reason, finish", [
    ("max_tokens", FINISH_LENGTH), ("refusal", FINISH_REFUSAL), ("end_turn", FINISH_STOP),
    ("stop_sequence", FINISH_STOP)])
def test_claude_stop_reason_becomes_finish_live_and_in_batches(
        claude: tuple[AnthropicApp, LoopbackServer], stop_reason: str, finish: str) -> None:
    from core.models.anthropic import AnthropicClient, MessageBatches
    app, srv = claude
    app.stop_reason = stop_reason
    spec = anthropic_spec(srv.url)
    assert generate(spec).finish == finish
    batches = MessageBatches(cast(AnthropicClient, make_client(spec)))

    async def go() -> Any:
        batch = await batches.create([("r1", batches.params(MSGS, "act", 1024, STOP))])
        while not (await batches.retrieve(batch)).ended:
            await asyncio.sleep(0)
        return await batches.results(batch)

    (result,) = asyncio.run(go())
    assert result.generation is not None and result.generation.finish == finish


# --- the enqueue context check ------------------------------------------------------------

def test_context_check_counts_max_tokens_and_the_thinking_budget(tmp_path: Path) -> None:
    db = store.connect(tmp_path / "lab.db")
    questions = demo_questions()[:1]
    store.insert_questions(db, questions)
    prompt = too_long(questions, "", 10 ** 9)  # nothing refused: read the estimate
    assert prompt == []
    from core.limits import estimate_tokens, min_episode_chars
    condition = parse_condition("none")
    need = estimate_tokens(min_episode_chars(questions[0], condition.system_prompt(4)))

    def check(**extra: Any) -> None:
        spec = ModelSpec("q", "openai", {"model": "Qwen/Qwen3-8B",
                                         "endpoints": ["http://127.0.0.1:9/v1"], **extra})
        cell = CellSpec(spec, condition, parse_regime("clean"), None, 4, 0)
        check_context(db, [cell], [questions[0].id])

    check(max_context=need + 1024)  # prompt + max_tokens fit exactly
    with pytest.raises(ConfigError, match=r"1,024 max_tokens.*\(max_tokens overflows it\)"):
        check(max_context=need + 1023)
    with pytest.raises(ConfigError, match=r"\(the prompt overflows it\)"):
        check(max_context=need - 1)
    check(max_context=need + 8192, thinking=True)  # 1,024 + the 7,168 default budget
    with pytest.raises(ConfigError, match=r"7,168 thinking budget.*\(the thinking budget "
                                          r"overflows it\).*lower max_tokens or thinking"):
        check(max_context=need + 8191, thinking=True)


@pytest.mark.parametrize(("model", "thinking", "expected"), [
    ("Qwen/Qwen3-8B", False, {"temperature": 0.7, "top_p": 0.8, "top_k": 20}),
    ("Qwen/Qwen3-32B", True, {"temperature": 0.6, "top_p": 0.95, "top_k": 20}),
    ("meta-llama/Llama-3.1-8B-Instruct", False, {"temperature": 0.0, "top_p": 1.0}),
    ("Qwen/Qwen2.5-7B-Instruct", False, {"temperature": 0.0, "top_p": 1.0}),
])
def test_a_served_model_without_a_table_samples_as_the_paper_ran_it(
        model: str, thinking: bool, expected: dict[str, float]) -> None:
    """The paper: Qwen3 with Qwen's recommended sampling, greedy for the others."""
    from core.models.generation import default_sampling
    assert default_sampling("openai", model, thinking) == expected
