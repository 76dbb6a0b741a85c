"""The persona rollout: a persona follows its declared trajectory over many turns against the
model under evaluation (or an adversary in its place), guarded by monitors, then scored and
reported.

runtime/ (planning, the rollout and its turn, resume, stop rules, budgets, matrix runs,
shards), actors/ (installed from the repository's ``actors/rollout/``: persona, interlocutor,
adversary, monitor), machines/ (``machines/rollout/``: the turn machine), monitors/ (the
repetition guard), adversaries/ (the contradiction trap and the helpfulness coaxer), scoring/
(the scorers and the engine), report/ and interop/ (psychosis-bench's profiles and
transcripts). The persona config (``loom_sim.config``), its assembler and the messages the
rollout's actors speak (``loom_sim.messages``) sit below the systems, shared with the judge
and the signals.
"""
