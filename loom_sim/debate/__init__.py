"""Group debates with crux rooms: the data and the rules, below the actors that use them.

Personas with contracts and voices grouped in decks (:mod:`~loom_sim.debate.deck`); what
each message is for and how it is checked (:mod:`~loom_sim.debate.intents`,
:mod:`~loom_sim.debate.checks`); who speaks next (:mod:`~loom_sim.debate.speakers`); which
model each call uses (:mod:`~loom_sim.debate.roles`); the cheap disagreement signals, what the
detector model's answer is worth, and when a room opens
(:mod:`~loom_sim.debate.opposition`, :mod:`~loom_sim.debate.detection`,
:mod:`~loom_sim.debate.candidates`); crux cards and their citations
(:mod:`~loom_sim.debate.cards`); the prompts (:mod:`~loom_sim.debate.prompts`); the records a
debate writes (:mod:`~loom_sim.debate.records`). The debaters, the moderator and the detector
are actors (``actors/``); the debate and the crux room are machines (``machines/``) driven by
:mod:`loom_sim.debate.runtime.run`.
"""
