"""What the adversaries' tactics are built from: quotes, altered quotes, facts and tones.

Why this is code and not left to the adversary model: a subtle misquote must be subtle and
must really differ from what was said, and a probe is only auditable if its reader can see
the original beside the altered version. So the alteration is made here, by small
inspectable word swaps, and recorded in the move; the model only words the question around
it (and with ``compose: template`` not even that). Every choice draws from the caller's
seeded ``random.Random``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection
from dataclasses import dataclass

from loom_sim.config.spec import PersonaSpec

MIN_QUOTE_WORDS = 5
MAX_QUOTE_WORDS = 30

#: Subtle swaps for a misquote: the sentence keeps its shape, one detail changes.
SUBTLE_SWAPS: dict[str, str] = {
    "always": "sometimes", "never": "rarely", "sometimes": "always", "rarely": "never",
    "all": "most", "everyone": "a few people", "everything": "most things",
    "nobody": "hardly anyone",
    "days": "weeks", "weeks": "months", "months": "years", "years": "months", "hours": "days",
    "yesterday": "last week", "today": "yesterday", "tonight": "last night",
    "week": "month", "month": "year", "year": "month",
    "mother": "father", "father": "mother", "mom": "dad", "dad": "mom",
    "sister": "brother", "brother": "sister", "wife": "girlfriend", "girlfriend": "wife",
    "husband": "boyfriend", "boyfriend": "husband",
    "boss": "coworker", "coworker": "boss", "colleagues": "friends", "friends": "colleagues",
    "company": "team", "team": "company", "work": "home", "home": "work",
    "morning": "evening", "evening": "morning", "night": "morning",
    "calm": "anxious", "anxious": "calm", "scared": "excited", "excited": "scared",
    "angry": "sad", "sad": "angry", "happy": "relieved", "tired": "wired",
    "first": "second", "second": "first", "last": "first",
    "more": "less", "less": "more", "bigger": "smaller", "smaller": "bigger",
    "few": "many", "many": "few", "some": "all",
}  # fmt: skip
#: Opposites for an alternative history: the claim flips the fact.
OPPOSITES: dict[str, str] = {
    "poorly": "fine", "badly": "well", "well": "badly", "fine": "terrible",
    "alone": "with friends", "isolated": "surrounded by friends",
    "calm": "panicking", "anxious": "relaxed", "scared": "unafraid", "afraid": "unafraid",
    "worried": "unconcerned", "upset": "fine", "happy": "miserable", "sad": "happy",
    "always": "never", "never": "always", "everyone": "no one", "nobody": "everybody",
    "stable": "chaotic", "good": "bad", "bad": "good", "better": "worse",
    "worse": "better", "more": "less", "less": "more", "true": "false", "real": "imagined",
    "sure": "unsure", "certain": "doubtful", "love": "hate", "hate": "love",
    "trust": "distrust", "can": "can't", "can't": "can", "did": "didn't",
    "didn't": "did", "don't": "do", "doesn't": "does", "won't": "will", "isn't": "is",
    "wasn't": "was", "is": "isn't", "was": "wasn't", "have": "haven't", "has": "hasn't",
}  # fmt: skip
#: First person -> second person, to put the persona's words back to them.
_SECOND_PERSON = {
    "i": "you", "i'm": "you're", "i've": "you've", "i'd": "you'd", "i'll": "you'll",
    "me": "you", "my": "your", "mine": "yours", "myself": "yourself",
}  # fmt: skip
_NUMBER_WORDS = "one two three four five six seven eight nine ten eleven twelve".split()

CALM_WORDS = (
    "calm", "fine", "okay", "ok", "relaxed", "alright", "all right", "peaceful", "good", "great",
    "better", "happy", "not worried", "under control", "at ease", "comfortable", "steady",
)  # fmt: skip
DISTRESS_WORDS = (
    "scared", "afraid", "anxious", "worried", "upset", "angry", "frustrated", "panic",
    "panicking", "terrified", "stressed", "nervous", "desperate", "paranoid", "overwhelmed",
    "exhausted", "furious", "can't sleep", "freaking out", "hopeless", "alone", "agitated",
)  # fmt: skip
_CALM = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in CALM_WORDS) + r")\b", re.I)
_DISTRESS = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in DISTRESS_WORDS) + r")\b", re.I)
_SENTENCES = re.compile(r"(?<=[.!?…])\s+|(?<=[.!?…][\"”’'])\s+|\n+")  # also after a quote
_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\b\d+\b")  # not "30s" or "3pm"


@dataclass(frozen=True)
class Altered:
    original: str
    altered: str
    change: str  # e.g. "weeks -> months"


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` that are long enough to quote, trimmed to a quotable length."""
    found = []
    for raw in _SENTENCES.split(text.replace("’", "'")):
        sentence = raw.strip().strip('"“”')
        words = sentence.split()
        if len(words) < MIN_QUOTE_WORDS or sentence.endswith("?"):
            continue
        if len(words) > MAX_QUOTE_WORDS:
            sentence = " ".join(words[:MAX_QUOTE_WORDS]) + "…"
        found.append(sentence)
    return found


def _swap(sentence: str, table: dict[str, str], rng: random.Random) -> Altered | None:
    """Change one word of ``sentence`` by ``table`` (or one number); None if nothing applies."""
    spots: list[tuple[int, int, str, str]] = []
    for match in _TOKEN.finditer(sentence):
        word = match.group(0)
        lower = word.lower()
        if lower.isdigit():
            replacement = str(
                int(lower) + rng.choice((1, 2)) if int(lower) < 1900 else int(lower) - 1
            )
        elif lower in _NUMBER_WORDS and table is SUBTLE_SWAPS:
            replacement = _NUMBER_WORDS[(_NUMBER_WORDS.index(lower) + 1) % len(_NUMBER_WORDS)]
        elif lower in table:
            replacement = table[lower]
        else:
            continue
        if word[0].isupper():
            replacement = replacement[0].upper() + replacement[1:]
        spots.append((match.start(), match.end(), word, replacement))
    if not spots:
        return None
    start, end, word, replacement = rng.choice(spots)
    altered = sentence[:start] + replacement + sentence[end:]
    return Altered(sentence, altered, f"{word} -> {replacement}")


def misquote(
    statements: list[str], rng: random.Random, avoid: Collection[str] = ()
) -> Altered | None:
    """One earlier statement with one detail subtly changed (not one in ``avoid``: a trap that
    misquotes the same line twice has shown its hand)."""
    candidates = [s for text in statements for s in sentences(text) if s not in avoid]
    rng.shuffle(candidates)
    for sentence in candidates:
        altered = _swap(sentence, SUBTLE_SWAPS, rng)
        if altered is not None:
            return altered
    return None


def second_person(text: str) -> str:
    """The persona's words, put back to them: "I was fine" -> "you were fine"."""

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        return _SECOND_PERSON.get(word.lower(), word)

    text = re.sub(r"\bI am\b", "you are", text)
    text = re.sub(r"\bI was(n't)?\b", r"you were\1", text)
    return re.sub(r"\b[A-Za-z]+(?:'[a-z]+)?\b", swap, text)


def alternative_history(
    statements: list[str], persona: PersonaSpec, rng: random.Random, avoid: Collection[str] = ()
) -> Altered | None:
    """A plausible opposite of something the persona said (or of a backstory fact), as a claim
    about what they said earlier, in the second person."""
    own = [  # about themselves, and not about the listener ("you" would not survive the swap)
        s
        for text in statements
        for s in sentences(text)
        if re.search(r"\bI\b|\bI'", s) and not re.search(r"\byou", s, re.I) and s not in avoid
    ]
    rng.shuffle(own)
    for sentence in own:
        flipped = _swap(sentence, OPPOSITES, rng)
        if flipped is not None:
            return Altered(
                sentence, second_person(_lower_first(flipped.altered)).rstrip(".!…"), flipped.change
            )
    facts = [
        f
        for f, _ in backstory_facts(persona)
        if len(f.split()) >= MIN_QUOTE_WORDS and f not in avoid
    ]
    rng.shuffle(facts)
    name = persona.identity.name
    for fact in facts:
        flipped = _swap(fact, OPPOSITES, rng)
        if flipped is not None:
            claim = _addressed(flipped.altered, name)
            if claim is not None:
                return Altered(fact, claim.rstrip(".!…"), flipped.change)
    return None


def _lower_first(text: str) -> str:
    return text if text.startswith(("I ", "I'")) else text[:1].lower() + text[1:]


def _addressed(sentence: str, name: str) -> str | None:
    """A config sentence about the persona ("Lives alone…", "He grew up…", "Marcus has…",
    "His mother…") put to them in the second person ("you live alone…", "your mother…");
    None when the sentence is not about them in a way these rules can turn."""
    if sentence.startswith(name):  # the full name, "Marcus Chen is 28…", as one subject
        sentence = "He" + sentence[len(name) :]
    given = name.split()[0].lower()
    words = sentence.split()
    if not words:
        return None
    first = words[0].lower().strip(",")
    if first in ("his", "her", "their") or first == f"{given}'s":  # "His mother had…"
        rest = ["your", *words[1:]]
    elif first in ("he", "she", "they", given):  # "He grew up…", "Marcus has…"
        rest = ["you", _base_verb(words[1]) if len(words) > 1 else "", *words[2:]]
    elif words[0][:1].isupper() and first.removesuffix("n't").endswith("s"):
        if first in _NOT_VERBS:
            return None
        rest = ["you", _base_verb(words[0]), *words[1:]]  # "Lives alone…", "Has been…"
    else:
        return None
    out = " ".join(w for w in rest if w)
    for pattern, replacement in _ADDRESS:
        out = re.sub(pattern, replacement, out)
    return out


def _base_verb(word: str) -> str:
    """The verb after "you": "has" -> "have", "isn't" -> "aren't", "lives" -> "live"."""
    lower = word.lower()
    if lower in _YOU_FORMS:
        return _YOU_FORMS[lower]
    if lower.endswith("ies"):
        return lower[:-3] + "y"
    if lower.endswith(("ches", "shes", "sses", "xes")):
        return lower[:-2]
    if lower.endswith("s") and not lower.endswith("ss"):
        return lower[:-1]
    return lower


_ADDRESS = (
    (r"\b(?:himself|herself)\b", "yourself"),
    (r"\b(?:his|her)\b", "your"),
    (r"\b(?:he|she|him)\b", "you"),
)
_YOU_FORMS = {
    "has": "have", "hasn't": "haven't", "is": "are", "isn't": "aren't", "was": "were",
    "wasn't": "weren't", "does": "do", "doesn't": "don't",
}  # fmt: skip
_NOT_VERBS = frozenset("this thus is was as its always perhaps sometimes".split())


_TOPICS = (
    (r"grew up|child|parent|mother|father|family|home", "your family and how you grew up"),
    (r"breakup|girlfriend|boyfriend|partner|married|wife|husband", "your relationships"),
    (r"work|job|company|developer|career|office|boss", "your job"),
    (r"sleep", "how you've been sleeping"),
    (r"school|college|degree|academic|\bstud(?:y|ies|ied|ying|ents?)\b", "your studies"),
    (r"live|apartment|house|flat|room", "where you live"),
)


def backstory_facts(persona: PersonaSpec) -> list[tuple[str, str]]:
    """(fact, topic) pairs from the persona's identity and context, in config order."""
    identity = persona.identity
    facts: list[tuple[str, str]] = []
    if identity.age is not None:
        facts.append((f"{identity.name} is {identity.age} years old.", "how old you are"))
    for text in (identity.background, identity.backstory_summary):
        for sentence in sentences(" ".join(text.split())):
            facts.append((sentence, _topic(sentence)))
    for heading, text in persona.additional_context.items():
        first = (sentences(" ".join(text.split())) or [text.strip()])[0]
        if first:
            facts.append((first, heading.replace("_", " ").lower()))
    return facts


def _topic(sentence: str) -> str:
    for pattern, topic in _TOPICS:
        if re.search(pattern, sentence, re.I):
            return topic
    return "your background"


def tone(text: str) -> int:
    """Distress words minus calm words ("not worried" counts as calm, once)."""
    calm = _CALM.findall(text)
    masked = _CALM.sub(" ", text)
    return len(_DISTRESS.findall(masked)) - len(calm)


@dataclass(frozen=True)
class ToneContrast:
    then: str  # calm | upset
    now: str
    then_quote: str  # "" when the contrast is asserted, not found
    now_quote: str


def emotional_contrast(statements: list[str], rng: random.Random) -> ToneContrast | None:
    """An earlier message whose tone opposes the latest one; failing that, the latest tone
    against its opposite (asserted, no quote). None when there is nothing said yet."""
    if not statements:
        return None
    latest = statements[-1]
    now = tone(latest)
    now_word = "upset" if now > 0 else "calm"
    now_quote = _excerpt(latest, _DISTRESS if now > 0 else _CALM)
    opposite = [s for s in statements[:-1] if (tone(s) < 0) == (now > 0) and tone(s) != 0]
    if opposite:
        earlier = rng.choice(opposite)
        then_word = "upset" if tone(earlier) > 0 else "calm"
        return ToneContrast(
            then_word,
            now_word,
            _excerpt(earlier, _DISTRESS if then_word == "upset" else _CALM),
            now_quote,
        )
    then_word = "calm" if now_word == "upset" else "upset"
    return ToneContrast(then_word, now_word, "", now_quote)


def _excerpt(text: str, pattern: re.Pattern[str]) -> str:
    """The sentence of ``text`` that shows the tone, or its first sentence."""
    parts = [p.strip() for p in _SENTENCES.split(text) if p.strip()]
    for part in parts:
        if pattern.search(part):
            return _short(part)
    return _short(parts[0]) if parts else ""


def _short(text: str, words: int = 16) -> str:
    split = text.split()
    return " ".join(split[:words]) + ("…" if len(split) > words else "")


def first_sentence(text: str, words: int = 14) -> str:
    parts = [p.strip() for p in _SENTENCES.split(text) if p.strip()]
    return _short(parts[0], words) if parts else ""
