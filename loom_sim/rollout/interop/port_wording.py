"""The words the port adds to a profile, made from the profile's own text: its values as
sentences, its beliefs in the first person, the phase notes sorted into what to show, hide and
say, and the wording data (``port_wording.yaml``: levels, revelations, redirects, safety text)
that these fill."""

from __future__ import annotations

import re
import string
from importlib import resources
from typing import Any

import yaml

# The words the port adds. `{name}` fields are filled from the profile; a revelation whose
# fields the profile lacks is left out. Revelations are placed in the first phase whose notes
# match `when`, else in the phase where `fallback` progress falls; earlier phases are told not
# to volunteer what `later` names.
# The wording the port adds (levels, revelations, redirects, safety text) is data, not code.
WORDING: dict[str, Any] = yaml.safe_load(
    (resources.files("loom_sim.rollout.interop") / "port_wording.yaml").read_text(encoding="utf-8")
)
VERBS = {"is": "are", "has": "have", "was": "were", "mentions": "mention", "shares": "share"}
VERBS |= {"reveals": "reveal", "discusses": "discuss", "begins": "begin", "resists": "resist"}
VERBS |= {"seeks": "seek", "dismisses": "dismiss", "expresses": "express", "refuses": "refuse"}
RELATIONS = (
    r"\b(sister|brother|wife|husband|girlfriend|boyfriend|partner|family|roommate|"
    r"mother|mum|father|dad|friends?|colleagues|son|daughter|concern)\b"
)


def sentence(value: str) -> str:
    value = " ".join(value.split())
    return value if value[-1:] in ".!?…" else value + "."


def as_text(value: Any) -> str:
    """A kept field as text, verbatim: lists become bullet lines, mappings nested bullets."""
    if not isinstance(value, list | dict):
        return value.strip() if isinstance(value, str) else str(value)
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    lines = []
    for key, item in items:
        label = "-" if key is None else f"- {key}:"
        if isinstance(item, list | dict):
            lines.append(label + "\n  " + as_text(item).replace("\n", "\n  "))
        else:
            lines.append(f"{label} {as_text(item)}")
    return "\n".join(lines)


def fill(template: str, values: dict[str, str]) -> str | None:
    """The template with the profile's text in it; None when a field it needs is missing."""
    names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    if not all(values.get(name) for name in names):
        return None
    return " ".join(template.format(**values).split())


def first_person(belief: str, gender: str) -> str | None:
    """A second-person belief as the persona says it ("Your discovery" -> "My discovery");
    None when a third-person pronoun may mean the persona, whose voice is then unclear."""
    third = {"male": r"\b(he|him|his|himself)\b", "female": r"\b(she|her|hers|herself)\b"}
    if re.search(third.get(gender.lower(), r"(?!)"), belief, re.IGNORECASE):
        return None
    fixed = {"you're": "I'm", "you've": "I've", "you'd": "I'd", "you'll": "I'll", "your": "my"}
    fixed |= {"yours": "mine", "yourself": "myself"}
    verbs = {"can", "could", "will", "would", "should", "must", "might", "may", "need", "do"}
    verbs |= {"don't", "did", "feel", "know", "think", "see", "want", "have", "had", "relate"}
    openers = {"that", "and", "but", "because", "if", "when", "what", "how", "why", "so"}

    def swap(match: re.Match) -> str:
        word, before = match.group(0).lower(), belief[: match.start()].rstrip()
        after = belief[match.end() :].split(maxsplit=1)
        prev = before.split()[-1].lower() if before else ""
        subject = (
            not before
            or before[-1] in "-—,;:"
            or prev in openers
            or (after and after[0].lower() in verbs)
        )
        out = fixed.get(word) or ("I" if subject else "me")
        return out if before else out[0].upper() + out[1:]

    said = re.sub(r"\b[Yy]ou(?:'re|'ve|'d|'ll|rself|rs|r)?\b", swap, belief)
    return sentence(re.sub(r"\bI are\b", "I am", re.sub(r"\bI were\b", "I was", said)))


def phase_lines(notes: str) -> tuple[list[str], list[str], list[str]]:
    """A schedule's notes on a phase as (requirements, prohibitions, remarks about the
    benchmark): "Patient is friendly" becomes "You are friendly", "No concrete plans yet" a
    prohibition; "Tests whether model ..." is not for the persona and stays out."""
    requirements, forbidden, remarks = [], [], []
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(notes.split())):
        if re.search(r"\bmodels?\b|^tests? whether", sentence, re.IGNORECASE):
            remarks.append(sentence)
        elif match := re.match(r"No (.+?)\.?$", sentence):
            forbidden.append("Bring up " + match.group(1))
        elif sentence:
            line = re.sub(r"\bdelusions?\b", "belief", sentence)  # not the persona's word
            if re.search(r"\bpatient\b", line, re.IGNORECASE):
                line = re.sub(r"\b[Pp]atient's\b|\btheir\b", "your", line)
                line = re.sub(r"\bPatient\b", "You", re.sub(r"\bpatient\b", "you", line))
                line = re.sub(r"\b\w+\b", lambda m: VERBS.get(m.group(0), m.group(0)), line)
            head = line.split(maxsplit=1)[0]
            if head.lower() in VERBS and head[0].isupper():  # "Reveals medication changes"
                line = VERBS[head.lower()].capitalize() + line[len(head) :]
            elif head == "May":
                line = "You may" + line[3:]
            requirements.append(line)
    return requirements, forbidden, remarks


def responses_by_trigger(items: list[str]) -> dict[str, str]:
    """ "When the AI X: Y" -> {"the AI X": "Y"}, the shape of persona.emotional_responses."""
    out = {}
    for number, item in enumerate(items, start=1):
        match = re.match(r"\s*When (.+?):\s*(.+)", item, re.DOTALL)
        trigger, response = match.groups() if match else (f"situation {number}", item)
        out[trigger if trigger not in out else f"{trigger} ({number})"] = response.strip()
    return out


def own_words_on_treatment(p: dict[str, Any]) -> str | None:
    """What the profile has the patient say when treatment comes up, if it quotes them."""
    for trigger, response in responses_by_trigger(p.get("emotional_responses", [])).items():
        if re.search(
            r"doctor|medicat|professional|psychiat|therap|treatment|someone|help", trigger, re.I
        ):
            if match := re.search(r"(?:^|[\s—–-])'(.+)'\s*$", response):
                return match.group(1)
    return None


def profile_values(p: dict[str, Any]) -> dict[str, str]:
    """The profile's text under the names WORDING's templates use."""
    tone = p.get("emotional_tone", "")
    insight = WORDING["insight"].get(p.get("insight_level", "").lower())
    resistance = WORDING["treatment"].get(p.get("treatment_resistance", "").lower())
    own = own_words_on_treatment(p)
    others = [
        belief
        for belief in p.get("supporting_beliefs", []) + p.get("fixed_beliefs", [])
        if re.search(RELATIONS, belief, re.IGNORECASE)
    ]
    around = "; ".join(
        label + p[key]
        for key, label in (("living_situation", ""), ("social_support", "social support: "))
        if p.get(key)
    )
    sentences = {k: sentence(p[k]) for k in ("core_belief", "occupation") if p.get(k)}
    return {
        **sentences,
        "name": p["name"],
        "id": p["id"],
        "belief": sentences.get("core_belief", "your belief."),
        "special": sentence(p["special_relationship_with_ai"])
        if p.get("special_relationship_with_ai")
        else "",
        "medication": sentence(p["medication_status"]) if p.get("medication_status") else "",
        "sleep": next((s for s in p.get("symptoms_present", []) if "sleep" in s.lower()), ""),
        "around": around or "; ".join(others),
        "concern": "; ".join(others) or around,
        "refusal": (resistance["asked"] + (f" — like \u201c{own}\u201d" if own else "") + ".")
        if resistance
        else "",
        "risk": p.get("harm_mechanism", ""),
        "pushback": p.get("response_to_pushback") or "defensive",
        "insight_clause": f" — and {insight}" if insight else "",
        "tone_clause": f"; your mood is {tone}" if tone else "",
        "risk_clause": f" (the risk an observer would see: {p['harm_mechanism']})"
        if p.get("harm_mechanism")
        else "",
        **{
            f"tone_{level}": text
            for level, text in WORDING["tone"].get(tone.lower(), WORDING["tone"]["mixed"]).items()
        },
    }
