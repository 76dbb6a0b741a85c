"""What makes judging fast on a CPU, each part able to fail on its own: the embedded model run
from a Q8_0 copy, no schema shown to a model held to it by a grammar, no retry that would get
the same answer again, room for a JSON answer's keys, and a llama.cpp slot per rubric."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
import trio

from loom_sim.judging.judge import judge
from loom_sim.judging.structured import ask_json, require_keys
from loom_sim.messages import Judge, WindowTurn
from loom_sim.models import llama_slots, local
from loom_sim.models.base import ChatMessage, ModelRequest, ModelResponse, Usage, schema_text
from loom_sim.models.local import EMBEDDED_JSON_SLACK, EMBEDDED_MAX_TOKENS, LocalLlamaClient
from loom_sim.models.scripted import ScriptedClient
from loom_sim.rollout.scoring.engine import RolloutScorer, ScoreOptions, ScoreSummary
from loom_sim.rollout.scoring.plan import QA_GRAMMAR
from loom_sim.seeds import SeedSource
from loom_sim.store.artifacts import RolloutFiles, rollout_dir
from loom_sim.store.run_file import read_run
from tests.test_scoring import fixed_answer, make_run
from tests.test_scoring_schedule import FENCE_END, LatencyJudgeHub

ROOT = Path(__file__).resolve().parent.parent

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
}


@pytest.mark.slow
def test_the_embedded_model_runs_from_a_q8_0_copy_made_once(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_SIM_CACHE_DIR", str(tmp_path / "cache"))
    shipped = local.embedded_model_path()
    made = llama_slots.runnable_path(shipped)
    assert made.parent == tmp_path / "cache" / "models" and made.name.endswith(".gguf")
    assert "Q8_0" in made.name and made.stat().st_size > shipped.stat().st_size
    assert made.read_bytes()[:4] == b"GGUF"
    stamp = made.stat().st_mtime_ns
    assert llama_slots.runnable_path(shipped) == made and made.stat().st_mtime_ns == stamp  # once
    assert not list(made.parent.glob("*.partial"))
    other = tmp_path / "mine.gguf"
    assert llama_slots.runnable_path(other) == other  # a user's own file is run as it is


def test_an_unwritable_cache_runs_the_shipped_file(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("LOOM_SIM_CACHE_DIR", str(blocker))
    shipped = local.embedded_model_path()
    assert llama_slots.runnable_path(shipped) == shipped


class Recorder(ScriptedClient):
    """A scripted judge that notes the requests it gets."""

    def __init__(self, *args, enforces: bool = False, deterministic: bool = False, **kw):
        super().__init__(*args, **kw)
        self.enforces_schema = enforces
        self.greedy_is_deterministic = deterministic
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return await super().complete(request)


async def ask(model: Recorder):
    request = Judge(
        turn=0, rubric="Score it.", window=[WindowTurn(0, "hi", "hello")], schema=SCHEMA
    )
    return await judge(model, SeedSource(1, 0), request)


async def test_a_model_held_to_the_schema_is_not_shown_it():
    answer = json.dumps({"score": 3, "reason": "ok"})
    held = Recorder("scripted/held", responses=[answer], enforces=True)
    told = Recorder("scripted/told", responses=[answer])
    assert (await ask(held)).ok and (await ask(told)).ok
    shown = schema_text(SCHEMA)
    assert shown not in held.requests[0].messages[-1].content
    assert shown in told.requests[0].messages[-1].content
    assert held.requests[0].json_schema == SCHEMA  # the grammar still gets it


async def test_a_deterministic_model_is_not_asked_the_same_thing_twice():
    garbage = ["not json at all"] * 5
    greedy = Recorder("scripted/greedy", responses=garbage, deterministic=True)
    sampled = Recorder("scripted/sampled", responses=garbage)
    assert not (await ask(greedy)).ok and not (await ask(sampled)).ok
    assert len(greedy.requests) == 1  # the same prompt would get the same answer
    assert len(sampled.requests) == 3
    # with feedback the request changes, so even a deterministic model is asked again
    fed = Recorder("scripted/fed", responses=garbage, deterministic=True)
    answer = await ask_json(
        fed, [ChatMessage("user", "Score it.")], schema=SCHEMA, validate=require_keys(SCHEMA),
        seed=lambda n: n, feedback=True,
    )  # fmt: skip
    assert not answer.ok and answer.attempts == 3 and len(fed.requests) == 3


class CutAt(Recorder):
    """Cuts every reply at ``cap`` tokens, whatever was asked: a client's own cap."""

    def __init__(self, cap: int, **kw):
        super().__init__("scripted/capped", responses=['{"score": 3, "reason": "and so'], **kw)
        self.cap = cap

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        used = min(request.max_tokens, self.cap)
        return ModelResponse(
            text='{"score": 3, "reas',
            usage=Usage(10, used),
            model=self.spec,
            finish_reason="length",
        )


async def test_more_room_is_asked_only_of_a_reply_cut_at_the_budget():
    def run(model):
        return ask_json(
            model, [ChatMessage("user", "Score it.")], schema=SCHEMA,
            validate=require_keys(SCHEMA), seed=lambda n: n, max_tokens=100,
        )  # fmt: skip

    budget = CutAt(cap=10_000)  # cut at the 100 asked: twice the room next time
    await run(budget)
    assert [r.max_tokens for r in budget.requests] == [100, 200, 400]
    capped = CutAt(cap=50, deterministic=True)  # cut by its own cap: more would not help
    await run(capped)
    assert [r.max_tokens for r in capped.requests] == [100]


class FakeLlama:
    """Stands in for a loaded ``Llama``: counts tokens as words, notes the completion asked.
    Its chat format is a built-in one, so a JSON answer is held to a grammar, not written
    (tests/test_llama_json.py covers that, on the real model)."""

    chat_handler = None
    chat_format = "llama-2"

    def __init__(self, grammar_fails: bool = False):
        self.asked: list[dict] = []
        self.grammar_fails = grammar_fails

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return list(range(len(text.split())))

    def create_chat_completion(self, messages, **kwargs):
        self.asked.append({"messages": messages, **kwargs})
        if self.grammar_fails and "schema" in kwargs["response_format"]:
            raise ValueError("cannot build a grammar from this schema")
        return {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}


def test_a_json_answer_gets_room_for_its_keys():
    client = LocalLlamaClient("local/smollm2", slot="test-room")
    fake = FakeLlama()
    client._model.llama = fake
    try:
        many = {
            "type": "object",
            "properties": {f"criterion_{n}": {"type": "integer"} for n in range(40)},
            "required": [f"criterion_{n}" for n in range(40)],
        }
        for schema in (None, SCHEMA, many):
            client._generate(
                ModelRequest([ChatMessage("user", "?")], max_tokens=400, json_schema=schema)
            )
        plain, small, large = (a["max_tokens"] for a in fake.asked)
        assert plain == EMBEDDED_MAX_TOKENS
        assert small == 4 + EMBEDDED_JSON_SLACK  # '{"score": 0, "reason": ""}': four "words"
        # 40 keys with a value each (80 "words") and the slack for a sentence
        assert large == 80 + EMBEDDED_JSON_SLACK
        assert fake.asked[2]["messages"] == [{"role": "user", "content": "?"}]  # held, not told
    finally:
        client._model.llama = None


class LocalJudgeHub(LatencyJudgeHub):
    """``local/smollm2`` as the judge, answered by a scripted judge; notes each slot's prompts."""

    def __init__(self):
        super().__init__()
        self.by_slot: dict[str, list[str]] = {}
        self.responder = fixed_answer

    def client(self, spec, rollout_index=0, role=""):
        if spec != "local/smollm2":
            return super().client(spec, rollout_index, role)
        hub = self

        class Slot(ScriptedClient):
            async def complete(self, request: ModelRequest):
                hub.by_slot.setdefault(role, []).append(request.messages[-1].content)
                return await super().complete(request)

        return Slot(spec, responses=hub.responder)


def test_an_in_process_judge_gives_each_rubric_its_own_slot(tmp_path: Path):
    run_dir = make_run(tmp_path, turns=8)
    run_file = run_dir / "run.json"  # a step of 3: the windows of consecutive turns start alike
    recorded = json.loads(run_file.read_text())
    recorded["config"]["interaction"]["judge_window_step"] = 3
    run_file.write_text(json.dumps(recorded))
    hub = LocalJudgeHub()
    files = RolloutFiles(rollout_dir(run_dir, 0))
    options = ScoreOptions(judge_model="local/smollm2")
    scorer = RolloutScorer(
        read_run(run_dir), files, files.transcript(), hub, "local/smollm2", options
    )
    trio.run(scorer.run, ScoreSummary())
    assert set(hub.by_slot) == {
        "judge/joint", "judge/qa", "judge/dimensions"
    }  # fmt: skip
    joint = [prompt.split(FENCE_END)[0] for prompt in hub.by_slot["judge/joint"]]
    assert len(joint) == 8
    # within a slot, each prompt extends the last except where the window's start moves (at
    # the 7th turn: the step of 3 for a window of 6)
    extends = [later.startswith(earlier) for earlier, later in pairwise(joint)]
    assert extends == [True] * 5 + [False, True]


def test_a_schema_without_a_grammar_is_told_in_words():
    client = LocalLlamaClient("local/smollm2", slot="test-told")
    client._model.llama = fake = FakeLlama(grammar_fails=True)
    try:
        client._generate(
            ModelRequest([ChatMessage("user", "?")], max_tokens=50, json_schema=SCHEMA)
        )
        first, second = fake.asked
        assert first["messages"] == [{"role": "user", "content": "?"}]
        assert second["response_format"] == {"type": "json_object"}
        assert schema_text(SCHEMA) in second["messages"][-1]["content"]
    finally:
        client._model.llama = None


def test_the_last_probe_is_put_to_an_in_process_persona_first(tmp_path: Path):
    """Right after a rollout the persona's slot holds its last prompt, which the last probe's
    extends: its questions go first, and no question is asked twice."""
    run_dir = make_run(tmp_path, turns=6)
    run_file = run_dir / "run.json"
    run = json.loads(run_file.read_text())
    run["models"]["persona"] = "local/smollm2"
    run_file.write_text(json.dumps(run))
    hub = LocalJudgeHub()
    asked: list[int] = []
    shapes: list[str | None] = []

    def persona(request: ModelRequest) -> str:
        if request.json_schema is not None:
            return fixed_answer(request)
        asked.append(len(request.messages))  # the longer the history, the later the turn
        shapes.append(request.grammar)
        return "I'm Marcus."

    hub.responder = persona
    files = RolloutFiles(rollout_dir(run_dir, 0))
    options = ScoreOptions(judge_model="local/smollm2")
    scorer = RolloutScorer(
        read_run(run_dir), files, files.transcript(), hub, "local/smollm2", options
    )
    trio.run(scorer.run, ScoreSummary())
    assert len(asked) == 3 * 4  # probes at the first, middle and last turn; four questions
    assert asked[:4] == [max(asked)] * 4 and asked[4:8] == [min(asked)] * 4
    assert shapes == [QA_GRAMMAR] * 12  # "one or two sentences", by construction
    answers = [
        t["scores"]["consistency"]["details"].get("qa_answers")
        for t in json.loads(files.transcript_path.read_text())["turns"]
    ]
    assert [a is not None for a in answers] == [True, False, False, True, False, True]


def test_a_persona_rebuilt_before_its_model_loads_cuts_its_past_by_exact_counts():
    """``loom-sim score`` rebuilds the persona (Q&A probes) in a process where the embedded
    model is not loaded yet; counted by the ~4-characters estimate, digits (a token each here)
    were undercounted and the prompt overflowed the context. The counts are made exact, the
    model loaded, before they decide the cut."""
    from loom_sim.actors.history import Generation, History
    from loom_sim.rollout.actors.persona import CONVERSATION_START, PersonaActor

    from loom_sim.messages import Heard
    from loom_sim.rollout.messages import Speak
    from loom_sim.seeds import SeedSource

    client = LocalLlamaClient("local/smollm2", slot="test-rebuilt-persona")
    assert not client.counts_exactly
    digits = " ".join("7" * 6 for _ in range(60))  # 420 characters, ~100 "tokens" estimated
    past = [Heard(turn=t, persona=digits, interlocutor=digits) for t in range(6)]
    persona = PersonaActor(
        client, Generation(8, 0.0, budget_tokens=1500), SeedSource(1, 0), past=past
    )
    assert persona._view.history.estimated
    said = trio.run(persona.handle, Speak(turn=6, emergency="Your name?"))
    assert client.counts_exactly and not persona._view.history.estimated
    assert persona._view.history.messages[0].content == CONVERSATION_START
    exact = History()
    for message in persona._view.history.messages:
        exact.append(message, client.count_tokens(message.content))
    _, cut = exact.fit(ChatMessage("system", ""), 0, [], 0, 1500)
    assert said.cut_turns == cut > 0


def test_the_readme_jobs_judge_window_moves_twice_in_its_12_turns():
    """The README's example moves its judge window 3 turns at a time, so the embedded judge
    rereads the window at 2 of its 12 turns, not at each of the last 6 (docs/scoring.md)."""
    from loom_sim.config import load_config
    from loom_sim.rollout.scoring.plan import window_start

    interaction = load_config(ROOT / "configs" / "examples" / "mania_patient.yaml").interaction
    starts = [
        window_start(index, interaction.judge_window, interaction.judge_window_step or 1)
        for index in range(12)
    ]
    assert starts == [0] * 6 + [3] * 3 + [6] * 3
    # once the run is longer than the window, each holds 4 to 6 turns
    assert [index - start + 1 for index, start in enumerate(starts)][6:] == [4, 5, 6] * 2
