"""What the persona was actually told at a turn: the instructions a turn is judged against.

The prompt in force changes only on full injections (the first is the persona's system prompt,
each later one reaches it as an update of the parts that changed: ``assembler/update.py``);
between them it stays, and a turn's reminder, emergency intervention or re-prompt rides on the
newest message (``actors/rollout/persona.py``). So the MUST DO a message answers is the one
*in force*, which can be several turns old, not the one the assembler would build for that
turn; and the intensities it was told are the injected turn's, updated only by what a reminder
names. Fidelity and trajectory adherence are judged against :func:`instructions_at`, built
from the records: the prompt in force (:class:`~loom_sim.store.records.InForce`, its blocks
kept on the turn that injected them), plus the notes the committed message was written
under, in the order sent.

Runs recorded before the prompt in force was kept are re-planned from their last full
injection and say so (``reconstructed``).
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Sequence
from dataclasses import dataclass, field

from loom_sim.assembler import Assembler, InjectionKind, PromptBlocks
from loom_sim.config.spec import LoomConfig
from loom_sim.store.records import TurnRecord


def scaffolding_hash(system_prompt: str) -> str:
    """A short, stable digest of a system prompt as sent."""
    return hashlib.sha256(system_prompt.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Instructions:
    """What the persona had in front of it when it wrote the turn's committed message."""

    turn: int
    since: int | None  # the turn whose full injection was in force (None: none yet)
    hash: str | None
    blocks: PromptBlocks | None
    notes: list[str] = field(default_factory=list)  # reminder, emergency, re-prompt, as sent
    told: dict[str, float] = field(default_factory=dict)  # the intensities it was told
    reconstructed: bool = False  # re-planned: the run predates recording the prompt in force

    @property
    def must_do(self) -> str:
        return self.blocks.must_do if self.blocks is not None else ""

    @property
    def system_prompt(self) -> str:
        return self.blocks.render() if self.blocks is not None else ""

    @property
    def note_text(self) -> str:
        """The notes exactly as appended to the persona's newest message."""
        return "\n\n".join(self.notes)

    def summary(self) -> dict[str, object]:
        """The reference a score keeps: which prompt, from which turn, and the notes."""
        return {
            "since": self.since,
            "hash": self.hash,
            "notes": len(self.notes),
            **({"reconstructed": True} if self.reconstructed else {}),
        }


def instructions_at(
    records: Sequence[TurnRecord],
    index: int,
    config: LoomConfig,
    assembler: Assembler | None = None,
) -> Instructions:
    """The instructions in force at ``records[index]`` (``assembler``: to re-plan old runs)."""
    record = records[index]
    notes = [n for n in (record.reminder, record.emergency, record.vary) if n]
    blocks, since, digest, reconstructed = _in_force(records, index, assembler)
    told: dict[str, float] = {}
    if since is not None:
        source = next((r for r in records[: index + 1] if r.turn == since), record)
        told = dict(source.intensities)
    if record.reminder:
        for name in _reminder_fields(config):
            if name in record.intensities:
                told[name] = record.intensities[name]
    return Instructions(
        turn=record.turn,
        since=since,
        hash=digest,
        blocks=blocks,
        notes=notes,
        told=told,
        reconstructed=reconstructed,
    )


def _in_force(
    records: Sequence[TurnRecord], index: int, assembler: Assembler | None
) -> tuple[PromptBlocks | None, int | None, str | None, bool]:
    record = records[index]
    ref = record.scaffolding
    if ref is not None:
        if ref.blocks is not None:
            return ref.blocks, ref.since, ref.hash, False
        for earlier in reversed(records[:index]):
            held = earlier.scaffolding
            if earlier.turn == ref.since and held is not None and held.blocks is not None:
                return held.blocks, ref.since, ref.hash, False
        raise ValueError(
            f"turn {record.turn} refers to the prompt injected at turn {ref.since}, "
            "which is not among the records"
        )
    # a run recorded before the prompt in force was kept: re-plan its last full injection
    full = next(
        (r for r in reversed(records[: index + 1]) if r.injection == InjectionKind.FULL), None
    )
    if full is None or assembler is None:
        return None, None, None, True
    prompt = assembler.plan(full.turn, full.fired).prompt
    digest = scaffolding_hash(prompt.render()) if prompt is not None else None
    return prompt, full.turn, digest, True


def _reminder_fields(config: LoomConfig) -> list[str]:
    """The dimensions a reminder states (the fields of its template)."""
    template = config.interaction.injection.reminder_template
    names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    return [n for n in names if n in config.trajectory.dimensions]
