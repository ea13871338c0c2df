"""Output symbols shared by every scenario.

Token ids are the integers 0..S-1; the "no answer" symbol ⊥ is stored as BOTTOM (-1) in integer
arrays and printed as "⊥".
"""

from __future__ import annotations

BOTTOM = -1
BOTTOM_TEXT = "⊥"


def token_text(token: int) -> str:
    """How a token (or ⊥) is printed on the command line and in JSON."""
    return BOTTOM_TEXT if int(token) == BOTTOM else str(int(token))
