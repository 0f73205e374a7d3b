"""Prompt templates, one file per piece (SPEC §6–§8).

A researcher may edit any file here; freezing a pre-registration amendment pins
the exact bytes of every file by sha256.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

PROMPT_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def load(name: str) -> str:
    """Return the text of prompts/<name>.txt without its trailing newline.

    Args:
        name: file stem, e.g. "system" or "side_channel".

    Raises:
        FileNotFoundError: when no such prompt file exists.
    """
    return (PROMPT_DIR / f"{name}.txt").read_text(encoding="utf-8").rstrip("\n")


def file_hashes() -> dict[str, str]:
    """sha256 of the exact bytes of every prompt file, keyed by its path under prompts/."""
    return {
        f"prompts/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(PROMPT_DIR.glob("*.txt"))
    }
