"""Running debates in tests: scripted models by default, any model swapped in by spec."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from loom_sim.debate.files import Summary
from loom_sim.debate.runtime.plan import DebateOptions, DebatePlan, plan_debate, plan_resume
from loom_sim.debate.runtime.run import Debate
from loom_sim.models.base import ModelClient
from loom_sim.models.scripted import ScriptedClient

ROOT = Path(__file__).resolve().parent.parent
DECKS = ROOT / "configs" / "decks"
TEST_DECKS = ROOT / "tests" / "data" / "decks"  # planted decks kept with the tests, not shipped

SCRIPTED = {
    "cheap": "scripted/debater",
    "strong": "scripted/debater",
    "detection": "scripted/crux-detector",
    "exit_check": "scripted/crux-exit",
    "card": "scripted/crux-card",
}


def plan(deck: str | Path, out: Path, **options: Any) -> DebatePlan:
    """A shipped deck by name, or any deck by path."""
    models = {**SCRIPTED, **options.pop("models", {})}
    options.setdefault("similarity", "tfidf")
    options.setdefault("seed", 1)
    path = deck if isinstance(deck, Path) else DECKS / f"{deck}.yaml"
    made = plan_debate(path, DebateOptions(output=out, models=models, **options), [])
    made.files.write_plan(made.record)
    return made


class Models:
    """A model source: scripted clients by spec (one per spec, shared), with ``custom`` specs
    answered by the given clients; records every call as (spec, slot)."""

    def __init__(self, custom: dict[str, ModelClient] | None = None):
        self.custom = dict(custom or {})
        self._made: dict[str, ModelClient] = {}
        self.calls: list[tuple[str, str]] = []
        self.in_room: list[bool] = []  # per call: was it a crux-room message?

    def __call__(self, spec: str, slot: str) -> ModelClient:
        client = self.custom.get(spec) or self._made.get(spec)
        if client is None:
            client = self._made[spec] = ScriptedClient(spec)
        return _Counting(client, self, spec, slot)


class _Counting:
    def __init__(self, inner: ModelClient, models: Models, spec: str, slot: str):
        self._inner, self._models, self._key = inner, models, (spec, slot)
        self.spec = inner.spec
        self.context_tokens = inner.context_tokens

    async def complete(self, request):
        self._models.calls.append(self._key)
        system = request.messages[0].content if request.messages else ""
        self._models.in_room.append("CRUX ROOM MODE" in system)
        return await self._inner.complete(request)

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    async def aclose(self) -> None:
        return None


def run(
    made: DebatePlan, models: Models | None = None, progress: Any = None, hang: float = 120.0
) -> Summary:
    """Run a debate; one that has not ended after ``hang`` seconds is a livelock (scripted
    debates take well under a second), reported as a failure instead of a hung test run."""

    async def main() -> Summary:
        with trio.fail_after(hang):
            return await Debate(made, models or Models(), progress).run()

    return trio.run(main)


def resume(out: Path, models: Models | None = None) -> Summary:
    return run(plan_resume(out), models)


def killed_after(made: DebatePlan, calls: int, models: Models | None = None) -> None:
    """Run ``made`` and cancel it in the middle of model call ``calls`` (1-based), the way a
    kill stops it: nothing after that call is written, and no summary."""
    models = models or Models()

    async def main() -> None:
        with trio.CancelScope() as scope:
            original = models.__call__

            def source(spec: str, slot: str) -> ModelClient:
                client = original(spec, slot)
                inner = client.complete

                async def complete(request):
                    if len(models.calls) + 1 >= calls:
                        scope.cancel()
                        await trio.sleep_forever()
                    return await inner(request)

                client.complete = complete  # type: ignore[method-assign]
                return client

            await Debate(made, source).run()

    trio.run(main)


ARTIFACTS = ("messages.jsonl", "detections.jsonl", "cards.json")


def artifacts(out: Path) -> dict[str, bytes]:
    found = {name: (out / name).read_bytes() for name in ARTIFACTS if (out / name).exists()}
    for path in sorted((out / "rooms").glob("*/transcript.jsonl")):
        found[str(path.relative_to(out))] = path.read_bytes()
    return found


Respond = Callable[[Any], str]
