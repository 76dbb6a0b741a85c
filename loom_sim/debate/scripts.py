"""Scripted stand-ins for a debate's models: deterministic, instant, and honest about it.

``scripted/debater`` argues from the persona's own anchor quotes, shaped to the intent it is
given (an ASK becomes a question, an EVIDENCE names its source and year); in a crux room it
names the point it cannot agree on from its third message on. ``scripted/crux-detector``
reads the fenced window and reports the pair whose claims take opposite sides of a shared
claim (:mod:`~loom_sim.debate.stance`: a negation or a word's opposite, so "end" against
"prolong" counts and a persona granting both sides their point does not);
``scripted/crux-exit`` looks for both personas naming the point (or a change of mind);
``scripted/crux-card`` writes a card from the room's transcript: each persona's stance is the
side its messages take on the room's question, each position cites only messages that take
that side, and the crux is typed by the cues the room used (:mod:`~loom_sim.debate.crux_type`).

They are heuristics, not models: with a planted-crux deck (a pair whose anchors contradict
each other) they make a debate whose right answer is known, which is what the tests and
``benchmarks/bench_debate_detection.py`` need. Each is a pure function of the request (its
text and seed), registered through the ``loom_sim.scripts`` entry point like any package's.
"""

from __future__ import annotations

import json
import random
import re
from itertools import combinations
from typing import Any

from loom_sim.debate.crux_type import crux_type
from loom_sim.debate.stance import Side, dispute, side
from loom_sim.models.base import ModelRequest
from loom_sim.models.scripted import script

_STOP = frozenset(
    """a an the and or but if of to in on at for with by from as is are was were be been it its
    this that these those we our you your they their he she his her i me my so than then there
    what who whom which when why how will would can could should does do did has have had not
    no never nobody none nor n't won't don't doesn't isn't aren't cannot can't right per one
    about into over under more most less just only even also all any some every own same""".split()
)
_LINE = re.compile(r"^\[(?P<id>[^\]]+)\] (?P<name>.+?) \((?P<pid>[a-z0-9_-]+)\): (?P<text>.*)$")
_PERSON = re.compile(r"^- (?P<pid>[a-z0-9_-]+): (?P<name>.+)$", re.M)
_LOWER_FIRST = frozenset(
    "the a an every nobody close build we our it this that there any most some no all "
    "if each".split()
)


def _words(text: str) -> set[str]:
    """Content words, crudely stemmed ("pays" and "pay" match)."""
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in re.findall(r"[a-z0-9][a-z0-9'-]*", text.lower())
        if w not in _STOP and not w.endswith("n't")
    }


def _clause(sentence: str) -> str:
    """A sentence made ready to follow "No, " or "whether ": no full stop, a lower-case
    first word where that word is an ordinary one."""
    sentence = sentence.strip().rstrip(".!")
    first = sentence.split(" ", 1)[0]
    if first.lower() in _LOWER_FIRST:
        sentence = first.lower() + sentence[len(first) :]
    return sentence


def _system(request: ModelRequest) -> str:
    return next((m.content for m in request.messages if m.role == "system"), "")


def _user(request: ModelRequest) -> str:
    users = [m.content for m in request.messages if m.role == "user"]
    return users[0] if users else ""


# ─── the debater ────────────────────────────────────────────────────────────


def _anchors(system: str) -> list[tuple[str, str, str]]:
    """(quote, source, date) of each anchor in a debater's system prompt."""
    found = re.findall(r'^> "(.+)"\n> — (.+) \((\d{4}-\d{2}-\d{2}|undated)\)$', system, flags=re.M)
    return [(q, s, d) for q, s, d in found]


def _intent(user: str) -> str:
    move = re.search(r"^Your move: (.*)$", user, flags=re.M)
    text = move.group(1) if move else ""
    for word, intent in (
        ("Ask", "ASK"),
        ("Support", "AGREE"),
        ("Challenge", "DISAGREE"),
        ("example or data", "EVIDENCE"),
        ("Shift", "REFRAME"),
    ):
        if word in text:
            return intent
    return "CLARIFY"


@script(
    "debater", summary="argues from the persona's anchor quotes, shaped to its intent", order=60
)
def debater(request: ModelRequest) -> str:
    system, user = _system(request), _user(request)
    anchors = _anchors(system) or [("The evidence is on my side.", "my notes", "2030-01-01")]
    rng = random.Random(request.seed)
    order = rng.sample(anchors, len(anchors))
    first, source, date = order[0]
    second = order[1][0] if len(order) > 1 else first
    if "CRUX ROOM MODE" in system:
        question = re.search(r'You disagree on: "(.*)"', system)
        mine = len(re.findall(r"^> (.+?):", user, flags=re.M))  # messages so far in the room
        said = [first, second] if first != second else [first]
        if "Argue back" in user and mine >= 4 and question:
            said = [
                said[0],
                f"The point we can't agree on is whether {_clause(question.group(1))}.",
            ]
        return " ".join(said)
    if "Group chat starting" in user:
        return f"{first} {second}" if first != second else f"{first} That is where I stand."
    intent = _intent(user)
    clause = _clause(first)
    if intent == "ASK":
        return f"Why ignore that {clause}?"
    if intent == "AGREE":
        return f"Right, {clause}."
    if intent == "DISAGREE":
        return f"No, {clause}."
    if intent == "EVIDENCE":
        when = f" in {date[:4]}" if date[:1].isdigit() else ""
        return f"Per the {source}{when}, {clause}."
    if intent == "REFRAME":
        return f"The real question is whether {clause}."
    return f"{first.rstrip('.')}."


# ─── the detector ───────────────────────────────────────────────────────────


def _transcript(text: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in map(_LINE.match, text.splitlines()) if m]


def _without_prefix(text: str) -> str:
    """The claim inside a scripted message ("No, the ferry pays." -> "The ferry pays.")."""
    text = re.sub(r"^(No|Right|Why ignore that|The real question is whether),?\s*", "", text)
    text = re.sub(r"^Per the (?:.+ in \d{4}|[^,]+), ", "", text)
    text = text.rstrip("?.") + "."
    return text[:1].upper() + text[1:]


def _pressed(claim: str, lines: list[dict[str, str]]) -> bool:
    """Is the disputed claim argued, not just crossed once? Both sides taken and at least
    :data:`PRESSED` of the pair's messages taking a side on it: one contradiction and a
    change of subject is a quibble; a contradiction restated, by either of them, is a
    disagreement. (Counting the pair's alternations instead missed "No, it rose." restated
    after a bystander spoke, and counted turns about anything else as exchanges.)"""
    sides = [side(_without_prefix(line["text"]), claim) for line in lines]
    return (
        Side.FOR in sides
        and Side.AGAINST in sides
        and len([s for s in sides if s is not Side.NEITHER]) >= PRESSED
    )


#: How many of a pair's messages must take a side on the claim they dispute.
PRESSED = 3


@script(
    "crux-detector", summary="finds the pair whose claims take opposite sides of a claim", order=61
)
def crux_detector(request: ModelRequest) -> str:
    lines = _transcript(_user(request))
    by: dict[str, list[dict[str, str]]] = {}
    for line in lines:
        by.setdefault(line["pid"], []).append(line)
    found: list[dict[str, Any]] = []
    for a, b in combinations(sorted(by), 2):
        best: tuple[float, str] = (0.0, "")
        for x in by[a]:
            for y in by[b]:
                later, earlier = (x, y) if lines.index(x) > lines.index(y) else (y, x)
                disputed = dispute(_without_prefix(later["text"]), _without_prefix(earlier["text"]))
                if disputed is not None and disputed[0] > best[0]:
                    best = disputed
        if best[0] >= 0.5 and _pressed(best[1], by[a] + by[b]):
            confidence = round(min(0.95, 0.55 + best[0] * 0.4), 2)
            found.append({"pair": [a, b], "claim": best[1], "confidence": confidence})
    found.sort(key=lambda d: -d["confidence"])
    return json.dumps({"disagreements": found[:2]})


# ─── the crux room's exit check and card ────────────────────────────────────

_NAMED = re.compile(r"\bcan(?:'|no)t agree\b|\bcannot agree\b", re.I)
_CHANGED = re.compile(r"\bchanged my mind\b|\byou(?:'ve| have) convinced me\b", re.I)
_DOWN_TO = re.compile(r"\bcomes down to\b", re.I)


@script(
    "crux-exit", summary="a crux surfaces when both name the point they cannot agree on", order=62
)
def crux_exit(request: ModelRequest) -> str:
    lines = _transcript(_user(request))
    named = {line["pid"] for line in lines if _NAMED.search(line["text"])}
    if any(_CHANGED.search(line["text"]) for line in lines):
        return json.dumps(
            {"surfaced": True, "how": "changed_mind", "reason": "one of them changed their mind"}
        )
    if len(named) >= 2:
        return json.dumps({"surfaced": True, "how": "both_named", "reason": "both named the point"})
    if len({line["pid"] for line in lines if _DOWN_TO.search(line["text"])}) >= 2:
        return json.dumps(
            {"surfaced": True, "how": "irreducible", "reason": "both called it irreducible"}
        )
    return json.dumps({"surfaced": False, "how": "", "reason": "neither has named the point yet"})


@script("crux-card", summary="a crux card from the room's transcript, each claim cited", order=63)
def crux_card(request: ModelRequest) -> str:
    user = _user(request)
    question = re.search(r'about "(.*)" has ended', user)
    claim = question.group(1) if question else ""
    people = [m.group("pid") for m in _PERSON.finditer(user)]
    lines = _transcript(user)
    room = [line for line in lines if "." in line["id"]] or lines
    words = [w for w in re.findall(r"[a-z0-9][a-z0-9-]*", claim.lower()) if w not in _STOP]
    crux = " ".join(words[:5]) if len(words) >= 3 else f"{' '.join(words) or 'the'} core dispute"
    positions = []
    for pid in people:
        own = [line for line in lines if line["pid"] == pid]
        if not own:
            continue
        sides = [side(line["text"], claim) for line in own]
        yes, no = sides.count(Side.FOR), sides.count(Side.AGAINST)
        stance = "YES" if yes > no else "NO" if no > yes else "NUANCED"
        wanted = {"YES": Side.FOR, "NO": Side.AGAINST}.get(stance)
        backing = [line for line, s in zip(own, sides, strict=True) if s == wanted or not wanted]
        last = backing[-1]["text"].split(". ")[0].rstrip(".") + "."
        falsifier = next(
            (s for line in own for s in re.split(r"(?<=\.) ", line["text"]) if " if " in s),
            f"Evidence that settles whether {_clause(claim)}.",
        )
        cites = [line["id"] for line in backing][-3:]
        positions.append(
            {
                "persona": pid,
                "stance": stance,
                "reasoning": last,
                "falsifier": falsifier,
                "cites": cites,
            }
        )
    kind = crux_type([line["text"] for line in room])
    resolved = any(_CHANGED.search(line["text"]) for line in room)
    diagnosis_cites = [p["cites"][-1] for p in positions]
    return json.dumps(
        {
            "crux": crux,
            "type": kind,
            "diagnosis": f"They read the question through a different {kind}.",
            "diagnosis_cites": diagnosis_cites,
            "resolved": resolved,
            "resolution": "One of them changed their mind."
            if resolved
            else f"Irreducible {kind} difference.",
            "positions": positions,
        }
    )


# ─── the contract builder ───────────────────────────────────────────────────

_EXCERPT = re.compile(r"^\[(?P<id>[^\]]+)\] \((?P<date>[^)]*)\) (?P<text>.*)$", re.M)


@script(
    "contract-builder", summary="builds contracts from the corpus it is shown, quoting it", order=64
)
def contract_builder(request: ModelRequest) -> str:
    """Relevance by topic words, prose from the excerpts' own first sentences, anchors copied
    verbatim: enough to exercise the 9-call pipeline without a model."""
    system, user = _system(request), _user(request)
    topic = re.search(r"The debate topic is: '(.*)'\.", system)
    name = re.search(r"profile for (.*?)\. The debate topic", system)
    who = name.group(1) if name else "They"
    excerpts = [m.groupdict() for m in _EXCERPT.finditer(user)]
    if user.rstrip().endswith('{"relevant": [ids]}.'):
        words = _words(topic.group(1)) if topic else set()
        ranked = sorted(excerpts, key=lambda e: -len(_words(e["text"]) & words))
        return json.dumps({"relevant": [e["id"] for e in ranked[: max(1, len(ranked) // 2 + 1)]]})
    if "evidence policy" in user:
        return json.dumps(
            {
                "acceptable_sources": ["their own records", "first-hand reports"],
                "unacceptable_sources": ["anonymous claims"],
                "weighting_rules": "What they have measured outweighs what they are told.",
                "tool_pull_triggers": "They cite their records when someone disputes a number.",
            }
        )
    if "anchor quotes" in user:
        anchors = []
        for e in excerpts:
            first = re.split(r"(?<=[.!?])\s", e["text"], maxsplit=1)[0][:280]
            anchors.append({"excerpt": e["id"], "quote": first})
        return json.dumps({"anchors": anchors})
    field = re.search(r"Write .*?'s ([a-z ]+) for the debate", user)
    said = " ".join(re.split(r"(?<=[.!?])\s", e["text"], maxsplit=1)[0] for e in excerpts[:2])
    return (
        f"{who}'s {field.group(1) if field else 'view'} shows in what they write. "
        f"In their words: {said} "
        f"It shapes how {who} argues about {topic.group(1) if topic else 'the topic'}."
    )
