"""Judging, in one place: the rubrics (versioned templates), the fence that keeps untrusted
text data, and the judge call itself. The judge actor (``actors/judge.py``), the scorers, the
rollout's trigger checks, the adversaries and the probe all judge through here."""
