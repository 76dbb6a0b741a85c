"""Hostile results folders against the workbench — ``runs``, ``compare``, ``export``,
``merge`` and the viewer (``serve``) — each through the real command line or a real server on
127.0.0.1.

Every case is something a copied, linked or hand-edited folder can hold: a ``run.json``
planning a million rollouts, a ``run.json`` that is a FIFO or a link to ``/dev/zero``, a
rollout file linking outside the results folder, a shard whose cell is another run's, a
persona message that is a spreadsheet formula. Each must end in one plain sentence or a plain
page, quickly, and never hang: a command that does not answer in 30 s fails the test.
"""

from __future__ import annotations

import csv
import http.client
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from hostile_support import (
    CPU_LIMIT_S,
    HANG_S,
    Outcome,
    Reply,
    assert_plain_page,
    cpu_s,
    get,
    loom,
    refused,
    serving,
)

SCRIPTED = [
    "--persona-model",
    "scripted/varied",
    "--target",
    "scripted/varied",
    "--judge-model",
    "scripted/echo",
]
SECRET = "SECRET-OUTSIDE-THE-RESULTS-FOLDER"


def made(out: Path, *extra: str) -> Path:
    done = loom(
        "run", "mania_patient", "--turns", "3", "--no-score", "-o", str(out), *SCRIPTED, *extra
    )
    assert done.code == 0, done.text
    return out


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> dict[str, Path]:
    """A finished run of two rollouts, the two shards of a four-rollout run, and the same
    plan's shard 1 made with another seed: every case below copies what it damages."""
    work = tmp_path_factory.mktemp("hostile-workbench")
    found = {"run": made(work / "run", "--rollouts", "2", "--seed", "3")}
    for k in (1, 2):
        found[f"shard{k}"] = made(
            work / f"shard{k}", "--rollouts", "4", "--seed", "5", "--shard", f"{k}/2"
        )
    found["other"] = made(work / "other", "--rollouts", "4", "--seed", "6", "--shard", "1/2")
    return found


def results_with(base: dict[str, Path], tmp_path: Path, *names: str) -> Path:
    root = tmp_path / "results"
    root.mkdir()
    for name in names:
        shutil.copytree(base["run"], root / name)
    return root


def set_record(run: Path, **fields) -> None:
    data = json.loads((run / "run.json").read_text())
    data.update(fields)
    (run / "run.json").write_text(json.dumps(data))


# ─── a number in run.json ───────────────────────────────────────────────────


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"rollouts": 1_000_000}, "rollouts"),
        ({"rollouts": 10**9}, "rollouts"),
        ({"turns": 10**9}, "turns"),
    ],
)
def test_an_absurd_planned_count_is_refused_not_counted_to(base, tmp_path, fields, field):
    root = results_with(base, tmp_path, "big")
    set_record(root / "big", **fields)
    listed = loom("runs", str(root), "--json")
    assert listed.code == 0 and listed.cpu_s < CPU_LIMIT_S, listed.text
    (line,) = [json.loads(x) for x in listed.stdout.splitlines()]
    assert line["status"] == "unreadable" and field in line["problem"], line
    refused(loom("compare", str(root / "big")), "run.json", field)
    refused(loom("export", str(root / "big"), "-o", str(tmp_path / "out")), "run.json", field)


def test_a_large_plan_is_counted_from_what_the_folder_holds(base, tmp_path):
    """100,000 planned rollouts, two on disk: every reader counts the rest, none lists them —
    listing and comparing cost what they cost for the same folder planning two."""
    root = results_with(base, tmp_path, "big")
    set_record(root / "big", rollouts=100_000)
    (tmp_path / "small").mkdir()
    small = results_with(base, tmp_path / "small", "run")
    listed = loom("runs", str(root), "--json")
    assert listed.code == 0, listed.text
    (line,) = [json.loads(x) for x in listed.stdout.splitlines()]
    assert (line["cells"], line["done"], line["turns"]) == (100_000, 2, 6)
    assert line["planned_turns"] == 300_000 and line["status"] == "partial"
    compared = loom("compare", str(root / "big"), "--json")
    assert compared.code == 0, compared.text
    data = json.loads(compared.stdout)
    assert data["runs"][0]["statuses"] == {"done": 2, "pending": 99_998}
    assert "99998 of 100000 rollouts are not done" in " ".join(data["notices"])
    baseline = loom("runs", str(small), "--json").cpu_s + loom("compare", str(small / "run")).cpu_s
    extra = listed.cpu_s + compared.cpu_s - baseline
    assert extra < 1.0, f"100,000 planned rollouts cost {extra:.1f} s of CPU more than 2"


def test_run_refuses_counts_no_reader_would_read(tmp_path):
    refused_run = loom("run", "mania_patient", "--rollouts", "1000000", "-o", str(tmp_path / "r"))
    assert refused_run.code == 2 and "1000000 is not in the range" in refused_run.stderr
    assert not (tmp_path / "r").exists()


# ─── run.json that is not a file, links that loop ───────────────────────────


def test_a_run_json_that_is_not_a_file_is_listed_unreadable_never_read(base, tmp_path):
    root = results_with(base, tmp_path, "good", "folder", "fifo", "zero")
    for name in ("folder", "fifo", "zero"):
        (root / name / "run.json").unlink()
    (root / "folder" / "run.json").mkdir()
    os.mkfifo(root / "fifo" / "run.json")
    os.symlink("/dev/zero", root / "zero" / "run.json")
    listed = loom("runs", str(root), "--json")
    assert listed.code == 0 and listed.cpu_s < CPU_LIMIT_S, listed.text
    status = {x["path"]: x for x in map(json.loads, listed.stdout.splitlines())}
    assert status["good"]["status"] == "complete"
    for name in ("folder", "fifo", "zero"):
        assert status[name]["status"] == "unreadable", status[name]
    assert "folder" in status["folder"]["problem"] and "pipe" in status["fifo"]["problem"]
    assert "outside the results folder" in status["zero"]["problem"]
    # Read alone, not within a results folder, the device is refused as one.
    refused(loom("compare", str(root / "zero")), "run.json", "device")


def test_a_run_reached_through_a_loop_of_links_is_listed_once(base, tmp_path):
    root = results_with(base, tmp_path, "only")
    os.symlink(root, root / "loop")  # results/loop/only is results/only again
    os.symlink(root / "only", root / "alias")
    listed = loom("runs", str(root), "--json")
    assert listed.code == 0, listed.text
    assert [json.loads(x)["path"] for x in listed.stdout.splitlines()] == ["only"]


# ─── refusals with the valid choices ────────────────────────────────────────


def test_since_must_be_a_date(base, tmp_path):
    root = results_with(base, tmp_path, "run")
    refused(loom("runs", str(root), "--since", "yesterday"), "yesterday", "ISO", "2025-06-01")
    assert loom("runs", str(root), "--since", "2000-01-01", "--json").stdout.count("\n") == 1


def test_a_rate_on_a_misspelt_scorer_is_refused_with_the_right_name(base):
    line = refused(loom("compare", str(base["run"]), "--rate", "persona_adherance>=0.5"))
    assert "persona_adherance" in line and "did you mean persona_adherence" in line


def test_export_to_stdout_needs_one_table(base, tmp_path):
    refused(loom("export", str(base["run"]), "-o", "-", cwd=tmp_path), "--rows")
    assert not (tmp_path / "-").exists()


# ─── CSV formulas ───────────────────────────────────────────────────────────

FORMULAS = [
    '=HYPERLINK("http://example.invalid/x","click")',
    "+1+2",
    "-3+4",
    "@SUM(A1)",
    "\t=1",
    "\r=1",
]


def test_export_neutralises_formulas_in_csv_and_keeps_jsonl_exact(base, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(base["run"], run)
    path = run / "rollout_000" / "transcript.json"
    transcript = json.loads(path.read_text())
    for turn, text in zip(transcript["turns"] * 2, FORMULAS, strict=False):
        turn["persona"] = text
    for turn, text in zip(transcript["turns"], FORMULAS[3:], strict=False):
        turn["interlocutor"] = text
    path.write_text(json.dumps(transcript))
    for fmt, flags in (("csv", []), ("jsonl", ["--json"])):
        done = loom("export", str(run), "--rows", "turns", *flags, "-o", str(tmp_path / f"t.{fmt}"))
        assert done.code == 0, done.text
    with (tmp_path / "t.csv").open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["cell"] == "rollout_000"]
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    lines = [x for x in lines if x["cell"] == "rollout_000"]
    for row, exact in zip(rows, lines, strict=True):
        for column in ("persona_message", "target_message"):
            text = exact[column]
            if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
                assert row[column] == "'" + text, (column, row[column])
            else:
                assert row[column] == text
    assert {x["persona_message"] for x in lines} <= set(FORMULAS)  # JSONL: exact text
    assert all(not r["turn"].startswith("'") for r in rows)  # numbers stay numbers


# ─── merge ──────────────────────────────────────────────────────────────────


@pytest.fixture
def shards(base, tmp_path) -> dict[str, Path]:
    found = {}
    for name in ("shard1", "shard2", "other"):
        shutil.copytree(base[name], tmp_path / name, symlinks=True)
        found[name] = tmp_path / name
    return found


def merge(shards: dict[str, Path], out: Path) -> Outcome:
    return loom(
        "merge", str(shards["shard1"]), str(shards["shard2"]), "-o", str(out), "--no-report"
    )


def _swap(a: Path, b: Path) -> None:
    a.rename(a.with_name("swap"))
    b.rename(a)
    a.with_name("swap").rename(b)


TAMPER = {
    "symlink to another run's cell": lambda s: (
        shutil.rmtree(s["shard1"] / "rollout_002"),
        os.symlink(s["other"] / "rollout_002", s["shard1"] / "rollout_002"),
    ),
    "foreign turns.jsonl": lambda s: shutil.copy(
        s["other"] / "rollout_002" / "turns.jsonl", s["shard1"] / "rollout_002" / "turns.jsonl"
    ),
    "foreign transcript": lambda s: shutil.copy(
        s["other"] / "rollout_002" / "transcript.json",
        s["shard1"] / "rollout_002" / "transcript.json",
    ),
    "foreign turns.jsonl in an unfinished cell": lambda s: (
        (s["shard1"] / "rollout_002" / "transcript.json").unlink(),
        shutil.copy(
            s["other"] / "rollout_002" / "turns.jsonl", s["shard1"] / "rollout_002" / "turns.jsonl"
        ),
    ),
    "unfinished cells swapped": lambda s: (
        (s["shard1"] / "rollout_000" / "transcript.json").unlink(),
        (s["shard1"] / "rollout_002" / "transcript.json").unlink(),
        _swap(s["shard1"] / "rollout_000", s["shard1"] / "rollout_002"),
    ),
    "cells swapped": lambda s: _swap(s["shard1"] / "rollout_000", s["shard1"] / "rollout_002"),
    "duplicated turn line": lambda s: _edit_turns(
        s["shard1"] / "rollout_002", lambda x: x[:2] + x[1:]
    ),
    "missing turn line": lambda s: _edit_turns(
        s["shard1"] / "rollout_002", lambda x: x[:1] + x[2:]
    ),
    "last turn line gone": lambda s: _edit_turns(s["shard1"] / "rollout_002", lambda x: x[:-1]),
    "a file linking out": lambda s: (
        (s["shard1"] / "rollout_002" / "trace.jsonl").unlink(),
        os.symlink("/etc/hostname", s["shard1"] / "rollout_002" / "trace.jsonl"),
    ),
}


def _edit_turns(cell: Path, change) -> None:
    path = cell / "turns.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(change(lines)))


@pytest.mark.parametrize("case", list(TAMPER))
def test_merge_refuses_a_tampered_cell_by_name(shards, tmp_path, case):
    TAMPER[case](shards)
    out = tmp_path / "merged"
    line = refused(merge(shards, out), "cannot merge", r"cell rollout_00[02]", "nothing was merged")
    assert str(shards["shard1"]) in line
    assert not (out / "run.json").exists()


def test_merge_of_untouched_shards_still_merges(shards, tmp_path):
    done = merge(shards, tmp_path / "merged")
    assert done.code == 0 and "merged 2 of 2 shards: 4 cells" in done.stdout, done.text


# ─── the viewer ─────────────────────────────────────────────────────────────


@pytest.fixture
def outside(base, tmp_path) -> Path:
    """A run beside the results folder (not in it) whose texts hold a secret."""
    run = tmp_path / "outside-run"
    shutil.copytree(base["run"], run)
    for cell in ("rollout_000", "rollout_001"):
        for name in ("turns.jsonl", "transcript.json"):
            path = run / cell / name
            path.write_text(path.read_text().replace("scripted", SECRET))
    return run


@pytest.mark.parametrize(
    "linked",
    ["rollout_000/turns.jsonl", "rollout_000/transcript.json", "rollout_000", "run.json"],
)
def test_a_file_linking_outside_is_not_found_anywhere(base, tmp_path, outside, linked):
    root = results_with(base, tmp_path, "run")
    target = root / "run" / linked
    (shutil.rmtree if target.is_dir() else Path.unlink)(target)
    os.symlink(outside / linked, target)
    if linked == "rollout_000/turns.jsonl":  # the viewer reads turns.jsonl when no transcript
        (root / "run" / "rollout_000" / "transcript.json").unlink()
    with serving(root) as (port, _):
        for path in (
            "/run/run",
            "/report/run",
            "/rollout/run/rollout_000",
            "/events/run",
            "/compare?run=run",
        ):
            reply = get(port, path)
            assert_plain_page(reply, 404)
            assert SECRET not in reply.body, path
        listing = get(port, "/")
        assert listing.status == 200 and SECRET not in listing.body
        assert "outside the results folder" in listing.body
        assert 'href="/run/run"' not in listing.body


def test_a_symlinked_rollout_folder_is_a_plain_not_found(base, tmp_path):
    root = results_with(base, tmp_path, "run")
    shutil.copytree(base["run"], tmp_path / "elsewhere")
    shutil.rmtree(root / "run" / "rollout_001")
    os.symlink(tmp_path / "elsewhere" / "rollout_001", root / "run" / "rollout_001")
    with serving(root) as (port, _):
        assert_plain_page(get(port, "/run/run"), 404)
        assert_plain_page(get(port, "/rollout/run/rollout_001"), 404)
        assert get(port, "/rollout/run/rollout_000").status == 404  # the whole run is refused


@pytest.mark.parametrize(
    "host, status",
    [
        ("evil.example", 400),
        ("evil.example:{port}", 400),
        ("127.0.0.1.evil.example", 400),
        ("", 400),
        ("localhost:{port}", 200),
        ("127.0.0.1:{port}", 200),
        ("[::1]:{port}", 200),
        ("LOCALHOST", 200),
    ],
)
def test_only_requests_addressed_to_loopback_are_answered(base, tmp_path, host, status):
    root = results_with(base, tmp_path, "run")
    with serving(root) as (port, _):
        for path in ("/", "/run/run", "/static/viewer.css"):
            reply = get(port, path, host=host.format(port=port))
            assert_plain_page(reply, status)
            if status == 400:
                assert "Unknown host" in reply.body and "Marcus" not in reply.body


def test_the_host_given_is_answered_too(base, tmp_path):
    root = results_with(base, tmp_path, "run")
    with serving(root, "--host", "127.0.0.2", address="127.0.0.2") as (port, _):
        assert get(port, "/", address="127.0.0.2").status == 200
        assert get(port, "/", host="localhost", address="127.0.0.2").status == 200
        assert get(port, "/", host="evil.example", address="127.0.0.2").status == 400


def test_links_to_folders_with_hash_and_question_marks_work(base, tmp_path):
    name = "a#b?c d%"
    root = results_with(base, tmp_path, name)
    with serving(root) as (port, _):
        listing = get(port, "/")
        assert 'href="/run/a%23b%3Fc%20d%25"' in listing.body
        run = get(port, "/run/a%23b%3Fc%20d%25")
        assert run.status == 200 and 'href="/rollout/a%23b%3Fc%20d%25/rollout_000"' in run.body
        assert get(port, "/rollout/a%23b%3Fc%20d%25/rollout_000").status == 200
        compared = get(port, "/compare?run=a%23b%3Fc%20d%25")
        assert compared.status == 200 and 'href="/run/a%23b%3Fc%20d%25"' in compared.body


def _long_rollout(run: Path, turns: int) -> None:
    """rollout_000 as a rollout still going, of ``turns`` turns (its own turn repeated)."""
    cell = run / "rollout_000"
    (cell / "transcript.json").unlink()
    first = json.loads((cell / "turns.jsonl").read_text().splitlines()[0])
    with (cell / "turns.jsonl").open("w") as fh:
        for n in range(turns):
            fh.write(json.dumps({**first, "turn": n, "persona": f"message number {n}"}) + "\n")


def test_a_long_rollout_is_shown_a_page_at_a_time(base, tmp_path):
    root = results_with(base, tmp_path, "run")
    _long_rollout(root / "run", 120)
    with serving(root) as (port, _):
        first = get(port, "/rollout/run/rollout_000")
        assert first.body.count('<section class="turn"') == 50
        assert "message number 49<" in first.body and "message number 50<" not in first.body
        assert 'href="?page=2"' in first.body and "page 1 of 3" in first.body
        last = get(port, "/rollout/run/rollout_000?page=3")
        assert last.body.count('<section class="turn"') == 20 and "message number 119<" in last.body
        assert (
            get(port, "/rollout/run/rollout_000?page=99").body.count('<section class="turn"') == 20
        )
        for odd in ("0", "-1", "x", "%C2%B2", "9" * 30):  # the nearest page, never a failure
            assert get(port, f"/rollout/run/rollout_000?page={odd}").status == 200, odd


def test_a_run_of_many_rollouts_is_shown_a_page_at_a_time(base, tmp_path):
    """250 rollouts started of 300 planned: 200 rows a page, the 50 not started counted."""
    root = results_with(base, tmp_path, "run")
    set_record(root / "run", rollouts=300)
    for n in range(2, 250):
        cell = root / "run" / f"rollout_{n:03d}"
        cell.mkdir()
        for name in ("turns.jsonl", "transcript.json"):
            os.link(root / "run" / "rollout_000" / name, cell / name)
    with serving(root) as (port, _):
        first = get(port, "/run/run")
        assert first.body.count('<tr class="rollout status-done"') == 200
        assert "50 more planned rollouts not started" in first.body
        assert "page 1 of 2" in first.body and 'href="?page=2"' in first.body
        second = get(port, "/run/run?page=2")
        assert second.body.count('<tr class="rollout status-done"') == 50
        assert 'href="/rollout/run/rollout_249"' in second.body


def test_a_rollout_too_large_to_show_is_refused_unparsed(base, tmp_path):
    root = results_with(base, tmp_path, "run")
    turns = root / "run" / "rollout_000" / "turns.jsonl"
    (root / "run" / "rollout_000" / "transcript.json").unlink()
    with turns.open("ab") as fh:  # 33 MB: past the bound, never read
        fh.truncate(33 * 2**20)
    with serving(root) as (port, _):
        reply = get(port, "/rollout/run/rollout_000")
        assert_plain_page(reply, 422)
        assert "33 MB" in reply.body and "loom-sim view" in reply.body
        assert get(port, "/rollout/run/rollout_001").status == 200


def test_an_absurd_count_leaves_the_viewer_answering_and_stoppable(base, tmp_path):
    root = results_with(base, tmp_path, "run", "big")
    set_record(root / "big", rollouts=1_000_000)
    with serving(root) as (port, proc):
        listing = get(port, "/")
        assert listing.status == 200 and "unreadable" in listing.body and "rollouts" in listing.body
        assert_plain_page(get(port, "/run/big"), 422)
        assert_plain_page(get(port, "/compare?run=big&run=run"), 422)
        assert get(port, "/run/run").status == 200
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=HANG_S)


@pytest.mark.slow
def test_a_slow_page_holds_up_neither_other_requests_nor_a_stop(base, tmp_path):
    """While the viewer makes a page that takes seconds of CPU (a comparison of a run of 2,000
    rollouts with itself, twelve times over), the static files and another page are answered
    before it is done, and SIGTERM stops the server before it is done."""
    root = results_with(base, tmp_path, "run")
    big = root / "big"
    big.mkdir()
    shutil.copy(base["run"] / "run.json", big / "run.json")
    set_record(big, rollouts=2000)
    for n in range(2000):
        cell = big / f"rollout_{n:03d}"
        cell.mkdir()
        for name in ("turns.jsonl", "transcript.json"):
            os.link(base["run"] / "rollout_000" / name, cell / name)
    heavy_path = "/compare?" + "&".join(["run=big"] * 12)
    with serving(root) as (port, proc):
        outcome: dict[str, object] = {}
        done = threading.Event()

        def heavy() -> None:
            try:
                outcome["reply"] = get(port, heavy_path, timeout=300)
            except (OSError, http.client.HTTPException) as err:
                outcome["error"] = err
            done.set()

        before = cpu_s(proc.pid)
        threading.Thread(target=heavy, daemon=True).start()
        deadline = time.monotonic() + HANG_S
        while cpu_s(proc.pid) - before < 0.3:  # the server is at work on the heavy page
            assert not done.is_set() and time.monotonic() < deadline, outcome
            time.sleep(0.01)
        assert get(port, "/static/viewer.css").status == 200
        assert get(port, "/run/run").status == 200
        assert not done.is_set(), "the other requests waited for the heavy page"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=HANG_S)
        done.wait(timeout=HANG_S)
        reply = outcome.get("reply")
        assert not (isinstance(reply, Reply) and reply.status == 200), "it stopped only when done"
