"""State machines, declared as tables (installed as ``loom_sim.machines``).

The rollout machine (``init -> plan -> act -> observe -> monitor -> score -> done | error``)
and the machines of later modes live here, one module per machine.
"""
