"""Dataset records: questions with their per-question knowledge-base paragraphs.

The dataclasses here are the shared vocabulary of the core; the HotpotQA loader,
record validation and question-set sampling live beside them. The bundled demo
data is generated in core.demo_data.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from core import json_text
from core.errors import DataError

TASK_HOTPOTQA = "hotpotqa"
TASK_FEVER = "fever"
TASKS: tuple[str, ...] = (TASK_HOTPOTQA, TASK_FEVER)
"""Task kinds: what the agent is asked to do and how its answer is scored."""
CLAIM_TYPE = "claim"
"""The `type` of a FEVER claim (HotpotQA's types are "bridge" and "comparison")."""
NEI_LABEL = "NOT ENOUGH INFO"


def task_for_type(qtype: str) -> str:
    """The task of a stored question by its type (the questions table's ``type``):
    "fever" for a claim, else "hotpotqa"."""
    return TASK_FEVER if qtype == CLAIM_TYPE else TASK_HOTPOTQA


_JSON_TYPES = ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string"),
               (list, "array"), (dict, "object"), (type(None), "null"))


@dataclass(frozen=True)
class Paragraph:
    """One knowledge-base page: a title and its sentences."""

    title: str
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        """The sentences joined with single spaces."""
        return " ".join(s.strip() for s in self.sentences if s.strip())


@dataclass(frozen=True)
class Question:
    """A question (or claim) with its knowledge base and supporting facts.

    Attributes:
        id: dataset id (HotpotQA `_id`).
        dataset: dataset name the question was imported under (e.g. "hotpotqa", "demo").
        question: question text.
        answer: gold answer.
        type: HotpotQA type ("bridge", "comparison") or "" when unknown.
        level: HotpotQA level or "".
        paragraphs: the knowledge base, in the file's order.
        supporting_facts: (title, sentence index) pairs.
        aliases: other accepted answers (MuSiQue's `answer_aliases`), scored like
            `answer` where a scorer takes several references (`lab traces`).
        supporting_paragraphs: indices of the supporting paragraphs where the dataset
            marks paragraphs rather than titles (MuSiQue's `is_supporting`); empty:
            the titles of the supporting facts mark them.
    """

    id: str
    dataset: str
    question: str
    answer: str
    type: str
    level: str
    paragraphs: tuple[Paragraph, ...]
    supporting_facts: tuple[tuple[str, int], ...]
    aliases: tuple[str, ...] = ()
    supporting_paragraphs: tuple[int, ...] = ()

    @property
    def task(self) -> str:
        """The task kind: "fever" for a claim (type "claim"), else "hotpotqa"."""
        return task_for_type(self.type)

    @property
    def gold_titles(self) -> frozenset[str]:
        """Titles named in the supporting facts."""
        return frozenset(title for title, _ in self.supporting_facts)

    def is_gold(self, index: int) -> bool:
        """Whether paragraph `index` is a gold (supporting) paragraph."""
        return self.paragraphs[index].title in self.gold_titles


# --------------------------------------------------------------------------- records


def question_to_record(q: Question) -> dict[str, Any]:
    """Convert a question to a JSON-ready record in the official HotpotQA format.

    Args:
        q: the question.

    Returns:
        A dict with keys `_id`, `question`, `answer`, `type`, `level`,
        `supporting_facts` (`[[title, sent_id], ...]`) and `context`
        (`[[title, [sentence, ...]], ...]`); `answer_aliases` and
        `supporting_paragraphs` only when the question has them (MuSiQue), so every
        other record reads as before.
    """
    record: dict[str, Any] = {
        "_id": q.id,
        "question": q.question,
        "answer": q.answer,
        "type": q.type,
        "level": q.level,
        "supporting_facts": [[title, sent_id] for title, sent_id in q.supporting_facts],
        "context": [[p.title, list(p.sentences)] for p in q.paragraphs],
    }
    if q.aliases:
        record["answer_aliases"] = list(q.aliases)
    if q.supporting_paragraphs:
        record["supporting_paragraphs"] = list(q.supporting_paragraphs)
    return record


def question_from_record(record: Any, dataset: str) -> Question:
    """Validate one record (official or Hugging Face format) and build a Question.

    Args:
        record: a decoded JSON object.
        dataset: the dataset name to stamp on the question.

    Returns:
        The validated question.

    Raises:
        DataError: the record is malformed; the message names the field only
            (callers add the file and record index).
    """
    if not isinstance(record, dict):
        raise DataError(f"must be a JSON object, got {_json_type(record)}")
    if kind := other_kind(record, "hotpotqa"):
        raise DataError(kind)
    qid = _check_id(record)
    question = _check_text(record, "question")
    answer = _check_text(record, "answer")
    qtype = _check_optional_text(record, "type")
    level = _check_optional_text(record, "level")
    paragraphs = _check_context(_require(record, "context"))
    # a NOT ENOUGH INFO claim has no evidence: the one record without supporting facts
    no_evidence = qtype == CLAIM_TYPE and answer == NEI_LABEL
    facts = _check_supporting_facts(_require(record, "supporting_facts"), no_evidence)
    titles = {p.title for p in paragraphs}
    for i, (title, _) in enumerate(facts):
        if title not in titles:
            raise DataError(f"supporting_facts[{i}] names title {title!r} not in context")
    aliases = _check_aliases(record.get("answer_aliases", []))
    marked = record.get("supporting_paragraphs", [])
    if not isinstance(marked, list) or not all(
            _is_sent_id(i) and i < len(paragraphs) for i in marked):
        raise DataError(f"supporting_paragraphs must be a list of paragraph indices "
                        f"0..{len(paragraphs) - 1}")
    return Question(id=qid, dataset=dataset, question=question, answer=answer, type=qtype,
                    level=level, paragraphs=paragraphs, supporting_facts=facts,
                    aliases=aliases, supporting_paragraphs=tuple(marked))


class RecordKind(NamedTuple):
    """One import's kind of record, as a file given to another import names it."""

    fields: tuple[str, ...]
    """Fields only records of this kind have (all of them)."""
    noun: str
    """What one is, e.g. "a FEVER claim"."""
    marks: str
    """The fields the error names, e.g. "claim, label"."""
    command: str
    """The command that imports it."""


RECORD_KINDS = {
    "hotpotqa": RecordKind(("context", "supporting_facts"), "a HotpotQA question",
                           "context, supporting_facts", "lab data import hotpotqa FILE"),
    "musique": RecordKind(("paragraphs", "question"), "a MuSiQue question", "paragraphs",
                          "lab data import musique FILE"),
    "fever": RecordKind(("claim", "label"), "a FEVER claim", "claim, label",
                        "FEVER is imported from its folder, lab data import fever DIR"),
    "episodes": RecordKind(("question_id", "actions"), "a released episode",
                           "question_id, actions", "lab data import episodes FILE"),
}
"""Each import's kind of record, so a file given to the wrong import says which kind it
is and the command that reads it."""


def other_kind(record: Any, expected: str) -> str:
    """The error for a record of another kind than `expected` (a key of RECORD_KINDS): what
    it is and the command that imports it; "" if it is not recognisably another kind."""
    if not isinstance(record, dict):
        return ""
    mine = RECORD_KINDS[expected]
    if all(f in record for f in mine.fields):
        return ""
    for kind, other in RECORD_KINDS.items():
        if kind != expected and all(f in record for f in other.fields):
            return f"{other.noun} ({other.marks}), not {mine.noun}: {other.command}"
    return ""


def _check_aliases(value: Any) -> tuple[str, ...]:
    """`answer_aliases`: a list of strings (empty ones dropped)."""
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise DataError("answer_aliases must be a list of strings")
    return tuple(a for a in value if a.strip())


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "value")


def _require(record: dict[str, Any], key: str) -> Any:
    """The value under `key`, or a DataError naming the missing field."""
    if key not in record:
        raise DataError(f"missing field {key!r}")
    return record[key]


def _check_id(record: dict[str, Any]) -> str:
    """The record id from `_id` (official) or `id` (Hugging Face)."""
    if "_id" in record:
        key = "_id"
    elif "id" in record:
        key = "id"
    else:
        raise DataError("missing field '_id' (or 'id')")
    return _non_empty(record[key], key)


def _check_text(record: dict[str, Any], key: str) -> str:
    """A required non-empty string field."""
    return _non_empty(_require(record, key), key)


def _non_empty(value: Any, where: str) -> str:
    """`value` if it is a non-empty string, else a DataError about `where`."""
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where} must be a non-empty string")
    return value


def _check_optional_text(record: dict[str, Any], key: str) -> str:
    """An optional string field; absent or null gives ""."""
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DataError(f"{key} must be a string")
    return value


def _is_sent_id(value: Any) -> bool:
    """Whether `value` is a valid sentence index (an int >= 0, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_context(context: Any) -> tuple[Paragraph, ...]:
    """Validate `context` in either format and return its paragraphs."""
    if isinstance(context, dict):
        pairs = _context_pairs_hf(context)
    elif isinstance(context, list):
        pairs = _context_pairs_official(context)
    else:
        raise DataError(
            "context must be a list of [title, [sentences]] or an object "
            "{title: [...], sentences: [[...], ...]}"
        )
    if not pairs:
        raise DataError("context must not be empty")
    return tuple(Paragraph(title=t, sentences=tuple(s)) for t, s in pairs)


def _context_pairs_official(context: list[Any]) -> list[tuple[str, list[str]]]:
    """Check `[[title, [sentence, ...]], ...]`."""
    pairs = []
    for i, item in enumerate(context):
        if not (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], list)
        ):
            raise DataError(f"context[{i}] must be [title, [sentences]]")
        _check_paragraph(f"context[{i}]", item[0], item[1])
        pairs.append((item[0], item[1]))
    return pairs


def _context_pairs_hf(context: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Check `{title: [...], sentences: [[...], ...]}`."""
    titles = _hf_column(context, "context", "title")
    sentences = _hf_column(context, "context", "sentences")
    if len(titles) != len(sentences):
        raise DataError(
            f"context.title and context.sentences differ in length "
            f"({len(titles)} vs {len(sentences)})"
        )
    for i, (title, sents) in enumerate(zip(titles, sentences)):
        if not isinstance(title, str):
            raise DataError(f"context.title[{i}] must be a string")
        if not isinstance(sents, list):
            raise DataError(f"context.sentences[{i}] must be a list of strings")
        _check_paragraph(f"context.title[{i}]", title, sents)
    return list(zip(titles, sentences))


def _hf_column(obj: dict[str, Any], name: str, key: str) -> list[Any]:
    """One list column of a Hugging Face struct field."""
    if key not in obj:
        raise DataError(f"missing field '{name}.{key}'")
    if not isinstance(obj[key], list):
        raise DataError(f"{name}.{key} must be a list")
    return obj[key]


def _check_paragraph(where: str, title: str, sentences: list[Any]) -> None:
    """A paragraph needs a non-empty title and string sentences."""
    _non_empty(title, f"{where} title")
    for j, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise DataError(f"{where} sentence {j} must be a string")


def _check_supporting_facts(facts: Any, may_be_empty: bool = False
                            ) -> tuple[tuple[str, int], ...]:
    """Validate `supporting_facts` in either format (empty only when `may_be_empty`)."""
    if isinstance(facts, dict):
        titles = _hf_column(facts, "supporting_facts", "title")
        sent_ids = _hf_column(facts, "supporting_facts", "sent_id")
        if len(titles) != len(sent_ids):
            raise DataError(
                "supporting_facts.title and supporting_facts.sent_id differ in length "
                f"({len(titles)} vs {len(sent_ids)})"
            )
        pairs = list(zip(titles, sent_ids))
        bad_title = "supporting_facts.title[{}] must be a non-empty string"
        bad_sent_id = "supporting_facts.sent_id[{}] must be an integer >= 0"
    elif isinstance(facts, list):
        for i, item in enumerate(facts):
            if not (isinstance(item, list) and len(item) == 2):
                raise DataError(f"supporting_facts[{i}] must be [title, sent_id]")
        pairs = [(item[0], item[1]) for item in facts]
        bad_title = "supporting_facts[{}] title must be a non-empty string"
        bad_sent_id = "supporting_facts[{}] sent_id must be an integer >= 0"
    else:
        raise DataError(
            "supporting_facts must be a list of [title, sent_id] or an object "
            "{title: [...], sent_id: [...]}"
        )
    if not pairs and not may_be_empty:
        raise DataError("supporting_facts must not be empty")
    for i, (title, sent_id) in enumerate(pairs):
        if not isinstance(title, str) or not title.strip():
            raise DataError(bad_title.format(i))
        if not _is_sent_id(sent_id):
            raise DataError(bad_sent_id.format(i))
    return tuple(pairs)


# --------------------------------------------------------------------------- files


def load_hotpotqa(path: Path, dataset: str = "hotpotqa") -> list[Question]:
    """Read and strictly validate a HotpotQA file (JSON list or JSONL).

    Both the official record format and the Hugging Face column format are
    accepted, also mixed. Every record is validated before anything is returned.

    Args:
        path: a `.json` file holding a list of records, or a `.jsonl` file with
            one record per line (blank lines are ignored). A file whose name does
            not end in `.jsonl` is tried as JSON first, then as JSONL.
        dataset: the dataset name stamped on every question.

    Returns:
        The questions in file order.

    Raises:
        DataError: one line naming the file, and the record index (0-based) or
            line and the problem, for the first problem found.
    """
    path = Path(path)
    records = _read_records(path)
    questions: list[Question] = []
    first_seen: dict[str, int] = {}
    for i, record in enumerate(records):
        try:
            q = question_from_record(record, dataset)
            if q.task != TASK_HOTPOTQA:
                raise DataError(f"type {CLAIM_TYPE!r} marks a FEVER claim; import FEVER "
                                f"with `lab data import fever DIR`")
        except DataError as exc:
            raise DataError(f"{path}: record {i}: {exc}") from None
        if q.id in first_seen:
            raise DataError(
                f"{path}: record {i}: duplicate id {q.id!r} (first at record {first_seen[q.id]})"
            )
        first_seen[q.id] = i
        questions.append(q)
    return questions


@dataclass(frozen=True)
class MusiqueFile:
    """A validated MuSiQue file: its answerable questions and the unanswerable ones skipped."""

    questions: tuple[Question, ...]
    skipped_unanswerable: int


def load_musique(path: Path, dataset: str = "musique") -> MusiqueFile:
    """Read and strictly validate a MuSiQue file (the answerable dev JSONL, or a JSON list).

    Each record has `id`, `question`, `answer`, `answer_aliases` (a list, may be empty)
    and `paragraphs`: `[{"idx", "title", "paragraph_text", "is_supporting"}, ...]`.
    A paragraph becomes a one-sentence page; the supporting paragraphs are marked by
    index (`Question.supporting_paragraphs`, MuSiQue titles may repeat) and by title
    in the supporting facts (for the ReAct side). A record with `answerable: false`
    (the full MuSiQue files) is skipped and counted. The hop type (the id's prefix,
    e.g. "2hop") is stored as the question's type.

    Args:
        path: the file (`.jsonl`, or JSON holding a list).
        dataset: the dataset name stamped on every question.

    Returns:
        The questions in file order, and how many unanswerable records were skipped.

    Raises:
        DataError: one line naming the file, the record index (0-based) and the field.
    """
    path = Path(path)
    records = _read_records(path)
    questions: list[Question] = []
    first_seen: dict[str, int] = {}
    skipped = 0
    for i, record in enumerate(records):
        try:
            if isinstance(record, dict) and record.get("answerable", True) is False:
                skipped += 1
                continue
            q = _musique_question(record, dataset)
        except DataError as exc:
            raise DataError(f"{path}: record {i}: {exc}") from None
        if q.id in first_seen:
            raise DataError(
                f"{path}: record {i}: duplicate id {q.id!r} (first at record {first_seen[q.id]})")
        first_seen[q.id] = i
        questions.append(q)
    if not questions:
        raise DataError(f"{path}: no answerable records ({skipped} with answerable false)")
    return MusiqueFile(tuple(questions), skipped)


def _musique_question(record: Any, dataset: str) -> Question:
    """One MuSiQue record as a Question (errors name the field only)."""
    if not isinstance(record, dict):
        raise DataError(f"must be a JSON object, got {_json_type(record)}")
    if kind := other_kind(record, "musique"):
        raise DataError(kind)
    qid = _non_empty(_require(record, "id"), "id")
    question = _check_text(record, "question")
    answer = _check_text(record, "answer")
    aliases = _check_aliases(record.get("answer_aliases", []))
    paras = _require(record, "paragraphs")
    if not isinstance(paras, list) or not paras:
        raise DataError("paragraphs must be a non-empty list of objects")
    pages: list[Paragraph] = []
    supporting: list[int] = []
    for j, para in enumerate(paras):
        where = f"paragraphs[{j}]"
        if not isinstance(para, dict):
            raise DataError(f"{where} must be an object, got {_json_type(para)}")
        title = _non_empty(para.get("title"), f"{where}.title")
        text = para.get("paragraph_text")
        if not isinstance(text, str):
            raise DataError(f"{where}.paragraph_text must be a string")
        flag = para.get("is_supporting", False)
        if not isinstance(flag, bool):
            raise DataError(f"{where}.is_supporting must be true or false")
        pages.append(Paragraph(title=title, sentences=(text,)))
        if flag:
            supporting.append(j)
    if not supporting:
        raise DataError("no paragraph has is_supporting true (an answerable record names its "
                        "supporting paragraphs)")
    facts = tuple(dict.fromkeys((pages[j].title, 0) for j in supporting))
    hops = qid.split("__", 1)[0] if "__" in qid else ""
    return Question(id=qid, dataset=dataset, question=question, answer=answer, type=hops,
                    level="", paragraphs=tuple(pages), supporting_facts=facts,
                    aliases=aliases, supporting_paragraphs=tuple(supporting))


def read_data_text(path: Path) -> str:
    """A data file's UTF-8 text, with one-line errors.

    Raises:
        DataError: the file is missing, unreadable, not UTF-8 or empty.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        raise DataError(f"{path}: file is empty")
    return text


def _read_records(path: Path) -> list[Any]:
    """Decode a JSON list or JSONL file into a list of raw records."""
    text = read_data_text(path)
    if path.suffix.lower() == ".jsonl":
        return _parse_jsonl(path, text)
    try:
        data = json_text.loads(text)
    except json.JSONDecodeError as exc:
        if _looks_like_jsonl(text):
            return _parse_jsonl(path, text)
        raise DataError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno} "
            f"(char {exc.pos}): {exc.msg}"
        ) from None
    if not isinstance(data, list):
        raise DataError(
            f"{path}: top level must be a JSON list of records, got {_json_type(data)}"
        )
    if not data:
        raise DataError(f"{path}: file holds no records")
    return data


def _looks_like_jsonl(text: str) -> bool:
    """Whether a non-JSON text is plausibly JSONL (first line is one JSON object)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    try:
        return isinstance(json_text.loads(lines[0]), dict)
    except json.JSONDecodeError:
        return False


def _parse_jsonl(path: Path, text: str) -> list[Any]:
    """Decode one JSON value per non-blank line."""
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json_text.loads(line))
        except json.JSONDecodeError as exc:
            msg = f"{exc.msg} (column {exc.colno})"
            raise DataError(f"{path}: line {lineno}: invalid JSON: {msg}") from None
    if not records:
        raise DataError(f"{path}: file holds no records")
    return records


# --------------------------------------------------------------------------- question sets


def sample_ids(
    pool: Sequence[str], n: int, seed: int, exclude: Collection[str] = ()
) -> list[str]:
    """Draw `n` distinct ids from a pool, deterministically.

    The pool is de-duplicated and sorted, excluded ids are removed, and `n` ids are
    drawn without replacement with `random.Random(seed)`, so the same arguments give
    the same list in every Python process.

    Args:
        pool: candidate ids (order and duplicates do not matter).
        n: how many ids to draw (>= 0).
        seed: the sampling seed.
        exclude: ids that must not be drawn (e.g. other question sets).

    Returns:
        The drawn ids, in draw order.

    Raises:
        DataError: `n` is negative or fewer than `n` ids remain after exclusion.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise DataError(f"sample size must be an integer >= 0, got {n!r}")
    excluded = set(exclude)
    unique = sorted(set(pool))
    candidates = [i for i in unique if i not in excluded]
    if len(candidates) < n:
        raise DataError(
            f"cannot sample {n} ids: only {len(candidates)} available "
            f"({len(unique)} in pool, {len(unique) - len(candidates)} excluded)"
        )
    return random.Random(seed).sample(candidates, n)


def ids_hash(ids: Sequence[str]) -> str:
    """The sha256 hex digest of the ids joined by newlines, in the given order.

    Args:
        ids: question ids.

    Returns:
        64 lowercase hex characters.
    """
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()
