"""What an image measures: the numbers behind every judgement of an image in loom-sim.

Every measure is computed on the pixels, on a copy scaled to at most :data:`WORKING_SIDE`
pixels on its longer side, so a thumbnail and a full-size export of one picture measure alike
(sharpness in particular depends on scale). Values are rounded to four decimals: the same file
gives the same numbers on every run, which keeps scorecards byte-identical.

* **brightness**: mean luminance (Rec. 709 weights on sRGB values), 0 black .. 1 white.
* **contrast**: RMS contrast, the standard deviation of luminance (0 .. 0.5).
* **sharpness**: variance of the Laplacian of luminance (on 0..255), the usual focus measure:
  in-focus photos score in the hundreds, soft ones below ~50.
* **clipped_dark / clipped_light**: the share of pixels crushed to black or blown to white.
* **colourfulness**: Hasler and Süsstrunk's (2003) metric M: ~0 grey, 15 slightly, 33
  moderately, 59 quite, 82 highly, 109 extremely colourful.
* **warmth / tint**: the mean yellow–blue and red–green opponent values (−1 .. 1): a colour
  cast shows as a large magnitude.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps

WORKING_SIDE = 512
_LUMA = np.array([0.2126, 0.7152, 0.0722])


def load_rgb(path: str | Path) -> Image.Image:
    """The image at ``path`` in RGB, turned upright by its EXIF orientation."""
    with Image.open(path) as image:
        image.load()
        return ImageOps.exif_transpose(image).convert("RGB")


def _working(image: Image.Image) -> Image.Image:
    image = image.convert("RGB")
    if max(image.size) > WORKING_SIDE:
        image = image.copy()
        image.thumbnail((WORKING_SIDE, WORKING_SIDE), Image.Resampling.LANCZOS)
    return image


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(_working(image), dtype=np.float64) / 255.0


def _laplacian_variance(luma: np.ndarray) -> float:
    if luma.shape[0] < 3 or luma.shape[1] < 3:
        return 0.0
    x = luma * 255.0
    lap = x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:] - 4.0 * x[1:-1, 1:-1]
    return float(lap.var())


def _r(value: float) -> float:
    return round(float(value), 4)


@dataclass(frozen=True)
class Measures:
    width: int
    height: int
    brightness: float
    contrast: float
    sharpness: float
    clipped_dark: float
    clipped_light: float
    colourfulness: float
    warmth: float
    tint: float

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def measure(image: Image.Image) -> Measures:
    """The measures of ``image`` (see the module docstring)."""
    rgb = _pixels(image)
    luma = rgb @ _LUMA
    r, g, b = (rgb[..., i] * 255.0 for i in range(3))
    rg, yb = r - g, 0.5 * (r + g) - b
    colourfulness = math.hypot(rg.std(), yb.std()) + 0.3 * math.hypot(rg.mean(), yb.mean())
    return Measures(
        width=image.width,
        height=image.height,
        brightness=_r(luma.mean()),
        contrast=_r(luma.std()),
        sharpness=_r(_laplacian_variance(luma)),
        clipped_dark=_r((luma < 0.02).mean()),
        clipped_light=_r((luma > 0.98).mean()),
        colourfulness=_r(colourfulness),
        warmth=_r(yb.mean() / 255.0),
        tint=_r(rg.mean() / 255.0),
    )


@dataclass(frozen=True)
class Quality:
    """Technical quality, each part 0..1 (higher is better), and their mean.

    * exposure: 1 at mid-grey mean luminance, falling to 0 at 0.1 or 0.9, times the share of
      pixels that are not clipped (every 1% clipped costs 4%);
    * contrast: RMS contrast relative to 0.22, a well-lit photograph's, capped at 1;
    * sharpness: ``1 - exp(-variance of Laplacian / 120)``: 0.34 at 50 (soft), 0.96 at 400.
    Colourfulness is a matter of style, not quality, and is left out.
    """

    exposure: float
    contrast: float
    sharpness: float
    overall: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def quality(measures: Measures) -> Quality:
    centred = max(0.0, 1.0 - abs(measures.brightness - 0.5) / 0.4)
    clipped = min(1.0, 4.0 * (measures.clipped_dark + measures.clipped_light))
    exposure = centred * (1.0 - clipped)
    contrast = min(1.0, measures.contrast / 0.22)
    sharpness = 1.0 - math.exp(-measures.sharpness / 120.0)
    return Quality(
        exposure=_r(exposure),
        contrast=_r(contrast),
        sharpness=_r(sharpness),
        overall=_r((exposure + contrast + sharpness) / 3.0),
    )


def dominant_colours(image: Image.Image, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` main colours as ``(#rrggbb, share of pixels)``, largest first (median cut on a
    64×64 copy: deterministic, and fast whatever the image's size)."""
    small = image.convert("RGB").resize((64, 64), Image.Resampling.BILINEAR)
    quantized = small.quantize(colors=k, method=Image.Quantize.MEDIANCUT)
    palette: list[int] = quantized.getpalette() or []
    # (count, palette index) pairs: Pillow types the index for every mode, a "P" image's is int
    colours: Any = quantized.getcolors(k) or []
    counts = sorted(((int(n), int(i)) for n, i in colours), key=lambda c: (-c[0], c[1]))
    total = 64 * 64
    out = []
    for count, index in counts:
        red, green, blue = palette[3 * index : 3 * index + 3]
        out.append((f"#{red:02x}{green:02x}{blue:02x}", _r(count / total)))
    return out


def features(image: Image.Image) -> np.ndarray:
    """A vector for likeness between images: a 4×4×4 colour histogram (shares of pixels) and
    the four main measures, each scaled to about 0..1. Two photos of one scene lie close;
    a sketch among photos lies far."""
    rgb = _pixels(image)
    bins = np.minimum((rgb * 4).astype(int), 3)
    index = bins[..., 0] * 16 + bins[..., 1] * 4 + bins[..., 2]
    histogram = np.bincount(index.ravel(), minlength=64) / index.size
    m = measure(image)
    scalars = np.array(
        [
            m.brightness,
            m.contrast / 0.5,
            1.0 - math.exp(-m.sharpness / 120.0),
            min(m.colourfulness / 110.0, 1.0),
        ]
    )
    return np.concatenate([histogram, 0.5 * scalars])
