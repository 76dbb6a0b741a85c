"""Every system's record carries the plan header, and no file a run writes holds a credential.

Each system is run as a user runs it, against a dead server whose base URL carries a user name
and password: the calls fail (connection refused), the run ends in error and keeps what it
has — and ``s3cret`` is in none of its files: not the record, not the trace, not an error
message quoted in a report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loom_sim.core.header import plan_header, redact_argv, redact_url
from tests.harness_support import toy_pack

SECRET_URL = "http://user:s3cret@127.0.0.1:9/v1"

COMMANDS = {
    "run": (
        ["run", "mania_patient", "--turns", "1", "--target", "openai/x"]
        + ["--persona-model", "scripted/varied", "--no-score"],
        "run.json",
    ),
    "probe": (
        ["probe", "moral_dilemmas", "--target", "openai/x", "--judge-model", "scripted/judge"]
        + ["-n", "1", "--mode", "static"],
        "probe.json",
    ),
    # a pack without a cost cap: one with a cap refuses an unpriced model before it starts
    "harness": (["harness", "run", "{toy_pack}", "--model", "user=openai/x"], "harness.json"),
    "debate": (
        ["debate", "planted_horizon", "--model", "cheap=openai/x", "--model", "strong=openai/x"]
        + ["-n", "2"],
        "debate.json",
    ),
}


def test_redaction_takes_credentials_and_queries_out_of_every_url():
    assert redact_url("https://me:pw@host:8080/v1?key=abc") == "https://host:8080/v1"
    argv = ["--base-url=http://me:pw@h/v1", "--target", "http:http://a:b@h:1/chat?token=t", "x"]
    assert redact_argv(argv) == ["--base-url=http://h/v1", "--target", "http:http://h:1/chat", "x"]
    header = plan_header(format_version=3, seed=7, argv=argv)
    assert header.seed == 7 and "pw" not in json.dumps(header.command)


@pytest.mark.slow
@pytest.mark.parametrize("system", sorted(COMMANDS))
def test_no_file_of_any_system_holds_the_password_of_its_base_url(tmp_path, system):
    args, record = COMMANDS[system]
    args = [str(toy_pack(tmp_path / "pack")) if a == "{toy_pack}" else a for a in args]
    out = tmp_path / system
    loom = str(Path(sys.executable).parent / "loom-sim")
    result = subprocess.run(
        [loom, *args, "--base-url", SECRET_URL, "--timeout", "2", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert "Traceback" not in result.stderr, result.stderr
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written, result.stderr
    leaks = [str(p.relative_to(out)) for p in written if b"s3cret" in p.read_bytes()]
    assert leaks == [], f"{system} wrote its base URL's password into {leaks}"
    assert "s3cret" not in result.stderr + result.stdout
    header = json.loads((out / record).read_text())["header"]
    assert header["seed"] is not None and header["created_at"] and header["versions"]
    assert any("127.0.0.1:9" in a for a in header["command"])  # the URL, redacted, is kept
