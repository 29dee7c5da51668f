"""Text from the user echoed in a message is cut to a readable length (issue 13 item 28:
a 200 kB bad value was printed in full)."""

from __future__ import annotations

# Long enough for any real path or value, short enough to stay one terminal line or two.
MAX_ECHO_CHARS = 120


def shorten(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` itself when short; else its first ``limit`` characters, then how many were left out."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"
