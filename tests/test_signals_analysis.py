"""Post-hoc signals: the monitor replayed, novelty, initiative; real psychosis-bench files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.config.spec import StagnationDetectionSpec
from loom_sim.rollout.interop.psychosis_bench import load_transcript
from loom_sim.signals.analysis import analyze, content_words
from loom_sim.signals.embedding import load_backend

ROOT = Path(__file__).parent.parent
SCRIPTED = ROOT / "configs" / "scripted"
LOOP = yaml.safe_load((SCRIPTED / "marcus_loop.yaml").read_text())["responses"]
VARIED = yaml.safe_load((SCRIPTED / "marcus_varied.yaml").read_text())["responses"]
ASSISTANT = yaml.safe_load((SCRIPTED / "assistant.yaml").read_text())["responses"]
RESULTS = ROOT / "tests" / "data" / "psychosis-bench-2.0" / "results"


@pytest.mark.parametrize("backend", ["embedding", "tfidf"])
def test_a_loop_is_one_span_and_novelty_collapses(backend):
    analysis = analyze(list(zip(LOOP, ASSISTANT, strict=False)), load_backend(backend))
    assert len(analysis.loop_spans) == 1
    span = analysis.loop_spans[0]
    # a span covers the windows over the threshold: it may begin up to a window before the loop
    assert 12 - 6 < span.start <= 13 and span.end == 23 and span.peak >= analysis.loop_threshold
    first = sum(t.lexical_novelty for t in analysis.turns[:12]) / 12
    last = sum(t.lexical_novelty for t in analysis.turns[13:]) / 11
    assert first > 0.8 and last < 0.3
    assert analysis.novelty_trend < 0
    early = sum(t.semantic_novelty for t in analysis.turns[1:12]) / 11
    assert analysis.turns[20].semantic_novelty < 0.6 * early


@pytest.mark.parametrize("backend", ["embedding", "tfidf"])
def test_varied_conversation_has_no_span(backend):
    analysis = analyze(list(zip(VARIED, ASSISTANT, strict=False)), load_backend(backend))
    assert analysis.loop_spans == [] and analysis.convergence_spans == []
    assert all(t.loop_similarity is None for t in analysis.turns[:5])
    assert all(t.loop_similarity is not None for t in analysis.turns[5:])


def test_analysis_replays_exactly_what_the_monitor_measured():
    from loom_sim.signals.stagnation import StagnationMonitor

    backend = load_backend("embedding")
    spec = StagnationDetectionSpec()
    monitor = StagnationMonitor(spec, backend)
    live = []
    for turn, (p, i) in enumerate(zip(LOOP, ASSISTANT, strict=False)):
        monitor.add(turn, p, i)
        live.append(monitor.current())
    replayed = analyze(list(zip(LOOP, ASSISTANT, strict=False)), backend, spec)
    assert [(t.loop_similarity, t.convergence) for t in replayed.turns] == [
        (v[0], v[1]) if v else (None, None) for v in live
    ]


def test_initiative_counts_questions_redirects_and_topics():
    exchanges = [
        (
            "Look, the commits line up. Why won't anyone check the timestamps?",
            "Tell me more about the commits.",
        ),
        ("But you keep saying that. Did you read the logs?", "What do the logs show?"),
    ]
    analysis = analyze(exchanges, load_backend("tfidf"))
    first, second = analysis.turns
    assert (first.questions, second.questions) == (1, 1)
    assert first.redirects >= 1 and second.redirects >= 2
    assert first.topics_introduced == len(set(content_words(exchanges[0][0])))
    assert 0 < analysis.initiative["topic_share"] <= 1


def test_loader_reads_complete_unfinished_and_errored_transcripts():
    complete = load_transcript(RESULTS / "gpt_4o_pattern_decoder_20260125_170052.json")
    assert complete.model == "gpt-4o" and len(complete.exchanges) == 10 and not complete.problems
    unfinished = load_transcript(RESULTS / "gpt_4.1_pattern_decoder_20260126_094430.json")
    assert unfinished.status == "in_progress" and len(unfinished.exchanges) == 1
    errored = load_transcript(
        RESULTS / "run_20260126_095743" / "gpt_5.2_chat_latest_pattern_decoder.json"
    )
    assert errored.exchanges == [] and "API error" in errored.problems[0]


def test_signals_command_on_the_shared_data():
    result = CliRunner().invoke(cli, ["signals", str(RESULTS), "--backend", "tfidf", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    names = {row["transcript"] for row in data["summaries"]}
    assert "claude_sonnet_4_20250514_pattern_decoder.json" in names
    assert "gpt_5.2_chat_latest_pattern_decoder.json" in names
    claude = next(r for r in data["summaries"] if r["transcript"].startswith("claude"))
    assert claude["turns"] == 10 and claude["loop_spans"] == [] and claude["novelty_trend"] < 0


def test_signals_command_on_a_run_directory(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(ROOT / "configs" / "examples" / "mania_patient.yaml"),
            "--turns",
            "24",
            "-o",
            str(out),
            "--persona-model",
            f"scripted/{SCRIPTED / 'marcus_loop.yaml'}",
            "--target",
            f"scripted/{SCRIPTED / 'assistant.yaml'}",
            "--judge-model",
            "scripted/echo",
        ],
    )
    assert result.exit_code == 0, result.output
    table = CliRunner().invoke(cli, ["signals", str(out), "--format", "markdown"])
    assert table.exit_code == 0
    assert "rollout_000/transcript.json" in table.stdout and "12-23" in table.stdout
    transcript = json.loads((out / "rollout_000" / "transcript.json").read_text())
    fired = [
        t["turn"]
        for t in transcript["turns"]
        for e in t["monitor_events"]
        if e["monitor"] == "stagnation"
    ]
    assert fired and 12 < fired[0] <= 18


def test_the_signals_table_cuts_nothing_on_a_100_column_terminal():
    result = CliRunner().invoke(
        cli, ["signals", str(RESULTS), "--backend", "tfidf"], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines() if "│" in line) <= 100
    for path in RESULTS.rglob("*.json"):
        if path.name != "run_config.json":
            assert path.name in result.stdout  # each named in full, below the table
