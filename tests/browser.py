"""A real headless browser for the viewer's tests: Debian's chromium, driven by chromedriver
over the W3C WebDriver protocol (plain HTTP, spoken here with httpx: no Selenium needed).

Chromium is started with the flags this machine needs (no sandbox as root, no GPU, nothing
fetched in the background: its connections to Google would be refused) and a fresh profile.
Console errors are caught twice: by a hook installed before any page script runs (through the
DevTools protocol, so the page's CSP does not apply to it), and by chromedriver's browser log.
"""

from __future__ import annotations

import base64
import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--window-size=1280,900",
]
CATCH_ERRORS = """
window.__loomErrors = [];
const original = console.error.bind(console);
console.error = (...args) => {
  window.__loomErrors.push(args.map(String).join(' '));
  original(...args);
};
window.addEventListener('error', e => window.__loomErrors.push('error: ' + e.message));
window.addEventListener(
  'unhandledrejection', e => window.__loomErrors.push('rejection: ' + e.reason)
);
"""


def available() -> bool:
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class Browser:
    """One chromium session; ``with Browser.start() as browser: browser.open(url)``."""

    def __init__(self, driver: str, session: str, http: httpx.Client):
        self.driver = driver
        self.session = session
        self.http = http

    @classmethod
    @contextlib.contextmanager
    def start(cls) -> Iterator[Browser]:
        port = free_port()
        profile = tempfile.mkdtemp(prefix="loom-chromium-")
        driver = subprocess.Popen(
            [CHROMEDRIVER, f"--port={port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        http = httpx.Client(base_url=base, timeout=60.0)
        try:
            wait_for(base + "/status")
            options = {"binary": CHROMIUM, "args": [*FLAGS, f"--user-data-dir={profile}"]}
            reply = http.post(
                "/session",
                json={
                    "capabilities": {
                        "alwaysMatch": {
                            "browserName": "chrome",
                            "goog:chromeOptions": options,
                            "goog:loggingPrefs": {"browser": "ALL"},
                        }
                    }
                },
            )
            reply.raise_for_status()
            browser = cls(base, reply.json()["value"]["sessionId"], http)
            browser.cdp("Page.addScriptToEvaluateOnNewDocument", {"source": CATCH_ERRORS})
            try:
                yield browser
            finally:
                http.delete(f"/session/{browser.session}")
        finally:
            http.close()
            driver.terminate()
            driver.wait(timeout=10)
            shutil.rmtree(profile, ignore_errors=True)

    def _post(self, path: str, payload: dict[str, Any]) -> Any:
        reply = self.http.post(f"/session/{self.session}{path}", json=payload)
        reply.raise_for_status()
        return reply.json()["value"]

    def cdp(self, command: str, params: dict[str, Any]) -> Any:
        return self._post("/goog/cdp/execute", {"cmd": command, "params": params})

    def open(self, url: str) -> None:
        self._post("/url", {"url": url})
        self.wait_until("return document.readyState === 'complete'")

    def js(self, script: str, *args: Any) -> Any:
        return self._post("/execute/sync", {"script": script, "args": list(args)})

    def wait_until(self, script: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            found = self.js(script)
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for: {script}")
            time.sleep(0.1)

    def console_errors(self) -> list[str]:
        hooked = self.js("return window.__loomErrors || []")
        logged = self._post("/se/log", {"type": "browser"})
        severe = [e["message"] for e in logged if e.get("level") == "SEVERE"]
        return [*hooked, *severe]

    def screenshot(self, path: Path, *, full_page: bool = False) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if full_page:
            shot = self.cdp(
                "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
            )["data"]
        else:
            reply = self.http.get(f"/session/{self.session}/screenshot")
            reply.raise_for_status()
            shot = reply.json()["value"]
        path.write_bytes(base64.b64decode(shot))
