"""Spiral-Bench result files: the seeker's and the assistant's messages, and what Spiral-Bench's
judge found in them.

A result file maps run id → prompt file → scenario id → a list of conversations. Each
conversation has its ``transcript`` (``role``/``content`` messages, the seeker's first), the
``judgements`` per chunk (``chunk0``, ``chunk1``, …: per behaviour the incidents as
``[quote, strength]`` pairs in ``full_metrics``, their sum in ``metrics``, the turns judged and
the assistant's characters; or ``{"error": ...}`` when the judge's answer could not be read),
and a ``final_judgement`` (``off_rails``, ``safety``, ``social_dexterity``, 0–10). A run keeps
the summary it was scored to in ``__meta__``.

Turn numbers: Spiral-Bench's judge reads the exchanges *after* the opening one (the seeker's
first message is shown to it as context; the assistant's first reply is never judged), one
exchange a chunk by default, and numbers them from 1. So judged turn ``n`` is the assistant's
``n``-th reply counting the first as 0, which is loom-sim's turn index ``n`` too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loom_sim.errors import LoomError
from loom_sim.rollout.scoring.spiral import FINAL, Chunk, final_means

SOURCE = "spiral-bench"
_RUN_EXTRAS = ("__meta__", "scoring_summary", "final_judgement_summary")


@dataclass(frozen=True)
class JudgedChunk:
    """One chunk's judgement: the turns it covered, its figures and its incidents (behaviour →
    ``[(quote, strength)]``), or the error the judge's answer gave."""

    index: int
    turns: tuple[int, ...]
    chunk: Chunk
    incidents: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    error: str = ""


@dataclass
class Conversation:
    """One conversation of a scenario, as the file holds it."""

    scenario: str
    category: str
    index: int
    messages: list[tuple[str, str]]  # (role, content)
    chunks: list[JudgedChunk]
    final: dict[str, float] | None
    model: str
    seeker_model: str
    seeker_prompt: str
    completed: bool
    injections: list[str] = field(default_factory=list)

    def exchanges(self) -> list[tuple[str, str]]:
        """(seeker, assistant) pairs in order: a seeker message followed by a reply."""
        pairs = []
        for (role, text), (next_role, reply) in zip(self.messages, self.messages[1:], strict=False):
            if role == "user" and next_role == "assistant":
                pairs.append((text, reply))
        return pairs


@dataclass
class Results:
    """One result file: one model's conversations, and the summaries it recorded."""

    path: Path
    model: str
    conversations: list[Conversation]
    recorded: dict[str, float] | None  # the file's scoring_summary row, as written
    recorded_finals: dict[str, float] | None  # its final_judgement_summary (count-weighted)
    problems: list[str] = field(default_factory=list)

    def scenarios(self) -> dict[str, list[Conversation]]:
        """Conversations grouped by scenario (Spiral-Bench pools a scenario's conversations)."""
        grouped: dict[str, list[Conversation]] = {}
        for conversation in self.conversations:
            grouped.setdefault(conversation.scenario, []).append(conversation)
        return grouped

    def finals(self) -> dict[str, float]:
        """The final judgement's means the score uses: the recorded ones when the file has
        them (Spiral-Bench scores those), else computed from the conversations."""
        if self.recorded_finals:
            return dict(self.recorded_finals)
        return final_means([c.final for c in self.conversations if c.final])


def is_result_file(data: Any) -> bool:
    return isinstance(data, dict) and any(
        isinstance(run, dict)
        and any(
            isinstance(scenarios, dict)
            and any(isinstance(c, list) and c and "transcript" in c[0] for c in scenarios.values())
            for name, scenarios in run.items()
            if name not in _RUN_EXTRAS
        )
        for run in data.values()
    )


def _incidents(raw: Any) -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list[tuple[str, int]]] = {}
    for name, items in (raw or {}).items():
        pairs = []
        for item in items if isinstance(items, list) else []:
            if isinstance(item, list | tuple) and len(item) == 2:
                try:
                    pairs.append((str(item[0]), int(item[1])))
                except (TypeError, ValueError):
                    continue
        found[str(name)] = pairs
    return found


def _chunks(raw: Any) -> list[JudgedChunk]:
    chunks = []
    for name, chunk in (raw or {}).items():
        if not (isinstance(name, str) and name.startswith("chunk") and name[5:].isdigit()):
            continue
        index = int(name[5:])
        if not isinstance(chunk, dict) or "metrics" not in chunk:
            error = chunk.get("error", "no metrics") if isinstance(chunk, dict) else "not a chunk"
            chunks.append(JudgedChunk(index, (index + 1,), Chunk(failed=True), error=str(error)))
            continue
        figures = {
            str(k): float(v) for k, v in chunk["metrics"].items() if isinstance(v, int | float)
        }
        turns = tuple(int(t) for t in chunk.get("assistant_turn_indexes") or (index + 1,))
        chars = chunk.get("assistant_length_chars")
        chunks.append(
            JudgedChunk(
                index,
                turns,
                Chunk(figures, chars if isinstance(chars, int) else 0),
                _incidents(chunk.get("full_metrics")),
            )
        )
    return sorted(chunks, key=lambda c: c.index)


def _final(raw: Any) -> dict[str, float] | None:
    if not isinstance(raw, dict):
        return None
    try:
        return {name: float(raw[name]) for name in FINAL if name in raw}
    except (TypeError, ValueError):
        return None


def _conversations(data: dict[str, Any]) -> Iterator[Conversation]:
    for run in data.values():
        if not isinstance(run, dict):
            continue
        for prompt_file, scenarios in run.items():
            if prompt_file in _RUN_EXTRAS or not isinstance(scenarios, dict):
                continue
            for scenario, conversations in scenarios.items():
                listed = conversations if isinstance(conversations, list) else []
                for index, raw in enumerate(listed):
                    if not isinstance(raw, dict):
                        continue
                    yield Conversation(
                        scenario=str(raw.get("prompt_id") or scenario),
                        category=str(raw.get("category") or ""),
                        index=index,
                        messages=[
                            (str(m.get("role", "")), str(m.get("content", "")))
                            for m in raw.get("transcript") or []
                            if isinstance(m, dict)
                        ],
                        chunks=_chunks(raw.get("judgements")),
                        final=_final(raw.get("final_judgement")),
                        model=str(raw.get("evaluated_model") or ""),
                        seeker_model=str(raw.get("user_model") or ""),
                        seeker_prompt=str(raw.get("user_system_prompt") or ""),
                        completed=bool(raw.get("completed")),
                        injections=[str(i) for i in raw.get("injections_log") or []],
                    )


def _recorded(data: dict[str, Any]) -> tuple[dict[str, float] | None, dict[str, float] | None]:
    """The scoring summary a file recorded (its first run's) and its final judgement means
    weighted by each run's count, as Spiral-Bench's leaderboard reads them."""
    row = None
    sums = dict.fromkeys(FINAL, 0.0)
    count = 0
    for run in data.values():
        meta = run.get("__meta__") if isinstance(run, dict) else None
        if not isinstance(meta, dict):
            continue
        summary = meta.get("scoring_summary")
        if row is None and isinstance(summary, list) and summary and isinstance(summary[0], dict):
            row = dict(summary[0])
        finals = meta.get("final_judgement_summary")
        if not isinstance(finals, dict):
            continue
        n = int(finals.get("count") or 0)
        if n > 0:
            for name in FINAL:
                sums[name] += float(finals.get(name, 0.0)) * n
            count += n
    return row, ({name: sums[name] / count for name in FINAL} if count else None)


def load_results(path: Path) -> Results:
    """Read one Spiral-Bench result file; a file of another kind is a :class:`LoomError`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise LoomError(f"{path}: cannot read it ({err})") from None
    except json.JSONDecodeError as err:
        raise LoomError(f"{path}:{err.lineno}: not JSON ({err.msg})") from None
    if not is_result_file(data):
        raise LoomError(
            f"{path}: not a Spiral-Bench result file (expected run id → prompt file → scenario "
            "→ conversations with a transcript)"
        )
    conversations = list(_conversations(data))
    problems = [
        f"{c.scenario} conversation {c.index}: chunk{j.index} has no findings ({j.error})"
        for c in conversations
        for j in c.chunks
        if j.chunk.failed
    ]
    problems += [
        f"{c.scenario} conversation {c.index}: not completed"
        for c in conversations
        if not c.completed
    ]
    models = sorted({c.model for c in conversations if c.model})
    recorded, finals = _recorded(data)
    model = (recorded or {}).get("model_name") or (models[0] if models else path.stem)
    return Results(path, str(model), conversations, recorded, finals, problems)
