"""Docs derived from code stay in step with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
GEN = ROOT / "scripts" / "gen-docs"


def load_gen_docs():
    namespace: dict = {"__name__": "gen_docs", "__file__": str(GEN)}
    exec(compile(GEN.read_text(), str(GEN), "exec"), namespace)
    return namespace


def test_json_schema_file_is_current():
    gen = load_gen_docs()
    assert (ROOT / "docs" / "loom-sim.schema.json").read_text() == gen["schema_text"](), (
        "docs/loom-sim.schema.json is stale: run scripts/gen-docs"
    )


def test_config_reference_is_current():
    gen = load_gen_docs()
    current = (ROOT / "docs" / "config.md").read_text()
    assert current == gen["config_doc"](current), "docs/config.md is stale: run scripts/gen-docs"


@pytest.mark.parametrize(
    "name", ["cli.md", "plugins.md", "workbench.md", "harness.md", "debates.md"]
)
def test_registry_tables_are_current(name):
    gen = load_gen_docs()
    current = (ROOT / "docs" / name).read_text()
    assert current == gen["GENERATED"][name](current), f"docs/{name} is stale: run scripts/gen-docs"


def test_scoring_doc_explains_every_registered_scorer():
    from loom_sim.plugins.scorers import SCORERS

    text = (ROOT / "docs" / "scoring.md").read_text()
    for info in SCORERS:
        assert f"| `{info.name}` |" in text, info.name


def test_architecture_shows_the_rollout_machine_as_declared():
    from loom_sim.rollout.machines.rollout import ROLLOUT

    text = (ROOT / "docs" / "architecture.md").read_text()
    assert "```mermaid\n" + ROLLOUT.diagram("mermaid") + "```" in text
    for state, what in ROLLOUT.descriptions.items():
        assert f"| {state} | {what} |" in text, state


def test_config_reference_names_every_section():
    text = (ROOT / "docs" / "config.md").read_text()
    for section in (
        "`persona.identity`",
        "`trajectory.phases[]`",
        "`interaction.injection`",
        "`safety`",
        "(type: delayed_ramp)",
        "`evaluation.scoring.fidelity`",
    ):
        assert section in text


def test_readme_states_exactly_the_two_setup_commands_ci_uses():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^(scripts/setup && .+)$", readme, flags=re.M)
    assert len(commands) == 2, commands
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command in ci


def test_signals_doc_reports_every_shared_transcript():
    text = (ROOT / "docs" / "signals.md").read_text()
    results = ROOT / "tests" / "data" / "psychosis-bench-2.0" / "results"
    files = [p.name for p in results.rglob("*.json") if p.name != "run_config.json"]
    for name in files:
        assert name in text, name


def test_psychosis_bench_doc_shows_the_imported_report():
    text = (ROOT / "docs" / "psychosis-bench.md").read_text()
    for model in ("gpt-4o", "gpt-4.1", "gpt-5.2-chat-latest", "claude-sonnet-4-20250514"):
        assert model in text
    assert "### Stagnation (from the report)" in text and "| rollout_005 |" in text


def test_schema_paths_shown_to_users_resolve():
    for config in (ROOT / "configs" / "examples").glob("*.yaml"):
        first = config.read_text().splitlines()[0]
        if "$schema=" in first:
            assert (config.parent / first.split("$schema=")[1]).is_file(), config
    quickstart = (ROOT / "docs" / "quickstart.md").read_text()
    # the quickstart's configs sit at the repository root: the path is relative to them
    assert "$schema=docs/loom-sim.schema.json" in quickstart
    assert (ROOT / "docs" / "loom-sim.schema.json").is_file()


def test_the_cli_doc_covers_what_a_user_meets():
    text = (ROOT / "docs" / "cli.md").read_text()
    for needle in (
        "score_trace.jsonl",
        "`--judge-model SPEC`",
        "`--judge-window N`",
        "`--force`",
        "`scripted/…`",
        "`--responder NAME`",
        "`--model ROLE=SPEC`",
        "`--price SPEC=IN/OUT`",
        "LOOM_SIM_THREADS",
        "Ctrl-C",
        "faults",
    ):
        assert needle in text, needle
