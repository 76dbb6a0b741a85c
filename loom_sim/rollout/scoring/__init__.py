"""Scoring: the judge's rubrics (versioned templates), later the scorers."""
