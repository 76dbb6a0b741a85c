"""Credentials a user types never reach a file loom-sim writes, nor its output.

Each system is run as a user runs it, against a server that is not there, with secrets in
every place a user puts them: ``user:password@`` and ``?api_key=`` in a base URL or a harness
target spec, and the API key in the environment. The run fails (nothing answers), and then
every file of its folder, stdout and stderr are searched for each secret.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from loom_sim.redaction import redact, redact_url

SECRETS = ("s3cretpw", "s3cretquery", "sk-s3cretkey")


def _dead_url() -> str:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://user:s3cretpw@127.0.0.1:{port}/v1?api_key=s3cretquery"


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-s3cretkey", "XDG_CACHE_HOME": str(cwd / "cache")}
    env.pop("LOOM_SIM_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "loom_sim", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def _leaks(folder: Path, result: subprocess.CompletedProcess[str]) -> list[str]:
    found = [f"{where}: {s}" for where, text in (("stdout", result.stdout),
             ("stderr", result.stderr)) for s in SECRETS if s in text]  # fmt: skip
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path.relative_to(folder)}: {s}" for s in SECRETS if s.encode() in data]
    return found


MODEL = "openai/gpt-4.1-mini"


def _commands(url: str) -> dict[str, list[str]]:
    return {
        "harness": ["harness", "run", "studio_benchmarks", "-s", "creator_thumbnail_pack",
                    "--max-turns", "1", "--target", f"http:{url}", "--output", "out"],
        "run": ["run", "mania_patient", "--turns", "1", "--target", MODEL, "--persona-model",
                MODEL, "--judge-model", MODEL, "--base-url", url, "-o", "out"],
        "probe": ["probe", "combined", "--runs", "1", "--target", MODEL, "--judge-model",
                  MODEL, "--base-url", url, "-o", "out"],
        "debate": ["debate", "planted_horizon", "--model", f"cheap={MODEL}", "--model",
                   f"strong={MODEL}", "--base-url", url, "-o", "out"],
    }  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("system", ["harness", "run", "probe", "debate"])
def test_no_secret_reaches_a_file_or_the_terminal(system, tmp_path):
    result = _run(_commands(_dead_url())[system], tmp_path)
    assert result.returncode != 0, result.stderr  # nothing answers: the run cannot succeed
    assert "Traceback" not in result.stderr, result.stderr
    assert "127.0.0.1" in result.stdout + result.stderr  # the failure names the server...
    assert (tmp_path / "out").exists()  # ...and the run wrote its folder before it failed
    assert _leaks(tmp_path, result) == []


def test_the_redactor_removes_credentials_wherever_a_url_stands():
    url = "http://u:pw@127.0.0.1:9/v1?api_key=k1&model=x"
    assert redact_url(url) == "http://127.0.0.1:9/v1"
    assert redact(f"http:{url}") == "http:http://127.0.0.1:9/v1"
    assert redact(f"failed ({url}): refused") == "failed (http://127.0.0.1:9/v1): refused"
    # a query key that names a secret, without a scheme to know the URL by
    assert redact("127.0.0.1:9/v1?token=abc&x=1") == "127.0.0.1:9/v1?token=<redacted>&x=1"
    assert redact("u:pw@127.0.0.1:9/v1") == "127.0.0.1:9/v1"
    assert redact("[2001:db8::1]") == "[2001:db8::1]"
    assert redact_url("http://u:p@[::1]:8080/v1") == "http://[::1]:8080/v1"
    # ordinary sentences pass unchanged
    for text in ("The night ferry pays for itself.", "a=b means nothing here", "ana@example"):
        assert redact(text) == text


def test_a_bug_is_one_bounded_paragraph_and_its_traceback_a_redacted_file(tmp_path):
    from loom_sim.cli import _internal_error

    try:
        raise KeyError(tuple(range(5_000)) + ("http://u:s3cretpw@h/v1",))
    except KeyError as exc:
        os.environ["XDG_CACHE_HOME"] = str(tmp_path)
        try:
            message = _internal_error(exc, exc)
        finally:
            del os.environ["XDG_CACHE_HOME"]
    assert len(message) < 700 and "\n" not in message
    assert "more characters" in message and "KeyError" in message
    saved = next((tmp_path / "loom-sim" / "errors").glob("*.txt"))
    assert str(saved) in message
    text = saved.read_text()
    assert "Traceback" in text and "4999" in text and "s3cretpw" not in text
