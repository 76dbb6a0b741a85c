"""The abilities that read images: describe, diagnose, argue, extract_rule, odd_one_out.

Every statement they make is a measured number held against a stated threshold, so a user
(or the harness) can check it: "underexposed" means mean luminance below 0.35, "soft" means a
Laplacian variance below 60.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from loom_sim.imagery import Measures, dominant_colours, features, measure, quality
from loom_sim.studio.makers import made
from loom_sim.studio.workspace import Outcome, Ref, StudioError, Workspace

# fmt: off
_NAMED = {
    "black": (0, 0, 0), "charcoal": (54, 54, 54), "grey": (128, 128, 128),
    "silver": (192, 192, 192), "white": (250, 250, 250), "red": (200, 30, 30),
    "rust": (140, 60, 30), "brown": (100, 60, 35), "orange": (240, 140, 30),
    "sand": (210, 180, 140), "yellow": (235, 215, 50), "olive": (110, 110, 40),
    "green": (40, 150, 60), "teal": (30, 130, 130), "sky": (120, 180, 230),
    "blue": (40, 70, 190), "navy": (25, 35, 80), "purple": (120, 60, 150), "pink": (235, 150, 180),
}
# fmt: on

#: The thresholds behind /diagnose's findings.
UNDEREXPOSED, OVEREXPOSED = 0.35, 0.68
LOW_CONTRAST = 0.12
SOFT = 60.0
CLIPPED = 0.05
CAST = 0.12
SMALL = 400


def colour_name(hex_: str) -> str:
    rgb = np.array([int(hex_[i : i + 2], 16) for i in (1, 3, 5)])
    return min(_NAMED, key=lambda n: float(np.sum((np.array(_NAMED[n]) - rgb) ** 2)))


def _palette_words(image: Image.Image) -> str:
    return ", ".join(f"{colour_name(h)} {h} {share:.0%}" for h, share in dominant_colours(image, 4))


def describe(ws: Workspace, args: list[str]) -> Outcome:
    """/describe [IMAGE]: the measures of an image (default: the latest output, else img1)."""
    ref = _one(ws, args)
    image = ref.load()
    m, q = measure(image), quality(measure(image))
    text = (
        f"{ref.id} {ref.label}: {m.width}x{m.height}, brightness {m.brightness:.2f}, contrast "
        f"{m.contrast:.2f}, sharpness {m.sharpness:.0f}, colourfulness {m.colourfulness:.0f}, "
        f"warmth {m.warmth:+.2f}\npalette: {_palette_words(image)}\n"
        f"quality {q.overall:.2f} (exposure {q.exposure:.2f}, contrast {q.contrast:.2f}, "
        f"sharpness {q.sharpness:.2f})"
    )
    event = {"type": "described", "image": ref.id, "metrics": m.to_dict(), "quality": q.overall}
    return Outcome(text, event)


def findings(m: Measures) -> list[tuple[str, str]]:
    """(problem, suggested fix) for each threshold an image's measures cross."""
    out = []
    if m.brightness < UNDEREXPOSED:
        out.append((f"underexposed (brightness {m.brightness:.2f} < {UNDEREXPOSED})", "bright"))
    if m.brightness > OVEREXPOSED:
        out.append((f"overexposed (brightness {m.brightness:.2f} > {OVEREXPOSED})", "mono"))
    if m.contrast < LOW_CONTRAST:
        out.append((f"flat, low contrast ({m.contrast:.2f} < {LOW_CONTRAST})", "bright"))
    if m.sharpness < SOFT:
        out.append((f"soft focus (sharpness {m.sharpness:.0f} < {SOFT:.0f})", "crisp"))
    if m.clipped_dark > CLIPPED:
        out.append((f"crushed shadows ({m.clipped_dark:.0%} black)", "bright"))
    if m.clipped_light > CLIPPED:
        out.append((f"blown highlights ({m.clipped_light:.0%} white)", "mono"))
    if abs(m.warmth) > CAST:
        side = "warm/yellow" if m.warmth > 0 else "cool/blue"
        out.append(
            (f"{side} colour cast (warmth {m.warmth:+.2f})", "cool" if m.warmth > 0 else "warm")
        )
    if max(m.width, m.height) < SMALL:
        out.append((f"small ({m.width}x{m.height}, under {SMALL}px)", "better"))
    return out


def diagnose(ws: Workspace, args: list[str]) -> Outcome:
    """/diagnose [IMAGES|all]: what is technically wrong with each image, and the fix."""
    if args == ["all"]:
        args = []
    refs = ws.resolve_all(args, 1, default_all=True) if args or ws.images else []
    if not refs:
        raise StudioError("nothing to diagnose yet; add images with /use PATH")
    lines, report = [], {}
    for ref in refs:
        found = findings(measure(ref.load()))
        report[ref.id] = [problem for problem, _ in found]
        if not found:
            lines.append(f"{ref.id}: no technical problems found")
            continue
        for problem, fix in found:
            hint = "/better" if fix == "better" else f"/recast {ref.id} {fix}"
            lines.append(f"{ref.id}: {problem} -> try {hint}")
    return Outcome("\n".join(lines), {"type": "diagnosed", "findings": report})


def argue(ws: Workspace, args: list[str]) -> Outcome:
    """/argue A B: the case for each of two images on measured grounds, and a verdict."""
    a, b = ws.resolve_all(args, 2)[:2]
    ma, mb = measure(a.load()), measure(b.load())
    qa, qb = quality(ma), quality(mb)
    points = []
    for part in ("exposure", "contrast", "sharpness"):
        va, vb = getattr(qa, part), getattr(qb, part)
        if abs(va - vb) >= 0.05:
            better = a if va > vb else b
            points.append(
                f"{better.id} has the better {part} ({max(va, vb):.2f} vs {min(va, vb):.2f})"
            )
    if abs(ma.colourfulness - mb.colourfulness) >= 10:
        vivid = a if ma.colourfulness > mb.colourfulness else b
        points.append(
            f"{vivid.id} is more colourful ({max(ma.colourfulness, mb.colourfulness):.0f})"
        )
    gap = qa.overall - qb.overall
    high, low = max(qa.overall, qb.overall), min(qa.overall, qb.overall)
    if abs(gap) < 0.03:
        winner = None
        verdict = (
            f"too close to call on quality ({qa.overall:.2f} vs {qb.overall:.2f}): choose by mood"
        )
    else:
        winner = a if gap > 0 else b
        verdict = f"{winner.id} wins on measured quality ({high:.2f} vs {low:.2f})"
    text = "\n".join(
        [*(f"- {p}" for p in points or ["no measured difference worth naming"]), verdict]
    )
    event = {
        "type": "argued",
        "images": [a.id, b.id],
        "winner": winner.id if winner else None,
        "quality": {a.id: qa.overall, b.id: qb.overall},
    }
    return Outcome(text, event)


def extract_rule(ws: Workspace, args: list[str]) -> Outcome:
    """/extract_rule [IMAGES]: what the images share — tone, contrast, colour, frame, palette —
    stated as a rule, with a palette swatch."""
    refs = ws.resolve_all(args, 2, default_all=True)
    images = [r.load() for r in refs]
    ms = [measure(im) for im in images]
    lo, hi = min(m.brightness for m in ms), max(m.brightness for m in ms)
    contrast = min(m.contrast for m in ms)
    vivid = sum(m.colourfulness for m in ms) / len(ms)
    colour = "monochrome" if vivid < 8 else "muted colour" if vivid < 35 else "vivid colour"
    warm = sum(1 for m in ms if m.warmth > 0.02)
    cool = sum(1 for m in ms if m.warmth < -0.02)
    temperature = "warm" if warm > len(ms) / 2 else "cool" if cool > len(ms) / 2 else "neutral"
    ratios = [m.width / m.height for m in ms]
    frame = (
        "landscape" if min(ratios) > 1.1 else "portrait" if max(ratios) < 0.9 else "mixed or square"
    )
    strip = Image.new("RGB", (64 * len(images), 64))
    for i, im in enumerate(images):
        strip.paste(im.resize((64, 64)), (64 * i, 0))
    palette = dominant_colours(strip, 5)
    rule = {
        "luminance": [lo, hi],
        "min_contrast": contrast,
        "colour": colour,
        "temperature": temperature,
        "frame": frame,
        "palette": [h for h, _ in palette],
    }
    swatch = Image.new("RGB", (100 * len(palette), 100))
    for i, (hex_, _) in enumerate(palette):
        swatch.paste(Image.new("RGB", (100, 100), hex_), (100 * i, 0))
    text = (
        f"RULE across {', '.join(r.id for r in refs)}: {temperature} {colour}, luminance "
        f"{lo:.2f}-{hi:.2f}, contrast at least {contrast:.2f}, {frame} frames; palette "
        + " ".join(f"{colour_name(h)} {h}" for h, _ in palette)
    )
    outcome = made(ws, swatch, "extract_rule", refs, text)
    outcome.event = {**outcome.event, "type": "rule_extracted", "rule": rule}
    return outcome


def odd_one_out(ws: Workspace, args: list[str]) -> Outcome:
    """/odd_one_out [IMAGES]: the image least like the others (mean feature distance)."""
    refs = ws.resolve_all(args, 3, default_all=True)
    vectors = [features(r.load()) for r in refs]
    n = len(vectors)
    mean_distance = [
        sum(float(np.abs(vectors[i] - vectors[j]).sum()) for j in range(n) if j != i) / (n - 1)
        for i in range(n)
    ]
    odd = int(np.argmax(mean_distance))
    ranked = sorted(zip(refs, mean_distance, strict=True), key=lambda p: -p[1])
    text = f"odd one out: {refs[odd].id} ({refs[odd].label})\n" + "\n".join(
        f"- {r.id}: mean distance {d:.2f}" for r, d in ranked
    )
    event = {
        "type": "odd_one_out",
        "odd": refs[odd].id,
        "distances": {r.id: round(d, 4) for r, d in zip(refs, mean_distance, strict=True)},
    }
    return Outcome(text, event)


def _one(ws: Workspace, args: list[str]) -> Ref:
    if args:
        return ws.resolve(args[0])
    outputs = [r for r in ws.images.values() if r.id.startswith("out")]
    if outputs:
        return outputs[-1]
    return ws.resolve_all([], 1, default_all=True)[0]
