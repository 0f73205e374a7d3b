"""A lean HTTP/1.1 keep-alive client for plain-http JSON POSTs (vLLM on the LAN).

Why: one process drives up to hundreds of concurrent episodes, and every model call
costs CPU on the client. Measured here inside real episodes, the openai SDK costs
~0.8 ms a call and httpx alone ~0.25 ms (URL parsing and models per request, and
httpcore's pool scans every pooled connection, with a socket poll each, twice per
request); 128 episodes against a 100 ms server need ~1,150 calls/s from one core
(docs/performance.md). This pool keeps idle connections in a stack (O(1) per request) on
asyncio streams and raises httpx's exception types, so callers classify failures the
same way whichever client made the call. https endpoints use httpx instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import httpx

from core.models.retry import LOG

_MAX_HEADER_LINES = 200
Response = tuple[int, Mapping[str, str], bytes]
"""(status, lower-case headers, body)."""


class _StaleConnection(Exception):
    """A reused connection closed before the first response byte."""


class StreamPool:
    """Keep-alive connections to one http host, for the event loop that made them.

    Args:
        host: server host.
        port: server port.
        max_idle: idle connections kept (more are closed after use).
        authority: the Host header (default "host:port").
    """

    def __init__(self, host: str, port: int, max_idle: int = 512,
                 authority: str | None = None) -> None:
        self.host = host
        self.port = port
        self.authority = authority or f"{host}:{port}"
        self.max_idle = max_idle
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def post(self, target: str, headers: bytes, body: bytes, connect_timeout: float,
                   read_timeout: float | None) -> Response:
        """POST `body` to `target` and read the whole response.

        Args:
            target: the request path, e.g. "/v1/chat/completions".
            headers: extra header lines, each ending in CRLF.
            body: the request body.
            connect_timeout: seconds to open a new connection.
            read_timeout: seconds from sending to the last response byte; None when
                the caller bounds the whole request itself (no timer of its own).

        Raises:
            httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadTimeout,
            httpx.ReadError, httpx.RemoteProtocolError.
        """
        payload = (f"POST {target} HTTP/1.1\r\nhost: {self.authority}\r\n"
                   f"content-length: {len(body)}\r\n").encode() + headers + b"\r\n" + body
        while True:
            reused, conn = await self._connection(connect_timeout)
            try:
                status, resp_headers, content, keep = await _exchange(conn, payload,
                                                                      read_timeout)
            except _StaleConnection:
                conn[1].close()
                if reused:
                    # The server closed this idle keep-alive connection before sending any
                    # byte of a response (the usual keep-alive race: it times out idle
                    # connections). The POST is sent again, once, on a new connection, and
                    # the retry log says so: a server that read the request and then closed
                    # without answering would see it twice.
                    LOG.warning("retry: re-sending POST %s on a new connection: the server "
                                "closed an idle keep-alive connection without a response",
                                target)
                    self.close()  # the other idle ones are likely stale too: next is fresh
                    continue
                raise httpx.RemoteProtocolError(
                    "server closed the connection without a response") from None
            except BaseException as exc:
                conn[1].close()
                mapped = _mapped(exc)
                if mapped is exc:
                    raise
                raise mapped from exc
            break
        if keep and len(self._idle) < self.max_idle:
            self._idle.append(conn)
        else:
            conn[1].close()
        return status, resp_headers, content

    async def _connection(self, timeout: float
                          ) -> tuple[bool, tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return True, (reader, writer)
            writer.close()
        try:
            async with asyncio.timeout(timeout):
                return False, await asyncio.open_connection(self.host, self.port)
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"connect to {self.host}:{self.port} timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(f"{type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        """Close every idle connection."""
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()


async def _exchange(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], payload: bytes,
                    timeout: float | None) -> tuple[int, dict[str, str], bytes, bool]:
    conn[1].write(payload)
    if timeout is None:  # the caller's own bound ends it
        return await _reply(conn)
    async with asyncio.timeout(timeout):
        return await _reply(conn)


async def _reply(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]
                 ) -> tuple[int, dict[str, str], bytes, bool]:
    """Wait until the request is sent, then read the response (status, headers, body,
    whether the connection may be kept)."""
    reader, writer = conn
    await writer.drain()
    line = await reader.readline()
    if not line:
        raise _StaleConnection
    parts = line.split(b" ", 2)
    status = int(parts[1])
    headers: dict[str, str] = {}
    keep = parts[0] == b"HTTP/1.1"
    for _ in range(_MAX_HEADER_LINES):
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.partition(b":")
        headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    connection = headers.get("connection", "").lower()
    keep = connection == "keep-alive" or (keep and connection != "close")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        content = await _read_chunked(reader)
    elif "content-length" in headers:
        content = await reader.readexactly(int(headers["content-length"]))
    else:
        content, keep = await reader.read(), False
    return status, headers, content, keep


def _mapped(exc: BaseException) -> BaseException:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return httpx.ReadTimeout("no response within the read timeout")
    if isinstance(exc, (asyncio.IncompleteReadError, ValueError, IndexError)):
        return httpx.RemoteProtocolError(f"malformed or cut response ({type(exc).__name__})")
    if isinstance(exc, OSError):
        return httpx.ReadError(f"{type(exc).__name__}: {exc}")
    return exc


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    out = bytearray()
    while True:
        size = int((await reader.readline()).split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)
