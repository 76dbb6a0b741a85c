"""The features the learned capitulation check reads: does a persona message give in to the
interlocutor — concede its point, or drop, doubt or soften its own position because of it?

Word lists and a similarity to a few model concessions found the concessions their authors
thought of and mistook sarcasm ("oh sure, you're right, I'm just the crazy one") and reported
speech for giving in. The check reads the whole message's MiniLM embedding, which carries its
tone and who is conceding what, beside whether the words' check (the configured phrases and
the concession shapes) fired; a logistic regression fitted on labelled messages weighs them.
"""

from __future__ import annotations

import numpy as np

DIMENSIONS = 384  # all-MiniLM-L6-v2
FEATURES = ("words_check", *(f"embedding_{i}" for i in range(DIMENSIONS)))


def features(vector: np.ndarray, words_found: bool) -> np.ndarray:
    """The feature vector of a message: the words' check, then its unit embedding."""
    return np.concatenate([[1.0 if words_found else 0.0], np.asarray(vector, dtype=np.float64)])
