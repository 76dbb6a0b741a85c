"""The studio's workspace: the images in use, the render profile, the outputs, kept on disk.

Everything a session has built up lives in ``state.json`` in the output folder, rewritten
atomically after every command, so a studio started again on the same folder carries on where
the last one stopped (the harness restarts its target when a session resumes).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageFilter, ImageOps, UnidentifiedImageError

from loom_sim.imagery import load_rgb

STATE_FILE = "state.json"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")


class StudioError(Exception):
    """Something the user asked for that cannot be done; shown as ``error: ...``."""


@dataclass(frozen=True)
class Profile:
    """How outputs are rendered, and what a render costs (the studio's price list)."""

    name: str
    side: int  # the longer side of an output, in pixels
    resample: Image.Resampling
    format: str  # PNG | JPEG
    jpeg_quality: int
    sharpen: bool
    cost_usd: float

    @property
    def suffix(self) -> str:
        return ".jpg" if self.format == "JPEG" else ".png"


#: Render profiles from the cheapest to the best; ``/cheaper`` and ``/better`` move along it.
PROFILES: tuple[Profile, ...] = (
    Profile("fast", 256, Image.Resampling.BILINEAR, "JPEG", 70, False, 0.01),
    Profile("balanced", 512, Image.Resampling.LANCZOS, "PNG", 0, False, 0.02),
    Profile("quality", 768, Image.Resampling.LANCZOS, "PNG", 0, True, 0.04),
)
PROFILE_NAMES = tuple(p.name for p in PROFILES)


@dataclass
class Ref:
    """An image the session can name: an input (``img1``) or an output (``out1``)."""

    id: str
    path: Path
    label: str  # what the user called it: the file name, or the ability that made it

    def load(self) -> Image.Image:
        try:
            return load_rgb(self.path)
        except (OSError, UnidentifiedImageError) as exc:
            raise StudioError(f"cannot read {self.id} ({self.path.name}): {exc}") from None


@dataclass
class Workspace:
    out_dir: Path
    images: dict[str, Ref] = field(default_factory=dict)  # inputs and outputs, by id
    inputs: int = 0
    outputs: int = 0
    profile: str = "balanced"
    last_recipe: list[str] | None = None  # the command line of the last render
    spent_usd: float = 0.0

    # ── naming ──

    def resolve(self, token: str) -> Ref:
        """``img2``, ``out1``, ``2`` (the second input) or a file name in use."""
        token = token.strip().strip(",")
        if token in self.images:
            return self.images[token]
        if token.isdigit() and f"img{token}" in self.images:
            return self.images[f"img{token}"]
        for ref in self.images.values():
            if ref.label == token or ref.path.name == token:
                return ref
        known = ", ".join(self.images) or "none yet (add some with /use PATH)"
        raise StudioError(f"no image called {token!r}; images: {known}")

    def resolve_all(self, tokens: list[str], at_least: int, default_all: bool = False) -> list[Ref]:
        refs = [self.resolve(t) for t in tokens]
        if not refs and default_all:
            refs = [r for r in self.images.values() if r.id.startswith("img")]
        if len(refs) < at_least:
            raise StudioError(f"needs at least {at_least} images, got {len(refs)}")
        return refs

    @property
    def current(self) -> Profile:
        return PROFILES[PROFILE_NAMES.index(self.profile)]

    # ── adding ──

    def use(self, path: Path) -> Ref:
        """Add an input image (once: a second /use of the same file returns the first ref)."""
        path = path.expanduser().resolve()
        for ref in self.images.values():
            if ref.path == path:
                return ref
        if not path.is_file():
            raise StudioError(f"no such file: {path}")
        if path.suffix.lower() not in IMAGE_SUFFIXES:
            raise StudioError(f"{path.name} is not an image this studio reads")
        try:
            load_rgb(path)
        except (OSError, UnidentifiedImageError) as exc:
            raise StudioError(f"{path.name} is not a readable image ({exc})") from None
        self.inputs += 1
        ref = Ref(f"img{self.inputs}", path, path.name)
        self.images[ref.id] = ref
        return ref

    def render(self, image: Image.Image, ability: str) -> Ref:
        """Save ``image`` as the next output, rendered by the current profile."""
        profile = self.current
        image = image.convert("RGB")
        if max(image.size) != profile.side:
            scale = profile.side / max(image.size)
            size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
            image = image.resize(size, profile.resample)
        if profile.sharpen:
            image = image.filter(ImageFilter.UnsharpMask(radius=1.2, percent=60, threshold=2))
        self.outputs += 1
        path = self.out_dir / "out" / f"{self.outputs:03d}_{ability}{profile.suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if profile.format == "JPEG":
            image.save(path, "JPEG", quality=profile.jpeg_quality)
        else:
            image.save(path, "PNG", optimize=False)
        ref = Ref(f"out{self.outputs}", path, ability)
        self.images[ref.id] = ref
        self.spent_usd = round(self.spent_usd + profile.cost_usd, 6)
        return ref

    # ── persistence ──

    def save(self) -> None:
        data = {
            "images": {k: [str(r.path), r.label] for k, r in self.images.items()},
            "inputs": self.inputs,
            "outputs": self.outputs,
            "profile": self.profile,
            "last_recipe": self.last_recipe,
            "spent_usd": self.spent_usd,
        }
        path = self.out_dir / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def open(cls, out_dir: Path) -> Workspace:
        """The workspace in ``out_dir``: the saved one, or a new one."""
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / STATE_FILE
        if not path.exists():
            return cls(out_dir)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            images = {k: Ref(k, Path(p), label) for k, (p, label) in data["images"].items()}
            return cls(
                out_dir,
                images,
                int(data["inputs"]),
                int(data["outputs"]),
                data["profile"] if data["profile"] in PROFILE_NAMES else "balanced",
                data.get("last_recipe"),
                float(data.get("spent_usd", 0.0)),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise StudioError(f"{path} is damaged ({exc}); move it away to start afresh") from None


def fit(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """``image`` cropped and scaled to exactly ``size``, keeping its centre."""
    return ImageOps.fit(image, size, Image.Resampling.LANCZOS)


@dataclass
class Outcome:
    """What an ability did: the text the user sees and the event the log records."""

    text: str
    event: dict = field(default_factory=dict)  # type, and what else the ability reports
    outputs: list[Ref] = field(default_factory=list)
