"""loom-sim studio: a small interactive image-studio chat program, the harness's demo target.

A user ``/use``-s photos and works on them with slash-command abilities — ``/diagnose``,
``/describe``, ``/blend``, ``/bridge``, ``/swap_dna``, ``/argue``, ``/extract_rule``,
``/odd_one_out``, ``/triforce``, ``/recast``, ``/canvas_context``, and the render profiles
``/quality``, ``/fast``, ``/cheaper``, ``/better`` — that do real work with Pillow: new
images go to the output folder, every command to an append-only ``events.jsonl``. Free text
is answered by a model (the embedded SmolLM2 by default).

It is a program of its own, run as ``loom-sim studio`` or ``python -m loom_sim.studio``: it
imports nothing of loom-sim but the image measures (``loom_sim.imagery``), so the harness
drives it exactly as it would drive any other program, through a pseudo-terminal.
"""

from loom_sim.studio.app import main

__all__ = ["main"]
