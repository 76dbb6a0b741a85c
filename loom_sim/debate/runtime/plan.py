"""Planning a debate: the deck and the command line, resolved once into ``debate.json``.

A debate is planned before anything runs: the deck validated, the personas chosen, the
settings overridden from the command line, every model spec checked (shape, provider, script
or file, key), the random seed fixed. The plan is written atomically; ``--resume`` reads it back and
never re-reads the deck, so a resumed debate continues with the people and settings it began
with even if the deck file changed since.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from loom_sim import __version__
from loom_sim.core.header import plan_header, redact_argv, redact_url
from loom_sim.core.lock import refuse_if_held
from loom_sim.debate.deck import DECK_FORMAT, Deck, PersonaEntry, deck_hash, load_deck
from loom_sim.debate.files import FORMAT_VERSION, DebateFiles, DebateRecord
from loom_sim.debate.prompts import DEBATE_TEMPLATE_VERSION
from loom_sim.debate.roles import ROLES, RoleModel
from loom_sim.debate.settings import DebateSettings
from loom_sim.errors import LoomError
from loom_sim.models.hub import ModelHub
from loom_sim.store.artifacts import unique_dir

#: The roles a debate calls (the builder's are the contract builder's).
DEBATE_ROLES = tuple(r for r in ROLES if r not in ("relevance", "contract"))


@dataclass(frozen=True)
class DebateOptions:
    topic: str | None = None
    personas: list[str] | None = None
    messages: int | None = None
    seed: int | None = None
    models: dict[str, str] = field(default_factory=dict)  # --model NAME=SPEC
    policy: str | None = None  # --policy: a speaker order
    similarity: str | None = None
    output: Path | None = None
    base_url: str | None = None
    timeout_s: float = 120.0
    allow_outside: bool = False  # --allow-outside-paths: the deck's files may lie outside it


@dataclass(frozen=True)
class DebatePlan:
    files: DebateFiles
    record: DebateRecord
    deck: Deck
    base_url: str | None = None  # as given, credentials and all: never written (the record's is
    # redacted), so a resumed debate is given it again

    @property
    def settings(self) -> DebateSettings:
        return self.deck.debate

    @property
    def personas(self) -> list[PersonaEntry]:
        return [self.deck.persona(p) for p in self.record.personas]

    @property
    def names(self) -> dict[str, str]:
        return {p.id: p.name for p in self.personas}

    @property
    def roles(self) -> dict[str, RoleModel]:
        return {role: RoleModel(role, **m) for role, m in self.record.models.items()}


def _settings(deck: Deck, options: DebateOptions) -> DebateSettings:
    data: dict[str, Any] = deck.debate.model_dump(mode="json")
    if options.messages is not None:
        data["messages"] = options.messages
    if options.policy is not None:
        data["speakers"]["order"] = options.policy
    if options.similarity is not None:
        data["detection"]["similarity"] = options.similarity
    try:
        settings = DebateSettings.model_validate(data)
        models = settings.models.overridden(options.models)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(x) for x in first["loc"])
        raise LoomError(f"{where}: {first['msg']}") from None
    except ValueError as err:
        raise LoomError(str(err)) from None
    return settings.model_copy(update={"models": models})


def plan_debate(deck_path: Path, options: DebateOptions, argv: list[str]) -> DebatePlan:
    deck = load_deck(deck_path, allow_outside=options.allow_outside)
    cast = deck.cast(options.personas)
    settings = _settings(deck, options)
    topic = " ".join((options.topic or deck.topic).split())
    if not topic:
        raise LoomError("--topic is empty")
    deck = deck.model_copy(update={"debate": settings, "topic": topic})
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = options.output or unique_dir(Path("results") / f"debate-{deck.id}-{stamp}")
    files = DebateFiles(folder)
    check_new(files)
    table = settings.models.table()
    record = DebateRecord(
        deck=deck.model_dump(mode="json"),
        deck_source=str(deck_path),
        deck_hash=deck_hash(deck),
        topic=topic,
        personas=[p.id for p in cast],
        seed=seed,
        models={
            role: {"spec": m.spec, "temperature": m.temperature, "max_tokens": m.max_tokens}
            for role, m in table.items()
            if role in DEBATE_ROLES
        },
        versions={
            "loom_sim": __version__,
            "debate_templates": DEBATE_TEMPLATE_VERSION,
            "deck_format": str(DECK_FORMAT),
        },
        command=redact_argv(argv),
        base_url=redact_url(options.base_url),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        header=plan_header(
            format_version=FORMAT_VERSION,
            seed=seed,
            argv=argv,
            template_version=DEBATE_TEMPLATE_VERSION,
        ),
    )
    return DebatePlan(files, record, deck, options.base_url)


def check_new(files: DebateFiles) -> None:
    """Refuse a folder another process is writing (naming it), or one that holds a debate."""
    refuse_if_held(files.dir)
    if files.plan.exists():
        raise LoomError(
            f"{files.dir} already holds a debate; continue it with: "
            f"loom-sim debate --resume {files.dir}"
        )


def plan_resume(folder: Path, base_url: str | None = None) -> DebatePlan:
    files = DebateFiles(folder)
    record = files.read_plan()
    try:
        deck = Deck.model_validate(record.deck)
    except ValidationError as err:
        raise LoomError(f"{files.plan}: the recorded deck no longer validates ({err})") from None
    return DebatePlan(files, record, deck, base_url or record.base_url)


def make_hub(plan: DebatePlan, timeout_s: float = 120.0) -> ModelHub:
    """The debate's model hub, every spec checked before the first call."""
    hub = ModelHub(base_url=plan.base_url, timeout_s=timeout_s)
    for model in plan.record.models.values():
        hub.check(model["spec"])
    return hub
