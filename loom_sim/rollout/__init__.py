"""The persona rollout: a persona follows its declared trajectory over many turns against the
model under evaluation (or an adversary in its place), guarded by monitors, then scored and
reported.

runtime/ (planning, the rollout and its turn, resume, stop rules, budgets, matrix runs,
shards), actors/ (installed from the repository's ``actors/rollout/``: persona, interlocutor,
adversary, monitor), machines/ (``machines/rollout/``: the turn machine), messages (what its
actors say to each other), monitors/ (every registered monitor: repetition, capitulation,
stagnation, revelations), adversaries/ (the contradiction trap and the helpfulness coaxer),
scoring/ (the scorers and the engine), report/ and interop/ (psychosis-bench's profiles and
transcripts). The persona config (``loom_sim.config``), its assembler, the messages every
system shares (``loom_sim.messages``: the judge's, the embedding service's) and the turn
record's parts (``loom_sim.store.turn_parts``) sit below the systems.
"""
