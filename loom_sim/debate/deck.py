"""Decks: personas grouped under a topic, with their contracts, voices and debate settings.

A deck is one YAML file. Each persona's contract is written inline or named as a file beside
the deck (``contract: contracts/ines-varga.json``, as the contract builder writes them); a
missing voice falls back to the generic one. Every problem is reported at its
``file:line:col`` — in the deck, or in the contract file it names.

A *planted-crux* deck also says which disagreement its debate holds (``planted:``: the pair,
the claim, the type) or that it holds none (``planted: []``): the answer key that
``benchmarks/bench_debate_detection.py`` scores detection against.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from loom_sim.config.errors import Loc
from loom_sim.config.loader import field_errors, load_document
from loom_sim.core.paths import outside, refusal
from loom_sim.debate.cards import DisagreementType
from loom_sim.debate.contract import PersonaContract, Prose, Strict, check_id
from loom_sim.debate.settings import DebateSettings
from loom_sim.debate.voice import GENERIC_VOICE, VoiceProfile
from loom_sim.errors import LoomError

DECK_FORMAT: Literal[1] = 1


class PersonaEntry(Strict):
    id: str = Field(description="Short unique id, e.g. ines-varga; cards and files use it.")
    name: Prose = Field(description="Display name.")
    handle: str = Field("", description="How they sign, e.g. @ivarga.")
    contract: PersonaContract = Field(
        description="The contract, inline, or the path of its file relative to the deck."
    )
    voice: VoiceProfile | None = Field(None, description="Omitted: the generic voice.")

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_id(value)

    @field_validator("contract", mode="before")
    @classmethod
    def _from_file(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str):
            return value
        context = info.context or {}
        base = context.get("base")
        path = Path(value) if base is None else Path(base) / value
        escaped = None
        if base is not None and not context.get("allow_outside", False):
            escaped = outside(Path(base), value)
        if escaped is not None:
            raise ValueError(refusal(value, escaped, "deck's folder"))
        if not path.is_file():
            raise ValueError(f"no contract file {path}")
        return load_document(path, PersonaContract, "a persona contract")

    @model_validator(mode="after")
    def _contract_is_theirs(self) -> PersonaEntry:
        if self.contract.persona_id != self.id:
            raise field_errors(
                type(self).__name__,
                [
                    (
                        ("contract", "persona_id"),
                        f"this contract is {self.contract.persona_id!r}'s, not {self.id!r}'s",
                    )
                ],
            )
        return self

    @property
    def speaks_with(self) -> VoiceProfile:
        return self.voice or GENERIC_VOICE


class PlantedCrux(Strict):
    pair: tuple[str, str] = Field(strict=False, description="The two personas who disagree.")
    claim: Prose = Field(description="What they disagree about.")
    type: DisagreementType = Field(strict=False)


class Deck(Strict):
    format: Literal[1] = Field(DECK_FORMAT, description="The deck format's version.")
    id: str
    name: Prose
    topic: Prose = Field(description="The debate's default topic (--topic replaces it).")
    description: str = ""
    personas: list[PersonaEntry] = Field(min_length=2)
    debate: DebateSettings = Field(default_factory=DebateSettings)
    planted: list[PlantedCrux] | None = Field(
        None, description="Planted-crux decks: the disagreements scripted into it ([] for none)."
    )

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_id(value)

    @model_validator(mode="after")
    def _references(self) -> Deck:
        issues: list[tuple[Loc, str]] = []
        ids = [p.id for p in self.personas]
        for index, persona in enumerate(self.personas):
            if ids.index(persona.id) != index:
                issues.append((("personas", index, "id"), f"a second persona is {persona.id!r}"))
        for index, crux in enumerate(self.planted or []):
            for side, named in enumerate(crux.pair):
                if named not in ids:
                    issues.append(
                        (("planted", index, "pair", side), f"no persona {named!r} in this deck")
                    )
            if crux.pair[0] == crux.pair[1]:
                issues.append((("planted", index, "pair"), "a crux needs two different personas"))
        if issues:
            raise field_errors(type(self).__name__, issues)
        return self

    def persona(self, persona_id: str) -> PersonaEntry:
        for persona in self.personas:
            if persona.id == persona_id:
                return persona
        raise LoomError(f"deck {self.id} has no persona {persona_id!r}")

    def cast(self, chosen: list[str] | None) -> list[PersonaEntry]:
        """The personas of a debate: ``chosen`` ids (in that order), or the whole deck."""
        if not chosen:
            return list(self.personas)
        known = [p.id for p in self.personas]
        unknown = [c for c in chosen if c not in known]
        if unknown:
            raise LoomError(
                f"--personas: {', '.join(unknown)} not in deck {self.id} "
                f"(its personas: {', '.join(known)})"
            )
        if len(set(chosen)) != len(chosen):
            raise LoomError("--personas names someone twice")
        if len(chosen) < 2:
            raise LoomError("--personas: a debate needs at least two personas")
        return [self.persona(c) for c in chosen]


def load_deck(path: str | Path, *, allow_outside: bool = False) -> Deck:
    """A deck file, validated; :class:`~loom_sim.config.errors.ConfigError` lists every
    problem with its place. The contract files it names stay inside its folder unless
    ``allow_outside`` (``--allow-outside-paths``)."""
    path = Path(path)
    context = {"base": str(path.parent), "allow_outside": allow_outside}
    return load_document(path, Deck, "a deck", context=context)


def deck_hash(deck: Deck) -> str:
    """sha256 of the deck as validated (contracts included): two debates with the same hash
    had the same people."""
    canonical = json.dumps(deck.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def deck_schema() -> dict[str, Any]:
    """The JSON Schema of deck files (a persona's contract may also be a file name)."""
    schema = Deck.model_json_schema()
    entry = schema["$defs"]["PersonaEntry"]["properties"]
    entry["contract"] = {
        "anyOf": [{"$ref": "#/$defs/PersonaContract"}, {"type": "string"}],
        "description": entry["contract"].get("description", ""),
    }
    return schema
