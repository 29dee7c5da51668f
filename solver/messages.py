"""Text from the user echoed in a message is cut to a readable length (issue 13 item 28:
a 200 kB bad value was printed in full)."""

from __future__ import annotations

import re

# Long enough for any real path or value, short enough to stay one terminal line or two.
MAX_ECHO_CHARS = 120


def shorten(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` itself when short; else its first ``limit`` characters, then how many were left out."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


# A message longer than this is cut as a whole, after its long words are.
MAX_MESSAGE_CHARS = 1000


def shorten_words(message: str) -> str:
    """``message`` with every word (a run without spaces) longer than MAX_ECHO_CHARS shortened, and the
    whole cut at MAX_MESSAGE_CHARS: a long value is echoed by its start, the rest of the message intact."""
    message = re.sub(r"\S{%d,}" % (MAX_ECHO_CHARS + 1), lambda m: shorten(m.group()), message)
    return shorten(message, MAX_MESSAGE_CHARS)
