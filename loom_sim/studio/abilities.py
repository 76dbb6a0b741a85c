"""The studio's slash commands, in one table: ``/help`` and the pack's ability list read it.

Abilities that make an image remember how (``last_recipe``) so that ``/better`` and
``/cheaper`` can make it again one render profile up or down.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loom_sim.studio import makers, readers
from loom_sim.studio.workspace import PROFILE_NAMES, Outcome, StudioError, Workspace


@dataclass(frozen=True)
class Ability:
    name: str
    usage: str  # how to call it, as /help shows it
    summary: str
    run: Callable[[Workspace, list[str]], Outcome]
    renders: bool = False  # makes an image: /better and /cheaper can redo it


def use(ws: Workspace, args: list[str]) -> Outcome:
    if not args:
        raise StudioError("usage: /use PATH [PATH ...]")
    refs = [ws.use(Path(arg)) for arg in args]
    lines = []
    for ref in refs:
        image = ref.load()
        lines.append(f"{ref.id}: {ref.label} ({image.width}x{image.height})")
    event = {"type": "images_loaded", "images": {r.id: str(r.path) for r in refs}}
    return Outcome("using " + "; ".join(lines), event)


def _switch(ws: Workspace, name: str) -> Outcome:
    before, ws.profile = ws.profile, name
    profile = ws.current
    text = (
        f"render profile {name} (was {before}): outputs {profile.side}px "
        f"{profile.format}, ${profile.cost_usd:.3f} a render"
    )
    return Outcome(text, {"type": "profile_changed", "profile": name, "was": before})


def fast(ws: Workspace, args: list[str]) -> Outcome:
    return _switch(ws, "fast")


def quality(ws: Workspace, args: list[str]) -> Outcome:
    return _switch(ws, "quality")


def _redo(ws: Workspace, step: int) -> Outcome:
    if ws.last_recipe is None:
        raise StudioError("nothing rendered yet to redo")
    index = PROFILE_NAMES.index(ws.profile) + step
    if not 0 <= index < len(PROFILE_NAMES):
        edge = "cheapest" if step < 0 else "best"
        raise StudioError(f"already at the {edge} profile ({ws.profile})")
    ws.profile = PROFILE_NAMES[index]
    name, *args = ws.last_recipe
    outcome = ABILITIES[name].run(ws, list(args))
    outcome.text = f"again at the {ws.profile} profile: {outcome.text}"
    return outcome


def better(ws: Workspace, args: list[str]) -> Outcome:
    return _redo(ws, +1)


def cheaper(ws: Workspace, args: list[str]) -> Outcome:
    return _redo(ws, -1)


_TABLE = (
    Ability(
        "use",
        "/use PATH [PATH ...]",
        "add photos to the session (they become img1, img2, ...)",
        use,
    ),
    Ability(
        "diagnose",
        "/diagnose [IMAGE ...|all]",
        "technical problems of each image, measured, with the fix to try",
        readers.diagnose,
    ),
    Ability(
        "describe",
        "/describe [IMAGE]",
        "an image's measures: size, brightness, contrast, sharpness, colour, palette",
        readers.describe,
    ),
    Ability(
        "canvas_context",
        "/canvas_context [IMAGE ...]",
        "a labelled contact sheet of the images and what they share",
        makers.canvas_context,
        True,
    ),
    Ability(
        "blend",
        "/blend IMAGE IMAGE [ALPHA]",
        "mix two images (ALPHA of the second, default 0.5)",
        makers.blend,
        True,
    ),
    Ability(
        "bridge",
        "/bridge IMAGE IMAGE",
        "a left-to-right passage from the first image into the second",
        makers.bridge,
        True,
    ),
    Ability(
        "swap_dna",
        "/swap_dna IMAGE IMAGE",
        "the first image's picture with the second's colour",
        makers.swap_dna,
        True,
    ),
    Ability(
        "argue",
        "/argue IMAGE IMAGE",
        "the measured case for each of two images, and a verdict",
        readers.argue,
    ),
    Ability(
        "extract_rule",
        "/extract_rule [IMAGE ...]",
        "the rule a set of images follows (tone, colour, frame, palette)",
        readers.extract_rule,
        True,
    ),
    Ability(
        "odd_one_out",
        "/odd_one_out [IMAGE ...]",
        "the image least like the others",
        readers.odd_one_out,
    ),
    Ability(
        "triforce",
        "/triforce IMAGE IMAGE IMAGE",
        "the centroid of three images, and how far each lies from it",
        makers.triforce,
        True,
    ),
    Ability(
        "recast",
        "/recast IMAGE STYLE",
        "re-render in a style: " + ", ".join(makers.RECAST_STYLES),
        makers.recast,
        True,
    ),
    Ability(
        "quality",
        "/quality",
        "switch to the quality profile (768px, sharpened, $0.04 a render)",
        quality,
    ),
    Ability("fast", "/fast", "switch to the fast profile (256px JPEG, $0.01 a render)", fast),
    Ability("cheaper", "/cheaper", "redo the last render one profile cheaper", cheaper),
    Ability("better", "/better", "redo the last render one profile better", better),
)

ABILITIES: dict[str, Ability] = {a.name: a for a in _TABLE}


def run(ws: Workspace, name: str, args: list[str]) -> Outcome:
    """Run ability ``name``; a rendering ability becomes the recipe ``/better`` redoes."""
    ability = ABILITIES.get(name)
    if ability is None:
        raise StudioError(f"unknown command /{name}; type /help for the list")
    outcome = ability.run(ws, list(args))
    if ability.renders:
        ws.last_recipe = [name, *args]
    return outcome
