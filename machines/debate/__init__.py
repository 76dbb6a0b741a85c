"""The debate's machines, installed as ``loom_sim.debate.machines``: the main chat
(``debate``) and the crux room (``crux_room``), tables on the shared engine."""
