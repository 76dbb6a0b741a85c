"""An OpenAI-compatible chat server on 127.0.0.1 whose replies wait at a gate.

Tests that must catch a run in the middle of its work — holding its folder's lock, or with a
model call in flight when a signal arrives — need it to stay there for as long as they take,
however loaded the machine. Sleeping and hoping does not do that; this server does: the first
``answered`` completions are answered at once, the next one waits at the gate (``held`` is
set when it arrives) until the test calls :meth:`GatedServer.release`. Replies are a function
of the request alone, so two runs with the same seed get the same turns.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_GIVE_UP_S = 300.0  # a gate nobody opens lets go by itself: the server never outlives a test


class GatedServer:
    """``with GatedServer(answered=3) as server:`` ... ``server.held.wait(60)`` ...
    ``server.release()``. ``base_url`` is what ``--base-url`` takes."""

    def __init__(self, answered: int = 0) -> None:
        self.answered = answered
        self.held = threading.Event()  # a completion is waiting at the gate
        self._open = threading.Event()
        self._count = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "gated", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length) or b"{}")
                server.wait_turn()
                messages = request.get("messages", [])
                last = next(
                    (m.get("content", "") for m in reversed(messages) if m["role"] == "user"), ""
                )
                text = f"reply {len(messages)}: " + " ".join(str(last).split()[:12])
                try:
                    self._send(
                        {
                            "id": "gated",
                            "object": "chat.completion",
                            "model": request.get("model", "gated"),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 10},
                        }
                    )
                except OSError:  # the client went away while its reply waited
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def wait_turn(self) -> None:
        """Answer at once while under ``answered``; past it, wait for :meth:`release`."""
        with self._lock:
            self._count += 1
            gated = self._count > self.answered and not self._open.is_set()
        if gated:
            self.held.set()
            self._open.wait(_GIVE_UP_S)

    def release(self) -> None:
        """Open the gate for good: every waiting and later completion is answered."""
        self._open.set()

    def __enter__(self) -> GatedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self._httpd.shutdown()
        self._httpd.server_close()
