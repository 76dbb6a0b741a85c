"""How a debate runs: budget, speaker policy, intents, checks, detection, crux rooms, models.

Everything here has a default and may be set in a deck's ``debate:``
section (a planted-crux deck names its scripted models there) or on the command line. The
resolved settings are recorded in ``debate.json``; a resumed debate reads them from there.

Cadences and cooldowns count **messages**, never seconds: Faultline's five-minute cooldown
spawns rooms at different places on a fast and a slow model; a count replays the same.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from loom_sim.debate.checks import HARD_BANNED, BannedPattern, Shape
from loom_sim.debate.contract import Strict
from loom_sim.debate.intents import (
    INTENTS,
    ROOM_OPENING_SHAPE,
    ROOM_SHAPE,
    Intent,
    IntentRule,
    IntentSpec,
)
from loom_sim.debate.roles import ModelAllocation
from loom_sim.debate.speakers import SpeakerPolicy

#: The longest debate: main-chat messages at most (each is a model call, and rooms follow them).
MAX_MESSAGES = 1000
#: Crux rooms one debate opens at most (each is tens of model calls and a card).
MAX_ROOMS = 100


class DraftSettings(Strict):
    attempts: int = Field(
        3, ge=1, le=10, description="Tries per message: the first and its regenerations."
    )
    banned: list[BannedPattern] = Field(
        default_factory=lambda: list(HARD_BANNED),
        description="Patterns no message may match (default: the hard-banned list).",
    )


class DetectionSettings(Strict):
    every: int = Field(3, ge=1, le=MAX_MESSAGES, description="Messages between detection rounds.")
    window: int = Field(10, ge=2, le=200, description="Messages the detector reads each round.")
    # 0.4 is the least opposition a pair read on opposite sides of a shared clause can have
    # (half its words shared x the opposite-sides contrast, 0.8): no such pair is gated out,
    # while a window whose strongest pair only uses contrast words on no shared claim is.
    # Measured on the planted decks (docs/debates.md): 0.3 asked the detector in rounds where
    # only a bystander pair reached it; 0.4 never did, and lost no crux.
    gate: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="The detector model is asked only when some pair's stance opposition in "
        "the window reaches this.",
    )
    corroborate: float = Field(
        0.15,
        ge=0.0,
        le=1.0,
        description="A detection counts only if its pair's stance opposition reaches this.",
    )
    confidence: float = Field(0.8, ge=0.0, le=1.0, description="Least confidence to spawn.")
    consecutive: int = Field(
        2, ge=1, le=100, description="Rounds in a row a pair must be detected."
    )
    cooldown: int = Field(
        12,
        ge=0,
        le=MAX_MESSAGES,
        description="Messages after a pair's room before it may get another.",
    )
    similarity: Literal["embedding", "tfidf"] = Field(
        "embedding", description="MiniLM embeddings, or TF-IDF (no model to load)."
    )
    attempts: int = Field(2, ge=1, le=5, description="Tries for a usable detector answer.")


class RoomSettings(Strict):
    enabled: bool = Field(True, description="Open crux rooms at all.")
    max_exchanges: int = Field(
        20, ge=1, le=200, description="Messages after the openings, at most."
    )
    exit_after: int = Field(
        3, ge=0, le=200, description="No exit check before this many exchanges."
    )
    exit_every: int = Field(
        2, ge=1, le=200, description="Exchanges between exit checks after that."
    )
    shape: Shape = Field(default=ROOM_SHAPE, description="Each exchange's shape (2-3 sentences).")
    opening_shape: Shape = Field(default=ROOM_OPENING_SHAPE, description="Opening statements.")
    card_attempts: int = Field(3, ge=1, le=6, description="Tries for a valid crux card.")
    context: int = Field(
        6,
        ge=0,
        le=50,
        description="Main-chat messages of the pair shown with the room to the card.",
    )
    max_rooms: int = Field(
        MAX_ROOMS,
        ge=0,
        le=MAX_ROOMS,
        description="Crux rooms a debate opens at most; detections past it are recorded, "
        "and no room opens for them.",
    )

    def exit_check_due(self, exchanges: int) -> bool:
        """After exchange ``exchanges`` (1-based): the third plus every ``exit_every``."""
        return exchanges > self.exit_after and (exchanges - self.exit_after) % self.exit_every == 0


class DebateSettings(Strict):
    messages: int = Field(
        12,
        ge=1,
        le=MAX_MESSAGES,
        description="Main-chat turns (openings included), said or failed.",
    )
    thread: int = Field(5, ge=1, le=50, description="Recent messages each debater is shown.")
    speakers: SpeakerPolicy = Field(default_factory=SpeakerPolicy)
    intents: IntentRule = Field(default_factory=IntentRule)
    intent_specs: dict[Intent, IntentSpec] = Field(
        strict=False,
        default_factory=dict,
        description="Instructions and shapes replacing the defaults.",
    )
    drafts: DraftSettings = Field(default_factory=DraftSettings)
    detection: DetectionSettings = Field(default_factory=DetectionSettings)
    rooms: RoomSettings = Field(default_factory=RoomSettings)
    models: ModelAllocation = Field(default_factory=ModelAllocation)
    max_failed_in_a_row: int = Field(
        6, ge=1, le=MAX_MESSAGES, description="Failed turns in a row that end the debate."
    )

    @model_validator(mode="after")
    def _window(self) -> DebateSettings:
        if self.detection.window < self.detection.every:
            raise ValueError(
                f"detection.window ({self.detection.window}) must be at least detection.every "
                f"({self.detection.every}), or some messages are never read"
            )
        return self

    def intent(self, intent: Intent) -> IntentSpec:
        return self.intent_specs.get(intent, INTENTS[intent])
