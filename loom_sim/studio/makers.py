"""The abilities that make images: blend, bridge, swap_dna, triforce, recast, canvas_context.

Each takes the workspace and its arguments, does the work with Pillow and numpy, saves the
result through the current render profile and reports the measures of what it saved: the
numbers are the image's, not a description of it.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageOps

from loom_sim.imagery import dominant_colours, features, measure, quality
from loom_sim.studio.workspace import Outcome, Ref, StudioError, Workspace, fit

RECAST_STYLES = (
    "bright",
    "crisp",
    "mono",
    "sepia",
    "duotone",
    "posterize",
    "sketch",
    "warm",
    "cool",
)


def made(ws: Workspace, image: Image.Image, ability: str, inputs: list[Ref], note: str) -> Outcome:
    """Save ``image`` as an output of ``ability`` and describe it by its measures."""
    ref = ws.render(image, ability)
    saved = ref.load()
    m, q = measure(saved), quality(measure(saved))
    text = (
        f"{note}\nsaved {ref.id}: {ref.path.name} ({saved.width}x{saved.height}, "
        f"{ws.profile} profile) — quality {q.overall:.2f} "
        f"(exposure {q.exposure:.2f}, contrast {q.contrast:.2f}, sharpness {q.sharpness:.2f})"
    )
    event = {
        "type": "image_generated",
        "ability": ability,
        "inputs": [r.id for r in inputs],
        "output": {"id": ref.id, "path": str(ref.path)},
        "profile": ws.profile,
        "metrics": {**m.to_dict(), "quality": q.overall},
        "cost_usd": ws.current.cost_usd,
    }
    return Outcome(text, event, [ref])


def _size(ws: Workspace, image: Image.Image) -> tuple[int, int]:
    scale = ws.current.side / max(image.size)
    return max(1, round(image.width * scale)), max(1, round(image.height * scale))


def blend(ws: Workspace, args: list[str]) -> Outcome:
    """/blend A B [ALPHA]: A and B mixed, ALPHA (0..1, default 0.5) of B."""
    alpha = 0.5
    if len(args) == 3:
        try:
            alpha = float(args.pop())
        except ValueError:
            raise StudioError("ALPHA must be a number between 0 and 1") from None
        if not 0.0 <= alpha <= 1.0:
            raise StudioError("ALPHA must be between 0 and 1")
    a, b = ws.resolve_all(args, 2)[:2]
    first = a.load()
    size = _size(ws, first)
    mixed = Image.blend(fit(first, size), fit(b.load(), size), alpha)
    return made(ws, mixed, "blend", [a, b], f"blended {a.id} with {b.id} at {alpha:.2f}")


def bridge(ws: Workspace, args: list[str]) -> Outcome:
    """/bridge A B: a left-to-right passage from A into B (a gradient mask)."""
    a, b = ws.resolve_all(args, 2)[:2]
    first = a.load()
    size = _size(ws, first)
    ramp = Image.linear_gradient("L").rotate(90, expand=True)  # 0 at the left, 255 at the right
    mask = ramp.resize(size, Image.Resampling.BILINEAR)
    joined = Image.composite(fit(b.load(), size), fit(first, size), mask)
    return made(ws, joined, "bridge", [a, b], f"bridged {a.id} (left) into {b.id} (right)")


def _ycbcr(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("YCbCr"), dtype=np.float64)


def swap_dna(ws: Workspace, args: list[str]) -> Outcome:
    """/swap_dna A B: A's picture with B's colour: each YCbCr channel of A moved to B's mean
    and spread (Reinhard-style statistics transfer)."""
    a, b = ws.resolve_all(args, 2)[:2]
    source, donor = a.load(), b.load()
    src, don = _ycbcr(source), _ycbcr(donor)
    out = np.empty_like(src)
    for c in range(3):
        s, d = src[..., c], don[..., c]
        spread = s.std() or 1.0
        out[..., c] = (s - s.mean()) / spread * d.std() + d.mean()
    image = Image.fromarray(np.clip(out, 0, 255).astype(np.uint8), "YCbCr").convert("RGB")
    before, after, target = measure(source), measure(image), measure(donor)
    note = (
        f"gave {a.id} the colour of {b.id}: warmth {before.warmth:+.3f} -> {after.warmth:+.3f} "
        f"(donor {target.warmth:+.3f}), colourfulness {before.colourfulness:.1f} -> "
        f"{after.colourfulness:.1f} (donor {target.colourfulness:.1f})"
    )
    return made(ws, image, "swap_dna", [a, b], note)


def triforce(ws: Workspace, args: list[str]) -> Outcome:
    """/triforce A B C: the centroid of three images — their pixel mean, contrast restored —
    and how far each lies from it."""
    refs = ws.resolve_all(args, 3)[:3]
    images = [r.load() for r in refs]
    size = _size(ws, images[0])
    stack = np.stack([np.asarray(fit(im, size), dtype=np.float64) for im in images])
    centroid = ImageOps.autocontrast(Image.fromarray(stack.mean(axis=0).astype(np.uint8)), cutoff=1)
    centre = features(centroid)
    distances = [float(np.abs(features(im) - centre).sum()) for im in images]
    nearest = refs[int(np.argmin(distances))]
    palette = " ".join(hex_ for hex_, _ in dominant_colours(centroid, 4))
    note = (
        "centroid of "
        + ", ".join(f"{r.id} (distance {d:.2f})" for r, d in zip(refs, distances, strict=True))
        + f"; closest to {nearest.id}; centroid palette {palette}"
    )
    outcome = made(ws, centroid, "triforce", refs, note)
    outcome.event["distances"] = {r.id: round(d, 4) for r, d in zip(refs, distances, strict=True)}
    return outcome


def _gamma_to_mid(image: Image.Image) -> Image.Image:
    """Lift or lower mid-tones so that mean luminance lands near 0.5."""
    mean = max(1e-3, min(0.999, measure(image).brightness))
    gamma = float(np.log(0.5) / np.log(mean))
    table = [round(255 * (i / 255) ** gamma) for i in range(256)] * 3
    return image.point(table)


def recast(ws: Workspace, args: list[str]) -> Outcome:
    """/recast A STYLE: A re-rendered in a style (see RECAST_STYLES)."""
    if len(args) != 2:
        raise StudioError(f"usage: /recast IMAGE STYLE (styles: {', '.join(RECAST_STYLES)})")
    ref, style = ws.resolve(args[0]), args[1].lower()
    image = ref.load()
    grey = ImageOps.grayscale(image)
    if style == "bright":
        out = _gamma_to_mid(ImageOps.autocontrast(image, cutoff=1))
    elif style == "crisp":
        out = image.filter(ImageFilter.UnsharpMask(radius=2.0, percent=160, threshold=2))
    elif style == "mono":
        out = ImageOps.autocontrast(grey, cutoff=1).convert("RGB")
    elif style == "sepia":
        out = ImageOps.colorize(grey, "#2e1f0f", "#f4e4c1")
    elif style == "duotone":
        out = ImageOps.colorize(grey, "#1b1f3b", "#f2c14e")
    elif style == "posterize":
        out = ImageOps.posterize(image, 3)
    elif style == "sketch":
        out = ImageOps.autocontrast(ImageOps.invert(grey.filter(ImageFilter.FIND_EDGES)), cutoff=2)
        out = out.convert("RGB")
    elif style in ("warm", "cool"):
        r, g, b = image.split()
        lift, drop = (r, b) if style == "warm" else (b, r)
        lift = lift.point(lambda v: min(255, round(v * 1.12)))
        drop = drop.point(lambda v: round(v * 0.88))
        out = Image.merge("RGB", (lift, g, drop) if style == "warm" else (drop, g, lift))
    else:
        raise StudioError(f"unknown style {style!r}; styles: {', '.join(RECAST_STYLES)}")
    before, after = quality(measure(image)), quality(measure(out))
    note = f"recast {ref.id} as {style}: quality {before.overall:.2f} -> {after.overall:.2f}"
    return made(ws, out, "recast", [ref], note)


def canvas_context(ws: Workspace, args: list[str]) -> Outcome:
    """/canvas_context [IMAGES]: a contact sheet of the images in use, labelled, and what the
    set has in common (mean brightness, shared palette)."""
    refs = ws.resolve_all(args, 1, default_all=True)
    cell, pad, label = 160, 8, 16
    columns = min(3, len(refs))
    rows = -(-len(refs) // columns)
    sheet = Image.new(
        "RGB", (columns * (cell + pad) + pad, rows * (cell + pad + label) + pad), "#202020"
    )
    draw = ImageDraw.Draw(sheet)
    for i, ref in enumerate(refs):
        thumb = ref.load()
        thumb.thumbnail((cell, cell), Image.Resampling.LANCZOS)
        x = pad + (i % columns) * (cell + pad)
        y = pad + (i // columns) * (cell + pad + label)
        sheet.paste(thumb, (x + (cell - thumb.width) // 2, y + (cell - thumb.height) // 2))
        draw.text((x, y + cell + 2), f"{ref.id} {ref.label}"[:26], fill="#e0e0e0")
    loaded = [r.load() for r in refs]
    brightness = sum(measure(im).brightness for im in loaded) / len(loaded)
    strip = Image.new("RGB", (64 * len(loaded), 64))
    for i, im in enumerate(loaded):
        strip.paste(im.resize((64, 64)), (64 * i, 0))
    palette = " ".join(hex_ for hex_, _ in dominant_colours(strip, 5))
    note = (
        f"context of {len(refs)} images ({', '.join(r.id for r in refs)}): mean brightness "
        f"{brightness:.2f}, shared palette {palette}"
    )
    return made(ws, sheet, "canvas_context", refs, note)
