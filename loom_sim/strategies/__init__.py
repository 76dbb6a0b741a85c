"""Reading a target's answer and choosing how to press it: the Turn-1 classifier and the
strategy policies (static, adaptive, weighted, bandit). Neutral ground: the adversaries and
the probe both use them, and neither imports the other."""
