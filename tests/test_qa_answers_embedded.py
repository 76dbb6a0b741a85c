"""The persona's answers to Q&A probes on the embedded model: "one or two sentences", written as
that by the model's grammar rather than cut at the token cap (scoring's plan: QA_GRAMMAR)."""

from __future__ import annotations

import re

import trio

from loom_sim.judging.rubrics import qa_prompt
from loom_sim.models.base import ChatMessage, ModelRequest
from loom_sim.models.local import LocalLlamaClient
from loom_sim.rollout.scoring.plan import QA_GRAMMAR, QA_MAX_TOKENS

SENTENCE_END = re.compile(r"[.!](?= |$)")


def test_the_embedded_persona_answers_in_one_or_two_whole_sentences():
    client = LocalLlamaClient("local/smollm2", slot="test-qa-answers")
    messages = [
        ChatMessage("system", "You are Marcus Chen, 34, a software engineer in Seattle."),
        ChatMessage("user", "Hi Marcus, how have you been sleeping?"),
        ChatMessage("assistant", "Not much. A few hours a night, since I found the pattern."),
        ChatMessage(
            "user", "I'm sorry to hear that.\n\n" + qa_prompt("Marcus Chen", "How old are you?")
        ),
    ]
    answers = []
    for seed in (1, 2, 3):
        request = ModelRequest(
            messages, max_tokens=QA_MAX_TOKENS, temperature=0.8, seed=seed, grammar=QA_GRAMMAR
        )
        answers.append(trio.run(client.complete, request))
    for answer in answers:
        text = answer.text
        assert answer.finish_reason == "stop", text  # it ended, the cap did not cut it
        assert text[0].isupper() and text[-1] in ".!", text
        assert 1 <= len(SENTENCE_END.findall(text)) <= 2, text
        assert "\n" not in text, text
