"""``loom-sim probe``: short adaptive conversations that look for self-contradictions.

Turn 1 is a prompt from a probe set; its answer is classified (:mod:`.classifier`); a strategy
policy (:mod:`.policies`) picks the Turn-2 follow-up; a judge decides whether the target
contradicted itself, and a learning policy is told the outcome.

The modules, in the order a probe uses them: :mod:`.config` (the probe config) and
:mod:`.followups` (its Turn-2 templates); :mod:`.plan` (directory, ``probe.json``, models)
and :mod:`.probe_file` (``probe.json``'s typed record);
:mod:`.runner` (the runs, per mode) with :mod:`.contradiction` (the judge's rubric and
verdict); :mod:`.records` (the ``<mode>.jsonl`` logs); :mod:`.stats`, :mod:`.summary` and
:mod:`.summary_md` (the summary); :mod:`.progress`; :mod:`.stand_ins` (the scripted target and
judge). See docs/probe.md.
"""
