"""`loom-sim run`, `diagram` and `trace` end to end: artifacts, keys, faults, kills and resume."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from loom_sim.machines.engine import MACHINES
from loom_sim.rollout.machines.rollout import STATES

from loom_sim.cli import cli
from loom_sim.testing.fake_server import FakeOpenAIServer

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"
LOOM_SIM = Path(sys.executable).parent / "loom-sim"
SCRIPTED = [
    "--persona-model",
    "scripted/varied",
    "--target",
    "scripted/varied",
    "--judge-model",
    "scripted/echo",
]


def run_cli(*args: str, env: dict | None = None):
    result = CliRunner().invoke(cli, ["run", *args], env=env, catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def transcripts(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run_dir.glob("rollout_*/transcript.json"))]


def without_times(transcript: dict) -> dict:
    transcript = dict(transcript)
    for key in ("started_at", "ended_at", "duration_s"):
        transcript.pop(key)
    transcript["turns"] = [
        {k: v for k, v in t.items() if k not in ("started_at", "ended_at", "timings")}
        for t in transcript["turns"]
    ]
    return transcript


def test_run_writes_the_artifacts(tmp_path):
    out = tmp_path / "run"
    result = run_cli(
        str(MANIA), "--turns", "4", "--rollouts", "2", "--seed", "5", "-o", str(out), *SCRIPTED
    )
    assert result.exit_code == 0, result.output
    assert "rollout_000: done, 4 turns" in result.stdout
    run = json.loads((out / "run.json").read_text())
    assert run["seed"] == 5 and run["turns"] == 4 and run["rollouts"] == 2
    assert run["models"] == {
        "persona": "scripted/varied",
        "interlocutor": "scripted/varied",
        "judge": "scripted/echo",
    }
    assert run["template_version"] and run["loom_sim_version"] and run["versions"]["trio"]
    assert run["config"]["persona"]["identity"]["name"] == "Marcus Chen"
    for rollout in ("rollout_000", "rollout_001"):
        folder = out / rollout
        assert len((folder / "turns.jsonl").read_text().splitlines()) == 4
        assert (folder / "trace.jsonl").stat().st_size > 0
    first = transcripts(out)[0]
    assert first["status"] == "done" and first["stop_reason"] == "max_turns"
    turn = first["turns"][0]
    for key in (
        "phase",
        "intensities",
        "injection",
        "monitor_events",
        "usage",
        "timings",
        "persona",
        "interlocutor",
    ):
        assert key in turn


def test_default_run_directory_is_named_after_config_hash_and_time(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli(str(MANIA), "--turns", "1", *SCRIPTED).exit_code == 0
    [folder] = (tmp_path / "results").iterdir()
    stem, digest, stamp = folder.name.split("-")
    assert stem == "mania_patient" and len(digest) == 8 and stamp.endswith("Z")


def test_same_seed_same_transcripts(tmp_path):
    for name in ("a", "b", "c"):
        seed = "9" if name != "c" else "10"
        assert (
            run_cli(
                str(MANIA), "--turns", "6", "--seed", seed, "-o", str(tmp_path / name), *SCRIPTED
            ).exit_code
            == 0
        )
    a, b, c = (transcripts(tmp_path / n)[0] for n in "abc")
    assert without_times(a) == without_times(b)
    assert without_times(a) != without_times(c)


def test_a_missing_key_is_reported_before_anything_runs(tmp_path):
    env = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    result = run_cli(
        str(MANIA), "--target", "openai/gpt-4.1", "-o", str(tmp_path / "run"), env={**env}
    )
    assert result.exit_code == 1
    assert "OPENAI_API_KEY" in result.stderr
    assert not (tmp_path / "run").exists()


def test_a_cost_budget_is_refused_when_a_model_has_no_price(tmp_path):
    """--max-cost must never be a silent no-op: an unpriced model is refused up front."""
    unpriced = ["--target", "openai/house-model", "--base-url", "http://127.0.0.1:9/v1"]
    result = run_cli(
        str(MANIA), *SCRIPTED[:2], *unpriced, "--max-cost", "1", "-o", str(tmp_path / "run")
    )
    assert result.exit_code == 1
    assert "--max-cost cannot be kept: openai/house-model has no known price" in result.stderr
    assert not (tmp_path / "run").exists()
    # Free models (scripted: a known price of 0) satisfy a budget.
    free = run_cli(
        str(MANIA), *SCRIPTED, "--turns", "1", "--max-cost", "1", "-o", str(tmp_path / "ok")
    )
    assert free.exit_code == 0, free.output


def test_resume_refuses_settings_that_would_change_the_run(tmp_path):
    out = tmp_path / "run"
    assert run_cli(str(MANIA), "--turns", "2", "-o", str(out), *SCRIPTED).exit_code == 0
    result = run_cli("--resume", str(out), "--turns", "5")
    assert result.exit_code == 1 and "leave out" in result.stderr and "--turns" in result.stderr
    again = run_cli("--resume", str(out))
    assert again.exit_code == 0 and "rollout_000: done, 2 turns" in again.stdout


def test_an_existing_run_directory_is_not_overwritten(tmp_path):
    out = tmp_path / "run"
    assert run_cli(str(MANIA), "--turns", "1", "-o", str(out), *SCRIPTED).exit_code == 0
    result = run_cli(str(MANIA), "--turns", "1", "-o", str(out), *SCRIPTED)
    assert result.exit_code == 1 and "--resume" in result.stderr


def test_keys_never_reach_any_artifact(tmp_path):
    secret = "sk-test-SECRET-4f9a1c77e2"
    with FakeOpenAIServer(require_key=secret) as server:
        out = tmp_path / "run"
        result = run_cli(
            str(MANIA),
            "--turns",
            "3",
            "--target",
            "openai/gpt-4.1",
            "--base-url",
            server.base_url,
            "--persona-model",
            "scripted/varied",
            "--judge-model",
            "scripted/echo",
            "-o",
            str(out),
            env={"OPENAI_API_KEY": secret, "ANTHROPIC_API_KEY": secret + "-anthropic"},
        )
        assert result.exit_code == 0, result.output
    leaked = [p for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert leaked == []
    assert secret not in result.output


def test_faults_on_a_fifth_of_calls_lose_and_duplicate_no_turn(tmp_path):
    with FakeOpenAIServer(
        fault_rate=0.2, faults="429,500,529,malformed,stall", retry_after=0.01, seed=3
    ) as server:
        out = tmp_path / "run"
        result = run_cli(
            str(MANIA),
            "--turns",
            "8",
            "--rollouts",
            "3",
            # a stalled call fires the timeout; a reply that is merely slow (the machine loaded)
            # must not, or it counts as a fault the server never injected
            "--timeout",
            "5",
            "-o",
            str(out),
            "--persona-model",
            "openai/fake",
            "--target",
            "openai/fake",
            "--judge-model",
            "scripted/echo",
            "--base-url",
            server.base_url,
            "--seed",
            "4",
        )
        stats = server.stats()
    assert result.exit_code == 0, result.output
    assert stats["faults"] >= 10  # the faults really happened
    # ...and the run says so, and keeps the count: every fault was retried or given up on
    assert "faults: openai/fake: " in result.stdout and " retried (" in result.stdout
    recorded = json.loads((out / "run.json").read_text())["faults"]["openai/fake"]
    assert sum(recorded["retried"].values()) + recorded["gave_up"] == stats["faults"]
    assert set(recorded["retried"]) <= {"HTTP 429", "HTTP 500", "HTTP 529", "timeout", "malformed"}
    for transcript in transcripts(out):
        assert transcript["status"] == "done"
        assert [t["turn"] for t in transcript["turns"]] == list(range(8))
    for turns in out.glob("rollout_*/turns.jsonl"):
        assert [json.loads(line)["turn"] for line in turns.read_text().splitlines()] == list(
            range(8)
        )


def test_a_dead_server_ends_rollouts_in_error_with_a_plain_message(tmp_path):
    out = tmp_path / "run"
    result = run_cli(
        str(MANIA),
        "--turns",
        "2",
        "--target",
        "openai/x",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--persona-model",
        "scripted/varied",
        "--timeout",
        "1",
        "-o",
        str(out),
        "--no-score",
    )
    assert result.exit_code == 1
    assert "ended in error" in result.stderr
    # the exact command that continues it, with the flags it was started with
    again = f"loom-sim run --resume {out} --base-url http://127.0.0.1:9/v1 --no-score"
    assert result.stderr.strip().endswith(f"Continue them with: {again}")
    assert "faults: openai/x: " in result.stdout and "1 failed after every retry" in result.stdout
    [transcript] = transcripts(out)
    assert transcript["status"] == "error" and "127.0.0.1:9" in transcript["error"]


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow
def test_kill_9_then_resume_ends_with_exactly_the_asked_turns(tmp_path):
    turns = 10
    with FakeOpenAIServer(latency=0.03) as server:
        out = tmp_path / "run"
        argv = [
            str(LOOM_SIM),
            "run",
            str(MANIA),
            "--turns",
            str(turns),
            "--rollouts",
            "3",
            "-o",
            str(out),
            "--persona-model",
            "openai/fake",
            "--target",
            "openai/fake",
            "--judge-model",
            "scripted/echo",
            "--base-url",
            server.base_url,
            "--seed",
            "2",
        ]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while _lines(out / "rollout_000" / "turns.jsonl") < 3:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        done_before = [_lines(out / f"rollout_{i:03d}" / "turns.jsonl") for i in range(3)]
        assert min(done_before) < turns  # it really was interrupted
        resumed = subprocess.run(
            [str(LOOM_SIM), "run", "--resume", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert resumed.returncode == 0, resumed.stderr
    for transcript in transcripts(out):
        assert [t["turn"] for t in transcript["turns"]] == list(range(turns))
    for index in range(3):
        folder = out / f"rollout_{index:03d}"
        assert [
            json.loads(line)["turn"] for line in (folder / "turns.jsonl").read_text().splitlines()
        ] == list(range(turns))
        ids = [
            json.loads(line)["id"]
            for line in (folder / "trace.jsonl").read_text().splitlines()
            if line.startswith("{")
        ]
        assert len(ids) == len(set(ids))


def test_diagram_names_all_eight_states():
    result = CliRunner().invoke(cli, ["diagram", "--format", "mermaid"])
    assert result.exit_code == 0
    assert "stateDiagram-v2" in result.stdout
    for state in STATES:
        assert f'state "{state}" as {state}' in result.stdout
    assert "act --> act: reprompt [rejected & retries left]" in result.stdout
    assert "done --> [*]" in result.stdout and "[*] --> init" in result.stdout
    dot = CliRunner().invoke(cli, ["diagram", "--format", "dot"])
    assert dot.exit_code == 0 and dot.stdout.startswith("digraph rollout")


def test_the_diagram_has_the_tables_edges_and_no_other():
    """Drawn by transitions, the diagram's edges are the table's, for every machine."""
    for spec in MACHINES:
        drawn = CliRunner().invoke(cli, ["diagram", "--machine", spec.name]).stdout
        edges = set(re.findall(r"^  (\w+) --> (\w+): ", drawn, re.MULTILINE))
        assert edges == {(src, dst) for src, dst, _ in spec.edges()}, spec.name
        for _, _, label in spec.edges():
            assert label in drawn


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz: scripts/install-test-deps")
def test_svg_is_drawn_by_graphviz():
    result = CliRunner().invoke(cli, ["diagram", "--format", "svg"])
    assert result.exit_code == 0 and "<svg" in result.stdout and "prompt_ready" in result.stdout


def test_svg_needs_graphviz_or_says_so(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    result = CliRunner().invoke(cli, ["diagram", "--format", "svg"])
    assert (
        result.exit_code == 1 and "Graphviz" in result.stderr and "Traceback" not in result.output
    )


def test_trace_shows_who_said_what_to_whom(tmp_path):
    out = tmp_path / "run"
    assert run_cli(str(MANIA), "--turns", "3", "-o", str(out), *SCRIPTED).exit_code == 0
    table = CliRunner().invoke(cli, ["trace", str(out / "rollout_000")])
    assert table.exit_code == 0
    for actor in ("persona", "interlocutor", "monitor"):
        assert actor in table.stdout
    for kind in ("Speak", "Utterance", "CheckCandidate", "Verdict", "Respond", "Observe"):
        assert kind in table.stdout
    only = CliRunner().invoke(
        cli, ["trace", str(out), "--actor", "monitor", "--turn", "2", "--json"]
    )
    envelopes = [json.loads(line) for line in only.stdout.splitlines()]
    assert envelopes and all(
        "monitor" in (e["sender"], e["recipient"]) and e["turn"] == 1 for e in envelopes
    )
    speak = CliRunner().invoke(
        cli, ["trace", str(out / "rollout_000"), "--type", "speak", "--json"]
    )
    assert {json.loads(line)["body"]["type"] for line in speak.stdout.splitlines()} == {"Speak"}


def test_trace_of_a_run_with_several_rollouts_asks_which(tmp_path):
    out = tmp_path / "run"
    assert (
        run_cli(str(MANIA), "--turns", "1", "--rollouts", "2", "-o", str(out), *SCRIPTED).exit_code
        == 0
    )
    result = CliRunner().invoke(cli, ["trace", str(out)])
    assert result.exit_code == 1 and "rollout_001" in result.stderr


def test_a_short_run_says_what_it_skips_and_view_shows_only_what_happened(tmp_path):
    out = tmp_path / "run"
    result = run_cli(str(MANIA), "--turns", "3", "-o", str(out), "--no-score", *SCRIPTED)
    assert result.exit_code == 0, result.output
    note = next(line for line in result.stderr.splitlines() if line.startswith("note: 3 of 50"))
    assert "phases escalation and plateau will not be reached" in note
    assert "no full injection" not in note  # a phase change sends the full prompt (default)
    shown = CliRunner().invoke(cli, ["view", str(out)], env={"COLUMNS": "200"})
    assert "phases rapport → disclosure → crisis (not reached: escalation, plateau)" in shown.output
    assert [line.split(" · ")[1] for line in shown.output.splitlines() if " turn " in line[:8]] == [
        "rapport",
        "disclosure",
        "crisis",
    ]
    from loom_sim.config import load_config
    from loom_sim.rollout.runtime.run import reach_note

    config = load_config(MANIA)
    assert reach_note(config, 50) is None  # the full length skips nothing
    # without full injections on phase changes, the phases reached between them never get one
    injection = config.interaction.injection.model_copy(update={"full_on_phase_change": False})
    quiet = config.model_copy(
        update={"interaction": config.interaction.model_copy(update={"injection": injection})}
    )
    assert "phases disclosure and crisis get no full injection" in reach_note(quiet, 3)


def test_the_closing_summary_does_not_repeat_the_live_table(tmp_path):
    out = tmp_path / "run"
    result = run_cli(str(MANIA), "--turns", "2", "-o", str(out), "--no-score", *SCRIPTED)
    assert result.stdout.count("done") == 1  # one line per rollout, on stdout, for scripts
    assert result.stdout.splitlines()[:2] == [
        "rollout_000: done, 2 turns",
        "faults: no model call retried",
    ]
