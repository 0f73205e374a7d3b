"""Prompt packs: another wording of the prompt pieces, checked, stored and compared.

prompts/ holds the project's own wording. A researcher who replicates a paper needs
that paper's exact words: a pack is a folder with one `NAME.txt` file per piece it
replaces (the same names as prompts/*.txt; docs/prompts.md lists them with their
placeholders and the paper section that gives each one's wording). Importing a pack
checks every file first (a known piece name, UTF-8 text, exactly the placeholders of
the built-in piece) and stores nothing unless all pass; the stored pack becomes the
active one, which new cells are enqueued with and which freezing a pre-registration
amendment pins.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

import prompts
from core.episode import prompt_set_sha256
from core.errors import ConfigError
from core.inert import inert as shown_inert
from core.store import prompt_packs as rows

SUFFIX = ".txt"


PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A placeholder the episode loop fills: a name in braces, e.g. {question}."""


def placeholders(text: str) -> list[str]:
    """The placeholder names of a piece ({question} -> "question"), in order, repeats kept."""
    return PLACEHOLDER.findall(text)


def format_problem(text: str) -> str | None:
    """Why `text` cannot be filled with str.format (None: it can): a lone brace, or a
    placeholder with a conversion or format spec."""
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError as exc:
        return f"a lone brace ({exc}); write a literal brace as {{{{ or }}}}"
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        if spec or conversion or not PLACEHOLDER.fullmatch(f"{{{name}}}"):
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            return (f"placeholder {{{shown}}}: write a placeholder bare, as {{name}}, and a "
                    f"literal brace as {{{{ or }}}}")
    return None


def pack_sha256(pieces: Mapping[str, str]) -> str:
    """The sha256 of a pack: the prompt-set hash of its pieces, as an episode records it."""
    return prompt_set_sha256({f"prompts/{name}{SUFFIX}": hashlib.sha256(
        text.encode("utf-8")).hexdigest() for name, text in pieces.items()})


def check_piece(name: str, text: str) -> str | None:
    """Why `text` cannot stand for the built-in piece `name` (None: it can).

    The placeholders must be exactly the built-in piece's: a missing one would drop
    what the loop fills in (the question, the observation), an extra one would fail
    when the loop fills the piece.
    """
    reference = prompts.builtin_text(name)
    builtin = set(placeholders(reference))
    found = set(placeholders(text))
    # a built-in piece with placeholders and no literal braces is filled with str.format
    if builtin and format_problem(reference) is None:
        why = format_problem(text)
        if why:
            return why
        found = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
    want = ", ".join(f"{{{p}}}" for p in sorted(builtin)) or "none"
    for p in sorted(builtin - found):
        return f"placeholder {{{p}}} is missing (the built-in piece has: {want})"
    for p in sorted(found - builtin):
        return f"unknown placeholder {{{p}}} (the built-in piece has: {want})"
    return None


def read_folder(folder: Path) -> dict[str, str]:
    """Read and check every file of a pack folder; nothing is stored.

    Hidden files (a leading dot) are skipped.

    Returns:
        piece name -> exact text, sorted by name.

    Raises:
        ConfigError: one line naming the first bad file and why, with the count of
            further problems.
    """
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder; a prompt pack is a folder of NAME.txt "
                          f"files (lab prompts export DIR writes one)")
    known = set(prompts.builtin_names())
    pieces: dict[str, str] = {}
    problems: list[str] = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        name = path.name[:-len(SUFFIX)] if path.name.endswith(SUFFIX) else None
        if not path.is_file() or name not in known:
            problems.append(f"{path}: not a prompt piece (a pack holds NAME.txt files named "
                            f"like prompts/*.txt; `lab prompts list` shows the names)")
            continue
        assert name is not None
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{path}: not UTF-8 text (byte {exc.start})")
            continue
        why = check_piece(name, text)
        if why:
            problems.append(f"{path}: {why}")
            continue
        pieces[name] = text
    if problems:
        more = f" (and {len(problems) - 1} more problem{'s' * (len(problems) > 2)})" \
            if len(problems) > 1 else ""
        raise ConfigError(problems[0] + more)
    if not pieces:
        raise ConfigError(f"{folder}: no prompt pieces (NAME.txt files) in it")
    return pieces


def import_folder(db: Database, folder: Path) -> tuple[str, dict[str, str]]:
    """Check every file of a pack folder, then store it and make it the active pack.

    Returns:
        (the pack's sha256, its pieces).

    Raises:
        ConfigError: a bad file (`read_folder`); nothing is stored.
    """
    pieces = read_folder(folder)
    sha = pack_sha256(pieces)
    rows.save_and_activate(db, sha, pieces, str(folder.resolve()))
    return sha, pieces


def reset(db: Database) -> None:
    """Make the built-in wording active again (stored packs are kept)."""
    rows.deactivate(db)


def active_texts(db: Database) -> dict[str, str]:
    """The exact text of every piece new cells would use: piece name -> text."""
    with prompts.using(rows.active_pieces(db)):
        return {key[len("prompts/"):-len(SUFFIX)]: text for key, text in prompts.texts().items()}


@dataclass(frozen=True)
class PieceRow:
    """One line of `lab prompts list`."""

    name: str
    sha256: str
    """sha256 of the text in use."""
    source: str
    """"built-in", "pack", or "pack (= built-in)" when the pack's text is the built-in one."""
    placeholders: tuple[str, ...]


def piece_rows(db: Database) -> list[PieceRow]:
    """Every piece with the hash of the text in use and whether the active pack replaces it."""
    pack = rows.active_pieces(db) or {}
    out = []
    for name in prompts.builtin_names():
        builtin = prompts.builtin_text(name)
        text = pack.get(name, builtin)
        source = "built-in" if name not in pack else (
            "pack (= built-in)" if text == builtin else "pack")
        out.append(PieceRow(name, hashlib.sha256(text.encode("utf-8")).hexdigest(), source,
                            tuple(dict.fromkeys(placeholders(builtin)))))
    return out


def piece_text(db: Database, name: str) -> str:
    """The text in use for one piece.

    Raises:
        ConfigError: an unknown piece name (the message lists the known ones).
    """
    texts = active_texts(db)
    if name not in texts:
        raise ConfigError(f"no prompt piece {name!r}; pieces: {', '.join(sorted(texts))}")
    return texts[name]


def export_folder(db: Database, folder: Path, force: bool = False) -> list[Path]:
    """Write every piece in use (the active pack over the built-in files) to `folder`.

    Raises:
        ConfigError: `folder` is a file, or already holds .txt files and `force` is off.
    """
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: exists and is not a folder")
    if folder.is_dir() and any(folder.glob(f"*{SUFFIX}")) and not force:
        raise ConfigError(f"{folder}: already holds .txt files; choose an empty folder or "
                          f"pass --force to overwrite them")
    texts = active_texts(db)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in texts.items():
        path = folder / f"{name}{SUFFIX}"
        path.write_bytes(text.encode("utf-8"))
        written.append(path)
    return written


def diff_folder(db: Database, folder: Path) -> str:
    """Unified diff of the pieces in use (from) against a folder's files (to).

    Only the pieces the folder holds are compared (a pack may replace a few pieces);
    every file is checked as `lab prompts import` would.

    Raises:
        ConfigError: a bad file (`read_folder`).
    """
    theirs = read_folder(folder)
    ours = active_texts(db)
    out: list[str] = []
    for name, text in theirs.items():
        out += difflib.unified_diff(ours[name].splitlines(keepends=True),
                                    text.splitlines(keepends=True),
                                    fromfile=f"active/{name}{SUFFIX}",
                                    tofile=str(folder / f"{name}{SUFFIX}"))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in out)


def inert(text: str) -> str:
    """`text` safe to print on a terminal (`core.inert.inert`, the one sanitizer)."""
    return shown_inert(text)
