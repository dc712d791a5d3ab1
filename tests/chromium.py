"""Headless Chromium for the report tests, driven over the DevTools
protocol on a pipe (``--remote-debugging-pipe``): no browser library, no
port. The browser is Debian's ``chromium`` package; tests skip when it is
not installed.

Messages are JSON objects separated by NUL bytes: Chromium reads commands
on its file descriptor 3 and writes answers and events on 4.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["Browser", "BrowserError", "chromium_path"]

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
    "--remote-debugging-pipe",
)


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


def _above(fd: int, low: int = 10) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, low)
    os.close(fd)
    return moved


class Browser:
    """One headless browser with one page."""

    def __init__(self, executable: str, *, width: int = 1280, height: int = 900,
                 timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.width, self.height = width, height
        self._profile = tempfile.TemporaryDirectory(prefix="policyspec-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # The child's ends move above 10 first, so that making them 3 and 4
        # cannot overwrite one with the other.
        to_browser_r = _above(to_browser_r)
        from_browser_w = _above(from_browser_w)

        def wire() -> None:  # in the child: the pipes become fds 3 and 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self._process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self._profile.name}",
             f"--window-size={width},{height}", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        try:
            target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            self._session = self.send("Target.attachToTarget",
                                      {"targetId": target, "flatten": True})["sessionId"]
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1,
                       "mobile": False}, page=True)
        except BaseException:
            self.close()
            raise

    # -- protocol -------------------------------------------------------------

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("no answer from chromium in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    raise BrowserError("chromium closed the pipe")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(self, method: str, params: dict[str, Any] | None = None, *, page: bool = False
             ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if page:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result

    # -- page -----------------------------------------------------------------

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, page=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, path: Path, *, scripts: bool = True) -> None:
        """Load a local file and wait until it has loaded."""
        self.send("Emulation.setScriptExecutionDisabled", {"value": not scripts}, page=True)
        url = path.resolve().as_uri()
        self.send("Page.navigate", {"url": url}, page=True)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            state = self.evaluate("location.href + ' ' + document.readyState")
            if state == f"{url} complete":
                return
            time.sleep(0.05)
        raise BrowserError(f"{url} did not load in time")

    def screenshot(self, out: Path, *, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.evaluate("[document.documentElement.scrollWidth, "
                                 "document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": max(size[0], self.width),
                              "height": min(size[1], 16000), "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params, page=True)["data"]
        out.write_bytes(base64.b64decode(data))
        return out

    # -- lifetime -------------------------------------------------------------

    def close(self) -> None:
        try:
            if self._process.poll() is None:
                with contextlib.suppress(BrowserError, OSError):
                    self.send("Browser.close")
                try:
                    self._process.wait(10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(10)
        finally:
            for fd in (self._to_browser, self._from_browser):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
