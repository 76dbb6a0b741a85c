"""``loom-sim probe``: short adaptive conversations that look for self-contradictions.

Turn 1 is a prompt from a probe set; its answer is classified (:mod:`.classifier`); a strategy
policy (:mod:`.policies`) picks the Turn-2 follow-up; a judge decides whether the target
contradicted itself, and a learning policy is told the outcome.
"""
