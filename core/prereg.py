"""The pre-registration document: drafts, freezing, the hash chain, gating, verify (docs/prereg.md).

One append-only document of amendments. Freezing an amendment records the UTC
time, the project version, the sha256 and text of every prompt piece in use (the
built-in files, or lab.db's active prompt pack over them), which pack that is, the
sha256 of each governed question set and of each governed condition, regime and
model spec, whether
episodes inside its scope already existed, and the hash of the previous frozen
entry; the entry's own hash covers all of that. `verify` recomputes the chain
and the pins.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

import prompts
from core import store
from core.canonical import canonical_hash
from core.conditions import Condition, condition_from_spec, parse_condition
from core.data import ids_hash
from core.episode import utc_now
from core.errors import LabError, StoreError
from core.models.registry import ModelSpec
from core.regimes import parse_regime
from core.registered_tests import (
    arm_matches,
    scope_condition_hashes,
    validate_scope,
    validate_tests,
)
from core.store import prereg as rows
from core.store import prompt_packs
from core.version import project_version

GENESIS = "0" * 64
CONTENT_FIELDS = ("id", "seq", "title", "body", "tests", "scope")
FROZEN_FIELDS = ("frozen_at", "prev_sha256", "pins", "version", "data_existed")


class GateError(LabError):
    """An enqueue refused by the pre-registration (draft, out of scope, changed pin)."""


def entry_hash(row: Mapping[str, Any]) -> str:
    """sha256 of an amendment's content and everything its freeze recorded."""
    payload = {k: row[k] for k in CONTENT_FIELDS + FROZEN_FIELDS}
    return canonical_hash(payload, ensure_ascii=False)


def create(db: Database, title: str, body: str = "", tests: Any = (),
           scope: Any = None) -> str:
    """Append a draft amendment (validated); returns its id (A1, A2, …).

    Raises:
        ConfigError: an invalid registered test or scope, or a test naming a model
            (condition, regime, set, budget) outside the scope; nothing is written.
    """
    if not title.strip():
        raise LabError("an amendment needs a non-empty --title")
    scope = validate_scope(scope) if scope is not None else {}
    tests = validate_tests(list(tests) if isinstance(tests, tuple) else tests, scope)
    with store.write(db):
        seq = len(rows.amendments(db)) + 1
        amendment_id = f"A{seq}"
        rows.insert_draft(db, amendment_id, seq, title.strip(), body, tests, scope)
    return amendment_id


def edit(db: Database, amendment_id: str, **fields: Any) -> None:
    """Change a draft (title, body, tests, scope), validating what changes.

    Raises:
        StoreError: the amendment is frozen.
        ConfigError: invalid tests or scope, or tests outside the (new) scope.
    """
    if fields.get("scope") is not None:
        fields["scope"] = validate_scope(fields["scope"])
    if fields.get("tests") is not None or fields.get("scope") is not None:
        row = rows.amendment(db, amendment_id)
        scope = fields["scope"] if fields.get("scope") is not None else row["scope"]
        tests = fields["tests"] if fields.get("tests") is not None else row["tests"]
        validated = validate_tests(tests, scope)
        if fields.get("tests") is not None:
            fields["tests"] = validated
    rows.update_draft(db, amendment_id, {k: v for k, v in fields.items() if v is not None})


def pins_for(db: Database, scope: Mapping[str, Any],
             models: Mapping[str, ModelSpec]) -> dict[str, Any]:
    """The sha256 of everything an amendment governs, as it is now."""
    sets = {}
    for name in scope.get("question_sets", []):
        qs = store.question_set(db, name)
        sets[name] = ids_hash(qs["ids"])
    model_hashes = {m: models[m].spec_hash() for m in scope.get("models", []) if m in models}
    with prompts.using(prompt_packs.active_pieces(db)):  # the wording new cells run with
        prompt_hashes = prompts.file_hashes()
    return {
        "prompts": prompt_hashes,
        PACK_PIN: {"active": prompt_packs.active_sha(db) or BUILTIN},
        "question_sets": sets,
        "conditions": scope_condition_hashes(scope) if scope else {},
        "regimes": {r: parse_regime(r).spec_hash() for r in scope.get("regimes", [])},
        "models": model_hashes,
    }


PINNED_TEXTS = "prompt_texts"
"""Key of the pins record holding each prompt file's text at freeze (for diffs)."""
PACK_PIN = "prompt_packs"
"""Key of the pins record naming the active prompt pack at freeze (its sha256, or BUILTIN)."""
BUILTIN = "built-in"
"""The pinned pack when the built-in wording (prompts/) was active."""


def prompt_texts(db: Database | None = None) -> dict[str, str]:
    """The text of every prompt piece now, keyed like `prompts.file_hashes()`: the built-in
    files, replaced by the pieces of lab.db's active prompt pack when `db` is given."""
    with prompts.using(prompt_packs.active_pieces(db) if db is not None else None):
        return prompts.texts()


def prompt_diffs(row: Mapping[str, Any], db: Database | None = None) -> dict[str, str]:
    """Unified diff (pinned → now) of each prompt piece changed since `row` was frozen.

    Only files whose text was pinned (amendments frozen before texts were pinned
    have hashes only) and that still differ; a removed file diffs against nothing.
    With `db`, "now" is the wording of its active prompt pack.
    """
    pinned = (row.get("pins") or {}).get(PINNED_TEXTS) or {}
    now = prompt_texts(db)
    out = {}
    for name, old in pinned.items():
        new = now.get(name, "")
        if new != old:
            out[name] = "\n".join(difflib.unified_diff(
                old.splitlines(), new.splitlines(), lineterm="",
                fromfile=f"{name} (pinned by {row['id']})", tofile=f"{name} (now)"))
    return out


def in_scope(scope: Mapping[str, Any], model: str, condition: Condition, regime: str,
             question_set: str | None, budget: int, seed: int | None = None,
             replicate: int | None = None) -> str | None:
    """Why a cell is outside the scope (None when it is inside).

    A condition is inside when a scoped condition names its arm exactly
    (`core.registered_tests.arm_matches`: full label; a bare random_rule covers
    the rate resolved per model). Seeds and replicates are checked when the scope
    names them.
    """
    if not scope:
        return "the amendment has no scope"
    if model not in scope["models"]:
        return f"model {model} is not in its scope ({', '.join(scope['models'])})"
    if not any(arm_matches(parse_condition(c), condition) for c in scope["conditions"]):
        return (f"condition {condition.label()} is not in its scope "
                f"({', '.join(scope['conditions'])})")
    if regime not in scope["regimes"]:
        return f"regime {regime} is not in its scope ({', '.join(scope['regimes'])})"
    if question_set not in scope["question_sets"]:
        return (f"question set {question_set} is not in its scope "
                f"({', '.join(scope['question_sets'])})")
    if budget not in scope["budgets"]:
        return f"budget {budget} is not in its scope ({', '.join(map(str, scope['budgets']))})"
    for key, value in (("seeds", seed), ("replicates", replicate)):
        if key in scope and value is not None and value not in scope[key]:
            return (f"{key[:-1]} {value} is not in its scope "
                    f"({', '.join(map(str, scope[key]))})")
    return None


def existing_data(db: Database, scope: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Cells inside the scope that already have episodes (run, cell, count, first start)."""
    if not scope:
        return []
    out = []
    for c in rows.scoped_cells(db):
        if c["episodes"] and in_scope(scope, c["model"], condition_from_spec(c["condition_spec"]),
                                      c["regime"], c["question_set"], c["budget"], c["seed"],
                                      c["replicate"]) is None:
            out.append({"run": c["run"], "cell": c["id"], "episodes": c["episodes"],
                        "first_started": c["first_started"]})
    return out


def resolve_scope(db: Database, amendment_id: str, scope: Mapping[str, Any],
                  models: Mapping[str, ModelSpec]) -> None:
    """Check that everything a scope names resolves, so that its spec can be pinned.

    Models must be in the registry (lab.toml or a built-in sim), question sets must
    exist in lab.db, and a named dataset must be the dataset of a scoped set
    (conditions and regimes were parsed when the draft was saved).

    Raises:
        LabError: one line naming the first thing that does not resolve.
    """
    for name in scope.get("models", []):
        if name not in models:
            raise LabError(f"cannot freeze {amendment_id}: scope model '{name}' is not in the "
                           f"model registry (lab.toml or a built-in sim), so its spec cannot be "
                           f"pinned; known: {', '.join(sorted(models))}")
    datasets = set()
    for name in scope.get("question_sets", []):
        try:
            datasets.add(store.question_set(db, name)["dataset"])
        except StoreError as exc:
            raise LabError(f"cannot freeze {amendment_id}: scope question set: {exc}") from None
    for name in scope.get("datasets", []):
        if name not in datasets:
            raise LabError(f"cannot freeze {amendment_id}: scope dataset '{name}' is not the "
                           f"dataset of any scoped question set ({', '.join(sorted(datasets))})")


def freeze(db: Database, amendment_id: str, models: Mapping[str, ModelSpec]) -> dict[str, Any]:
    """Freeze a draft: pin everything it governs and chain it to the previous entry.

    Returns:
        The frozen row.

    Raises:
        StoreError: already frozen, or an unknown amendment.
        LabError: a scope naming something that does not resolve (`resolve_scope`).
    """
    with store.write(db):
        row = rows.amendment(db, amendment_id)
        if row["state"] != "draft":
            raise StoreError(f"{amendment_id} is already frozen (at {row['frozen_at']})")
        if not row["scope"]:
            raise LabError(f"{amendment_id} has no scope: say which runs it governs "
                           f"(lab prereg edit {amendment_id} --scope FILE) before freezing")
        resolve_scope(db, amendment_id, row["scope"], models)
        frozen = _in_freeze_order(rows.amendments(db))
        prev = frozen[-1]["content_sha256"] if frozen else GENESIS
        record = dict(row)
        record.update(frozen_at=utc_now(), prev_sha256=prev, version=project_version(),
                      pins={**pins_for(db, row["scope"], models),
                            PINNED_TEXTS: prompt_texts(db)},
                      data_existed=existing_data(db, row["scope"]))
        record["content_sha256"] = entry_hash(record)
        rows.freeze(db, amendment_id, record)
    return rows.amendment(db, amendment_id)


def _in_freeze_order(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Frozen entries in the order they were frozen: the order of the hash chain."""
    return sorted((r for r in entries if r["state"] == "frozen"),
                  key=lambda r: (r["frozen_at"] or "", r["seq"]))


@dataclass(frozen=True)
class Problem:
    """One finding of `verify`."""

    amendment: str
    what: str


def verify(db: Database, models: Mapping[str, ModelSpec]) -> list[Problem]:
    """Recompute the hash chain and the pins; an empty list means intact.

    Finds an edited frozen row (its hash no longer matches), a removed or reordered
    entry (a broken link or a gap in the sequence), a deviation whose amendment is
    gone, and pinned files or specs that changed since freezing.
    """
    problems = []
    entries = rows.amendments(db)
    for i, row in enumerate(entries, start=1):
        if row["seq"] != i:
            problems.append(Problem(row["id"], f"is at position {row['seq']} but should be {i}: "
                                    f"an entry was removed or reordered"))
        if row["id"] != f"A{row['seq']}":
            problems.append(Problem(row["id"], f"id does not match its position A{row['seq']}"))
        if row["state"] == "draft" and (row["frozen_at"] or row["content_sha256"]):
            problems.append(Problem(row["id"], "was frozen and has been set back to draft"))
    prev = GENESIS
    for row in _in_freeze_order(entries):
        if row["prev_sha256"] != prev:
            problems.append(Problem(row["id"], "chain broken: it does not point at the previous "
                                    "frozen entry (removed, reordered or edited entry before it)"))
        actual = entry_hash(row)
        if actual != row["content_sha256"]:
            problems.append(Problem(row["id"], f"frozen content was edited (sha256 "
                                    f"{row['content_sha256'][:12]}… recorded, "
                                    f"{actual[:12]}… now)"))
        problems += [Problem(row["id"], msg) for msg in pin_changes(db, row, models)]
        prev = row["content_sha256"]
    known = {r["id"] for r in entries}
    for dev in rows.deviations(db):
        if dev["amendment_id"] not in known:
            problems.append(Problem(dev["amendment_id"], f"deviation {dev['id']} refers to a "
                                    f"removed amendment"))
    return problems


def pin_changes(db: Database, row: Mapping[str, Any],
                models: Mapping[str, ModelSpec]) -> list[str]:
    """What changed since a frozen amendment pinned it, one line each."""
    pinned = row.get("pins") or {}
    try:
        now = pins_for(db, row["scope"], models)
    except LabError as exc:
        return [f"a pinned item can no longer be read: {exc}"]
    out = []
    for group, items in pinned.items():
        if group == PINNED_TEXTS:  # the texts behind the "prompts" hashes, for diffs
            continue
        for name, digest in items.items():
            current = now.get(group, {}).get(name)
            if current != digest:
                if group == PACK_PIN:
                    out.append(f"the active prompt pack changed since {row['id']} was "
                               f"frozen ({_pack_name(digest)} → {_pack_name(current)})")
                    continue
                label = name if group == "prompts" else f"{group[:-1]} {name}"
                state = "was removed" if current is None else (
                    f"changed since {row['id']} was frozen (sha256 {digest[:4]}… → "
                    f"{current[:4]}…)")
                out.append(f"{label} {state}")
    for name in now.get("prompts", {}):
        if name not in pinned.get("prompts", {}):
            out.append(f"{name} was added since {row['id']} was frozen")
    return out


def _pack_name(sha: str | None) -> str:
    """A pinned pack as shown: "built-in", or "pack" and its sha256's first 12 digits."""
    return BUILTIN if sha in (None, BUILTIN) else f"pack {str(sha)[:12]}…"


def gate(db: Database, amendment_id: str | None, cells: list[Any],
         models: Mapping[str, ModelSpec]) -> str:
    """Check an enqueue against the pre-registration; returns "governed" or "exploratory".

    Args:
        cells: the CellSpec list of the grid.

    Raises:
        GateError: a draft amendment, a cell outside its scope, a pinned file or
            spec that changed (unless a deviation was logged), or a held-out question
            set without a governing amendment.
    """
    if amendment_id is None:
        for cell in cells:
            if cell.question_set and store.question_set(db, cell.question_set)["held_out"]:
                raise GateError(f"question set {cell.question_set} is held-out: enqueue it "
                                f"under a frozen amendment that governs it (--amendment ID)")
        return "exploratory"
    row = rows.amendment(db, amendment_id)
    if row["state"] != "frozen":
        raise GateError(f"{amendment_id} is a draft: freeze it (lab prereg freeze "
                        f"{amendment_id}) before the runs it governs")
    for cell in cells:
        why = in_scope(row["scope"], cell.model.name, cell.condition, cell.regime.name,
                       cell.question_set, cell.budget, cell.seed, cell.replicate)
        if why:
            raise GateError(f"outside {amendment_id}: {why}")
    changes = pin_changes(db, row, models)
    if changes and not rows.deviations(db, amendment_id):
        raise GateError(f"{changes[0]}: log a deviation (lab prereg deviation {amendment_id} "
                        f"\"…\") or freeze a new amendment")
    return "governed"
