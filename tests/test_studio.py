"""The studio's abilities on the shipped photos: real image work, checked by measurement; the
read–answer loop and its event log; a workspace that survives a restart."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFilter

from loom_sim.imagery import features, load_rgb, measure, quality
from loom_sim.studio.abilities import ABILITIES, run
from loom_sim.studio.app import EventLog, Studio, Style, loop
from loom_sim.studio.replies import Canned
from loom_sim.studio.workspace import StudioError, Workspace

INPUTS = Path(__file__).resolve().parent.parent / "configs/packs/studio_benchmarks/inputs"


@pytest.fixture
def ws(tmp_path) -> Workspace:
    ws = Workspace.open(tmp_path / "out")
    for name in ("coffee_counter.jpg", "jumpsuit_portrait.jpg", "brick_backdrop.jpg"):
        ws.use(INPUTS / name)
    return ws


def _array(ref) -> np.ndarray:
    return np.asarray(ref.load(), dtype=np.float64)


def test_measures_see_what_was_done_to_a_photo():
    photo = load_rgb(INPUTS / "selfie.jpg")
    blurred = photo.filter(ImageFilter.GaussianBlur(2))
    darker = photo.point(lambda v: v // 3)
    assert measure(blurred).sharpness < measure(photo).sharpness / 4
    assert measure(darker).brightness < measure(photo).brightness / 2
    assert quality(measure(darker)).exposure < quality(measure(photo)).exposure
    assert measure(photo).colourfulness == 0  # a grey photo
    assert measure(load_rgb(INPUTS / "jumpsuit_portrait.jpg")).colourfulness > 50


def test_diagnose_finds_the_problems_the_photos_have(ws):
    outcome = run(ws, "diagnose", [])
    found = outcome.event["findings"]
    assert any("underexposed" in f for f in found["img1"])  # the darkened coffee shot
    assert any("soft focus" in f for f in found["img2"])  # the blurred portrait
    assert not any("soft focus" in f for f in found["img3"])
    assert "/recast img1 bright" in outcome.text


def test_recast_bright_fixes_the_underexposed_photo(ws):
    outcome = run(ws, "recast", ["img1", "bright"])
    before = measure(ws.resolve("img1").load())
    after = measure(outcome.outputs[0].load())
    assert before.brightness < 0.3 < 0.4 < after.brightness
    assert outcome.event["metrics"]["brightness"] == after.brightness  # reported = measured


def test_blend_and_bridge_mix_their_inputs(ws):
    blended = run(ws, "blend", ["img1", "img3", "0.25"]).outputs[0]
    size = blended.load().size
    a = np.asarray(ws.resolve("img1").load().resize(size), dtype=np.float64)
    mixed = _array(blended)
    assert (
        0.0
        < np.abs(mixed - a).mean()
        < np.abs(np.asarray(ws.resolve("img3").load().resize(size), dtype=np.float64) - a).mean()
    )
    bridged = _array(run(ws, "bridge", ["img1", "img3"]).outputs[0])
    left, right = bridged[:, :20].mean(axis=(0, 1)), bridged[:, -20:].mean(axis=(0, 1))
    coffee_red = left[0] - left[2]  # the coffee shot is warm on the left; grey brick right
    assert coffee_red > 20 and abs(right[0] - right[2]) < 8


def test_swap_dna_moves_colour_towards_the_donor(ws):
    outcome = run(ws, "swap_dna", ["img3", "img1"])  # grey brick takes the coffee's colour
    after = measure(outcome.outputs[0].load())
    assert measure(ws.resolve("img3").load()).warmth == 0.0
    assert after.warmth > 0.1 and after.colourfulness > 20


def test_odd_one_out_picks_the_sketch_among_photos(tmp_path):
    ws = Workspace.open(tmp_path)
    photos = ("coffee_counter.jpg", "cat_reference.jpg", "jumpsuit_portrait.jpg")
    for name in (*photos, "horse_sketch.png"):
        ws.use(INPUTS / name)
    outcome = run(ws, "odd_one_out", [])
    assert outcome.event["odd"] == "img4"


def test_triforce_makes_a_centroid_closest_to_the_middle_image(ws):
    outcome = run(ws, "triforce", ["img1", "img2", "img3"])
    centroid = features(outcome.outputs[0].load())
    distances = outcome.event["distances"]
    assert set(distances) == {"img1", "img2", "img3"}
    assert min(distances.values()) < np.abs(centroid - features(Image.new("RGB", (64, 64)))).sum()


def test_extract_rule_argue_and_context(ws):
    rule = run(ws, "extract_rule", ["img1", "img2"])
    assert rule.event["type"] == "rule_extracted" and len(rule.event["rule"]["palette"]) >= 3
    argued = run(ws, "argue", ["img1", "img2"])
    assert argued.event["winner"] in ("img1", "img2", None)
    sheet = run(ws, "canvas_context", []).outputs[0].load()
    assert sheet.width > 3 * 150  # three thumbnails side by side


def test_profiles_redo_the_last_render(ws):
    first = run(ws, "blend", ["img1", "img2"]).outputs[0].load()
    better = run(ws, "better", []).outputs[0].load()
    assert max(better.size) == 768 > max(first.size) == 512
    cheaper = run(ws, "cheaper", [])
    assert cheaper.outputs[0].path.suffix == ".png" and ws.profile == "balanced"
    run(ws, "fast", [])
    with pytest.raises(StudioError, match="cheapest"):
        run(ws, "cheaper", [])
    assert ws.spent_usd == pytest.approx(0.02 + 0.04 + 0.02)


def test_bad_requests_are_plain_errors(ws):
    with pytest.raises(StudioError, match="no image called 'img9'"):
        run(ws, "blend", ["img9", "img1"])
    with pytest.raises(StudioError, match="unknown command /sharpen"):
        run(ws, "sharpen", [])
    with pytest.raises(StudioError, match="no such file"):
        run(ws, "use", ["/nonexistent.jpg"])


def test_the_loop_answers_logs_and_resumes(tmp_path):
    out = tmp_path / "out"
    script = f"/use {INPUTS / 'selfie.jpg'}\n/describe\nwhich one is better?\n/nope\n/exit\n"
    stdout = io.StringIO()
    events = EventLog(out / "events.jsonl")
    loop(
        Studio(Workspace.open(out), events, Canned(1), Style(False)),
        io.StringIO(script),
        stdout,
        "studio> ",
    )
    events.close()
    text = stdout.getvalue()
    assert text.count("studio> ") == 5 and "img1: selfie.jpg (320x320)" in text
    assert "error: unknown command /nope" in text and "/argue" in text
    logged = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in logged] == [1, 2, 3, 4]
    assert [e["type"] for e in logged] == ["images_loaded", "described", "reply", "error"]
    again = Workspace.open(out)  # a restarted studio carries on
    assert list(again.images) == ["img1"]
    assert EventLog(out / "events.jsonl").seq == 4


def test_the_help_lists_every_ability():
    studio = Studio(Workspace(Path("/tmp")), None, Canned(0), Style(False))  # type: ignore[arg-type]
    for ability in ABILITIES.values():
        assert ability.usage in studio.help()
