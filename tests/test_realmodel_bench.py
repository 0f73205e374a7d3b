"""bench/realmodel.py: its skip line without the real-model extra, and its outcome mix from
a grid run through the real queue against the loopback OpenAI-compatible stand-in.

The stand-in searches once and then finishes, and answers USELESS to the side-channel
question, so the mix is known: every episode ends `finish` after two parsed actions,
and the judged arm's judgments are all parsed.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.servers.http import LoopbackServer
from tests.servers.openai_server import OpenAIApp, react_responder

BENCH = Path(__file__).resolve().parents[1] / "bench" / "realmodel.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("bench_realmodel", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_realmodel"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_realmodel", None)


def test_without_the_extra_it_prints_one_skip_line(bench: ModuleType,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bench, "gguf_path", lambda: None)
    assert bench.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("skipped: ") and "[realmodel]" in out[0]


def test_a_dead_endpoint_is_one_error_line(bench: ModuleType, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    with LoopbackServer(OpenAIApp(model="smollm2")) as server:
        url = server.url + "/v1"
    assert bench.main(["--endpoint", url]) == 1  # stopped: nothing answers there now
    out, err = capsys.readouterr()
    assert not out and len(err.strip().splitlines()) == 1 and err.startswith("error: ")


def test_the_outcome_mix_of_a_grid_through_the_queue(bench: ModuleType,
                                                     capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    app = OpenAIApp(model="smollm2", responder=react_responder(1), record=False)
    with LoopbackServer(app) as server:
        code = bench.main(["--endpoint", server.url + "/v1", "--conditions", "none,enforced_rule",
                           "--questions", "3", "--keep", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "12/12 episodes stored" in out
    mix = bench.outcome_mix(tmp_path / "lab.db")
    total = mix["all"]
    assert total["episodes"] == total["finish"] == 12
    assert total["actions"] == total["turns"] == 24 and total["format failures"] == 0
    for reason in ("budget", "format_failure", "generation_truncated", "refusal", "error"):
        assert total[reason] == 0, reason
    # the rule arm asks the side channel after each search: 6 judgments, all parsed
    assert mix["enforced_rule"]["judgments parsed"] == 6
    assert mix["none"]["judgments parsed"] == 0 and total["judgments unparsed"] == 0
    line = next(li for li in out.splitlines() if li.startswith("all "))
    assert line.split()[1:3] == ["12", "12"]  # episodes, finish
