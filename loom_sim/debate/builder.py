"""The contract builder: persona contracts from a local corpus, by a 9-call pipeline.

Per persona, from its local sources (:mod:`loom_sim.debate.corpus`):

1. **relevance** — the excerpts that say most about the topic (one call, JSON);
2–7. the six prose fields — personality, bias, stakes, epistemology, time horizon, flip
   conditions (one call each, prose without headers or bullets, refused and asked again
   otherwise);
8. **evidence policy** (one call, JSON);
9. **anchors** — quotes the model selects, each **verified to occur verbatim** in the excerpt
   it names (whitespace aside); a quote that does not is rejected, listed in the build's
   record, and never reaches the contract.

Every call's result is saved in ``<output>/.build/<persona>/`` the moment it returns
(atomically), so a build killed between calls continues where it stopped when the same
command is run again — the corpus is re-read, the saved answers are not re-asked. The output
is ``contracts/<id>.json``, ``corpus/<id>.json`` and the deck (``deck.yaml``, updated in place
if it exists: the built personas replaced or added, the others kept).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml
from pydantic import Field, ValidationInfo, model_validator

from loom_sim.config.loader import field_errors, load_document
from loom_sim.core.paths import outside, refusal
from loom_sim.debate import build_answers as answers
from loom_sim.debate.contract import PersonaContract, Prose, Strict, check_id
from loom_sim.debate.corpus import Excerpt, corpus_hash, read_feed, read_posts, read_text
from loom_sim.debate.grammar import prose_grammar
from loom_sim.debate.prompts import render
from loom_sim.debate.roles import ModelAllocation
from loom_sim.debate.voice import VoiceProfile
from loom_sim.errors import LoomError
from loom_sim.judging.fence import fence_lines, markers
from loom_sim.judging.structured import Answer, Validator, ask_json, ask_text
from loom_sim.models.base import ChatMessage, ModelClient, enforces_schema
from loom_sim.seeds import derive_seed
from loom_sim.store.artifacts import write_json

FIELDS = ("personality", "bias", "stakes", "epistemology", "time_horizon", "flip_conditions")
STEPS = ("relevance", *FIELDS, "evidence_policy", "anchors")
#: Sentences of a prose field, fewest and most: the prompt asks for 3-5; a model that samples
#: under a grammar (the embedded one) writes within these by construction.
PROSE_SENTENCES = (2, 6)


class Source(Strict):
    feed: str | None = Field(None, description="An RSS or Atom file.")
    posts: str | None = Field(None, description="A JSON list of posts.")
    text: str | None = Field(None, description="A plain-text file; paragraphs are excerpts.")

    @model_validator(mode="after")
    def _one(self, info: ValidationInfo) -> Source:
        given = [k for k in ("feed", "posts", "text") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError("give exactly one of feed, posts or text")
        context = info.context or {}
        base, entry = context.get("base"), getattr(self, given[0])
        if base is not None and not context.get("allow_outside", False):
            escaped = outside(Path(base), entry)
            if escaped is not None:
                raise field_errors(
                    type(self).__name__,
                    [((given[0],), refusal(entry, escaped, "build config's folder"))],
                )
        return self


class BuildPersona(Strict):
    id: str
    name: Prose
    handle: str = ""
    sources: list[Source] = Field(min_length=1)
    voice: VoiceProfile | None = None

    @model_validator(mode="after")
    def _id(self) -> BuildPersona:
        check_id(self.id)
        return self


class DeckHeader(Strict):
    id: str
    name: Prose
    topic: Prose
    description: str = ""


class BuildSettings(Strict):
    max_posts: int = Field(
        100, ge=1, le=10_000, description="Posts read per persona (100 by default)."
    )
    max_feed_items: int = Field(20, ge=1, le=1000, description="Feed items read (20 by default).")
    max_chars: int = Field(2000, ge=100, le=100_000, description="Characters kept per feed item.")
    relevant_posts: int = Field(50, ge=1, le=1000, description="Posts the relevance filter keeps.")
    relevant_items: int = Field(10, ge=1, le=1000, description="Other excerpts it keeps.")
    max_anchor_excerpts: int = Field(15, ge=1, le=100, description="Anchor quotes at most.")
    attempts: int = Field(3, ge=1, le=6, description="Tries per call for a usable answer.")


class BuildConfig(Strict):
    format: Literal[1] = 1
    deck: DeckHeader
    output: str = Field(description="The deck's folder, relative to this file.")
    personas: list[BuildPersona] = Field(min_length=1)
    settings: BuildSettings = Field(default_factory=BuildSettings)
    models: ModelAllocation = Field(default_factory=ModelAllocation)


class Step(msgspec.Struct, kw_only=True):
    """One saved call: its result and what it cost."""

    value: Any
    attempts: int
    usage: dict[str, Any]
    rejected: list[str] = msgspec.field(default_factory=list)  # anchors: quotes not found


class BuildFailed(LoomError):
    """A step could not get a usable answer; the saved steps are kept for the rerun."""


ModelForRole = Callable[[str], ModelClient]


def load_build(path: Path, *, allow_outside: bool = False) -> BuildConfig:
    """A contract build config; the corpus files it names stay inside its folder unless
    ``allow_outside`` (``--allow-outside-paths``)."""
    context = {"base": str(path.parent), "allow_outside": allow_outside}
    return load_document(path, BuildConfig, "a contract build config", context)


class Builder:
    def __init__(
        self,
        config_path: Path,
        models: ModelForRole,
        *,
        now: str | None = None,
        allow_outside: bool = False,
    ):
        self.config_path = config_path
        self.config = load_build(config_path, allow_outside=allow_outside)
        self.output = (config_path.parent / self.config.output).resolve()
        self._models = models
        self._now = now
        self.calls = 0  # model calls made by this process (a resumed build makes fewer)

    # ─── the whole deck ─────────────────────────────────────────────────────

    async def build(self) -> Path:
        built = []
        for persona in self.config.personas:
            built.append(await self._persona(persona))
        return self._write_deck(built)

    async def _persona(self, persona: BuildPersona) -> tuple[BuildPersona, Path]:
        state = self.output / ".build" / persona.id
        state.mkdir(parents=True, exist_ok=True)
        excerpts = self._corpus(persona)
        corpus_file = self.output / "corpus" / f"{persona.id}.json"
        corpus_file.parent.mkdir(parents=True, exist_ok=True)
        write_json(corpus_file, excerpts)
        version = self._version(state)
        self._same_corpus(persona, state, excerpts)
        steps: dict[str, Step] = {}
        for n, name in enumerate(STEPS):
            path = state / f"{n}-{name}.json"
            if path.exists():
                steps[name] = msgspec.json.decode(path.read_bytes(), type=Step)
                continue
            steps[name] = await self._step(name, n, persona, excerpts, steps)
            write_json(path, steps[name])
        contract = self._contract(persona, excerpts, steps, version)
        path = self.output / "contracts" / f"{persona.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(contract.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return persona, path

    def _version(self, state: Path) -> str:
        stamp = state / "version"
        if not stamp.exists():
            stamp.write_text(self._now or datetime.now(UTC).isoformat(timespec="seconds"))
        return stamp.read_text().strip()

    @staticmethod
    def _same_corpus(persona: BuildPersona, state: Path, excerpts: list[Excerpt]) -> None:
        """Saved steps belong to the corpus they were made from: a changed corpus is not
        continued from them (that would mix two corpora in one contract)."""
        stamp = state / "corpus_hash"
        now = corpus_hash(excerpts)
        if stamp.exists() and stamp.read_text().strip() != now:
            raise LoomError(
                f"{persona.id}: its corpus changed since the steps saved in {state}; delete "
                "that folder to build this persona again from the new corpus"
            )
        stamp.write_text(now)

    def _corpus(self, persona: BuildPersona) -> list[Excerpt]:
        settings, base = self.config.settings, self.config_path.parent
        excerpts: list[Excerpt] = []
        for source in persona.sources:
            if source.feed:
                found = read_feed(base / source.feed, settings.max_feed_items, settings.max_chars)
            elif source.posts:
                found = read_posts(base / source.posts, settings.max_posts)
            else:
                found = read_text(base / str(source.text), settings.max_chars)
            # ids are unique across sources: prefix later sources' by their position
            excerpts += [
                msgspec.structs.replace(e, id=e.id if not excerpts else f"{e.id}.{len(excerpts)}")
                for e in found
            ]
        if not excerpts:
            raise LoomError(f"{persona.id}: its sources hold no text to build a contract from")
        return excerpts

    # ─── the steps ──────────────────────────────────────────────────────────

    async def _step(
        self,
        name: str,
        n: int,
        persona: BuildPersona,
        excerpts: list[Excerpt],
        steps: dict[str, Step],
    ) -> Step:
        settings = self.config.settings
        shown = excerpts
        if name != "relevance":
            keep = set(steps["relevance"].value)
            shown = [e for e in excerpts if e.id in keep] or excerpts
        nonce = f"{derive_seed(0, 'build-fence', persona.id, n):08x}"
        corpus = fence_lines([f"[{e.id}] ({e.date or 'undated'}) {e.text}" for e in shown], nonce)
        topic = self.config.deck.topic
        common = {"name": persona.name, "topic": topic, "corpus": corpus}
        role = "relevance" if name == "relevance" else "contract"
        answer: Answer[Any]
        if name in FIELDS:
            answer = await self._text(
                role, persona, nonce, n, render("build_field", field=name, **common)
            )
        elif name == "relevance":
            ids = {e.id for e in excerpts}
            limits = {"posts": settings.relevant_posts, "items": settings.relevant_items}
            answer = await self._json(
                role, persona, nonce, n, render("build_relevance", **limits, **common),
                answers.relevance_schema(sorted(ids)), lambda v: answers.relevant(v, ids),
            )  # fmt: skip
        elif name == "evidence_policy":
            answer = await self._json(
                role, persona, nonce, n, render("build_evidence", **common), answers.EVIDENCE,
                answers.evidence,
            )  # fmt: skip
        else:
            names = sorted({e.id for e in excerpts})
            # a model held to its schema picks each quote from the shown excerpts' sentences:
            # verbatim by construction (the prompt shows the schema without that long list)
            quotes = answers.quotable(shown) if enforces_schema(self._models(role)) else None
            answer = await self._json(
                role, persona, nonce, n,
                render("build_anchors", most=settings.max_anchor_excerpts, **common),
                answers.anchors_schema(names, quotes),
                lambda v: answers.anchors(v, excerpts, settings.max_anchor_excerpts),
                shown_schema=answers.anchors_schema(names),
            )  # fmt: skip
        if not answer.ok or answer.value is None:
            # each try's seed is fixed, so the same command would get the same answers:
            # say what came back and point at another model, not at a rerun
            returned = " ".join(answer.raw.split())[:200] or "nothing"
            raise BuildFailed(
                f"{persona.id}: step {n + 1} of 9 ({name}) got no usable answer after "
                f"{answer.attempts} tries ({answer.error}); the model returned: {returned}. "
                f"The steps before it are saved; build with another model "
                f"(--model {role}=SPEC) to continue from this step"
            )
        # the anchors' validator answers (kept, rejected); every other step, its value
        value, rejected = answer.value if name == "anchors" else (answer.value, [])
        return Step(
            value=value,
            attempts=answer.attempts,
            usage=msgspec.to_builtins(answer.usage),
            rejected=rejected,
        )

    def _messages(
        self, persona: BuildPersona, nonce: str, user: str, schema: Any
    ) -> list[ChatMessage]:
        begin, end = markers(nonce)
        system = render(
            "build_system",
            name=persona.name,
            topic=self.config.deck.topic,
            begin=begin,
            end=end,
            schema=json.dumps(schema) if schema else "",
        )
        return [ChatMessage("system", system), ChatMessage("user", user)]

    async def _json(
        self,
        role: str,
        persona: BuildPersona,
        nonce: str,
        n: int,
        user: str,
        schema: dict[str, Any],
        validate: Validator[Any],
        *,
        shown_schema: dict[str, Any] | None = None,
    ) -> Answer[Any]:
        """``schema`` holds the answer; ``shown_schema`` (default: the same) is the one the
        prompt shows."""
        model = self.config.models.resolve(role)
        self.calls += 1
        return await ask_json(
            self._models(role),
            self._messages(persona, nonce, user, shown_schema or schema),
            schema=schema,
            validate=validate,
            seed=lambda attempt: derive_seed(0, "build", persona.id, n, attempt),
            max_attempts=self.config.settings.attempts,
            max_tokens=model.max_tokens,
            temperature=model.temperature,
            feedback=True,
        )

    async def _text(
        self, role: str, persona: BuildPersona, nonce: str, n: int, user: str
    ) -> Answer[Any]:
        model = self.config.models.resolve(role)
        self.calls += 1
        return await ask_text(
            self._models(role),
            self._messages(persona, nonce, user, None),
            validate=answers.prose,
            seed=lambda attempt: derive_seed(0, "build", persona.id, n, attempt),
            max_attempts=self.config.settings.attempts,
            max_tokens=model.max_tokens,
            temperature=model.temperature,
            grammar=prose_grammar(PROSE_SENTENCES),
        )

    # ─── output ─────────────────────────────────────────────────────────────

    def _contract(
        self, persona: BuildPersona, excerpts: list[Excerpt], steps: dict[str, Step], version: str
    ) -> PersonaContract:
        anchors = [{"id": f"a{k + 1}", **a} for k, a in enumerate(steps["anchors"].value)]
        return PersonaContract.model_validate(
            {
                "persona_id": persona.id,
                "version": version,
                "corpus_hash": corpus_hash(excerpts),
                **{name: steps[name].value for name in FIELDS},
                "evidence_policy": steps["evidence_policy"].value,
                "anchor_excerpts": anchors,
            }
        )

    def _write_deck(self, built: list[tuple[BuildPersona, Path]]) -> Path:
        path = self.output / "deck.yaml"
        header = self.config.deck
        deck: dict[str, Any] = {"format": 1, **header.model_dump(), "personas": []}
        if path.exists():
            deck = yaml.safe_load(path.read_text(encoding="utf-8")) or deck
            deck.update(header.model_dump())
        entries = {p["id"]: p for p in deck.get("personas", [])}
        for persona, contract in built:
            entry: dict[str, Any] = {"id": persona.id, "name": persona.name}
            if persona.handle:
                entry["handle"] = persona.handle
            entry["contract"] = str(contract.relative_to(self.output))
            if persona.voice is not None:
                entry["voice"] = persona.voice.model_dump(mode="json", exclude_defaults=True)
            elif "voice" in entries.get(persona.id, {}):
                entry["voice"] = entries[persona.id]["voice"]
            entries[persona.id] = entry
        deck["personas"] = list(entries.values())
        tmp = path.with_suffix(".yaml.tmp")
        tmp.write_text(yaml.safe_dump(deck, sort_keys=False, allow_unicode=True), encoding="utf-8")
        tmp.replace(path)
        return path
