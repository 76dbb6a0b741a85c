"""loom-sim's Python API (:mod:`loom_sim.api.public`, re-exported as ``loom_sim.run`` and
friends) and the run pipeline the ``run`` command shares with it (:mod:`.pipeline`).

Kept empty so that the command line, which imports the pipeline, does not load the API's
data frames (pandas) with it.
"""
