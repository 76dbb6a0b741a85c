"""What the harness tests share: a toy chat program (a real program, run in a real PTY), a pack
that drives it, scripted models by role, and a way to run a plan."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from loom_sim.harness.packs import load_pack
from loom_sim.harness.plan import HarnessOptions, HarnessPlan, plan_run
from loom_sim.harness.run import execute
from loom_sim.models.base import ModelRequest
from loom_sim.models.scripted import ScriptedClient

ROOT = Path(__file__).resolve().parent.parent
STAND_INS = {
    "user": "scripted/harness-user",
    "reflector": "scripted/harness-reflector",
    "evaluator": "scripted/harness-evaluator",
}

#: A chat program whose behaviour the user's line chooses: /ok, /fail, /make (a PNG), /cost (an
#: event with a cost), /slow, /crash, /flood, /bytes; anything else is echoed.
TOY = r"""
import json, os, sys, time
out_dir = sys.argv[1]
os.makedirs(os.path.join(out_dir, "out"), exist_ok=True)
events = open(os.path.join(out_dir, "events.jsonl"), "a")
def event(**e):
    events.write(json.dumps(e) + "\n"); events.flush()
w = sys.stdout.write
w("toy chat ready\n> "); sys.stdout.flush()
made = 0
for line in sys.stdin:
    line = line.strip()
    if line == "/crash":
        w("fatal: the toy fell over\n"); sys.stdout.flush(); sys.exit(3)
    elif line.startswith("/fail"):
        event(type="error", message="that failed"); w("error: that failed\n")
    elif line.startswith("/make"):
        from PIL import Image
        made += 1
        Image.new("RGB", (64, 48), (40 * made % 255, 120, 200)).save(
            os.path.join(out_dir, "out", f"{made}.png"))
        event(type="image_generated", ability="make", cost_usd=0.02); w(f"made {made}.png\n")
    elif line.startswith("/cost"):
        event(type="render", cost_usd=0.02); w("rendered\n")
    elif line.startswith("/wait"):
        time.sleep(0.4); w("waited\n")
    elif line.startswith("/slow"):
        time.sleep(3); w("slow reply\n")
    elif line.startswith("/flood"):
        w(("spam " * 30 + "\n") * 20000)
    elif line.startswith("/bytes"):
        sys.stdout.flush(); sys.stdout.buffer.write(b"odd \xff\xfe \x1b[32mgreen\x1b[0m\n")
    elif line == "/noprompt":
        w("no prompt this time\n"); sys.stdout.flush(); continue
    else:
        w(f"you said: {line}\n")
    w("> "); sys.stdout.flush()
"""


def toy_pack(
    tmp_path: Path,
    *,
    budget: dict | None = None,
    target: dict | None = None,
    criteria: list | None = None,
    persona: dict | None = None,
) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    program = tmp_path / "toy_chat.py"
    program.write_text(textwrap.dedent(TOY))
    pack = {
        "abilities": [
            {"name": n, "usage": f"/{n}", "summary": n}
            for n in ("ok", "fail", "make", "cost", "wait", "slow", "crash", "flood", "bytes")
        ],
        "targets": {
            "toy": {
                "adapter": "pty",
                "command": [sys.executable, str(program), "{workdir}"],
                "prompt": "^> $",
                "events": "{workdir}/events.jsonl",
                "artifacts": "{workdir}/out/*.png",
                "reply_timeout_s": 20,
                **(target or {}),
            }
            if (target or {}).get("adapter", "pty") == "pty"
            else target  # another kind: its own settings only
        },
        "defaults": {"target": "toy"},
        "personas": {"tester": {"who": "Someone testing a toy.", "patience": 3, **(persona or {})}},
        "scenarios": [
            {
                "id": "toy",
                "persona": "tester",
                "goal": "Make two images.",
                "required_abilities": ["make|cost"],
                "success_criteria": criteria or [{"id": "two", "type": "artifacts", "min": 2}],
                "budget": {"max_turns": 4, "max_runtime_s": 120, **(budget or {})},
            }
        ],
    }
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(pack, indent=1))
    return path


def command(name: str, arguments: str = "") -> str:
    return json.dumps({"action": name, "text": arguments})


def utterance(text: str) -> str:
    return json.dumps({"action": "say", "text": text})


def by_turn(answers: Sequence[str]) -> Callable[[ModelRequest], str]:
    """A scripted user answering by the turn its prompt names ("Turn N."), the last answer
    repeating: unlike the assistant-message count, this survives a resumed session."""

    def respond(request: ModelRequest) -> str:
        import re

        found = re.findall(r"Turn (\d+)\.", request.messages[-1].content)
        turn = int(found[-1]) if found else 0
        return answers[min(turn, len(answers) - 1)]

    return respond


def models(custom: dict[str, Any] | None = None):
    """A model source: ScriptedClient for every spec, with the given responders by spec."""
    clients: dict[str, ScriptedClient] = {}

    def get(spec: str, index: int, role: str) -> ScriptedClient:
        if spec not in clients:
            responses = (custom or {}).get(spec)
            clients[spec] = ScriptedClient(spec, responses=responses)
        return clients[spec]

    return get


def run_plan(plan: HarnessPlan, custom: dict[str, Any] | None = None) -> list[dict]:
    class Quiet:
        def session_started(self, *args): ...

        def turn_done(self, *args): ...

        def session_ended(self, *args): ...

    return trio.run(execute, plan, models(custom), Quiet())


def plan(pack: Path, out: Path, *, roles: dict[str, str] | None = None, **options) -> HarnessPlan:
    return plan_run(
        load_pack(pack),
        HarnessOptions(models={**STAND_INS, **(roles or {})}, output=out, seed=5, **options),
        argv=[],
    )


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
