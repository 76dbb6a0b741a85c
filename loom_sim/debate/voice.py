"""Voice profiles: how a persona talks, apart from what they believe.

The second layer of a debater's prompt: a one-line chat-style hint, how they build an
argument, their words, the phrases they would never use (checked on every message, not only
asked for), and two or three examples. A persona without a profile speaks with the generic
one, the fallback.
"""

from __future__ import annotations

from pydantic import Field

from loom_sim.debate.contract import Prose, Strict


class VoiceExample(Strict):
    context: Prose = Field(description="What was just said to them.")
    response: Prose = Field(description="What they would answer, in their voice.")


class VoiceProfile(Strict):
    chat_style_hint: Prose = Field(description="One line: how they sound in a group chat.")
    speech_patterns: list[Prose] = Field(
        default_factory=list, max_length=6, description="How they structure an argument."
    )
    vocabulary: list[Prose] = Field(default_factory=list, description="Words they reach for.")
    forbidden_phrases: list[Prose] = Field(
        default_factory=list,
        description="Phrases they never use; a message containing one is regenerated.",
    )
    voice_examples: list[VoiceExample] = Field(
        min_length=2, max_length=3, description="Two or three examples (few-shot)."
    )


#: The fallback for a persona with no profile of its own.
GENERIC_VOICE = VoiceProfile(
    chat_style_hint="Be direct and specific. No hedging.",
    speech_patterns=["Lead with the claim, then the reason."],
    forbidden_phrases=["Great question", "As a large language model"],
    voice_examples=[
        VoiceExample(context="It will probably work out.", response="Which part, and by when?"),
        VoiceExample(context="Everyone agrees on this.", response="I don't, and here is why."),
    ],
)
