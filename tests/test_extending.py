"""Extending loom-sim without editing it: a provider, a scorer and a responder added from test
code run a rollout, are scored and reported, and appear wherever loom-sim lists its own.

The second test does the same through the real mechanism a separate package uses: a
distribution on ``sys.path`` whose ``entry_points.txt`` names its plug-in module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from loom_sim.actors.base import Actor, ActorContext

from loom_sim.cli import cli
from loom_sim.config import parse_config
from loom_sim.config.errors import ConfigError
from loom_sim.messages import Body, Utterance
from loom_sim.models.base import ModelRequest, ModelResponse, Usage
from loom_sim.models.providers import PROVIDERS, Provider
from loom_sim.plugins.actors import ACTORS, ActorKind, Responder
from loom_sim.plugins.scorers import SCORERS, ScorerInfo
from loom_sim.rollout.messages import Respond
from loom_sim.rollout.scoring.base import Scorer, TurnView
from loom_sim.store.records import Score

ROOT = Path(__file__).resolve().parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"


class CountingClient:
    """A model client of the test provider: numbered, deterministic replies."""

    def __init__(self, spec: str):
        self.spec = spec
        self.context_tokens = 8192
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        text = f"{self.spec} says hello number {self.calls}, thank you."
        return ModelResponse(text=text, usage=Usage(5, 7, 0.0), model=self.spec)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def aclose(self) -> None:
        pass


class Mirror(Actor):
    """A responder: repeats the persona back, in its model's words."""

    role = "mirror"

    def __init__(self, model):
        self._model = model

    @classmethod
    def from_context(cls, context: ActorContext) -> Mirror:
        return cls(context.model("mirror"))

    async def handle(self, body: Body) -> Body | None:
        match body:
            case Respond():
                said = await self._model.complete(ModelRequest(messages=[]))
                return Utterance(text=f"You said: {body.text[:40]}. {said.text}", usage=said.usage)
        raise TypeError(type(body).__name__)


class Politeness(Scorer):
    """Deterministic: 1 when the responder said thank you, else 0."""

    async def score(self, turn: TurnView) -> Score:
        thanked = "thank you" in turn.record.interlocutor.lower()
        return Score(1.0 if thanked else 0.0, "deterministic", {"thanked": thanked})


@pytest.fixture
def plugins():
    with (
        PROVIDERS.added(
            Provider(
                name="counting",
                summary="numbered replies (a test provider)",
                make=lambda options: CountingClient(options.spec),
                free=True,
            )
        ),
        SCORERS.added(
            ScorerInfo(
                name="politeness",
                scorer=Politeness,
                config_key="politeness",
                needs_judge=False,
                order=70,
                summary="thanks, per turn (a test scorer)",
            )
        ),
        ACTORS.added(
            ActorKind(
                name="mirror",
                build=Mirror.from_context,
                summary="repeats the persona (a test responder)",
                responder=Responder(model_role="mirror"),
            )
        ),
    ):
        yield


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output, result.output
    return result


def test_a_provider_a_scorer_and_a_responder_from_test_code_run_score_and_report(tmp_path, plugins):
    out = tmp_path / "run"
    result = invoke(
        "run", str(MANIA), "--turns", "3", "--seed", "5", "-o", str(out),
        "--persona-model", "counting/persona", "--responder", "mirror",
        "--model", "mirror=counting/mirror", "--judge-model", "scripted/judge",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    assert run["responders"] == ["mirror"]
    assert run["models"]["mirror"] == "counting/mirror"
    transcript = json.loads((out / "rollout_000" / "transcript.json").read_text())
    assert [t["interlocutor"].startswith("You said:") for t in transcript["turns"]] == [True] * 3
    assert "counting/mirror says hello number 1" in transcript["turns"][0]["interlocutor"]
    assert transcript["usage"]["mirror"]["output_tokens"] == 21  # charged to its model role
    for turn in transcript["turns"]:
        assert turn["scores"]["politeness"] == {
            "value": 1.0, "source": "deterministic", "details": {"thanked": True}, "error": None,
            "not_applicable": None,
        }  # fmt: skip
    assert transcript["scores"]["aggregates"]["politeness"]["value"] == 1.0
    report = json.loads((out / "report.json").read_text())
    assert report["scorers"][-1] == "politeness"  # in registry order: after the built-ins
    assert "politeness" in (out / "report.md").read_text()


def test_they_appear_wherever_loom_sim_lists_its_own(plugins):
    assert "mirror" in invoke("run", "--help").output
    listed = invoke("plugins").output
    assert "counting" in listed and "politeness" in listed and "mirror" in listed
    schema = json.loads(invoke("schema").output)
    scoring = schema["$defs"]["ScoringSpec"]["properties"]
    assert "politeness" in scoring
    assert (
        "counting"
        in schema["$defs"]["ModelsSpec"]["properties"]["provider_concurrency"]["propertyNames"][
            "enum"
        ]
    )
    text = MANIA.read_text() + "\nmodels:\n  judge: counting/judge\n"
    text = text.replace("  scoring:\n", "  scoring:\n    politeness: {enabled: false}\n", 1)
    config = parse_config(text)
    assert config.evaluation.scoring.of("politeness").enabled is False
    with pytest.raises(ConfigError) as caught:
        parse_config(text.replace("politeness: {", "politness: {"))
    assert "did you mean 'politeness'" in str(caught.value)


def test_unknown_plugins_are_one_line_errors(tmp_path):
    result = invoke("run", str(MANIA), "--responder", "mirror", "-o", str(tmp_path / "x"))
    assert result.exit_code == 2 and "'mirror' is not a known responder" in result.output
    result = invoke("run", str(MANIA), "--persona-model", "counting/x", "-o", str(tmp_path / "y"))
    assert result.exit_code == 1 and "unknown provider 'counting'" in result.output


PACKAGE = '''
"""A separate package's plug-ins: importing this module registers them."""
from loom_sim.models.base import ModelResponse, Usage
from loom_sim.models.providers import provider
from loom_sim.plugins.scorers import scorer
from loom_sim.rollout.scoring.base import Scorer
from loom_sim.store.records import Score


class Client:
    def __init__(self, spec):
        self.spec, self.context_tokens = spec, 8192

    async def complete(self, request):
        words = "Plain words from a package."
        return ModelResponse(text=words, usage=Usage(1, 4, 0.0), model=self.spec)

    def count_tokens(self, text):
        return len(text.split())

    async def aclose(self):
        pass


@provider("pkgmodel", summary="a provider from a separate package", free=True)
def make(options):
    return Client(options.spec)


@scorer("brevity", needs_judge=False, order=80, summary="short replies score high")
class Brevity(Scorer):
    async def score(self, turn):
        words = len(turn.record.persona.split())
        return Score(1.0 if words < 20 else 0.0, "deterministic", {"words": words})
'''


@pytest.mark.slow
def test_a_separate_package_adds_plugins_through_entry_points(tmp_path):
    site = tmp_path / "site"
    (site / "loomext").mkdir(parents=True)
    (site / "loomext" / "__init__.py").write_text(textwrap.dedent(PACKAGE))
    info = site / "loomext-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: loomext\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[loom_sim.providers]\nloomext = loomext\n\n[loom_sim.scorers]\nloomext = loomext\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    loom = [sys.executable, "-m", "loom_sim"]
    listed = subprocess.run(
        [*loom, "plugins"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert listed.returncode == 0, listed.stderr
    assert "pkgmodel" in listed.stdout and "brevity" in listed.stdout
    out = tmp_path / "run"
    ran = subprocess.run(
        [*loom, "run", str(MANIA), "--turns", "2", "--seed", "1", "-o", str(out),
         "--persona-model", "pkgmodel/p", "--target", "pkgmodel/t",
         "--judge-model", "scripted/judge"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    transcript = json.loads((out / "rollout_000" / "transcript.json").read_text())
    assert transcript["turns"][0]["persona"] == "Plain words from a package."
    assert transcript["turns"][0]["scores"]["brevity"]["value"] == 1.0
