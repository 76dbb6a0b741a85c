#!/usr/bin/env python3
"""Capture real program replies and prompt lines for two blind validity sets.

Runs real command-line programs on this machine (bash, curl, git, make, npm, node, psql,
python3, IPython, sqlite3, bc, perl, gdb, dash) inside pseudo-terminals (the ``pty``
module), renders what they print with a small terminal emulator (ANSI codes removed,
carriage returns and cursor moves applied), and writes:

* ``harness_failure_pattern.jsonl``: the reply to one command, labelled ``failed``;
* ``harness_continuation.jsonl``: the line the cursor sits on, labelled ``continuation``.

Labels are set per case in this file from what happened (the exit status where a command
has one, and a reading of the reply); the script checks the exit status and the prompts it
reaches against what each case expects and reports any disagreement, so a label never comes
from pattern-matching the captured text.

Only local resources are used: a tiny HTTP server on 127.0.0.1 started here, unresolvable
``.invalid`` hosts, closed local ports, a throwaway PostgreSQL cluster on a unix socket in
the temporary folder (when a server binary exists under /usr/lib/postgresql), and files made
in a temporary folder. Temporary paths, ports and timings are normalised so that a second
run gives the same ids and the same texts.

Usage: python3 scripts/capture_program_outputs.py [--out DIR] [--keep]
Stdlib only. Run as root or as a normal user (the PostgreSQL cluster needs a non-root owner:
as root it is run as the ``postgres`` user).
"""

from __future__ import annotations

import argparse
import fcntl
import http.server
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import termios
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "data" / "validity" / "blind"
NORM_DIR = "/tmp/capture"
NORM_PORT = "8000"
NORM_CLOSED_PORT = "9"
FIXED_HTTP_DATE = "Mon, 05 Jan 2026 10:00:00 GMT"
GIT_DATE = "2026-01-05T10:00:00+00:00"

WARNINGS: list[str] = []


def warn(msg: str) -> None:
    WARNINGS.append(msg)
    print("WARNING:", msg, file=sys.stderr)


# --------------------------------------------------------------------------------------
# A small terminal emulator: enough of VT100/xterm for REPL prompts and command output.
# --------------------------------------------------------------------------------------
CSI_RE = re.compile(r"\x1b\[([?>=]?)([0-9;]*)([ -/]*)([@-~])")


class Screen:
    """Unbounded screen (no scrolling loss): rows of characters plus a cursor."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = [[]]
        self.r = 0
        self.c = 0
        self.pending = ""  # an incomplete escape sequence split across reads

    def _row(self) -> list[str]:
        while len(self.rows) <= self.r:
            self.rows.append([])
        return self.rows[self.r]

    def _put(self, ch: str) -> None:
        row = self._row()
        while len(row) < self.c:
            row.append(" ")
        if self.c < len(row):
            row[self.c] = ch
        else:
            row.append(ch)
        self.c += 1

    def feed(self, s: str) -> None:
        s = self.pending + s
        self.pending = ""
        i, n = 0, len(s)
        while i < n:
            ch = s[i]
            if ch == "\x1b":
                if i + 1 >= n:
                    self.pending = s[i:]
                    return
                nxt = s[i + 1]
                if nxt == "[":
                    m = CSI_RE.match(s, i)
                    if not m:
                        if re.fullmatch(r"\x1b\[[?>=]?[0-9;]*[ -/]*", s[i:]):
                            self.pending = s[i:]
                            return
                        i += 2
                        continue
                    self._csi(m.group(1), m.group(2), m.group(4))
                    i = m.end()
                    continue
                if nxt == "]":  # OSC ... BEL or ST
                    j = i + 2
                    while (
                        j < n
                        and s[j] != "\x07"
                        and not (s[j] == "\x1b" and j + 1 < n and s[j + 1] == "\\")
                    ):
                        j += 1
                    if j >= n:
                        self.pending = s[i:]
                        return
                    i = j + (1 if s[j] == "\x07" else 2)
                    continue
                if nxt in "()#":
                    i += 3
                    continue
                i += 2
                continue
            if ch == "\r":
                self.c = 0
            elif ch == "\n":
                self.r += 1
                self._row()
            elif ch == "\b":
                self.c = max(0, self.c - 1)
            elif ch == "\t":
                self.c = (self.c // 8 + 1) * 8
            elif ord(ch) < 32 or ch == "\x7f":
                pass
            else:
                self._put(ch)
            i += 1

    def _csi(self, priv: str, params: str, final: str) -> None:
        if priv:
            return
        ps = [int(p) if p else 0 for p in params.split(";")] if params else []
        p1 = ps[0] if ps else 0
        if final == "A":
            self.r = max(0, self.r - (p1 or 1))
        elif final == "B":
            self.r += p1 or 1
            self._row()
        elif final == "C":
            self.c += p1 or 1
        elif final == "D":
            self.c = max(0, self.c - (p1 or 1))
        elif final == "G":
            self.c = max(0, (p1 or 1) - 1)
        elif final == "K":
            row = self._row()
            if p1 == 0:
                del row[self.c :]
            elif p1 == 1:
                for k in range(min(self.c + 1, len(row))):
                    row[k] = " "
            else:
                row.clear()
        elif final == "J":
            if p1 == 0:
                del self._row()[self.c :]
                del self.rows[self.r + 1 :]
        elif final == "P":
            row = self._row()
            del row[self.c : self.c + (p1 or 1)]
        elif final == "@":
            row = self._row()
            for _ in range(p1 or 1):
                row.insert(self.c, " ")
        elif final == "X":
            row = self._row()
            for k in range(self.c, min(len(row), self.c + (p1 or 1))):
                row[k] = " "

    def line(self, k: int) -> str:
        return "".join(self.rows[k]) if 0 <= k < len(self.rows) else ""

    def cursor_line(self) -> str:
        s = "".join(self._row())
        if len(s) < self.c:
            s += " " * (self.c - len(s))
        return s


class Session:
    """A program running in a pseudo-terminal, with its rendered screen."""

    def __init__(
        self, argv: list[str], env: dict, cwd: str | None = None, cols: int = 200, rows: int = 50
    ) -> None:
        self.argv = argv
        pid, fd = pty.fork()
        if pid == 0:  # child
            try:
                if cwd:
                    os.chdir(cwd)
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.raw = ""
        self.screen = Screen()
        self.alive = True

    def read(
        self, settle: float = 0.4, timeout: float = 20.0, until=None, raw_until=None, start: int = 0
    ) -> bool:
        """Read until `settle` seconds pass with no output and the `until` regex matches the
        cursor line (and `raw_until` matches the raw text after `start`). True if matched."""
        end = time.time() + timeout
        last = time.time()
        while time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    self.alive = False
                    break
                if not data:
                    self.alive = False
                    break
                t = data.decode("utf-8", "replace")
                self.raw += t
                self.screen.feed(t)
                if "\x1b[6n" in t:  # cursor position request (prompt_toolkit)
                    self.send(f"\x1b[{self.screen.r + 1};{self.screen.c + 1}R")
                last = time.time()
            elif time.time() - last >= settle:
                ok = until is None or re.search(until, self.screen.cursor_line())
                ok = ok and (raw_until is None or re.search(raw_until, self.raw[start:]))
                if ok:
                    return True
        if not self.alive:
            return until is None
        return False

    def send(self, s: str) -> None:
        os.write(self.fd, s.encode())

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


# --------------------------------------------------------------------------------------
# Normalisation of temp paths, ports and timings.
# --------------------------------------------------------------------------------------
class Normaliser:
    def __init__(self) -> None:
        self.paths: list[str] = []
        self.ports: dict[str, str] = {}

    def __call__(self, s: str) -> str:
        for p in sorted(self.paths, key=len, reverse=True):
            s = s.replace(p, NORM_DIR)
        for port, fixed in self.ports.items():
            s = re.sub(rf"(127\.0\.0\.1|localhost)(:|\"?, port ){port}\b", rf"\g<1>\g<2>{fixed}", s)
            s = re.sub(rf"\bport {port}\b", f"port {fixed}", s)
        s = re.sub(
            r"\d{4}-\d\d-\d\dT\d\d_\d\d_\d\d_\d{3}Z", "2026-01-05T10_00_00_000Z", s
        )  # npm logs
        s = re.sub(r"after \d+ milliseconds", "after 1000 milliseconds", s)  # curl timeouts
        s = re.sub(r"after \d+ ms\b", "after 0 ms", s)  # curl connect failures
        s = re.sub(r"(package|packages) in \d+(\.\d+)?m?s\b", r"\1 in 500ms", s)  # npm install
        s = re.sub(r"\b0x[0-9a-f]{8,}\b", "0x55d5c0ffee00", s)  # perl/node addresses
        s = re.sub(r"(Ran \d+ tests?) in \d+\.\d+s\b", r"\1 in 0.001s", s)  # unittest
        s = re.sub(r"duration_ms [\d.]+", "duration_ms 12.5", s)  # node --test
        s = re.sub(
            r"(?m)^(\s*[\u2714\u2716] .*) \(\d+(\.\d+)?ms\)$", r"\1 (1.0ms)", s
        )  # node --test per test
        s = re.sub(r"Time: [\d.]+ ms", "Time: 0.500 ms", s)  # psql \timing
        return s


# --------------------------------------------------------------------------------------
# Local HTTP server for curl.
# --------------------------------------------------------------------------------------
APP_LOG = textwrap.dedent("""\
    2026-01-05 09:58:01 INFO  worker started pid=4121
    2026-01-05 09:58:03 ERROR upstream timed out (billing-api)
    2026-01-05 09:58:04 INFO  retrying request 7f3a
    2026-01-05 09:58:09 ERROR connection reset by peer
    2026-01-05 09:59:12 INFO  job 118 done in 2.1s
    2026-01-05 09:59:40 WARN  slow query (1.8s)
    """)


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "capture-httpd/1.0"
    sys_version = ""
    protocol_version = "HTTP/1.0"

    def date_time_string(self, timestamp=None):  # fixed, so replies reproduce
        return FIXED_HTTP_DATE

    def log_message(self, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # curl --max-time hung up
            pass

    def _send(
        self,
        code: int,
        body: str,
        ctype: str = "text/plain; charset=utf-8",
        extra: dict | None = None,
    ) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        p = self.path
        if p == "/hello.txt":
            self._send(200, "hello from the capture server\n")
        elif p == "/api/orders":
            self._send(
                500, '{"error": "database unavailable", "code": "DB_DOWN"}\n', "application/json"
            )
        elif p == "/api/status":
            self._send(
                503,
                "Service Unavailable: maintenance in progress, try again later\n",
                extra={"Retry-After": "120"},
            )
        elif p == "/api/health":
            self._send(
                200,
                '{"status": "ok", "error": null, "checks": {"db": "ok", "cache": "ok"}}\n',
                "application/json",
            )
        elif p == "/logs/app.log":
            self._send(200, APP_LOG)
        elif p == "/docs/errors.html":
            self._send(
                200,
                "<html><head><title>Error codes</title></head><body>\n"
                "<h1>Error codes</h1>\n<p>E101 means the token expired; E102 means the"
                " quota is used up.</p>\n</body></html>\n",
                "text/html",
            )
        elif p == "/old-page":
            self._send(301, "", extra={"Location": "/hello.txt"})
        elif p == "/admin":
            self._send(
                401, "authentication required\n", extra={"WWW-Authenticate": 'Basic realm="admin"'}
            )
        elif p == "/slow":
            time.sleep(3)
            self._send(200, "finally\n")
        elif p.startswith("/api/items"):
            self._send(
                200,
                '[{"id": 11, "name": "lamp"}, {"id": 12, "name": "desk"}]\n',
                "application/json",
            )
        else:
            self.send_error(404)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        if self.path == "/api/items":
            self._send(
                201,
                '{"id": 42, "name": "chair"}\n',
                "application/json",
                extra={"Location": "/api/items/42"},
            )
        elif self.path == "/api/validate":
            self._send(
                422,
                '{"errors": [{"field": "email", "message": "not a valid address"}]}\n',
                "application/json",
            )
        else:
            self.send_error(405)


def free_port(preferred: int) -> int:
    for port in (preferred, 0):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            got = s.getsockname()[1]
            s.close()
            return got
        except OSError:
            s.close()
    raise RuntimeError("no free port")


# --------------------------------------------------------------------------------------
# Environment and fixtures.
# --------------------------------------------------------------------------------------
def base_env(work: Path) -> dict:
    home = work / "home"
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "xterm",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "MANPAGER": "cat",
        "GIT_AUTHOR_NAME": "Dana Kim",
        "GIT_AUTHOR_EMAIL": "dana@example.org",
        "GIT_COMMITTER_NAME": "Dana Kim",
        "GIT_COMMITTER_EMAIL": "dana@example.org",
        "GIT_AUTHOR_DATE": GIT_DATE,
        "GIT_COMMITTER_DATE": GIT_DATE,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "npm_config_registry": "http://127.0.0.1:9/",
        "npm_config_offline": "true",
        "npm_config_audit": "false",
        "npm_config_fund": "false",
        "npm_config_update_notifier": "false",
        "npm_config_cache": str(home / ".npm"),
        "NODE_REPL_HISTORY": "",
        "PSQL_HISTORY": str(home / ".psql_history"),
        "PSQLRC": "/dev/null",
        "SQLITE_HISTORY": str(home / ".sqlite_history"),
        "HISTFILE": str(home / ".bash_history"),
        "IPYTHONDIR": str(home / ".ipython"),
        "MPLBACKEND": "Agg",
    }
    for k in ("PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def run(cmd, env, cwd=None, check=True, user=None):
    if user:
        cmd = ["runuser", "-u", user, "--"] + cmd
    r = subprocess.run(
        cmd,
        check=False,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if check and r.returncode != 0:
        raise RuntimeError(f"setup failed: {cmd}: {r.stdout}")
    return r


def write(path: Path, text: str, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    if mode is not None:
        path.chmod(mode)


def make_fixtures(work: Path, env: dict) -> None:
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    write(
        home / ".gitconfig",
        """\
        [init]
        \tdefaultBranch = main
        [advice]
        \tdetachedHead = false
        [color]
        \tui = auto
        """,
    )
    # --- shell files
    sh = work / "sh"
    write(sh / "app.log", APP_LOG)
    write(
        sh / "clean.log",
        "2026-01-05 10:01:00 INFO  all good\n2026-01-05 10:02:00 INFO  still good\n",
    )
    write(
        sh / "notes.txt",
        "todo:\n- error handling: see section 3 of the design doc\n- rename the cache flag\n",
    )
    write(sh / "a.txt", "alpha\n")
    write(sh / "deploy.sh", "#!/bin/sh\necho deploying\n", mode=0o644)
    # --- git
    g = work / "repo"
    g.mkdir()
    run(["git", "init", "-q"], env, cwd=g)
    write(
        g / "app.py",
        """\
        def parse(line):
            parts = line.split(",")
            return parts
        """,
    )
    write(g / "README.md", "# demo\n")
    run(["git", "add", "."], env, cwd=g)
    run(["git", "commit", "-q", "-m", "initial parser"], env, cwd=g)
    write(
        g / "app.py",
        """\
        def parse(line):
            parts = line.split(",")
            if not parts:
                raise ValueError("empty line: error in input")
            return parts
        """,
    )
    run(["git", "commit", "-q", "-am", "fix error handling in parser"], env, cwd=g)
    run(["git", "checkout", "-q", "-b", "feature"], env, cwd=g)
    write(
        g / "app.py",
        """\
        def parse(line):
            parts = line.split(";")
            if not parts:
                raise ValueError("empty line: error in input")
            return parts
        """,
    )
    run(["git", "commit", "-q", "-am", "switch separator to semicolon"], env, cwd=g)
    run(["git", "checkout", "-q", "main"], env, cwd=g)
    run(["git", "checkout", "-q", "-b", "docs"], env, cwd=g)
    write(g / "errors.md", "# Errors\n\nE101: token expired\nE102: quota used up\n")
    run(["git", "add", "errors.md"], env, cwd=g)
    run(["git", "commit", "-q", "-m", "document error codes"], env, cwd=g)
    run(["git", "checkout", "-q", "main"], env, cwd=g)
    write(
        g / "app.py",
        """\
        def parse(line):
            parts = line.split("|")
            if not parts:
                raise ValueError("empty line: error in input")
            return parts
        """,
    )
    run(["git", "commit", "-q", "-am", "use pipe separator"], env, cwd=g)
    run(["git", "tag", "v0.1"], env, cwd=g)
    write(
        g / "app.py",
        """\
        def parse(line):
            parts = line.split("|")
            if not parts:
                raise ValueError("empty line: error in input")
            return [p.strip() for p in parts]
        """,
    )  # an uncommitted change for `git diff`
    (work / "norepo").mkdir()
    # --- make
    mk = work / "mk"
    write(
        mk / "Makefile",
        """\
        VERSION := 1.2.3
        CC := gcc

        all: app
        \t@echo "build finished"

        app: main.c
        \t$(CC) -o app main.c

        test:
        \t@echo "running 40 tests"
        \t@echo "tests failed: 3 of 40"
        \t@exit 2

        lint:
        \t@echo "checked 14 files"
        \t@echo "0 errors, 0 warnings"

        grep-errors:
        \t@grep ERROR ../sh/app.log

        help:
        \t@echo "targets:"
        \t@echo "  all           build the app"
        \t@echo "  clean-errors  remove old error logs"
        \t@echo "  test          run the tests"

        report: data.csv
        \t@echo "report built"

        warn: warn.c
        \t$(CC) -Wall -o warn warn.c

        strict: warn.c
        \t$(CC) -Wall -Werror -o strict warn.c

        broken: broken.c
        \t$(CC) -o broken broken.c

        deploy-prod:
        \trsync -a build/ prod:/srv/app
        \tssh prod systemctl restart app

        check-log:
        \t@echo "scanned 3 runs: no failures found"

        print-%:
        \t@echo '$* = $($*)'
        """,
    )
    write(mk / "main.c", '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n')
    write(
        mk / "warn.c",
        '#include <stdio.h>\nint main(void) {\n    int unused;\n    puts("hi");\n    return 0;\n}\n',
    )
    write(
        mk / "broken.c",
        '#include <stdio.h>\nint main(void) {\n    printf("%d\\n", count);\n    return 0;\n}\n',
    )
    write(work / "mk-bad" / "Makefile", 'all:\n    echo "indented with spaces"\n')
    # --- npm
    npm = work / "npmproj"
    write(
        npm / "package.json",
        json.dumps(
            {
                "name": "demo",
                "version": "1.0.0",
                "private": True,
                "scripts": {
                    "build": "node build.js",
                    "test": "node --test test/",
                    "test:errors": "node --test test-bad/",
                    "lint": "node lint.js",
                    "start": "node server.js",
                },
            },
            indent=2,
        )
        + "\n",
    )
    write(npm / "build.js", 'console.log("built 12 files into dist/");\n')
    write(
        npm / "lint.js",
        'console.log("\\n/src/index.js");\nconsole.log("\\n0 problems (0 errors, 0 warnings)");\n',
    )
    write(
        npm / "server.js",
        'const cfg = require("./config.json");\nconsole.log("listening on", cfg.port);\n',
    )
    write(
        npm / "test" / "math.test.js",
        """\
        const test = require("node:test");
        const assert = require("node:assert");
        test("adds", () => assert.strictEqual(1 + 1, 2));
        test("multiplies", () => assert.strictEqual(2 * 3, 6));
        """,
    )
    write(
        npm / "test-bad" / "math.test.js",
        """\
        const test = require("node:test");
        const assert = require("node:assert");
        test("adds prices", () => assert.strictEqual(0.1 + 0.2, 0.3));
        """,
    )
    write(
        work / "npmbad" / "package.json",
        '{\n  "name": "broken",\n  "version": "1.0.0",\n  "scripts": {\n    "build": "tsc"\n  },\n}\n',
    )
    (work / "npmnew").mkdir()
    write(
        work / "localdep" / "package.json",
        json.dumps({"name": "localdep", "version": "0.3.0", "main": "index.js"}, indent=2) + "\n",
    )
    write(work / "localdep" / "index.js", "module.exports = () => 42;\n")
    # --- python helpers
    py = work / "py"
    write(py / "good.json", '{"name": "lamp", "tags": ["home", "light"], "price": 19.5}\n')
    write(py / "bad.json", "{'name': 'lamp'}\n")
    write(
        py / "test_ok.py",
        """\
        import unittest

        class T(unittest.TestCase):
            def test_a(self):
                self.assertEqual(1 + 1, 2)

            def test_b(self):
                self.assertIn("err", "error")

            def test_c(self):
                self.assertTrue(True)
        """,
    )
    write(
        py / "test_bad.py",
        """\
        import unittest

        class T(unittest.TestCase):
            def test_total(self):
                self.assertEqual(sum([0.1, 0.2]), 0.3)

            def test_ok(self):
                self.assertEqual(2 * 2, 4)
        """,
    )
    write(py / "data.txt", "line one\nline two\n")
    # --- perl
    pl = work / "pl"
    write(pl / "app.log", APP_LOG)
    write(
        pl / "script.pl",
        'use strict;\nuse warnings;\nmy @n = (1, 2, 3);\nprint scalar(@n), "\\n";\n',
    )
    write(
        pl / "broken.pl",
        "use strict;\nmy $total = 0;\nforeach my $n (1..3) {\n    $total += $n\n    print $total;\n}\n",
    )
    # --- sqlite
    sq = work / "sq"
    sq.mkdir()
    con = sqlite3.connect(sq / "shop.db")
    con.executescript("""
        create table users(id integer primary key, name text not null, email text unique);
        insert into users values (1, 'alice', 'alice@example.org'), (2, 'bob', 'bob@example.org'),
                                 (3, 'chen', 'chen@example.org');
        create table orders(id integer primary key, user_id integer references users(id), total real);
        insert into orders values (10, 1, 19.5), (11, 2, 5.25);
        create table logs(id integer primary key, level text, message text);
        insert into logs(level, message) values ('INFO', 'started'),
            ('ERROR', 'Error: connection reset'), ('ERROR', 'disk quota exceeded'),
            ('WARN', 'slow query'), ('ERROR', 'timeout talking to billing');
    """)
    con.commit()
    con.close()


# --------------------------------------------------------------------------------------
# PostgreSQL throwaway cluster.
# --------------------------------------------------------------------------------------
class Postgres:
    def __init__(self, work: Path, env: dict) -> None:
        self.work, self.env = work, env
        self.sock = work / "pgsock"
        self.data = work / "pgdata"
        self.bin: Path | None = None
        self.user: str | None = None
        self.started = False  # running and set up
        self.running = False
        self.version = "not installed"

    def start(self) -> bool:
        cands = (
            sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
            if Path("/usr/lib/postgresql").exists()
            else []
        )
        if not cands:
            warn("no PostgreSQL server binary: psql server cases skipped")
            return False
        self.bin = cands[-1].parent
        if os.geteuid() == 0:
            try:
                import pwd

                pwd.getpwnam("postgres")
                self.user = "postgres"
            except KeyError:
                warn("running as root without a postgres user: psql server cases skipped")
                return False
        self.sock.mkdir()
        self.data.mkdir()
        if self.user:
            shutil.chown(self.sock, self.user)
            shutil.chown(self.data, self.user)
        env = dict(self.env, LC_ALL="C.UTF-8")
        run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
            ],
            env,
            user=self.user,
        )
        run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.data / "server.log"),
                "-o",
                f"-k {self.sock} -c listen_addresses='' -c port=5432",
                "-w",
                "start",
            ],
            env,
            user=self.user,
        )
        self.running = True
        self.version = run([str(self.bin / "postgres"), "--version"], env).stdout.strip()
        self.sql("postgres", "postgres", "create role app login")
        self.sql("postgres", "postgres", "create database shop owner app")
        self.sql(
            "app",
            "shop",
            """
            create table orders(id int primary key, customer text not null, status text, total numeric(8,2));
            insert into orders values (1, 'alice', 'paid', 19.50), (2, 'bob', 'shipped', 5.25),
                                      (3, 'chen', 'paid', 42.00);
            create table jobs(id int primary key, name text, error text);
            insert into jobs values (1, 'nightly-export', null), (2, 'resize-images', null);
        """,
        )
        self.started = True
        return True

    def sql(self, user: str, db: str, text: str) -> None:
        run(
            [
                "psql",
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                str(self.sock),
                "-U",
                user,
                "-d",
                db,
                "-c",
                text,
            ],
            self.env,
        )

    def stop(self) -> None:
        if self.running:
            run(
                [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
                self.env,
                check=False,
                user=self.user,
            )


# --------------------------------------------------------------------------------------
# Failure-pattern cases.
#   Shell cases: (program, command, failed, kind, expect, note); `expect` is the exit status
#   expected: 0, "nz" (non-zero) or a number; a mismatch is reported.
#   REPL cases: (command lines, failed, kind, note).
# --------------------------------------------------------------------------------------
# `H` is replaced by the local server's address, `C` by a closed local port.
SHELL_CASES = [
    # ---- curl
    ("sh", "curl", "curl -s http://H/hello.txt", False, "plain", 0, "200 with a plain body"),
    (
        "sh",
        "curl",
        "curl -i http://H/missing",
        True,
        "plain",
        0,
        "404 shown by -i; curl itself exits 0",
    ),
    ("sh", "curl", "curl -f http://H/missing", True, "plain", 22, "-f turns the 404 into exit 22"),
    (
        "sh",
        "curl",
        "curl -i http://H/api/orders",
        True,
        "plain",
        0,
        "500 Internal Server Error shown by -i",
    ),
    (
        "sh",
        "curl",
        "curl -sS -i http://H/api/status",
        True,
        "paraphrase",
        0,
        "503, body says try again later",
    ),
    ("sh", "curl", "curl http://nonexistent.invalid/", True, "plain", 6, "DNS failure, local"),
    ("sh", "curl", "curl http://127.0.0.1:C/", True, "plain", 7, "closed port"),
    ("sh", "curl", "curl -s http://H/api/health", False, "near-miss", 0, 'JSON with "error": null'),
    (
        "sh",
        "curl",
        "curl -s http://H/logs/app.log | grep ERROR",
        False,
        "shared-words",
        0,
        "a log grepped for ERROR; the fetch worked",
    ),
    (
        "sh",
        "curl",
        "curl -i http://H/docs/errors.html",
        False,
        "shared-words",
        0,
        "200 page titled Error codes",
    ),
    (
        "sh",
        "curl",
        'curl -s -o /dev/null -w "%{http_code}\\n" http://H/hello.txt',
        False,
        "plain",
        0,
        "status 200",
    ),
    ("sh", "curl", "curl -I http://H/hello.txt", False, "plain", 0, "HEAD 200"),
    (
        "sh",
        "curl",
        "curl -s http://H/api/orders",
        True,
        "buried",
        0,
        "no status shown, but the body reports the server error",
    ),
    ("sh", "curl", "curl -sL http://H/old-page", False, "plain", 0, "redirect followed to a 200"),
    ("sh", "curl", "curl -i http://H/admin", True, "plain", 0, "401 Unauthorized"),
    ("sh", "curl", "curl --max-time 1 http://H/slow", True, "plain", 28, "timeout"),
    (
        "sh",
        "curl",
        "curl -s -i -X POST -H 'Content-Type: application/json' -d '{\"name\":\"chair\"}' http://H/api/items",
        False,
        "plain",
        0,
        "201 Created",
    ),
    ("sh", "curl", "curl htp://127.0.0.1/", True, "plain", 1, "typo in the scheme"),
    ("sh", "curl", "curl -s 'http://H/api/items?page=2'", False, "plain", 0, None),
    ("sh", "curl", "curl -s http://H/logs/app.log | tail -n 2", False, "plain", 0, None),
    (
        "sh",
        "curl",
        "curl -s -i -X POST -d 'email=nope' http://H/api/validate",
        True,
        "plain",
        0,
        "422 Unprocessable Entity with an errors list",
    ),
    # ---- git
    ("repo", "git", "git status", False, "plain", 0, "uncommitted change listed"),
    (
        "repo",
        "git",
        "git log --oneline -4 --all",
        False,
        "shared-words",
        0,
        "a commit message says fix error handling",
    ),
    ("repo", "git", "git checkout nonexistent-branch", True, "plain", "nz", None),
    ("repo", "git", "git diff", False, "shared-words", 0, "diff context contains ValueError/error"),
    ("repo", "git", "git stash", False, "plain", 0, None),
    ("repo", "git", "git merge feature", True, "plain", "nz", "merge conflict"),
    ("repo", "git", "git merge --abort", False, "empty", 0, None),
    (
        "repo",
        "git",
        "git merge --no-edit docs",
        False,
        "shared-words",
        0,
        "clean merge adding errors.md",
    ),
    ("repo", "git", "git cherry-pick feature", True, "buried", "nz", "conflict while applying"),
    ("repo", "git", "git cherry-pick --abort", False, "empty", 0, None),
    ("repo", "git", "git stash pop", False, "plain", 0, "stash re-applied"),
    ("repo", "git", "git stash pop", True, "paraphrase", "nz", "no stash left"),
    ("repo", "git", "git comit -m 'tidy'", True, "plain", "nz", "unknown subcommand"),
    ("repo", "git", "git add missing.txt", True, "plain", "nz", None),
    ("repo", "git", "git push", True, "plain", "nz", "no remote configured"),
    ("repo", "git", "git pull", True, "paraphrase", "nz", "no tracking information"),
    ("repo", "git", "git branch -a", False, "plain", 0, None),
    (
        "repo",
        "git",
        "git grep -n error",
        False,
        "shared-words",
        0,
        "grep for error in tracked files",
    ),
    ("repo", "git", "git checkout -b feature", True, "plain", "nz", "branch already exists"),
    ("repo", "git", "git show --stat v0.1", False, "plain", 0, None),
    ("repo", "git", "git log -1 --format=%B docs", False, "shared-words", 0, None),
    ("norepo", "git", "git status", True, "plain", "nz", "not a repository"),
    (
        "norepo",
        "git",
        "git clone http://nonexistent.invalid/team/tool.git",
        True,
        "buried",
        "nz",
        "Cloning into... then a fatal line",
    ),
    # ---- make
    ("mk", "make", "make", False, "plain", 0, None),
    ("mk", "make", "make app", False, "near-miss", 0, "nothing to rebuild"),
    ("mk", "make", "make deploy", True, "plain", "nz", "no rule"),
    ("mk", "make", "make test", True, "plain", "nz", "recipe exits 2"),
    ("mk", "make", "make lint", False, "shared-words", 0, "0 errors, 0 warnings"),
    ("mk", "make", "make grep-errors", False, "shared-words", 0, "greps a log for ERROR"),
    ("mk", "make", "make help", False, "shared-words", 0, None),
    ("mk", "make", "make report", True, "plain", "nz", "missing prerequisite"),
    ("mk", "make", "make warn", False, "near-miss", 0, "a compiler warning, build succeeds"),
    (
        "mk",
        "make",
        "make strict",
        True,
        "warning-as-failure",
        "nz",
        "-Werror turns the warning into a failure",
    ),
    ("mk", "make", "make broken", True, "plain", "nz", "compile error"),
    ("mk", "make", "make -n deploy-prod", False, "plain", 0, "dry run prints the commands"),
    ("mk", "make", "make print-VERSION", False, "plain", 0, None),
    ("mk", "make", "make check-log", False, "near-miss", 0, "reports that nothing failed"),
    ("mk", "make", "make -C ../nowhere", True, "plain", "nz", None),
    ("mk-bad", "make", "make", True, "plain", "nz", "missing separator"),
    # ---- npm
    ("npmproj", "npm", "npm run build", False, "plain", 0, None),
    ("npmproj", "npm", "npm run deploy", True, "plain", "nz", "missing script"),
    ("npmproj", "npm", "npm test", False, "near-miss", 0, "node test runner: fail 0"),
    ("npmproj", "npm", "npm run test:errors", True, "plain", "nz", "a failing test"),
    (
        "npmproj",
        "npm",
        "npm run lint",
        False,
        "shared-words",
        0,
        "0 problems (0 errors, 0 warnings)",
    ),
    ("npmproj", "npm", "npm start", True, "plain", "nz", "the script throws: config.json missing"),
    ("npmproj", "npm", "npm run", False, "shared-words", 0, "lists scripts, one named test:errors"),
    ("npmproj", "npm", "npm pkg get name version", False, "plain", 0, None),
    ("npmproj", "npm", "npm view left-pad version", True, "plain", "nz", "offline: not cached"),
    ("npmproj", "npm", "npm rnu build", True, "plain", "nz", "unknown command"),
    ("npmproj", "npm", "npm install ../localdep", False, "plain", 0, "local folder dependency"),
    ("npmproj", "npm", "npm ls", False, "plain", 0, None),
    ("npmproj", "npm", "npm install ./no-such-folder", True, "plain", "nz", None),
    ("npmproj", "npm", "npm config get registry", False, "plain", 0, None),
    ("npmproj", "npm", "npm pkg get scripts.test:errors", False, "shared-words", 0, None),
    ("npmbad", "npm", "npm run build", True, "plain", "nz", "package.json is not valid JSON"),
    ("npmnew", "npm", "npm init -y", False, "plain", 0, None),
    # ---- psql connection and one-shot commands (need the throwaway server for some)
    (
        "sh",
        "psql",
        "psql -X -h NOSOCK -U postgres",
        True,
        "plain",
        "nz",
        "no server on that socket",
    ),
    ("sh", "psql", "psql -X -h 127.0.0.1 -p C -U postgres", True, "plain", "nz", "closed TCP port"),
    ("sh", "psql", "psql -X -h PGSOCK -U postgres -d nosuchdb", True, "plain", "nz", None),
    ("sh", "psql", "psql -X -h PGSOCK -U ghost -d shop", True, "plain", "nz", None),
    (
        "sh",
        "psql",
        "psql -X -h PGSOCK -U app -d shop -c 'select count(*) from orders'",
        False,
        "plain",
        0,
        None,
    ),
    (
        "sh",
        "psql",
        "psql -X -h PGSOCK -U app -d shop -c 'select * from invoices'",
        True,
        "plain",
        "nz",
        None,
    ),
    ("sh", "psql", "psql -X -h PGSOCK -U app -d shop -f missing.sql", True, "plain", "nz", None),
    # ---- python3 from the shell
    ("py", "python3", "python3 missing.py", True, "plain", "nz", None),
    ("py", "python3", "python3 -m json.tool good.json", False, "plain", 0, None),
    (
        "py",
        "python3",
        "python3 -m json.tool bad.json",
        True,
        "paraphrase",
        "nz",
        "decoder message only",
    ),
    (
        "py",
        "python3",
        "python3 -m unittest test_ok",
        False,
        "near-miss",
        0,
        "dots, Ran 3 tests, OK",
    ),
    (
        "py",
        "python3",
        "python3 -m unittest test_bad",
        True,
        "buried",
        "nz",
        "one of two tests fails",
    ),
    (
        "py",
        "python3",
        "python3 -m pip show nosuchpkg-xyz",
        True,
        "warning-as-failure",
        "nz",
        "a WARNING line that is the failure",
    ),
    ("py", "python3", "python3 -c 'import sys; print(sys.argv[1:])' a b", False, "plain", 0, None),
    # ---- perl from the shell
    ("pl", "perl", "perl -e 'print \"hello\\n\"'", False, "plain", 0, None),
    ("pl", "perl", "perl -e 'print \"a\" . ;'", True, "plain", "nz", "syntax error at -e line 1"),
    ("pl", "perl", "perl -e 'use strict; $total = 1; print $total'", True, "plain", "nz", None),
    (
        "pl",
        "perl",
        "perl -we 'my $x; print $x + 1, \"\\n\"'",
        False,
        "near-miss",
        0,
        "uninitialized-value warning, the program still ran and printed 1",
    ),
    (
        "pl",
        "perl",
        'perl -e \'use warnings FATAL => "all"; my $x; print $x + 1, "\\n"\'',
        True,
        "warning-as-failure",
        "nz",
        "the same warning made fatal",
    ),
    (
        "pl",
        "perl",
        'perl -e \'open(my $fh, "<", "nope.txt") or die "Cannot open nope.txt: $!\\n"\'',
        True,
        "plain",
        "nz",
        None,
    ),
    ("pl", "perl", "perl -ne 'print if /error/i' app.log", False, "shared-words", 0, None),
    ("pl", "perl", "perl -MNo::Such::Module -e 1", True, "plain", "nz", None),
    (
        "pl",
        "perl",
        "perl -e 'printf \"%d errors, %d warnings\\n\", 0, 2'",
        False,
        "shared-words",
        0,
        None,
    ),
    ("pl", "perl", "perl -e 'die \"config file is empty\\n\"'", True, "paraphrase", "nz", None),
    ("pl", "perl", "perl -le 'print join \",\", map { $_ * $_ } 1..6'", False, "plain", 0, None),
    ("pl", "perl", "perl -e 'my $n = 0; print 10 / $n'", True, "plain", "nz", None),
    ("pl", "perl", "perl -c script.pl", False, "near-miss", 0, "syntax OK"),
    ("pl", "perl", "perl -c broken.pl", True, "plain", "nz", None),
    (
        "pl",
        "perl",
        'perl -e \'eval { die "inner failure\\n" }; print "recovered from: $@"\'',
        False,
        "near-miss",
        0,
        "the die is caught and the script goes on",
    ),
    ("pl", "perl", "perl -e 'print undefined_function(3)'", True, "plain", "nz", None),
    ("pl", "perl", "perl -le 'print scalar gmtime 0'", False, "plain", 0, None),
    # ---- bash itself
    ("sh", "bash", "ls /nonexistent", True, "plain", "nz", None),
    ("sh", "bash", "foobar --help", True, "plain", 127, None),
    ("sh", "bash", "echo hello world", False, "plain", 0, None),
    ("sh", "bash", "cd /nope", True, "plain", "nz", None),
    ("sh", "bash", "cat notes.txt", False, "shared-words", 0, None),
    ("sh", "bash", "grep -n ERROR app.log", False, "shared-words", 0, None),
    (
        "sh",
        "bash",
        "grep -c ERROR clean.log",
        False,
        "near-miss",
        1,
        "no match: prints 0 and exits 1, nothing failed",
    ),
    ("sh", "bash", "mkdir out && touch out/a out/b && ls out", False, "plain", 0, None),
    ("sh", "bash", "mkdir out", True, "plain", "nz", None),
    ("sh", "bash", "./deploy.sh", True, "plain", 126, "no execute bit"),
    ("sh", "bash", "wc -l app.log", False, "plain", 0, None),
    ("sh", "bash", "echo $((10/0))", True, "plain", "nz", None),
    ("sh", "bash", "tar xzf missing.tar.gz", True, "plain", "nz", None),
    ("sh", "bash", 'echo "errors: 0"', False, "shared-words", 0, None),
    ("sh", "bash", "sort nonexist.txt", True, "plain", "nz", None),
    ("sh", "bash", "echo ${TARGET_DIR:?TARGET_DIR is not set}", True, "paraphrase", "nz", None),
    ("sh", "bash", "cp a.txt", True, "plain", "nz", None),
    ("sh", "bash", "kill 999999", True, "plain", "nz", None),
    ("sh", "bash", "type ls cd", False, "plain", 0, None),
    ("sh", "bash", "set -o nonexistent", True, "plain", "nz", None),
    ("sh", "bash", 'if [ -f app.log ]; then echo "found the log"; fi', False, "plain", 0, None),
    ("sh", "bash", "rm -v out/a out/b && rmdir out", False, "plain", 0, None),
    (
        "sh",
        "bash",
        "ls settings.ini 2>/dev/null || echo 'no settings.ini, using defaults'",
        False,
        "near-miss",
        0,
        "a handled fallback",
    ),
    ("sh", "bash", "grep -i panic app.log", False, "empty", 1, "no match: empty reply, exit 1"),
]

PYTHON_CASES = [
    (["print('hello')"], False, "plain", None),
    (["1/0"], True, "plain", None),
    (["import numpyy"], True, "plain", None),
    (["d = {'a': 1}", "d['b']"], True, "plain", None),
    (["[x**2 for x in range(6)]"], False, "plain", None),
    (["errors = []", "print(f'{len(errors)} errors')"], False, "shared-words", None),
    (["def f(:"], True, "plain", None),
    (["open('missing.txt')"], True, "plain", None),
    (["int('abc')"], True, "plain", None),
    (
        ["try:", "    int('x')", "except ValueError as e:", "    print('caught:', e)", ""],
        False,
        "near-miss",
        "the exception is caught and printed",
    ),
    (["''.join(['a', 1])"], True, "plain", None),
    (["import json", "json.loads('{bad}')"], True, "buried", "long traceback, message at the end"),
    (["x = 5"], False, "empty", None),
    (
        ["ValueError('bad input')"],
        False,
        "near-miss",
        "creates an exception object, nothing raised",
    ),
    (["len(5)"], True, "plain", None),
    (["sorted(['pear', 'fig', 'apple'])"], False, "plain", None),
    (["print(undefined_name)"], True, "plain", None),
    (["import math", "math.sqrt(-1)"], True, "paraphrase", "math domain error"),
    (["for i in range(3):", "print(i)"], True, "plain", "IndentationError"),
    (["import os", "os.path.exists('missing.txt')"], False, "plain", None),
    (["print('status: error' if False else 'status: ok')"], False, "shared-words", None),
    (["class A:", "    def __init__(self): self.v = 1", "", "A().w"], True, "plain", None),
    (["print('\\n'.join(['FAILED: 0', 'PASSED: 12']))"], False, "shared-words", None),
]

NODE_CASES = [
    (["foo"], True, "plain", None),
    (["[1, 2, 3].map(x => x * 2)"], False, "plain", None),
    (['JSON.parse("{bad")'], True, "plain", None),
    (['const e = new Error("disk full"); e.message'], False, "shared-words", None),
    (["null.length"], True, "plain", None),
    (['console.log("error count:", 0)'], False, "shared-words", None),
    (["let x = 1; let x = 2;"], True, "plain", None),
    (['require("left-pad")'], True, "buried", None),
    (
        ['new Error("boom")'],
        False,
        "near-miss",
        "an Error object is only created and displayed, nothing thrown",
    ),
    (["Math.max()"], False, "plain", None),
    (['require("fs").readFileSync("/nope.txt")'], True, "plain", None),
    (['[..."hello"].reverse().join("")'], False, "plain", None),
    (["JSON.stringify({error: null, ok: true})"], False, "near-miss", None),
    (["function f() { return f() }; f()"], True, "plain", None),
    ([".load missing.js"], True, "plain", None),
    (["typeof notDeclaredYet"], False, "near-miss", "typeof of an undeclared name does not throw"),
    (['await fetch("http://nonexistent.invalid/")'], True, "buried", None),
    (["const o = { a: 1, b: [2, 3] }; o"], False, "plain", None),
    (["[1, 2, 3].includes(4)"], False, "near-miss", "the value false, not a failure"),
    (['"ReferenceError".length'], False, "shared-words", None),
]

SQLITE_CASES = [
    (["select * from users;"], False, "plain", None),
    (["selec * from users;"], True, "plain", None),
    (["select * from accounts;"], True, "plain", None),
    (["insert into users(id, name) values (1, 'dora');"], True, "plain", None),
    ([".tables"], False, "plain", None),
    ([".schema users"], False, "plain", None),
    (["select count(*) from logs where level = 'ERROR';"], False, "shared-words", None),
    (
        ["select message from logs where level = 'ERROR';"],
        False,
        "shared-words",
        "stored messages, query worked",
    ),
    ([".import missing.csv users"], True, "plain", None),
    ([".headers on"], False, "empty", None),
    (["select 1/0;"], False, "near-miss", "sqlite gives NULL, no error"),
    (["select abs(-9223372036854775808);"], True, "plain", None),
    ([".bogus"], True, "plain", None),
    (
        ["update users set name = 'bea' where id = 42;"],
        False,
        "empty",
        "no row matched; not an error",
    ),
    (["create table users(id);"], True, "plain", None),
    (["pragma foreign_keys = on;"], False, "empty", None),
    (["insert into orders(id, user_id, total) values (12, 99, 1.0);"], True, "paraphrase", None),
    ([".read missing.sql"], True, "plain", None),
    (
        ['select name, email from users where name = "bob";'],
        False,
        "near-miss",
        "double-quoted string accepted",
    ),
    (
        ["select level, count(*) from logs group by level order by level;"],
        False,
        "shared-words",
        None,
    ),
    ([".open /nonexistent/dir/x.db"], True, "plain", None),
]

PSQL_CASES = [
    (["select * from orders order by id;"], False, "plain", None),
    (["select * from order;"], True, "plain", None),
    (["select * from customers;"], True, "plain", None),
    (["insert into orders values (1, 'dora', 'new', 3.00);"], True, "plain", None),
    (["\\dt"], False, "plain", None),
    (
        ["select id, name, error from jobs order by id;"],
        False,
        "shared-words",
        "a column named error",
    ),
    (["update orders set status = 'shipped' where id = 99;"], False, "near-miss", "UPDATE 0"),
    (["select 1/0;"], True, "plain", None),
    (["\\d nosuch"], True, "paraphrase", None),
    (
        ["select 'ERROR: disk full' as message;"],
        False,
        "quoted",
        "a string value in a result table",
    ),
    (["drop table if exists tmp_nothing;"], False, "near-miss", "NOTICE then DROP TABLE"),
    (["begin;"], False, "plain", None),
    (["select nope;"], True, "plain", None),
    (["select count(*) from orders;"], True, "paraphrase", "transaction aborted, command ignored"),
    (["rollback;"], False, "plain", None),
    (["create table orders (id int);"], True, "plain", None),
    (["\\i missing.sql"], True, "plain", None),
    (["select * from pg_authid;"], True, "plain", "permission denied for a non-superuser"),
    (
        ["select customer, total from orders where total > 10 order by total desc;"],
        False,
        "plain",
        None,
    ),
    (["\\conninfo"], False, "plain", None),
    (
        ["select count(*) filter (where status = 'failed') as failed from orders;"],
        False,
        "shared-words",
        "a column named failed",
    ),
]

BC_CASES = [
    (["2+2"], False, "plain", None),
    (["1/0"], True, "plain", None),
    (["2+*3"], True, "plain", None),
    (["scale=4; 10/3"], False, "plain", None),
    (["sqrt(-1)"], True, "plain", None),
    (["s(1)"], False, "plain", None),
    (["foo(3)"], True, "plain", None),
    (["x = 5"], False, "empty", None),
    (["x * 2"], False, "plain", None),
    (["ibase=16; FF; ibase=A"], False, "plain", None),
    (['print "error margin: ", 0.05, "\\n"'], False, "shared-words", None),
    (["a[1"], True, "plain", None),
    (["length(123.45)"], False, "plain", None),
    (["define sq(x) { return (x*x); }", "sq(4)"], False, "plain", None),
    (["10 % 0"], True, "plain", None),
    (["5 $ 3"], True, "plain", None),
    (["obase=2; 10; obase=10"], False, "plain", None),
]

PERLDB_CASES = [
    (["p 2**10"], False, "plain", None),
    (["x { name => 'lamp', tags => [1, 2] }"], False, "plain", None),
    (["foo()"], True, "plain", None),
    (["b 999"], True, "paraphrase", None),
]

IPYTHON_CASES = [
    (["1/0"], True, "plain", None),
    (["sum(range(10))"], False, "plain", None),
    (["import pandaz"], True, "plain", None),
    (["%timeit_typo"], True, "plain", "UsageError for an unknown magic"),
    (["words = 'error warning ok'.split()"], False, "empty", None),
    (["words"], False, "shared-words", None),
    (["{'a': 1}['b']"], True, "plain", None),
    (["error_count = 0; error_count"], False, "shared-words", None),
]


# --------------------------------------------------------------------------------------
# Runners.
# --------------------------------------------------------------------------------------
RC_OSC = re.compile(r"\x1b\]7777;rc=(\d+)\x07")


def reply_rows(scr: Screen, first: int, last: int) -> str:
    lines = [scr.line(k).rstrip() for k in range(first, last)]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


class Shell:
    def __init__(self, env: dict, cwd: str) -> None:
        e = dict(env, PS1="$ ", PS2="> ", PROMPT_COMMAND='printf "\\033]7777;rc=%s\\007" $?')
        self.s = Session(["bash", "--norc", "--noprofile", "-i"], e, cwd=cwd)
        self.s.read(settle=0.5, until=r"^\$ $", timeout=15)

    def run(self, cmd: str, timeout: float = 90) -> tuple[str, int | None]:
        s = self.s
        start = len(s.raw)
        r0 = s.screen.r
        s.send(cmd + "\r")
        ok = s.read(
            settle=0.3, timeout=timeout, until=r"^\$ $", raw_until=RC_OSC.pattern, start=start
        )
        if not ok:
            warn(f"shell command did not finish: {cmd!r}")
            s.send("\x03")
            s.read(settle=0.5, timeout=5)
        m = list(RC_OSC.finditer(s.raw[start:]))
        rc = int(m[-1].group(1)) if m else None
        return reply_rows(s.screen, r0 + 1, s.screen.r), rc

    def close(self) -> None:
        self.s.close()


class Repl:
    """An interactive program with a known main prompt (regex on the cursor line)."""

    def __init__(self, argv, env, cwd, prompt, settle=0.4, start_timeout=20, line_settle=0.25):
        self.s = Session(argv, env, cwd=cwd)
        self.prompt = prompt
        self.settle = settle
        self.line_settle = line_settle
        ok = self.s.read(settle=max(settle, 0.8), until=prompt, timeout=start_timeout)
        if not ok:
            warn(
                f"{argv[0]}: main prompt not seen at start (cursor line {self.s.screen.cursor_line()!r})"
            )

    def command(self, lines: list[str], timeout: float = 30) -> tuple[str, bool]:
        s = self.s
        r0 = s.screen.r
        for i, ln in enumerate(lines):
            s.send(ln + "\r")
            if i < len(lines) - 1:
                s.read(settle=self.line_settle, timeout=5)
        ok = s.read(settle=self.settle, until=self.prompt, timeout=timeout)
        if not ok:
            warn(
                f"{s.argv[0]}: prompt not back after {lines!r} (cursor line {s.screen.cursor_line()!r})"
            )
        # rows of the echoed input: one per line sent (continuation prompts share the row)
        end = s.screen.r
        if self.prompt is None:  # bc: no prompt, cursor sits on an empty new row
            end = s.screen.r
        return reply_rows(s.screen, r0 + len(lines), end), ok

    def close(self) -> None:
        self.s.close()


def capture_failures(
    work: Path, env: dict, norm: Normaliser, pg: Postgres, http_port: int, closed_port: int
):
    items: list[dict] = []
    n = 0

    def add(program, command, text, failed, kind, note, skip=False):
        nonlocal n
        n += 1
        if skip:
            return
        it = {
            "id": f"fail-{n:03d}",
            "program": program,
            "command": norm(command),
            "text": norm(text),
            "failed": failed,
            "kind": kind,
        }
        if note:
            it["note"] = note
        items.append(it)

    # ---- shell cases
    sh = Shell(env, str(work / "sh"))
    cwd = None
    for where, program, cmd, failed, kind, expect, note in SHELL_CASES:
        real = (
            cmd.replace("http://H/", f"http://127.0.0.1:{http_port}/")
            .replace(":C/", f":{closed_port}/")
            .replace("-p C ", f"-p {closed_port} ")
            .replace("PGSOCK", str(pg.sock))
            .replace("NOSOCK", str(work / "nosock"))
        )
        needs_pg = "PGSOCK" in cmd
        if needs_pg and not pg.started:
            add(program, cmd, "", failed, kind, note, skip=True)
            continue
        if where != cwd:
            sh.run(f"cd {work / where}")
            cwd = where
        text, rc = sh.run(real)
        shown = (
            cmd.replace("http://H/", f"http://127.0.0.1:{NORM_PORT}/")
            .replace(":C/", f":{NORM_CLOSED_PORT}/")
            .replace("-p C ", f"-p {NORM_CLOSED_PORT} ")
            .replace("PGSOCK", f"{NORM_DIR}/pgsock")
            .replace("NOSOCK", f"{NORM_DIR}/nosock")
        )
        good = (rc == expect) if isinstance(expect, int) else (rc not in (None, 0))
        if not good:
            warn(f"exit status {rc} for {cmd!r}, expected {expect}")
        add(program, shown, text, failed, kind, note)
    sh.close()

    # ---- REPLs
    def repl_block(program, cases, repl_factory, available=True):
        if not available:
            for lines, failed, kind, note in cases:
                add(program, "\n".join(lines), "", failed, kind, note, skip=True)
            return
        r = repl_factory()
        for lines, failed, kind, note in cases:
            text, _ = r.command(lines)
            add(program, "\n".join(lines), text, failed, kind, note)
        r.close()

    repl_block(
        "python3", PYTHON_CASES, lambda: Repl(["python3", "-q"], env, str(work / "py"), r"^>>> $")
    )
    node_env = dict(env, NODE_DISABLE_COLORS="1")
    repl_block(
        "node", NODE_CASES, lambda: Repl(["node"], node_env, str(work / "sh"), r"^> $", settle=0.5)
    )
    repl_block(
        "sqlite3",
        SQLITE_CASES,
        lambda: Repl(["sqlite3", "shop.db"], env, str(work / "sq"), r"^sqlite> $"),
    )
    repl_block(
        "psql",
        PSQL_CASES,
        lambda: Repl(
            ["psql", "-X", "-P", "pager=off", "-h", str(pg.sock), "-U", "app", "-d", "shop"],
            env,
            str(work / "sh"),
            r"^shop=[*!]?> $",
        ),
        available=pg.started,
    )
    repl_block(
        "bc", BC_CASES, lambda: Repl(["bc", "-q", "-l"], env, str(work / "sh"), None, settle=0.5)
    )
    repl_block(
        "perl", PERLDB_CASES, lambda: Repl(["perl", "-de0"], env, str(work / "pl"), r"^  DB<\d+> $")
    )
    has_ipython = shutil.which("ipython") is not None
    repl_block(
        "ipython",
        IPYTHON_CASES,
        lambda: Repl(
            [
                "ipython",
                "--no-banner",
                "--colors=NoColor",
                "--no-confirm-exit",
                "--HistoryManager.enabled=False",
            ],
            env,
            str(work / "py"),
            r"^In \[\d+\]: $",
            settle=0.6,
            line_settle=0.4,
        ),
        available=has_ipython,
    )
    return items


# --------------------------------------------------------------------------------------
# Continuation-prompt cases. A session spec, then the cases run in it in order:
#   (inputs, continuation, kind, note, finish)
# `inputs` are lines sent before reading the cursor line ("\x03" = Ctrl-C, sent raw);
# `finish` are lines sent afterwards to get back to the main prompt (checked).
# --------------------------------------------------------------------------------------
CTRL_C = "\x03"

CONT_SESSIONS = [
    {
        "program": "python3",
        "argv": ["python3", "-q"],
        "cwd": "py",
        "main": r">>> $",
        "cases": [
            ([], False, "main-prompt", "fresh REPL", []),
            (["def area(w, h):"], True, "block", None, ["    return w * h", ""]),
            (["totals = sum(["], True, "bracket", None, ["1, 2, 3])"]),
            (["msg = '''first line"], True, "string", "inside a triple-quoted string", ["'''"]),
            (["if 3 > 2:", "    print('yes')"], True, "block", "second line of a block", [""]),
            (["cfg = {", "  'debug': True,"], True, "bracket", None, ["}"]),
            (["x = 1 + \\"], True, "backslash", None, ["2"]),
            (["@staticmethod"], True, "block", "after a decorator", ["def g(): pass", ""]),
            (["1/0"], False, "main-prompt", "after a traceback", []),
            (
                ["for i in range(2):", "    print(i)", ""],
                False,
                "main-prompt",
                "after a finished block",
                [],
            ),
            (
                ["print('.....', end='')"],
                False,
                "near-miss",
                "output without newline, main prompt appended",
                [],
            ),
            (
                ["name = input('Enter a value... ')"],
                False,
                "input-prompt",
                "input() waiting, ends with '... '",
                ["lamp"],
            ),
            (
                ["choice = input('> ')"],
                False,
                "input-prompt",
                "input() prompt, not the REPL",
                ["y"],
            ),
            (
                [
                    "import time; print('Downloading', end='', flush=True); _ = [(time.sleep(0.15), print('.', end='', flush=True)) for i in range(3)]; time.sleep(4)"
                ],
                False,
                "progress",
                "progress dots while the command runs",
                [CTRL_C],
            ),
            (
                [
                    "import time; print('> Note: restart the worker after editing', flush=True); print('> see the runbook', end='', flush=True); time.sleep(4)"
                ],
                False,
                "quoted",
                "markdown-style quote being printed",
                [CTRL_C],
            ),
            (["help()"], False, "other-prompt", "the interactive help utility's prompt", ["quit"]),
            (
                ["input('Press Enter to continue...')"],
                False,
                "input-prompt",
                "ends with an ellipsis",
                [""],
            ),
            (["import getpass; pw = getpass.getpass()"], False, "input-prompt", None, ["secret"]),
            (["import pdb; pdb.set_trace()"], False, "other-prompt", "debugger prompt", ["c"]),
            (
                ["import sys; sys.ps1 = 'py> '; sys.ps2 = '..> '"],
                False,
                "custom-prompt",
                "custom main prompt",
                [],
                r"^py> $",
            ),
            (
                ["while True:"],
                True,
                "custom-prompt",
                "custom continuation prompt",
                ["    break", ""],
            ),
            (
                ["import sys; sys.ps1 = '>>> '; sys.ps2 = '... '"],
                False,
                "main-prompt",
                None,
                [],
                r">>> $",
            ),
        ],
    },
    {
        "program": "ipython",
        "argv": [
            "ipython",
            "--no-banner",
            "--colors=NoColor",
            "--no-confirm-exit",
            "--HistoryManager.enabled=False",
        ],
        "cwd": "py",
        "main": r"^In \[\d+\]: $",
        "needs": "ipython",
        "line_settle": 0.5,
        "cases": [
            ([], False, "main-prompt", None, []),
            (
                ["def total(xs):"],
                True,
                "indented",
                "auto-indent after a colon",
                ["return sum(xs)", "", ""],
            ),
            (
                ["class Box:", "def size(self):"],
                True,
                "indented",
                "two levels of auto-indent",
                ["return 1", "", "", ""],
            ),
            (["nums = [1,"], True, "bracket", None, ["2]"]),
            (["1 + 1"], False, "main-prompt", "after an Out[] line", []),
            (
                ["a = 1", "b = 2", "c = 3", "d = 4", "e = 5"],
                False,
                "main-prompt",
                "two-digit counter",
                [],
            ),
            (["text = '''hello"], True, "string", None, ["'''"]),
            (["x = input('value... ')"], False, "input-prompt", "input() waiting", ["7"]),
            (["help()"], False, "other-prompt", "pydoc's help prompt inside IPython", ["quit"]),
        ],
    },
    {
        "program": "ipython",
        "argv": [
            "ipython",
            "--simple-prompt",
            "--no-banner",
            "--colors=NoColor",
            "--HistoryManager.enabled=False",
        ],
        "cwd": "py",
        "main": r"^In \[\d+\]: $",
        "needs": "ipython",
        "cases": [
            (["for k in range(3):"], True, "block", "--simple-prompt mode", ["    print(k)", ""]),
            (["d = dict(a=1,"], True, "bracket", "--simple-prompt mode", ["b=2)"]),
            (["d"], False, "main-prompt", "--simple-prompt mode", []),
        ],
    },
    {
        "program": "node",
        "argv": ["node"],
        "cwd": "sh",
        "main": r"^> $",
        "env": {"NODE_DISABLE_COLORS": "1"},
        "cases": [
            ([], False, "main-prompt", None, []),
            (["function greet(name) {"], True, "block", None, ["return 'hi ' + name", "}"]),
            (["const user = {", "  name: 'ana',"], True, "bracket", None, ["}"]),
            (["const xs = ["], True, "bracket", None, ["1, 2]"]),
            (["const s = `line one"], True, "string", "open template literal", ["line two`"]),
            (["class Point {"], True, "block", None, ["}"]),
            (["[1,2].forEach(n => {"], True, "block", None, ["})"]),
            (["undefinedThing"], False, "main-prompt", "after an Uncaught error", []),
            (
                [
                    "process.stdout.write('fetching...'); await new Promise(r => setTimeout(r, 3000))"
                ],
                False,
                "progress",
                "top-level await still running",
                [],
            ),
            (
                ["setTimeout(() => process.stdout.write('tick... '), 200)"],
                False,
                "near-miss",
                "async output written after the prompt",
                [""],
            ),
        ],
    },
    {
        "program": "node",
        "argv": ["node", "-e", "require('repl').start('app> ')"],
        "cwd": "sh",
        "main": r"^app> $",
        "env": {"NODE_DISABLE_COLORS": "1"},
        "cases": [
            ([], False, "custom-prompt", "custom REPL built on node:repl", []),
            (["if (true) {"], True, "custom-prompt", "custom REPL, continuation", ["}"]),
        ],
    },
    {
        "program": "sqlite3",
        "argv": ["sqlite3", "shop.db"],
        "cwd": "sq",
        "main": r"^sqlite> $",
        "cases": [
            ([], False, "main-prompt", None, []),
            (["select name"], True, "plain", "no semicolon yet", ["from users;"]),
            (["select 'it''s"], True, "string", "open string literal", ["';"]),
            (
                ["create table items (", "  id integer primary key,"],
                True,
                "bracket",
                None,
                ["name text);"],
            ),
            (
                ["create trigger log_order after insert on orders begin"],
                True,
                "block",
                "trigger body",
                ["insert into logs(level, message) values ('INFO', 'order');", "end;"],
            ),
            (["select count(*) from users;"], False, "main-prompt", "after a result", []),
            ([".prompt 'shop> ' '  ...: '"], False, "custom-prompt", None, [], r"^shop> $"),
            (["select id"], True, "custom-prompt", "custom continuation prompt", ["from users;"]),
            ([".prompt 'sqlite> ' '   ...> '"], False, "main-prompt", None, [], r"^sqlite> $"),
        ],
    },
    {
        "program": "psql",
        "argv": ["psql", "-X", "-P", "pager=off", "-h", "PGSOCK", "-U", "postgres"],
        "cwd": "sh",
        "main": r"postgres=[*!]?# $",
        "needs": "pg",
        "cases": [
            ([], False, "main-prompt", "superuser", []),
            (["select 1,"], True, "plain", None, ["2;"]),
            (["select (1"], True, "bracket", None, ["+ 1);"]),
            (["select 'abc"], True, "string", None, ["';"]),
            (['select "order'], True, "string", "open quoted identifier", ['";']),
            (["do $$ begin"], True, "string", "inside dollar quotes", ["end $$;"]),
            (["/* long"], True, "comment", "inside a block comment", ["*/ select 1;"]),
            (["begin;"], False, "main-prompt", "in a transaction", []),
            (["select"], True, "plain", "continuation inside a transaction", ["1;"]),
            (["selec;"], False, "main-prompt", "failed transaction", []),
            (["select 1"], True, "plain", "continuation in a failed transaction", [";"]),
            (["rollback;"], False, "main-prompt", None, []),
            (
                ["\\prompt 'Customer id> ' cid"],
                False,
                "input-prompt",
                "\\prompt waiting for a value",
                ["5"],
            ),
            (
                ["\\echo -n 'Applying migration 3 of 5 ... '"],
                False,
                "near-miss",
                "output without newline, main prompt appended",
                [],
            ),
        ],
    },
    {
        "program": "psql",
        "argv": ["psql", "-X", "-P", "pager=off", "-h", "PGSOCK", "-U", "app", "-d", "shop"],
        "cwd": "sh",
        "main": r"(shop|app@shop)=[*!]?> $",
        "needs": "pg",
        "cases": [
            ([], False, "main-prompt", "ordinary user", []),
            (["select customer"], True, "plain", None, ["from orders;"]),
            (["insert into orders values (4,"], True, "bracket", None, ["'dora', 'new', 1);"]),
            (["select 'it''s"], True, "string", None, ["';"]),
            (["begin;"], False, "main-prompt", "in a transaction", []),
            (["update orders set status = 'paid'"], True, "plain", None, ["where id = 4;"]),
            (["rollback;"], False, "main-prompt", None, []),
            (
                ["\\echo -n 'vacuum -> analyze -> '"],
                False,
                "near-miss",
                "output without newline, main prompt appended",
                [],
            ),
            (
                ["\\set PROMPT1 '%n@%/%R%# '", "\\set PROMPT2 '%n@%/%R%# '"],
                False,
                "custom-prompt",
                None,
                [],
                r"app@shop=[*!]?> $",
            ),
            (["select *"], True, "custom-prompt", None, ["from jobs;"]),
        ],
    },
    {
        "program": "bash",
        "argv": ["bash", "--norc", "--noprofile", "-i"],
        "cwd": "sh",
        "env": {"PS1": "$ ", "PS2": "> "},
        "main": r"^\$ $",
        "cases": [
            ([], False, "main-prompt", None, []),
            (["if [ -f app.log ]"], True, "block", None, ["then echo ok; fi"]),
            (["for f in *.txt; do"], True, "block", None, ["echo $f; done"]),
            (['echo "unclosed'], True, "string", None, ['"']),
            (["cat <<EOF"], True, "heredoc", None, ["EOF"]),
            (
                ["cat <<EOF", "first line"],
                True,
                "heredoc",
                "second line of a here-document",
                ["EOF"],
            ),
            (["ls \\"], True, "backslash", None, ["-1"]),
            (["grep ERROR app.log |"], True, "pipe", None, ["wc -l"]),
            (["deploy() {"], True, "block", None, ["echo deploying; }"]),
            (["echo 'it"], True, "string", None, ["'"]),
            (["true &&"], True, "plain", "dangling &&", ["echo both"]),
            (["echo done"], False, "main-prompt", None, []),
            (["read -p 'Overwrite existing file? [y/N] ' ans"], False, "input-prompt", None, ["n"]),
            (
                ["PS3='#? '; select opt in start stop; do break; done"],
                False,
                "input-prompt",
                "select menu prompt",
                ["1"],
            ),
            (
                ["printf 'Building'; for i in 1 2 3; do printf '.'; sleep 0.15; done; sleep 4"],
                False,
                "progress",
                None,
                [CTRL_C],
            ),
            (
                ["printf 'parse -> check -> '; sleep 4"],
                False,
                "near-miss",
                "output ending in '> '",
                [CTRL_C],
            ),
            (
                ["printf '> Note: restart required\\n> after the upgrade'; sleep 4"],
                False,
                "quoted",
                "a quoted block being printed",
                [CTRL_C],
            ),
            (["printf 'waiting for lock...'; sleep 4"], False, "progress", None, [CTRL_C]),
            (["printf '...'; sleep 4"], False, "progress", "bare dots", [CTRL_C]),
            (["printf 'Copying files ... 45%%'; sleep 4"], False, "progress", None, [CTRL_C]),
            (["read -s -p 'Password: ' pw; echo"], False, "input-prompt", None, ["hunter2"]),
            (["PS2='cont> '"], False, "main-prompt", None, []),
            (["while false"], True, "custom-prompt", "custom PS2", ["do :; done"]),
            (
                ["PS1='ana@devbox:~/shop$ '"],
                False,
                "custom-prompt",
                "custom PS1",
                [],
                r"^ana@devbox:~/shop\$ $",
            ),
            (["case $1 in"], True, "custom-prompt", None, ["*) echo any;; esac"]),
        ],
    },
    {
        "program": "bash",
        "argv": ["bash", "--norc", "--noprofile", "-i"],
        "cwd": "sh",
        "env": {},
        "main": r"^bash-[\d.]+[#$] $",
        "unset": ["PS1", "PS2"],
        "cases": [
            ([], False, "main-prompt", "default PS1", []),
            (["while read line"], True, "block", "default PS2", ["do :; done < /dev/null"]),
        ],
    },
    {
        "program": "dash",
        "argv": ["dash", "-i"],
        "cwd": "sh",
        "env": {"PS1": "$ "},
        "main": r"^\$ $",
        "cases": [
            ([], False, "main-prompt", None, []),
            (["for n in 1 2"], True, "block", None, ["do echo $n; done"]),
            (["echo 'open"], True, "string", None, ["'"]),
            (["read -p 'Name> ' n"], False, "input-prompt", None, ["ana"]),
        ],
    },
    {
        "program": "perl",
        "argv": ["perl", "-de0"],
        "cwd": "pl",
        "main": r"^  DB<\d+> $",
        "cases": [
            ([], False, "main-prompt", "perl debugger", []),
            (
                ["print 'a',\\"],
                True,
                "backslash",
                "debugger continuation after a trailing backslash",
                ["'b'"],
            ),
            (["my @xs = (1,\\", "2,\\"], True, "backslash", None, ["3)"]),
            (["p 1+1"], False, "main-prompt", "counter moved on", []),
        ],
    },
    {
        "program": "gdb",
        "argv": ["gdb", "-q", "-nx"],
        "cwd": "sh",
        "main": r"\(gdb\) $",
        "needs": "gdb",
        "cases": [
            ([], False, "main-prompt", None, []),
            (["define hello"], True, "block", "command definition body", ["echo hi\\n", "end"]),
            (["define hello"], False, "other-prompt", "yes/no query", ["n"]),
            (["while 0"], True, "block", None, ["end"]),
            (
                ["while 0", "if 1"],
                True,
                "indented",
                "nested block, indented prompt",
                ["end", "end"],
            ),
            (["python"], True, "block", "gdb's python block", ["print(1)", "end"]),
            (
                ["echo Loading symbols..."],
                False,
                "near-miss",
                "output without newline, main prompt appended",
                [],
            ),
            (
                ["echo Continue? >\\040"],
                False,
                "near-miss",
                "output without newline, main prompt appended",
                [],
            ),
        ],
    },
]


def capture_continuations(work: Path, env: dict, norm: Normaliser, pg: Postgres):
    items: list[dict] = []
    n = 0
    for spec in CONT_SESSIONS:
        needs = spec.get("needs")
        available = True
        if needs == "pg":
            available = pg.started
        elif needs:
            available = shutil.which(needs) is not None
        if not available:
            n += len(spec["cases"])
            warn(
                f"{spec['program']} ({' '.join(spec['argv'])}) not available: {len(spec['cases'])} cases skipped"
            )
            continue
        e = dict(env, **spec.get("env", {}))
        for k in spec.get("unset", []):
            e.pop(k, None)
        argv = [a.replace("PGSOCK", str(pg.sock)) for a in spec["argv"]]
        ls = spec.get("line_settle", 0.35)
        s = Session(argv, e, cwd=str(work / spec["cwd"]))
        main = spec["main"]
        if not s.read(settle=0.8, until=main, timeout=20):
            warn(f"{spec['program']}: no main prompt at start: {s.screen.cursor_line()!r}")
        for case in spec["cases"]:
            inputs, cont, kind, note, finish = case[:5]
            if len(case) > 5:  # this case changes the main prompt
                main = case[5]
            n += 1
            for ln in inputs:
                s.send(ln if ln == CTRL_C else ln + "\r")
                s.read(settle=ls, timeout=8)
            s.read(settle=0.6, timeout=8)
            line = s.screen.cursor_line()
            # checks: a false main-prompt case must sit on the main prompt; a true case must
            # return to the main prompt once finished, and must not already be on it.
            on_main = re.search(main, line) is not None
            if kind == "main-prompt" and not on_main:
                warn(f"{spec['program']}: expected the main prompt after {inputs!r}, got {line!r}")
            if cont and on_main:
                warn(f"{spec['program']}: labelled continuation but on the main prompt: {inputs!r}")
            for ln in finish:
                s.send(ln if ln == CTRL_C else ln + "\r")
                s.read(settle=ls, timeout=8)
            if not s.read(settle=0.5, until=main, timeout=10):
                warn(
                    f"{spec['program']}: not back on the main prompt after {inputs!r} + {finish!r}: "
                    f"{s.screen.cursor_line()!r}"
                )
            it = {
                "id": f"cont-{n:03d}",
                "program": spec["program"],
                "line": norm(line),
                "continuation": cont,
                "kind": kind,
            }
            if note:
                it["note"] = note
            items.append(it)
        s.close()
    return items


# --------------------------------------------------------------------------------------
# Versions and the data card.
# --------------------------------------------------------------------------------------
VERSION_CMDS = {
    "bash": ["bash", "--version"],
    "dash": ["dpkg-query", "-W", "-f=${Version}", "dash"],
    "curl": ["curl", "--version"],
    "git": ["git", "--version"],
    "make": ["make", "--version"],
    "npm": ["npm", "--version"],
    "node": ["node", "--version"],
    "psql": ["psql", "--version"],
    "python3": ["python3", "--version"],
    "ipython": ["ipython", "--version"],
    "sqlite3": ["sqlite3", "--version"],
    "bc": ["bc", "--version"],
    "perl": ["perl", "-e", "print $^V"],
    "gdb": ["gdb", "--version"],
    "gcc": ["gcc", "--version"],
}


def versions(env: dict, pg: Postgres) -> dict:
    out = {}
    for name, cmd in VERSION_CMDS.items():
        if shutil.which(cmd[0]) is None:
            out[name] = "not installed"
            continue
        r = subprocess.run(
            cmd, check=False, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        first = r.stdout.strip().splitlines()[0] if r.stdout.strip() else "?"
        if name == "sqlite3":
            first = first.split()[0]
        out[name] = first
    out["postgres server"] = pg.version
    for missing in ("mysql", "irb", "zsh"):
        out[missing] = shutil.which(missing) or "not installed"
    return out


def update_card(card: Path, vers: dict, fail_items, cont_items) -> None:
    block = ["<!-- versions:start -->"]
    block += [f"- {k}: {v}" for k, v in vers.items()]
    block.append("")

    def counts(items, label):
        progs = {}
        for it in items:
            p = progs.setdefault(it["program"], [0, 0])
            p[0 if it[label] else 1] += 1
        pos = sum(1 for it in items if it[label])
        lines = [
            f"{len(items)} items, {pos} {label}=true, {len(items) - pos} false. Per program (true/false): "
            + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(progs.items()))
        ]
        return lines

    block.append("harness_failure_pattern.jsonl: " + counts(fail_items, "failed")[0])
    block.append("")
    block.append("harness_continuation.jsonl: " + counts(cont_items, "continuation")[0])
    block.append("<!-- versions:end -->")
    text = card.read_text() if card.exists() else "<!-- versions:start -->\n<!-- versions:end -->\n"
    new = re.sub(
        r"<!-- versions:start -->.*?<!-- versions:end -->",
        lambda m: "\n".join(block),
        text,
        flags=re.S,
    )
    card.write_text(new)


# --------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="capture-")).resolve()
    work.chmod(0o755)
    norm = Normaliser()
    norm.paths.append(str(work))
    env = base_env(work)
    make_fixtures(work, env)

    http_port = free_port(18080)
    closed_port = free_port(18099)  # bound then released: nothing listens there
    norm.ports[str(http_port)] = NORM_PORT
    norm.ports[str(closed_port)] = NORM_CLOSED_PORT
    server = http.server.ThreadingHTTPServer(("127.0.0.1", http_port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    pg = Postgres(work, env)
    try:
        pg.start()
    except Exception as exc:
        warn(f"PostgreSQL did not start: {exc}")
    try:
        vers = versions(env, pg)
        fail_items = capture_failures(work, env, norm, pg, http_port, closed_port)
        cont_items = capture_continuations(work, env, norm, pg)
    finally:
        pg.stop()
        server.shutdown()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    args.out.mkdir(parents=True, exist_ok=True)
    for name, items in (
        ("harness_failure_pattern.jsonl", fail_items),
        ("harness_continuation.jsonl", cont_items),
    ):
        with open(args.out / name, "w", encoding="utf-8") as f:
            for it in items:
                f.write(json.dumps(it, ensure_ascii=False) + "\n")
    update_card(args.out / "CARD-programs.md", vers, fail_items, cont_items)
    print(json.dumps(vers, indent=1))
    print(f"failure items: {len(fail_items)}; continuation items: {len(cont_items)}")
    if WARNINGS:
        print(f"{len(WARNINGS)} warnings (see above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
