"""Installable anywhere: a wheel built from the repository, installed (not editable) into a
fresh virtualenv, runs every feature from a directory that is not the repository — shipped
configs by name (examples, adversaries, probe sets), plug-ins through its own entry points, a
run with both adversaries scored and reported, the probe, and the embedded model.

The fresh venv gets loom-sim's *dependencies* from the test's own environment (a ``.pth``
line: installing llama.cpp and torch again would take many minutes and the network), but
loom-sim itself only from the wheel: the test checks that the package it runs is the
installed one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin/ directory of a fresh venv with the wheel installed."""
    work = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(work / "dist"), str(ROOT)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    [wheel] = (work / "dist").glob("loom_sim-*.whl")
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    # The dependencies, from this environment (loom-sim's own editable finder is not run:
    # .pth files inside a directory added this way are not processed, so the directories an
    # environment itself takes from .pth lines, as a worktree's venv does, are listed too).
    (site / "_deps.pth").write_text("".join(f"{path}\n" for path in _dependency_dirs()))
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         str(wheel)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    return env_dir / "bin"


def _dependency_dirs() -> list[str]:
    purelib = Path(sysconfig.get_paths()["purelib"])
    found = [str(purelib)]
    for pth in sorted(purelib.glob("*.pth")):
        for line in pth.read_text().splitlines():
            if line and not line.startswith(("#", "import")) and Path(line).is_dir():
                if "loom" not in Path(line).name:  # never loom-sim's own source tree
                    found.append(line)
    return found


def loom(bin_dir: Path, cwd: Path, *args: str, timeout: float = 300):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        [str(bin_dir / "loom-sim"), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_the_installed_package_is_the_wheel(installed, tmp_path):
    where = subprocess.run(
        [str(installed / "python"), "-c", "import loom_sim, loom_sim.actors, loom_sim.configs;"
         "print(loom_sim.__file__, loom_sim.actors.__file__, loom_sim.configs.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert str(ROOT) not in where and "site-packages" in where


def test_every_feature_runs_from_the_wheel(installed, tmp_path):
    listed = loom(installed, tmp_path, "plugins")
    assert listed.returncode == 0, listed.stderr
    for name in ("openai", "probe-target", "fidelity", "contradiction", "rollout"):
        assert name in listed.stdout
    assert loom(installed, tmp_path, "validate", "mania_patient").returncode == 0
    assert "MUST DO" in loom(installed, tmp_path, "dry-run", "student_persona", "-n", "2").stdout
    assert "stateDiagram-v2" in loom(installed, tmp_path, "diagram").stdout

    run = loom(
        installed, tmp_path, "run", "mania_patient", "--turns", "3", "--seed", "3", "-o", "run",
        "--persona-model", "scripted/varied", "--adversary", "both",
        "--adversary-model", "scripted/varied", "--judge-model", "scripted/judge",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["responders"] == ["contradiction", "helpfulness"]
    transcript = json.loads((tmp_path / "run" / "rollout_000" / "transcript.json").read_text())
    tactics = [t["adversary"]["adversary"] for t in transcript["turns"]]
    assert tactics == ["contradiction", "helpfulness", "contradiction"]
    assert transcript["scores"]["aggregates"]["fidelity"]["n"] >= 1
    assert (tmp_path / "run" / "report.html").is_file()
    assert loom(installed, tmp_path, "view", "run").returncode == 0
    assert loom(installed, tmp_path, "trace", "run").returncode == 0

    probe = loom(
        installed, tmp_path, "probe", "moral_dilemmas", "--runs", "4", "--seed", "2",
        "--target", "scripted/probe-target", "--judge-model", "scripted/probe-judge",
        "-o", "probe", "--bandit-state", "state.json",
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    summary = json.loads((tmp_path / "probe" / "summary.json").read_text())
    assert set(summary["modes"]) == {"static", "adaptive", "bandit"}

    debate = loom(
        installed, tmp_path, "debate", "planted_claim", "--seed", "2", "--similarity", "tfidf",
        "-o", "debate",
    )  # fmt: skip
    assert debate.returncode == 0, debate.stderr
    assert json.loads((tmp_path / "debate" / "cards.json").read_text())["cards"]
    assert "card-1" in (tmp_path / "debate" / "report.html").read_text()


def test_the_embedded_model_runs_from_the_wheel(installed, tmp_path):
    run = loom(
        installed, tmp_path, "run", "mania_patient", "--turns", "1", "--seed", "1", "-o", "run",
        "--no-score", timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    transcript = json.loads((tmp_path / "run" / "rollout_000" / "transcript.json").read_text())
    assert transcript["models"]["persona"] == "local/smollm2" and transcript["turns"][0]["persona"]


def test_the_harness_runs_from_the_wheel(installed, tmp_path):
    """The shipped pack, its photos and the studio are in the wheel: a session runs by name."""
    models = ["--model", "user=scripted/harness-user", "--model",
              "reflector=scripted/harness-reflector", "--model",
              "evaluator=scripted/harness-evaluator"]  # fmt: skip
    run = loom(
        installed, tmp_path, "harness", "run", "studio_benchmarks", "--scenario",
        "tattoo_flash_direction_find", "--target", "studio-canned", "--max-turns", "2",
        "--seed", "1", *models, "-o", "harness",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    bundle = tmp_path / "harness" / "tattoo_flash_direction_find-1"
    assert sorted(p.name for p in (bundle / "inputs").iterdir()) == [
        "cat_reference.jpg", "coin_motifs.jpg", "horse_sketch.png"
    ]  # fmt: skip
    assert any((bundle / "target" / "out").iterdir())  # the studio ran from the wheel
    assert loom(installed, tmp_path, "schema", "--pack").returncode == 0
