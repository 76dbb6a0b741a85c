"""What a program's reply says about the line it answered: an error, or nothing at all.

Why a module of its own: the default failure pattern is a detector, measured on a labelled set
of real error lines and near-misses (``tests/data/validity/harness_failure_pattern.jsonl``,
``benchmarks/validity_harness.py``), and every target kind — a program in a terminal, an HTTP
chat server, a model — uses the same one unless its pack says otherwise.

The pattern reads one line at a time, from its start, past the prefixes programs put before
their errors (``psql:``, ``bash: foo:``, ``(standard_in) 5:``), and wants the error word
followed by what error lines have after it (a colon, a parenthesis, a code, the end of the
line, ``at``, ``near``): ``Parse error: near "SELEC"`` and ``Runtime error (func=(main)…)``
are errors; ``error rate is 5%``, ``0 errors`` and ``No errors found`` are not.
"""

from __future__ import annotations

import re

#: The failure pattern every target gets unless its pack gives one (or ``null`` for none).
DEFAULT_FAILURE_PATTERN = (
    r"(?im)^[ \t]*"
    # what programs put before their errors: `psql:`, `bash: foo:`, `(standard_in) 5:`, `***`
    r"(?:(?:\*+|[\w./\[\]-]+(?:[ \t]+\d+)?:|\([\w ./-]+\)[ \t]*\d*:)[ \t]*)*"
    r"(?:uncaught[ \t]+)?"
    r"(?:"
    # "error", "Parse error", "Runtime error", "Internal Server Error", "ERROR 1064 (42000)":
    # then what follows an error — a colon, a parenthesis, a code, the end of the line
    # duckdb's "Parser Error", "Binder Error", "Catalog Error"
    r"(?:(?:parser?|runtime|syntax|fatal|internal|server|sql|math|type|value|name|compile|http"
    r"|binder|catalog|conversion)[ \t]+){0,2}error"
    r"(?:[ \t]*[:(\[]|[ \t]+\d|[ \t]+(?:at|near)[ \t]|[ \t]*$)"
    r"|exception[ \t]+in[ \t]+thread\b"
    # SyntaxError:, NameError:, ReferenceError:, java.io.IOException: (capitalised, as raised),
    # node's AssertionError [ERR_ASSERTION]:
    r"|(?-i:[\w.]*(?:Error|Exception))(?:[ \t]*\[[\w.]+\])?[ \t]*:"
    r"|(?:unknown|unrecognized|unrecognised|invalid|illegal)[ \t]+"
    r"(?:command|option|statement|character|argument|syntax|division)\b"
    r"|command[ \t]+not[ \t]+found\b"
    r"|\(error\)"  # redis-cli
    r"|no[ \t]+such[ \t]+(?:file|process|table|column|device|host|user|command|option|key"
    r"|relation|remote|branch|directory)\b"
    r"|\[errno[ \t]+\d+\]"  # Python's OSError text
    r"|permission[ \t]+denied\b"
    # a line that is only the shell's word for a killed program
    r"|(?:killed|aborted|terminated)(?:[ \t]*\(core[ \t]+dumped\))?[ \t]*$"
    r"|can(?:no|')t[ \t]+(?:access|open|stat|read|find|create|write|remove|execute)\b"
    r"|(?:failed|unable)[ \t]+to[ \t]+\w"
    r"|[\w()]+[ \t]+not[ \t]+found\b"  # "Package(s) not found", "Module not found"
    r"|division[ \t]+by[ \t]+(?:zero|0)\b"
    r"|traceback[ \t]+\(most[ \t]+recent[ \t]+call[ \t]+last\)"
    r"|(?:fatal|panic)[ \t]*:"
    r"|segmentation[ \t]+fault\b"
    # an HTTP reply's status line with a client or server error (curl -i, httpie)
    r"|http/\d(?:\.\d)?[ \t]+[45]\d\d\b"
    r"|curl:[ \t]*\(\d+\)"  # curl's own failures: `curl: (6) Could not resolve host`
    # make: `*** No rule to make target`, `*** missing separator.  Stop.`, `*** [all] Error 2`
    r"|no[ \t]+rule[ \t]+to[ \t]+make[ \t]+target\b"
    r"|\*\*\*.*\bstop\.[ \t]*$"
    r"|\*\*\*[ \t]+\[[^\]]*\][ \t]+error[ \t]+\d"
    r"|npm[ \t]+(?:err!|error)[ \t]"  # npm 6-8 and npm 9+
    r"|[✖✗✘][ \t]+\S"  # a failed test in node's, mocha's and jest's runners
    # perl's die and warn: `... at -e line 1.`, `... at (eval 11)[perl5db.pl:742] line 2.`
    r"|.*[ \t]at[ \t]+(?:\(eval[ \t]+\d+\))?\S*[ \t]+line[ \t]+\d+\.[ \t]*$"
    r")"
)

_DEFAULT = re.compile(DEFAULT_FAILURE_PATTERN)


def error_line(text: str, pattern: str | re.Pattern[str] | None = _DEFAULT) -> str | None:
    """The line of ``text`` that reports an error by ``pattern``, or None."""
    if pattern is None:
        return None
    found = re.search(pattern, text) if isinstance(pattern, str) else pattern.search(text)
    if found is None:
        return None
    start = text.rfind("\n", 0, found.start()) + 1
    return text[start:].split("\n", 1)[0].strip()
