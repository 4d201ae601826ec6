"""What the executor and the cluster tell a worker through its environment, read one way."""

from __future__ import annotations

import os
from typing import Optional


def env_int(name: str) -> Optional[int]:
    """``name``'s value as a non-negative int; None when it is unset or not a plain decimal number
    (the caller's default then applies, as it does for a variable that is not set)."""
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None
