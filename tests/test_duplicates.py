"""Helpers the systems share exist once: a copy coming back in another folder fails here.

Each check reads the source as syntax (ast), so a docstring or a comment that mentions a name
does not count, and names the file that brought a copy back.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("loom_sim", "actors", "machines")


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), str(path))


def _called(node: ast.Call) -> str:
    """The name a call is made through: ``Environment`` for ``jinja2.Environment(...)``."""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def test_only_the_engine_defines_a_transition_helper():
    """A machine's table is written with ``machines/engine.py``'s ``transition``; a function
    that builds a ``Transition`` anywhere else is a copy of it."""
    makers = [
        f"{name}:{fn.lineno} {fn.name}"
        for name, module in _modules()
        for fn in ast.walk(module)
        if isinstance(fn, ast.FunctionDef)
        for call in ast.walk(fn)
        if isinstance(call, ast.Call) and _called(call) == "Transition"
    ]
    assert [m.split(":")[0] for m in makers] == ["machines/engine.py"], makers


def test_one_autoescaping_jinja_environment():
    """Every HTML page is rendered in ``core/html.py``'s environment (each caller passes its
    filters and globals); an ``Environment(autoescape=True)`` elsewhere is a copy that will
    drift from it."""
    made = [
        f"{name}:{call.lineno}"
        for name, module in _modules()
        for call in ast.walk(module)
        if isinstance(call, ast.Call) and _called(call) in ("Environment", "SandboxedEnvironment")
        for keyword in call.keywords
        if keyword.arg == "autoescape"
        and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False)
    ]
    assert [m.split(":")[0] for m in made] == ["loom_sim/core/html.py"], made


@pytest.mark.parametrize(
    "literal",
    [
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ],
)
def test_provider_servers_and_key_variables_are_said_once(literal):
    """The registry, the clients and the hub read them from ``models/endpoints.py``."""
    places = [
        f"{name}:{node.lineno}"
        for name, module in _modules()
        for node in ast.walk(module)
        if isinstance(node, ast.Constant) and node.value == literal
    ]
    assert [p.split(":")[0] for p in places] == ["loom_sim/models/endpoints.py"], places


def test_the_http_clients_resolve_their_server_and_key_the_same_way():
    from loom_sim.models.anthropic import AnthropicClient
    from loom_sim.models.openai import OpenAIClient

    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ANTHROPIC_API_KEY": "k"}
    openai = OpenAIClient("openai/x", env=env)
    assert openai.base_url == "http://127.0.0.1:9/v1" and not openai._has_key
    assert OpenAIClient("openai/x", env={}).base_url == "https://api.openai.com/v1"
    anthropic = AnthropicClient("anthropic/x", env=env)
    assert anthropic.base_url == "https://api.anthropic.com" and anthropic._has_key
    assert not AnthropicClient("anthropic/x", api_key="", env=env)._has_key  # "" means none


def test_key_value_options_have_one_parser():
    """``--model ROLE=SPEC`` and ``--price SPEC=IN/OUT`` go through ``cli/options.py``'s
    ``parse_pairs``; no command keeps a private copy."""
    copies = [
        f"{name}:{fn.lineno} {fn.name}"
        for name, module in _modules()
        if name.startswith("loom_sim/cli/")
        for fn in ast.walk(module)
        if isinstance(fn, ast.FunctionDef) and fn.name.endswith("pairs")
    ]
    assert [c.split(":")[0] for c in copies] == ["loom_sim/cli/options.py"], copies


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["run", "mania_patient", "--model", "judge"],
            "--model 'judge': write it as ROLE=SPEC, e.g. judge=openai/x",
        ),
        (
            ["run", "mania_patient", "--price", "x"],
            "--price 'x': write it as SPEC=IN/OUT, e.g. openai/x=2.5/10",
        ),
        (
            ["harness", "run", "studio_benchmarks", "--model", "user"],
            "--model 'user': write it as ROLE=SPEC, e.g. user=openai/gpt-4.1",
        ),
        (
            ["debate", "planted_values", "--model", "strong"],
            "--model 'strong': write it as NAME=SPEC, e.g. strong=openai/gpt-4.1",
        ),
        (["debate", "planted_values", "--model", " =x"], "--model ' =x': write it as NAME=SPEC"),
    ],
)
def test_a_malformed_pair_is_one_sentence_naming_the_flag(tmp_path, monkeypatch, args, message):
    from loom_sim.cli import cli

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "out")])
    assert result.exit_code == 1 and message in result.stderr, result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_one_live_progress_table():
    """A run's, a scoring's and a probe's live tables are ``core/progress.py``'s
    ``LiveTable`` with their own columns and rows: a ``rich.live.Live`` made anywhere else is a
    copy of its drawing."""
    lives = [
        f"{name}:{call.lineno}"
        for name, module in _modules()
        for call in ast.walk(module)
        if isinstance(call, ast.Call) and _called(call) == "Live"
    ]
    assert [m.split(":")[0] for m in lives] == ["loom_sim/core/progress.py"], lives
    from loom_sim.core.progress import LiveTable
    from loom_sim.probe.progress import RichProbeProgress
    from loom_sim.rollout.runtime.progress import RichProgress
    from loom_sim.rollout.scoring.progress import RichScoreProgress

    for table in (RichProgress, RichScoreProgress, RichProbeProgress):
        assert issubclass(table, LiveTable) and "__rich__" not in vars(table)


def test_one_append_only_log_type():
    """``turns.jsonl`` is a ``JsonLines`` with its own rules (turns in order, its advice); the
    writing, reading and repair are ``JsonLines``'s alone."""
    from loom_sim.store.artifacts import TurnLog
    from loom_sim.store.jsonl import JsonLines

    assert issubclass(TurnLog, JsonLines)
    assert not {"append", "close", "read", "load", "_read"} & set(vars(TurnLog))


def test_the_turn_log_keeps_its_rules(tmp_path):
    from loom_sim.errors import LoomError
    from loom_sim.store.artifacts import TurnLog
    from loom_sim.store.jsonl import DamagedFile

    class Turn(msgspec.Struct):
        turn: int

    decoder = msgspec.json.Decoder(Turn)

    path = tmp_path / "turns.jsonl"
    path.write_bytes(b'{"turn": 0}\n{"turn": 2}\n')
    with pytest.raises(LoomError, match=r"turns.jsonl:2: turn 3 found where turn 2 belongs"):
        TurnLog(path, decoder).read()
    path.write_bytes(b'{"turn": 0}\nnot json\n{"turn": 1}\n{"turn": 2')
    with pytest.raises(DamagedFile, match=r"not a turn record .*1 valid turn follow it") as err:
        TurnLog(path, decoder).load()
    assert "head -n 1" in str(err.value) and path.read_bytes().endswith(b'{"turn": 2')


def test_one_placeholder_transcript():
    """A rollout without ``transcript.json`` (pending, running, killed) is shown through
    ``store/run_file.py``'s ``placeholder_transcript``; only a rollout that ran (the runtime)
    or was imported builds a ``Transcript`` of its own."""
    built = sorted(
        name
        for name, module in _modules()
        for call in ast.walk(module)
        if isinstance(call, ast.Call) and _called(call) == "Transcript"
    )
    assert built == [
        "loom_sim/rollout/interop/importer.py",
        "loom_sim/rollout/runtime/rollout.py",
        "loom_sim/store/run_file.py",
    ], built


def test_one_stop_shape_for_the_systems():
    """A rollout and a harness session stop with ``core/stops.py``'s ``Stop``: a key of the
    system's own ``StopReason`` and a sentence. The keys stay the plain strings records hold."""
    from loom_sim.core.stops import Stop, StopReason
    from loom_sim.harness.stop import StopReason as HarnessStopReason
    from loom_sim.rollout.runtime.stop_rules import RolloutStopReason

    shapes = [
        f"{name}:{node.lineno}"
        for name, module in _modules()
        for node in ast.walk(module)
        if isinstance(node, ast.ClassDef) and node.name == "Stop"
    ]
    assert [s.split(":")[0] for s in shapes] == ["loom_sim/core/stops.py"], shapes
    for reasons in (HarnessStopReason, RolloutStopReason):
        assert issubclass(reasons, StopReason)
    stop = Stop(RolloutStopReason.MAX_TURNS, "3 of 3 turns")
    assert msgspec.json.encode({"stop_reason": stop.reason}) == b'{"stop_reason":"max_turns"}'


def test_the_http_clients_share_one_constructor():
    """OpenAI's and Anthropic's clients are made by ``HTTPModelClient.__init__``; each says
    only its endpoint, path, headers and context size."""
    from loom_sim.models.anthropic import AnthropicClient
    from loom_sim.models.openai import OpenAIClient

    for client in (OpenAIClient, AnthropicClient):
        assert "__init__" not in vars(client), client
