"""A headless Chromium driven over the DevTools protocol on a pipe (the report's browser test).

``--remote-debugging-pipe`` makes Chromium read protocol commands from file descriptor 3
and write replies and events to 4, each a JSON text ended by a NUL byte: no port, no
websocket library, nothing but the standard library. `open_page` loads a page, collects
every console error, uncaught exception and error log entry (a resource that failed to
load is one), and returns a `Page` to evaluate JavaScript and take a screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT = 60.0
"""Seconds any one protocol reply may take (far above a loaded machine's need)."""


def find_browser() -> str | None:
    """The Chromium binary on PATH, if any."""
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


class _Pipe:
    """Protocol messages to and from one browser process."""

    def __init__(self, proc: subprocess.Popen, to_browser: int, from_browser: int) -> None:
        self.proc, self.out, self.inp = proc, to_browser, from_browser
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        while chunk := os.read(self.inp, 1 << 16):
            buf += chunk
            *done, buf = buf.split(b"\0")
            for raw in done:
                self.messages.put(json.loads(raw))
        self.messages.put(None)  # the browser closed its end

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        """Send one command and wait for its reply (events meanwhile are kept)."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = self.messages.get(timeout=max(0.1, deadline - time.monotonic()))
            if reply is None:
                raise RuntimeError(f"the browser exited during {method}")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first event `method` (already received or arriving within `timeout`)."""
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + timeout
        while True:
            message = self.messages.get(timeout=max(0.1, deadline - time.monotonic()))
            if message is None:
                raise RuntimeError(f"the browser exited waiting for {method}")
            self.events.append(message)
            if message.get("method") == method:
                return message


@dataclass
class Page:
    """One loaded page.

    Attributes:
        errors: console errors, uncaught exceptions and error log entries, one line each.
    """

    pipe: _Pipe
    session: str
    errors: list[str] = field(default_factory=list)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (returned by value)."""
        result = self.pipe.call("Runtime.evaluate", {"expression": expression,
                                                     "returnByValue": True}, self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}…: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """A PNG of the first screen (the window's size), written to `path`."""
        shot = self.pipe.call("Page.captureScreenshot", {"format": "png"}, self.session)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def collect_errors(self) -> list[str]:
        """Every error event received so far, one line each."""
        out = []
        for event in self.pipe.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                text = details.get("exception", {}).get("description") or details.get("text")
                out.append(f"exception: {text}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error",
                                                                                  "assert"):
                args = " ".join(str(a.get("value", a.get("description", "")))
                                for a in params.get("args", []))
                out.append(f"console.{params['type']}: {args}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                out.append(f"log ({entry.get('source')}): {entry.get('text')} "
                           f"{entry.get('url', '')}".rstrip())
        self.errors = out
        return out


@contextmanager
def open_page(url: str, width: int = 1280, height: int = 900) -> Iterator[Page]:
    """Load `url` in a fresh headless Chromium and yield the Page once its load event
    fired; the browser is closed afterwards.

    Raises:
        RuntimeError: no Chromium on PATH, or the browser failed.
    """
    with chromium(width, height) as shared:
        with shared.open(url, width, height, shared.first) as page:
            yield page


@dataclass
class Browser:
    """One running headless Chromium, whose tabs load pages one after another.

    Attributes:
        pipe: its protocol pipe.
        first: the tab it opened at start (about:blank).
    """

    pipe: _Pipe
    first: str

    @contextmanager
    def open(self, url: str, width: int = 1280, height: int = 900,
             target: str | None = None) -> Iterator[Page]:
        """Load `url` in a new tab (or in tab `target`) at `width` x `height` CSS pixels
        and yield the Page once its load event fired; a new tab is closed afterwards.
        The events received before the page is loaded (another tab's) are dropped, so
        the Page's errors are its own."""
        pipe = self.pipe
        made = target is None
        if target is None:
            target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        try:
            session = pipe.call("Target.attachToTarget", {"targetId": target,
                                                          "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                pipe.call(f"{domain}.enable", session=session)
            pipe.call("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1,
                       "mobile": False}, session)
            pipe.events.clear()  # about:blank's events (and other tabs') are not the page's
            pipe.call("Page.navigate", {"url": url}, session)
            pipe.wait_event("Page.loadEventFired")
            yield Page(pipe, session)
        finally:
            if made:
                pipe.call("Target.closeTarget", {"targetId": target})


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Browser]:
    """A fresh headless Chromium (window `width` x `height`), closed afterwards: pages
    load in it with `Browser.open`, one tab each, so several checks start it once.

    Raises:
        RuntimeError: no Chromium on PATH, or the browser failed.
    """
    browser = find_browser()
    if browser is None:
        raise RuntimeError("no chromium on PATH")
    cmd_r, cmd_w = os.pipe()
    res_r, res_w = os.pipe()

    def fds() -> None:  # the browser's protocol ends: commands on 3, replies on 4
        os.dup2(cmd_r, 3)
        os.dup2(res_w, 4)

    with tempfile.TemporaryDirectory(prefix="lab-chromium-") as profile:
        proc = subprocess.Popen(
            [browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, pass_fds=(3, 4))
        os.close(cmd_r)
        os.close(res_w)
        pipe = _Pipe(proc, cmd_w, res_r)
        try:
            deadline = time.monotonic() + TIMEOUT
            while True:
                targets = pipe.call("Target.getTargets")["targetInfos"]
                page = next((t for t in targets if t["type"] == "page"), None)
                if page or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            if page is None:
                raise RuntimeError("the browser opened no page")
            yield Browser(pipe, page["targetId"])
        finally:
            try:
                pipe.call("Browser.close")
            except (RuntimeError, queue.Empty, OSError):
                pass  # it may already be gone; it is killed below either way
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            os.close(cmd_w)
            os.close(res_r)
