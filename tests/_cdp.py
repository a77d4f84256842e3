"""A minimal Chrome DevTools Protocol client for browser tests of the HTML map.

Starts headless Chromium with ``--remote-debugging-port=0``, reads the port from the profile's
``DevToolsActivePort`` file and talks to the page over a websocket (``websocket-client``, in the
``test`` extra). Only what the tests need: navigate, evaluate, mouse moves, screenshots, and the
console errors and uncaught exceptions seen so far.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_chromium() -> str | None:
    """The Chromium/Chrome executable: ``$UNIMAP_CHROMIUM`` or the first one on ``PATH``."""
    override = os.environ.get("UNIMAP_CHROMIUM")
    if override:
        return override if shutil.which(override) else None
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """Headless Chromium with one page, driven over CDP. Use as a context manager."""

    def __init__(self, executable: str, width: int = 1200, height: int = 800,
                 timeout: float = 60.0):
        import websocket

        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="unimap-chromium-")
        self.proc = subprocess.Popen(
            [executable, "--headless=new", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check",
             "--no-sandbox", "--disable-gpu", "--disable-extensions", "--mute-audio",
             "--hide-scrollbars", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port = self._port()
            page = self._page_websocket(port)
            self.ws = websocket.create_connection(page, timeout=timeout, suppress_origin=True,
                                                  enable_multithread=False)
        except BaseException:
            self.close()
            raise
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def _port(self) -> int:
        path = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self.proc.returncode}")
            if path.is_file():
                lines = path.read_text().split()
                if lines:
                    return int(lines[0])
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its debugging port")

    def _page_websocket(self, port: int) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                targets = json.load(r)
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
            time.sleep(0.05)
        raise TimeoutError("chromium has no page target")

    def send(self, method: str, params: dict | None = None) -> dict[str, Any]:
        """Call a CDP method and return its result (events that arrive meanwhile are kept)."""
        self._next_id += 1
        ident = self._next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for_event(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event["method"] == method:
                return event
        while True:
            message = json.loads(self.ws.recv())
            if "method" in message:
                self.events.append(message)
                if message["method"] == method:
                    return message

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (promises awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, path: str | os.PathLike, ready: str = "window.unimapMap && "
             "window.unimapMap.ready") -> float:
        """Load a local file and wait until ``ready`` is true; return the seconds it took."""
        start = time.perf_counter()
        self.events.clear()
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()})
        self.wait_for_event("Page.loadEventFired")
        deadline = time.monotonic() + self.timeout
        while not self.evaluate(f"!!({ready})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"page not ready: {ready}")
            time.sleep(0.02)
        return time.perf_counter() - start

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.append(params["entry"].get("text", "")[:500])
        return out

    def mouse_move(self, x: float, y: float) -> None:
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def screenshot(self) -> bytes:
        """The viewport as PNG bytes."""
        return base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
