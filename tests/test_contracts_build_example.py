"""The contracts-build example ships as files users can copy; it and the config shown in the
docs must stay valid YAML that builds (an unquoted ``?`` inside ``{…}`` once made it fail)."""

import re
import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from loom_sim.cli import cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "configs" / "examples" / "contracts-build"


def test_the_shipped_example_builds_a_contract_for_every_persona(tmp_path):
    folder = tmp_path / "contracts-build"
    shutil.copytree(EXAMPLE, folder)
    result = CliRunner().invoke(cli, ["contracts", "build", str(folder / "quayside-build.yaml")])
    assert result.exit_code == 0, result.output
    out = folder / "decks" / "quayside"
    assert sorted(p.name for p in (out / "contracts").glob("*.json")) == [
        "mara-lindqvist.json",
        "tobias-okoro.json",
    ]
    deck = yaml.safe_load((out / "deck.yaml").read_text(encoding="utf-8"))
    assert deck["topic"] == "Should Quayside pedestrianise the harbour road?"


def test_the_build_config_in_the_docs_is_valid_yaml():
    text = (ROOT / "docs" / "debates.md").read_text(encoding="utf-8")
    section = text[text.index("## Building contracts from a corpus") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    config = yaml.safe_load(block.group(1))
    assert config["deck"]["topic"] == "Should Quayside pedestrianise the harbour road?"


def test_an_empty_relevance_answer_fails_naming_the_step_and_the_answer(tmp_path):
    """Each try's seed is fixed, so advising the same command again would repeat the failure."""
    import trio

    from loom_sim.debate.builder import Builder, BuildFailed
    from loom_sim.models.scripted import SCRIPTS, ScriptedClient

    folder = tmp_path / "contracts-build"
    shutil.copytree(EXAMPLE, folder)
    respond = SCRIPTS.get("contract-builder").respond
    schemas = []

    def reply(request):
        if "relevant" in request.messages[0].content:
            schemas.append(request.messages[0].content)
            return '{"relevant": []}'
        return respond(request)

    client = ScriptedClient("scripted/x", responses=reply)
    builder = Builder(folder / "quayside-build.yaml", lambda role: client)
    try:
        trio.run(builder.build)
    except BuildFailed as err:
        message = str(err)
    else:
        raise AssertionError("the build finished on empty relevance answers")
    assert "step 1 of 9 (relevance)" in message
    assert 'the model returned: {"relevant": []}' in message
    assert "run the same command again" not in message
    # the schema shown (and, on the embedded model, enforced) lists the corpus's ids, minItems 1
    assert '"minItems": 1' in schemas[0] and '"enum": [' in schemas[0]
