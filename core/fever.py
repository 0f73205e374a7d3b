"""FEVER claims (docs/data.md): the claims.jsonl + pages.json loader, claim KBs, balanced sets.

A claim becomes a `Question` of task "fever" (type "claim"): the claim text is the
question, the label (SUPPORTS / REFUTES) the gold answer, its evidence pages are the
gold pages and the sentences the annotation names are the supporting facts. Its
knowledge base is its evidence pages plus `N_OTHER_PAGES` pages drawn from other
claims' evidence pages with a random stream keyed by the claim id, shuffled the same
way, so a claim's KB depends only on its id and the file's pages.

FEVER's tokenised brackets (-LRB-, -RRB-, -LSB-, -RSB-, -LCB-, -RCB-, -COLON-) are
turned back into characters and underscores in page ids into spaces, so the agent
sees "Soul Food (film)" rather than "Soul_Food_-LRB-film-RRB-".

Pages may hold only some lines of the real article (the shared sample holds only the
gold sentence). The loader copes: a page's sentences are its known lines in line
order, then its unplaced sentences; a claim's evidence is every known line the
annotation names plus the sentence equal to its `gold_evidence_sentence` text; a claim
none of whose evidence pages is in pages.json gets a page made of that gold sentence,
titled by its evidence page whose title (without a disambiguation such as "(film)")
shares the most words with the sentence, ties to the first listed.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import json_text
from core.canonical import keyed_rng
from core.data import (
    CLAIM_TYPE,
    NEI_LABEL,
    Paragraph,
    Question,
    other_kind,
    read_data_text,
    sample_ids,
)
from core.errors import DataError

CLAIMS_FILE = "claims.jsonl"
PAGES_FILE = "pages.json"
N_OTHER_PAGES = 8
"""Pages drawn from other claims into each claim's knowledge base."""
VERDICTS: tuple[str, ...] = ("SUPPORTS", "REFUTES")
LABELS: tuple[str, ...] = (*VERDICTS, NEI_LABEL)

_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}",
        "-COLON-": ":"}
_PTB_RE = re.compile("|".join(map(re.escape, _PTB)))
_WORD_RE = re.compile(r"\w+")
_PAREN_RE = re.compile(r"\([^)]*\)")  # a title's disambiguation, "(film)"


@dataclass(frozen=True)
class Claim:
    """A claim with its evidence, before its knowledge base is drawn.

    Attributes:
        id: FEVER claim id, as a string.
        claim: the claim text.
        label: SUPPORTS, REFUTES or NOT ENOUGH INFO.
        facts: (page title, sentence index) of each evidence sentence; the pages
            named here are the claim's own (gold) pages.
    """

    id: str
    claim: str
    label: str
    facts: tuple[tuple[str, int], ...]

    @property
    def titles(self) -> tuple[str, ...]:
        """The evidence pages' titles, in first-named order."""
        return tuple(dict.fromkeys(title for title, _ in self.facts))


@dataclass(frozen=True)
class FeverImport:
    """What `load_fever` read.

    Attributes:
        questions: the claims as questions, in file order.
        skipped_nei: NOT ENOUGH INFO claims left out (without `include_nei`).
        skipped_no_text: SUPPORTS/REFUTES claims left out because no sentence of
            their evidence is in pages.json and they carry no gold sentence.
    """

    questions: tuple[Question, ...]
    skipped_nei: int
    skipped_no_text: int


def readable(text: str) -> str:
    """FEVER's bracket tokens as characters (-LRB- → "(", -COLON- → ":").

    Args:
        text: a sentence or a page id.

    Returns:
        The text with every bracket token replaced.
    """
    return _PTB_RE.sub(lambda m: _PTB[m.group(0)], text)


def page_title(page_id: str) -> str:
    """The title an agent sees for a page id: "Soul_Food_-LRB-film-RRB-" → "Soul Food (film)"."""
    return readable(page_id.replace("_", " ")).strip()


def claim_questions(claims: Sequence[Claim], pages: Mapping[str, Sequence[str]],
                    dataset: str) -> list[Question]:
    """Build each claim's question: its evidence pages plus pages of other claims.

    The other pages are `N_OTHER_PAGES` titles drawn without replacement from the
    sorted evidence titles of the other claims (fewer when fewer exist), then the KB
    is shuffled; both with `random.Random` keyed by blake2b of the claim id.

    Args:
        claims: the claims (ids unique).
        pages: sentences per page title; every title a claim names must be here.
        dataset: dataset name stamped on the questions.

    Returns:
        One question per claim, in the claims' order.
    """
    evidence_titles = sorted({title for c in claims for title in c.titles})
    out = []
    for c in claims:
        own = c.titles
        others = [t for t in evidence_titles if t not in own]
        rng = _claim_rng(c.id)
        titles = [*own, *rng.sample(others, min(N_OTHER_PAGES, len(others)))]
        rng.shuffle(titles)
        paragraphs = tuple(Paragraph(t, tuple(pages[t])) for t in titles)
        out.append(Question(id=c.id, dataset=dataset, question=c.claim, answer=c.label,
                            type=CLAIM_TYPE, level="", paragraphs=paragraphs,
                            supporting_facts=c.facts))
    return out


def _claim_rng(claim_id: str) -> random.Random:
    """The random stream of one claim's KB draw (same in every process)."""
    return keyed_rng("fever-kb", claim_id)


# --------------------------------------------------------------------------- files


def load_fever(directory: Path, dataset: str = "fever", include_nei: bool = False) -> FeverImport:
    """Read and validate a FEVER directory (claims.jsonl and pages.json).

    claims.jsonl holds one claim per line: `id`, `claim`, `label` (SUPPORTS, REFUTES
    or NOT ENOUGH INFO), `evidence` as FEVER's `[[[annotation_id, evidence_id, page,
    line], ...], ...]` (or null), and optionally `evidence_pages` and `gold_evidence_sentence`
    (`{page, line, text}`). pages.json maps a FEVER page id to `{"lines": {line:
    sentence}, "unplaced": [sentence, ...]}`. Everything is validated before anything
    is returned.

    Args:
        directory: the folder holding both files.
        dataset: dataset name stamped on every claim.
        include_nei: keep NOT ENOUGH INFO claims (KB = `N_OTHER_PAGES` drawn pages).

    Returns:
        The questions and how many claims were skipped.

    Raises:
        DataError: one line naming the file, the record (0-based) or page and the
            problem, for the first problem found.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"{directory}: not a directory (expected a folder holding "
                        f"{CLAIMS_FILE} and {PAGES_FILE})")
    missing = [name for name in (CLAIMS_FILE, PAGES_FILE) if not (directory / name).exists()]
    if missing:
        raise DataError(f"{directory}: no {' and no '.join(missing)} (a FEVER folder holds "
                        f"{CLAIMS_FILE} and {PAGES_FILE}); {_holds(directory)}")
    pages = _read_pages(directory / PAGES_FILE)
    claims_path = directory / CLAIMS_FILE
    records = _read_jsonl(claims_path)
    titles = {pid: page_title(pid) for pid in pages}
    sentences: dict[str, list[str]] = {titles[pid]: _page_sentences(p) for pid, p in pages.items()}
    claims: list[Claim] = []
    first_seen: dict[str, int] = {}
    skipped_nei = skipped_text = 0
    for i, record in enumerate(records):
        try:
            claim = _claim(record, pages, titles, sentences)
        except DataError as exc:
            raise DataError(f"{claims_path}: record {i}: {exc}") from None
        if claim.id in first_seen:
            raise DataError(f"{claims_path}: record {i}: duplicate id {claim.id!r} "
                            f"(first at record {first_seen[claim.id]})")
        first_seen[claim.id] = i
        if claim.label == NEI_LABEL and not include_nei:
            skipped_nei += 1
        elif claim.label != NEI_LABEL and not claim.facts:
            skipped_text += 1
        else:
            claims.append(claim)
    questions = claim_questions(claims, sentences, dataset)
    return FeverImport(tuple(questions), skipped_nei, skipped_text)


def _holds(directory: Path, shown: int = 4) -> str:
    """What `directory` holds, for the error of a folder that is not a FEVER one: its
    first names (inert: `core.inert` is applied where the error is printed) and how
    many more."""
    names = sorted(p.name for p in directory.iterdir())
    if not names:
        return "it is empty"
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"it holds {', '.join(names[:shown])}{more}"


def _read_pages(path: Path) -> dict[str, dict[str, Any]]:
    """Decode and check pages.json."""
    data = _decode(path, read_data_text(path))
    if not isinstance(data, dict):
        raise DataError(f"{path}: top level must be an object mapping page ids to "
                        f'{{"lines": {{...}}, "unplaced": [...]}}')
    for pid, page in data.items():
        where = f"{path}: page {pid!r}"
        if not pid.strip():
            raise DataError(f"{path}: a page id is empty")
        if not isinstance(page, dict):
            raise DataError(f"{where}: must be an object with lines and unplaced")
        lines = page.get("lines", {})
        if not isinstance(lines, dict):
            raise DataError(f"{where}: lines must be an object {{line number: sentence}}")
        for key, sentence in lines.items():
            if not key.isdigit():
                raise DataError(f"{where}: line key {key!r} must be a line number")
            if not isinstance(sentence, str):
                raise DataError(f"{where}: line {key} must be a string")
        unplaced = page.get("unplaced", [])
        if not isinstance(unplaced, list) or not all(isinstance(s, str) for s in unplaced):
            raise DataError(f"{where}: unplaced must be a list of strings")
    return data


def _page_sentences(page: Mapping[str, Any]) -> list[str]:
    """A page's known lines in line order, then its unplaced sentences."""
    lines = page.get("lines", {})
    known = [lines[k] for k in sorted(lines, key=int)]
    return [readable(s) for s in (*known, *page.get("unplaced", []))]


def _line_sentence(page: Mapping[str, Any], line: int) -> str | None:
    """The readable sentence of `line` in a pages.json page, or None when absent."""
    sentence = page.get("lines", {}).get(str(line))
    return None if sentence is None else readable(sentence)


def _claim(record: Any, pages: Mapping[str, Mapping[str, Any]], titles: dict[str, str],
           sentences: dict[str, list[str]]) -> Claim:
    """Validate one claims.jsonl record and find its evidence sentences.

    A gold sentence found in no page is added to `sentences` (and `titles`) as the
    claim's own page, so later claims see it too.
    """
    if not isinstance(record, dict):
        raise DataError("must be a JSON object")
    if kind := other_kind(record, "fever"):
        raise DataError(kind)
    cid = record.get("id")
    if isinstance(cid, bool) or not isinstance(cid, (int, str)) or not str(cid).strip():
        raise DataError("id must be a number or a non-empty string")
    text = record.get("claim")
    if not isinstance(text, str) or not text.strip():
        raise DataError("claim must be a non-empty string")
    label = record.get("label")
    if label not in LABELS:
        raise DataError(f"label must be one of {', '.join(LABELS)}, got {label!r}")
    sets = _evidence(record)
    named = [pid for ann in sets for _, _, pid, _ in ann if pid is not None]
    listed = record.get("evidence_pages", [])
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise DataError("evidence_pages must be a list of page ids")
    page_ids = list(dict.fromkeys([*listed, *named]))
    if label == NEI_LABEL:
        return Claim(str(cid), readable(text), label, ())
    facts: list[tuple[str, int]] = []
    for ann in sets:
        for _, _, pid, line in ann:
            if pid is not None and pid in pages and line is not None:
                sentence = _line_sentence(pages[pid], line)
                if sentence is not None:
                    facts.append((titles[pid], sentences[titles[pid]].index(sentence)))
    gold = _gold_sentence(record)
    if gold is not None:
        facts.extend(_gold_fact(gold, page_ids, titles, sentences))
    return Claim(str(cid), readable(text), label, tuple(dict.fromkeys(facts)))


def _evidence(record: Mapping[str, Any]) -> list[list[tuple[Any, Any, str | None, int | None]]]:
    """FEVER's evidence annotation: sets of [annotation_id, evidence_id, page, line]."""
    sets = record.get("evidence")
    if sets is None:  # claims outside paper_dev carry no sentence-level annotation
        return []
    shape = ("evidence must be a list of evidence sets "
             "[[annotation_id, evidence_id, page, line], ...]")
    if not isinstance(sets, list):
        raise DataError(shape)
    out = []
    for j, ann in enumerate(sets):
        if not isinstance(ann, list):
            raise DataError(f"evidence[{j}]: {shape}")
        items = []
        for item in ann:
            if not (isinstance(item, list) and len(item) == 4):
                raise DataError(f"evidence[{j}]: {shape}")
            pid, line = item[2], item[3]
            if pid is not None and not isinstance(pid, str):
                raise DataError(f"evidence[{j}]: page must be a string or null, got {pid!r}")
            if line is not None and (isinstance(line, bool) or not isinstance(line, int)):
                raise DataError(f"evidence[{j}]: line must be an integer or null, got {line!r}")
            items.append((item[0], item[1], pid, line))
        out.append(items)
    return out


def _gold_sentence(record: Mapping[str, Any]) -> tuple[str | None, str] | None:
    """(page id or None, readable text) of `gold_evidence_sentence`, when present."""
    gold = record.get("gold_evidence_sentence")
    if gold is None:
        return None
    if not isinstance(gold, dict) or not isinstance(gold.get("text"), str):
        raise DataError("gold_evidence_sentence must be an object with a text string")
    page = gold.get("page")
    if page is not None and not isinstance(page, str):
        raise DataError("gold_evidence_sentence.page must be a string or null")
    return page, readable(gold["text"])


def _gold_fact(gold: tuple[str | None, str], page_ids: Sequence[str], titles: dict[str, str],
               sentences: dict[str, list[str]]) -> list[tuple[str, int]]:
    """The gold sentence as a fact: found in an evidence page, or given a page of its own."""
    page, text = gold
    candidates = [page] if page is not None else list(page_ids)
    for pid in candidates:
        title = titles.get(pid)
        if title is not None and text in sentences[title]:
            return [(title, sentences[title].index(text))]
    if not candidates:
        return []
    words = set(_WORD_RE.findall(text.lower()))
    best = max(candidates, key=lambda pid: (
        len(words & set(_WORD_RE.findall(_PAREN_RE.sub("", page_title(pid)).lower()))),
        -candidates.index(pid)))
    title = titles.setdefault(best, page_title(best))
    sentences.setdefault(title, []).append(text)
    return [(title, len(sentences[title]) - 1)]


def _decode(path: Path, text: str) -> Any:
    """One JSON document."""
    try:
        return json_text.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                        f"{exc.msg}") from None


def _read_jsonl(path: Path) -> list[Any]:
    """One JSON value per non-blank line (record i = the i-th non-blank line)."""
    records = []
    for lineno, line in enumerate(read_data_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json_text.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {lineno}: invalid JSON: {exc.msg} "
                            f"(column {exc.colno})") from None
    return records


# --------------------------------------------------------------------------- question sets


def balanced_sample(labels: Mapping[str, str], n: int, seed: int,
                    exclude: Collection[str] = ()) -> list[str]:
    """Draw `n` claim ids with every label present equally often.

    Each label's ids are drawn with `sample_ids(ids, n // labels, seed, exclude)`;
    the union is then shuffled with `random.Random(seed)`.

    Args:
        labels: gold label per claim id (the dataset's claims).
        n: set size; must be a multiple of the number of labels present.
        seed: sampling seed.
        exclude: ids that must not be drawn.

    Returns:
        The drawn ids.

    Raises:
        DataError: `n` not a multiple of the label count, or too few claims of a label.
    """
    groups: dict[str, list[str]] = {}
    for cid, label in labels.items():
        groups.setdefault(label, []).append(cid)
    names = sorted(groups)
    if not names or n % len(names):
        raise DataError(f"a balanced set draws the same number of claims per label "
                        f"({', '.join(names) or 'none'}): --n must be a multiple of "
                        f"{len(names) or 1}, got {n}")
    ids: list[str] = []
    for label in names:
        try:
            ids += sample_ids(groups[label], n // len(names), seed, exclude)
        except DataError as exc:
            raise DataError(f"{label} claims: {exc}") from None
    random.Random(seed).shuffle(ids)
    return ids
