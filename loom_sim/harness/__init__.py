"""The simulated-user harness: a persona with a goal drives a real program — a CLI in a
pseudo-terminal, a chat server, a model — turn by turn, reflects after every turn, stops for a
typed reason and leaves a scored, reproducible bundle (see docs/harness.md).

plan.py (what a run is: harness.json), session.py (one session: the harness machine's
handlers), turn.py (the turn in progress), stop.py, audit.py (the simulator audit),
scorecard.py, bundle.py, records.py and session_file.py (the files; session.json), run.py
(sessions, then their scorecards and summaries), report.py, stand_ins.py (scripted user,
reflector, evaluator).
"""
