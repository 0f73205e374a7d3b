"""No credential reaches lab.db, a log, an export, a report or the console, whatever a
server echoes.

A loopback server answers every chat call with an error whose body echoes every
request header (so `Authorization: Basic …`), the request's URL with its query, and
the whole header dump again percent-encoded and base64-encoded. Episodes (a real
`lab worker`, whose log is kept), trace states and `lab try` run through the real
openai backend against it, with credentials in the endpoint's `user:password@` and
`?api_key=`; then every text column of every table of lab.db, every file beside it,
the worker's log, `lab export`'s CSVs, `lab report`'s HTML and every command's
output are searched for each form of each credential (`core.redaction`).
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest

from core.redaction import credential_forms, redact, remember
from tests.helpers.queue import lab_here, run_lab
from tests.servers import LoopbackServer, Reply, Request

USER, PASSWORD, SECRET = "labuser", "hunter2-PASSWORD/x", "SECRET+0123456789"
PAIR = f"{USER}:{PASSWORD}".encode()
BASIC = "Basic " + base64.b64encode(PAIR).decode()

REGISTRY = """
[models.echo]
backend = "openai"
model = "loopback-model"
endpoints = ["{url}"]
concurrency = 4
timeout_s = 30
max_retries = 1
backoff_s = 0.01
sampling = {{ temperature = 0.0 }}
"""


class Echo:
    """Answers every chat call with an error body holding everything the request carried."""

    def __init__(self) -> None:
        self.auth: list[str] = []

    async def __call__(self, req: Request) -> Reply:
        if req.method == "GET":
            return Reply(200, {"object": "list", "data": [{"id": "loopback-model"}]})
        self.auth.append(req.headers.get("authorization", ""))
        dump = "\r\n".join(f"{k}: {v}" for k, v in req.headers.items())
        url = f"http://{req.headers.get('host', '')}{req.path}?{req.query}"
        pieces = [f"with headers {dump}", f"encoded {quote(dump, safe='')}",
                  f"b64 {base64.b64encode(dump.encode()).decode()}"]
        turn = len(self.auth) // 2 % len(pieces)  # what is stored is cut: each comes first
        message = f"upstream refused {url} " + " ".join(pieces[turn:] + pieces[:turn])
        # the first call of each episode 500s (a logged retry), the retry 400s (stored)
        status = 500 if len(self.auth) % 2 else 400
        return Reply(status, {"object": "error", "message": message, "code": status})


def forms() -> set[str]:
    """What must appear nowhere: the credentials, their encodings, the header."""
    out = credential_forms(SECRET) | credential_forms(user=USER, password=PASSWORD)
    return out | {BASIC, PASSWORD, SECRET, quote(PASSWORD, safe=""), quote(SECRET, safe="")}


def assert_clean(where: str, blob: bytes | str) -> None:
    text = blob if isinstance(blob, str) else blob.decode("utf-8", "replace")
    found = sorted(f for f in forms() if f in text)
    assert not found, f"{where} holds {found[:3]}"


def every_text_value(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = "
                                             "'table'")]
        out = []
        for t in tables:
            for row in conn.execute(f'SELECT * FROM "{t}"'):
                out += [(t, v if isinstance(v, str) else v.decode("utf-8", "replace"))
                        for v in row if isinstance(v, (str, bytes))]
        return out
    finally:
        conn.close()


@pytest.mark.timeout(300)
def test_a_server_echoing_every_header_gets_no_credential_stored_or_printed(tmp_path: Path) -> None:
    echo = Echo()
    with LoopbackServer(echo) as server:
        host = server.url.removeprefix("http://")
        endpoint = (f"http://{USER}:{quote(PASSWORD, safe='')}@{host}/v1"
                    f"?api_key={quote(SECRET, safe='')}&tenant=a")
        db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
        config.write_text(REGISTRY.format(url=endpoint))
        printed: list[tuple[str, str]] = []

        def here(*args: str) -> None:
            out = lab_here(db, config, *args)
            printed.append((" ".join(args), out.stdout + out.stderr))

        here("demo-set")
        here("enqueue", "--models", "echo", "--conditions", "none", "--regimes", "clean",
             "--set", "demo", "--budget", "4", "--run", "r")
        worker = run_lab(db, config, "worker", "--until-idle")
        assert worker.returncode == 0, worker.stderr[-2000:]
        printed.append(("worker", worker.stdout + worker.stderr))
        here("traces", "collect", "--set", "demo", "--models", "echo", "--run", "t")
        worker = run_lab(db, config, "worker", "--until-idle")
        printed.append(("traces worker", worker.stdout + worker.stderr))
        tried = run_lab(db, config, "try", "--model", "echo", "--condition", "none",
                        "--regime", "clean", "--question", "demo-001")
        printed.append(("try", tried.stdout + tried.stderr))
        assert tried.returncode != 0 and "HTTP 400" in tried.stdout + tried.stderr
    assert echo.auth and all(a == BASIC for a in echo.auth)  # it was sent, every time

    conn = sqlite3.connect(db)
    errors = [e for (e,) in conn.execute("SELECT error FROM episodes")]
    traces = [e for (e,) in conn.execute("SELECT error FROM traces WHERE error IS NOT NULL")]
    conn.close()
    assert errors and all("upstream refused http://127.0.0.1" in e for e in errors), errors[:1]
    assert traces and all("upstream refused" in e for e in traces)
    assert any("retry 1/1" in text for where, text in printed if where == "worker")

    here("status")
    here("tail", "1")
    export, report = tmp_path / "export", tmp_path / "report.html"
    here("export", str(export))
    here("report", "--out", str(report))
    assert (export / "episodes.csv").exists()
    for table, value in every_text_value(db):
        assert_clean(f"lab.db table {table}", value)
    for f in tmp_path.rglob("*"):
        if f.is_file() and f != config:  # lab.toml holds them: it is what the user wrote
            assert_clean(str(f.relative_to(tmp_path)), f.read_bytes())
    for where, text in printed:
        assert_clean(f"the output of {where}", text)


def test_every_form_of_a_credential_is_redacted() -> None:
    remember(["tok-ABCDEFGH-123"], user="alice", password="s3cr3t/pass")
    pair = b"alice:s3cr3t/pass"
    header_dump = b"x-trace: 1\r\nauthorization: Basic " + base64.b64encode(pair)
    for text in (
            "Authorization: Basic " + base64.b64encode(pair).decode(),
            "bearer tok-ABCDEFGH-123 and x-api-key: tok-ABCDEFGH-123",
            "url http://alice:s3cr3t%2Fpass@h/v1 and alice%3As3cr3t%2Fpass",
            json.dumps({"pw": "s3cr3t/pass"}),
            "dump " + base64.b64encode(header_dump).decode(),  # at an offset in base64
            "dump " + base64.b64encode(b"k" + header_dump).decode(),
            "dump " + base64.b64encode(b"kk" + header_dump).decode(),
            "key " + quote("tok-ABCDEFGH-123", safe="")):
        clean = redact(text)
        for secret in ("tok-ABCDEFGH-123", "s3cr3t/pass", "s3cr3t%2Fpass",
                       base64.b64encode(pair).decode()):
            assert secret not in clean, (text, clean)
        assert "***" in clean, text
    offset = base64.b64encode(b"kk" + header_dump).decode()
    assert base64.b64encode(pair).decode()[4:12] not in redact("x " + offset)
