"""docs/harness.md and the pack schema stay in step with the code they describe."""

from __future__ import annotations

from pathlib import Path

from loom_sim.harness.machines.session import HARNESS

from loom_sim.harness.stop import StopReason
from loom_sim.studio.abilities import ABILITIES
from tests.test_docs import load_gen_docs

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "harness.md").read_text()


def test_the_doc_shows_the_harness_machine_as_declared():
    assert "```mermaid\n" + HARNESS.diagram("mermaid") + "```" in DOC
    for state, what in HARNESS.descriptions.items():
        assert f"| {state} | {what} |" in DOC, state


def test_the_doc_names_every_stop_reason_and_studio_command():
    for reason in StopReason:
        assert f"| `{reason.value}` |" in DOC, reason
    for name in ABILITIES:
        assert f"/{name}" in DOC, name


def test_the_pack_schema_file_is_current():
    gen = load_gen_docs()
    current = (ROOT / "docs" / "harness-pack.schema.json").read_text()
    assert current == gen["pack_schema_text"](), "stale: run scripts/gen-docs"
