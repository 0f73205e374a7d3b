"""A small HTTP/1.1 server on asyncio streams, run in a background thread.

Enough HTTP for the SDKs' clients: keep-alive connections, Content-Length bodies,
JSON replies; plus the misbehaviours the fault tests need: a reply that never comes
(hang), a connection reset (RST) after the request was read, and a body that is not
the JSON its Content-Type claims. An app is an async callable Request -> Reply.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable",
            529: "Overloaded"}


@dataclass
class Request:
    """One HTTP request as the app sees it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: str = ""
    """The query string of the request target ("" when none)."""

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    """What the server does with a request.

    Attributes:
        status: HTTP status.
        body: a JSON-able object, or raw bytes sent as they are.
        headers: extra headers.
        action: "respond", "hang" (never answer) or "reset" (RST the connection).
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    action: str = "respond"


App = Callable[[Request], Awaitable[Reply]]


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    line = await reader.readline()
    if not line:
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0") or 0)
    body = await reader.readexactly(n) if n else b""
    path, _, query = path.partition("?")
    return Request(method.upper(), path, headers, body, query)


def _encode(reply: Reply) -> bytes:
    if isinstance(reply.body, bytes):
        payload, ctype = reply.body, "application/json"
    elif reply.body is None:
        payload, ctype = b"", "text/plain"
    else:
        payload, ctype = json.dumps(reply.body).encode(), "application/json"
    head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}",
            f"content-type: {ctype}", f"content-length: {len(payload)}",
            "connection: keep-alive"]
    head += [f"{k}: {v}" for k, v in reply.headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload


class LoopbackServer:
    """Serve an app on 127.0.0.1 from a thread with its own event loop.

    Args:
        app: the request handler.
        port: 0 picks a free port.
        hang_s: how long a "hang" reply waits before giving up on its own.

    Use as a context manager; `url` is "http://127.0.0.1:PORT".
    """

    def __init__(self, app: App, port: int = 0, hang_s: float = 60.0) -> None:
        self.app = app
        self.port = port
        self.hang_s = hang_s
        self.connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return f"http://127.0.0.1:{self.port}"

    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self.connections += 1
        try:
            while True:
                req = await _read_request(reader)
                if req is None:
                    break
                reply = await self.app(req)
                if reply.action == "reset":
                    sock = writer.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return
                if reply.action == "hang":
                    await asyncio.sleep(self.hang_s)
                    return
                writer.write(_encode(reply))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:  # server stopping: end quietly
            return
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._conn, "127.0.0.1", self.port, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def run_forever(self) -> None:
        """Serve in the calling thread until the process ends (for subprocess use)."""
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._serve())

    def _run(self) -> None:
        assert self._loop is not None
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    def start(self) -> LoopbackServer:
        """Start serving in a daemon thread; returns once the port is bound."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("loopback server did not start")
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections, join the thread."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> LoopbackServer:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
