"""Measured properties of images: exposure, contrast, sharpness, colour, palettes, likeness.

Two programs read images and must agree on what they see without trusting each other: the
studio (the demo target, which reports what it made) and the harness (which scores what the
target made from the files themselves, never from the target's say-so). Both measure with these
functions. They depend on Pillow and numpy only and import nothing else of loom-sim, so the
studio stays a program of its own.
"""

from loom_sim.imagery.measure import (
    Measures,
    Quality,
    dominant_colours,
    features,
    load_rgb,
    measure,
    quality,
)

__all__ = [
    "Measures",
    "Quality",
    "dominant_colours",
    "features",
    "load_rgb",
    "measure",
    "quality",
]
