"""The studio's read–answer loop: a prompt, a line, an answer, an event.

It is an ordinary interactive terminal program: it prints a prompt (``studio> ``), reads a
line, answers and prints the prompt again. Slash commands run abilities; anything else goes to
the model. Every command appends one event to ``events.jsonl`` (flushed at once, so a reader
tailing the file sees it before the next prompt) and saves the workspace.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import TextIO

from loom_sim.studio.abilities import ABILITIES, run
from loom_sim.studio.replies import Answerer, answerer
from loom_sim.studio.workspace import StudioError, Workspace

PROMPT = "studio> "


class EventLog:
    """``events.jsonl``: append-only, one event a line, numbered on from what the file holds."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.seq = sum(1 for _ in path.open("rb")) if path.exists() else 0
        self._file = path.open("a", encoding="utf-8")

    def write(self, event: dict) -> None:
        self.seq += 1
        record = {"seq": self.seq, "ts": round(time.time(), 3), **event}
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class Style:
    """Bold and red on a terminal; nothing when output is not one or --plain was given."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def bold(self, text: str) -> str:
        return f"\x1b[1m{text}\x1b[0m" if self.enabled else text

    def error(self, text: str) -> str:
        return f"\x1b[31m{text}\x1b[0m" if self.enabled else text


class Studio:
    def __init__(self, ws: Workspace, events: EventLog, model: Answerer, style: Style):
        self.ws = ws
        self.events = events
        self.model = model
        self.style = style
        self.turn = 0

    def help(self) -> str:
        rows = [f"  {a.usage:<32} {a.summary}" for a in ABILITIES.values()]
        return "\n".join(
            [
                "abilities:",
                *rows,
                "  /images                          the images in this session",
                "  /exit                            leave",
            ]
        )

    def images(self) -> str:
        if not self.ws.images:
            return "no images yet; add some with /use PATH"
        return "\n".join(f"{r.id}: {r.label} ({r.path.name})" for r in self.ws.images.values())

    def context(self) -> str:
        names = ", ".join(f"{r.id} ({r.label})" for r in self.ws.images.values()) or "none"
        return f"Images in the session: {names}. Commands: " + " ".join(
            a.usage for a in ABILITIES.values()
        )

    def handle(self, line: str) -> str:
        """The answer to one line (and its event, written)."""
        self.turn += 1
        if not line.startswith("/"):
            reply = self.model.answer(line, self.context(), self.turn)
            self.events.write({"type": "reply", "model": self.model.name, "chars": len(reply)})
            return reply
        try:
            name, *args = shlex.split(line[1:])
        except ValueError as exc:  # an unclosed quote
            return self._error(line, f"cannot read the arguments ({exc})")
        if name == "help":
            return self.help()
        if name == "images":
            return self.images()
        try:
            outcome = run(self.ws, name, args)
        except StudioError as exc:
            return self._error(line, str(exc))
        self.events.write({"command": name, "args": args, "ok": True, **outcome.event})
        self.ws.save()
        for ref in outcome.outputs:
            outcome.text = outcome.text.replace(ref.id, self.style.bold(ref.id), 1)
        return outcome.text

    def _error(self, line: str, message: str) -> str:
        command = line[1:].split()[0] if line[1:].split() else ""
        self.events.write({"type": "error", "command": command, "ok": False, "message": message})
        return self.style.error(f"error: {message}")


def loop(studio: Studio, stdin: TextIO, stdout: TextIO, prompt: str) -> None:
    stdout.write(f"loom-sim studio ({studio.model.name} model) — /help lists the abilities\n")
    if studio.ws.images:
        stdout.write(f"resumed: {len(studio.ws.images)} images, profile {studio.ws.profile}\n")
    while True:
        stdout.write(prompt)
        stdout.flush()
        line = stdin.readline()
        if not line:  # end of input
            stdout.write("\n")
            return
        line = line.strip()
        if not line:
            continue
        if line in ("/exit", "/quit"):
            stdout.write("bye\n")
            return
        stdout.write(studio.handle(line).rstrip("\n") + "\n")


#: The example that ends ``loom-sim studio --help``.
EXAMPLE = "loom-sim studio --out studio-out --model canned --seed 3"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="loom-sim studio",
        description="A small interactive image studio: /use your photos, then diagnose, blend, "
        "bridge, argue... Outputs and events.jsonl go to --out.",
        # Like every loom-sim command's help, it ends with an example (kept as written).
        epilog=f"Example:\n\n  {EXAMPLE}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=Path("studio-out"), help="output folder")
    parser.add_argument(
        "--model",
        default="embedded",
        help="who answers free text: embedded (SmolLM2-135M), canned, none, or a .gguf file",
    )
    parser.add_argument("--seed", type=int, default=0, help="the model's sampling seed")
    parser.add_argument("--events", type=Path, help="event log (default OUT/events.jsonl)")
    parser.add_argument("--prompt", default=PROMPT, help=f"the prompt (default {PROMPT!r})")
    parser.add_argument("--plain", action="store_true", help="no colour, even on a terminal")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        ws = Workspace.open(args.out)
    except StudioError as exc:
        print(f"studio: {exc}", file=sys.stderr)
        return 2
    events = EventLog(args.events or args.out / "events.jsonl")
    style = Style(sys.stdout.isatty() and not args.plain)
    studio = Studio(ws, events, answerer(args.model, args.seed), style)
    try:
        loop(studio, sys.stdin, sys.stdout, args.prompt)
    except KeyboardInterrupt:
        sys.stdout.write("\n")
    finally:
        events.close()
    return 0
