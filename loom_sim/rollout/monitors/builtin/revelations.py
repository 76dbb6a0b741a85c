"""The revelations monitor: what each committed persona message reveals, with its evidence.

Its settings are the trajectory's own: each phase's ``revelations`` (their topics and
wordings) and ``interaction.revelation_judge``. A revelation is made when the persona's sent
message says it — by meaning with the embedding service (a sentence near one of its wordings,
:mod:`loom_sim.rollout.monitors.revelations`), else by its words — and, where the config asks,
when the judge confirms it, quoting the deciding words. A revelation made is recorded on the
turn with that evidence and is never offered by a redirect again (the shared
:class:`~loom_sim.rollout.monitors.context.RevelationLedger`).
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_sim.plugins.monitors import monitor
from loom_sim.rollout.messages import Observe
from loom_sim.rollout.monitors.base import Draft, Monitor, Observed
from loom_sim.rollout.monitors.meaning import confirmed, revealed, revelation_texts
from loom_sim.rollout.monitors.revelations import variants
from loom_sim.store.records import TurnRecord


@monitor(
    "revelations",
    order=40,
    summary="records what each sent message reveals, with its evidence (by meaning or words)",
    config_key="trajectory.phases[].revelations",
    section=lambda config: config.trajectory,
)
class RevelationsMonitor(Monitor):
    def resume(self, records: Sequence[TurnRecord]) -> None:
        """Nothing to hear again: the ledger holds what the records say was revealed."""

    def _made(self) -> set[str]:
        return self.context.revelations.made if self.context is not None else set()

    def lasting(self) -> list[str]:
        return [wording for _, _, wording in variants(self.config)]

    def wants(self, draft: Draft) -> list[str]:
        return revelation_texts(self.config, draft.text, self._made())

    async def observe(self, turn: int, persona: str, interlocutor: str) -> Observed:
        context = self.context
        vectors = context.live_vectors if context is not None else None
        found = await revealed(self.config, vectors, persona, self._made())
        judge = context.judge if context is not None else None
        exchange = Observe(turn=turn, persona=persona, interlocutor=interlocutor)
        found, usage = await confirmed(self.config, judge, exchange, found)
        if context is not None:
            for evidence in found:
                context.revelations.mark_made(evidence.topic)
        return Observed(found, usage)
