"""No livelock: whatever the speaker policy, the cadences and the failures, a debate ends
within its message budget, every room within its exchange cap, and the model calls are bounded.

AG2's GroupChat can spin forever when its selector names nobody valid; here a turn that
cannot produce a message is a failed turn that still uses up one message of the budget, and
every loop has a counted bound. Hypothesis draws policies, cadences, thresholds and failure
patterns (drafts that break the rules, replies that cannot be read, empty replies, unusable
JSON from the detector, exit check and card writer) and checks the bounds on each debate.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_sim.debate.runtime.plan import DebatePlan
from loom_sim.debate.stop import DebateStopReason
from loom_sim.models.base import BadModelReply
from loom_sim.models.scripted import SCRIPTS, ScriptedClient
from tests.debate_support import Models, plan, run

SPECS = {
    "scripted/debater": "scripted/chaos-debater",
    "scripted/crux-detector": "scripted/chaos-detector",
    "scripted/crux-exit": "scripted/chaos-exit",
    "scripted/crux-card": "scripted/chaos-card",
}


def chaos(script: str, bad: float, unreadable: float, empty: float) -> ScriptedClient:
    respond = SCRIPTS.get(script.removeprefix("scripted/")).respond

    def reply(request):
        rng = random.Random(f"{request.seed}:{len(request.messages)}")
        roll = rng.random()
        if roll < unreadable:
            raise BadModelReply("the server sent a malformed body")
        if roll < unreadable + empty:
            return ""
        if roll < unreadable + empty + bad:
            return "I think, firstly, that {broken json"
        return respond(request)

    return ScriptedClient(SPECS[script], responses=reply)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    order=st.sampled_from(["round_robin", "random", "least_recent", "addressed"]),
    fallback=st.sampled_from(["round_robin", "random", "least_recent"]),
    never_twice=st.booleans(),
    max_silence=st.none() | st.integers(1, 6),
    people=st.sampled_from(["planted_claim", "planted_values", "planted_none_fair"]),
    messages=st.integers(1, 16),
    tries=st.integers(1, 3),
    every=st.integers(1, 4),
    consecutive=st.integers(1, 2),
    confidence=st.floats(0.0, 1.0),
    cooldown=st.integers(0, 6),
    gate=st.floats(0.0, 0.5),
    max_exchanges=st.integers(1, 7),
    exit_after=st.integers(0, 4),
    exit_every=st.integers(1, 3),
    card_attempts=st.integers(1, 3),
    bad=st.floats(0.0, 0.6),
    unreadable=st.floats(0.0, 0.2),
    empty=st.floats(0.0, 0.2),
    seed=st.integers(0, 10_000),
)
def test_a_debate_always_ends_within_its_budget(
    order, fallback, never_twice, max_silence, people, messages, tries, every, consecutive,
    confidence, cooldown, gate, max_exchanges, exit_after, exit_every, card_attempts, bad,
    unreadable, empty, seed,
):  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "d"
        made = plan(people, out, seed=seed, messages=messages)
        data = made.deck.debate.model_dump(mode="json")
        data["speakers"] = {
            "order": order,
            "fallback": fallback,
            "never_twice": never_twice,
            "max_silence": max_silence,
        }
        data["drafts"]["attempts"] = tries
        data["detection"].update(
            every=every,
            window=max(every, 10),
            consecutive=consecutive,
            confidence=confidence,
            cooldown=cooldown,
            gate=gate,
        )
        data["rooms"].update(
            max_exchanges=max_exchanges,
            exit_after=exit_after,
            exit_every=exit_every,
            card_attempts=card_attempts,
        )
        debate = made.deck.debate.model_validate(data)
        made = DebatePlan(made.files, made.record, made.deck.model_copy(update={"debate": debate}))
        models = Models({s: chaos(s, bad, unreadable, empty) for s in SPECS})
        for script, chaotic in SPECS.items():
            models.custom[script] = models.custom.pop(script)
            assert models.custom[script].spec == chaotic

        summary = run(made, models)

        assert summary.status == "done", summary.error
        turns = [json.loads(x) for x in (out / "messages.jsonl").read_text().splitlines()]
        assert len(turns) <= messages
        if len(turns) == messages:
            assert summary.stop_reason is DebateStopReason.MAX_MESSAGES
            assert summary.stop_detail == f"budget: {messages} messages"
        else:
            assert summary.stop_reason is DebateStopReason.CONSECUTIVE_FAILURES
            in_a_row = debate.max_failed_in_a_row
            assert [t["status"] for t in turns[-in_a_row:]] == ["failed"] * in_a_row
            assert summary.stop_detail == f"{in_a_row} failed turns in a row"
        rounds = summary.rounds
        assert rounds <= sum(1 for t in turns if t["status"] == "said") // every
        room_calls = 0
        for transcript in (out / "rooms").glob("*/transcript.jsonl"):
            room = [json.loads(x) for x in transcript.read_text().splitlines()]
            spoken = [x for x in room if x["type"] == "message"]
            checks = [x for x in room if x["type"] == "exit_check"]
            assert len(spoken) <= 2 + max_exchanges
            room_calls += len(spoken) * tries + len(checks) * 2 + card_attempts
        assert summary.rooms <= rounds * 3
        bound = messages * tries + rounds * 2 + room_calls
        assert len(models.calls) <= bound
