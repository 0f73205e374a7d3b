"""Deterministic ReAct action parser: no model calls, regexes compiled once.

A reply is read as: the FIRST `Action:` key (with the `Action Input:` that follows it),
or, when the reply has no usable `Action:` key, the first `search[...]`-style one-liner.
Everything after that first action (a simulated `Observation:`, a second Thought/Action)
is ignored. `None` means no readable action, which the episode loop counts as a format
failure.

Decisions on ambiguous shapes (the tests pin each one):
- Keys are case-insensitive, may be numbered as in the ReAct paper (`Action 1:`; `Act 1:`
  is accepted too) and may be wrapped in markdown emphasis (`**Action:**`, `**Action**:`).
- An `Action:` key that starts a line is always the action; one in the middle of a line
  (`Thought: ... Action: search[X]`) counts only when it yields a complete action (known
  tool name and, except for finish, an argument), so prose such as "the next action:
  search for it" is skipped.
- A non-empty bracket/parenthesis argument on the Action line (`search[X]`, `search("X")`)
  wins over any `Action Input`; an empty one (`search()`, `finish[]`) falls back to the
  `Action Input` when there is one.
- Text after the tool name on the Action line (`Action: search Barlow`) is ignored; the
  argument must come from brackets or from `Action Input` (which may sit on the same line).
- Search/lookup with an empty or missing argument is unreadable (None); an empty finish is
  a valid finish with argument "" (the scorer flags it as a placeholder).
- An `Action Input` spanning several lines keeps only its first non-empty line; one
  wrapped in quotes, backticks, emphasis or code fences is unwrapped. A JSON object
  (`{"query": "X"}`) is replaced by its string value under query/keyword/answer/input/
  q/text/term/title, or by its only string value; anything else stays verbatim.
- `<think>...</think>` blocks are removed before parsing (an action inside reasoning
  is not an action); a stray `</think>` drops everything before it; an unclosed
  `<think>` tag is dropped but its text kept.
- `decision` is the last `DECISION: CONTINUE|ANSWER_NOW` before the action (`ANSWER NOW`
  and `ANSWER-NOW` read as ANSWER_NOW); that key and the rest of its line are removed
  from `thought`. The decide arm reads its decision from its own decision turn
  instead (`parse_decision`, the last such line of that reply).

Search-R1's format (`parse_search_r1`, a model whose registry entry says
`prompt_format = "search_r1"`): the first `<search>q</search>` is search[q],
`<backup_search>q</backup_search>` backup_search[q] and `<answer>a</answer>`
finish[a]. Tags inside `<think>` blocks are reasoning, not actions; the thought is the
reasoning (think blocks' text and any text before the tag). A final tag left open
(generation stopped at `</search>`) reads to the end of the reply. Whitespace in the
argument is collapsed; an empty search is unreadable, an empty answer a finish with "".
The same DECISION line is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core import json_text
from core.thinking import THINK_BLOCK_RE, THINK_CLOSE, THINK_TAG_RE

ACTION_NAMES: tuple[str, ...] = ("search", "lookup", "finish", "backup_search")
"""Tool names the parser accepts (lower-case)."""

_EMPH = r"(?:\*{1,2}|_{1,2})?"
_KEY_TAIL = rf"(?:[ \t]*\d+)?[ \t]*{_EMPH}[ \t]*:{_EMPH}[ \t]*"
# Keys start with a literal (fast prefix scan) and are then checked, by a fixed-width
# lookbehind, not to continue a word ("reaction:" is no key); emphasis before a key is
# left out of the match and stripped from the thought instead.
_ACTION_KEY_RE = re.compile(rf"(?i:act)(?<![^\W_]...)(?i:ion)?{_KEY_TAIL}")
_INPUT_KEY_RE = re.compile(rf"(?i:act)(?<![^\W_]...)(?i:ion)?[ _]?(?i:input){_KEY_TAIL}")
_STOP_KEY_RE = re.compile(
    rf"(?<![^\W_])(?:observation|thought|act(?:ion)?){_KEY_TAIL}", re.IGNORECASE
)
_THOUGHT_KEY_RE = re.compile(rf"(?i:thought)(?<![^\W_].......){_KEY_TAIL}")
_DECISION_RE = re.compile(
    rf"(?i:decision)(?<![^\W_]........){_KEY_TAIL}{_EMPH}(continue|answer[ _-]?now)\b[^\n]*",
    re.IGNORECASE,
)
_NAME_RE = re.compile(r"backup[ _-]?search|look[ _-]up|[A-Za-z_][\w-]*", re.IGNORECASE)
_ONELINER_RE = re.compile(
    r"(?<!\w)(backup[ _-]?search|search|look[ _-]?up|finish)[ \t]*\[", re.IGNORECASE
)
_FENCE_LINE_RE = re.compile(r"^[ \t]*```[\w+-]*[ \t]*$", re.MULTILINE)
_KWARG_RE = re.compile(r"^[A-Za-z_]\w*[ \t]*=[ \t]*")
_LINE_PREFIX_CHARS = " \t>*_#-`"
_THOUGHT_STRIP_CHARS = " \t\n>*_#-`"
_WRAPPERS: tuple[tuple[str, str], ...] = (
    ("**", "**"), ("__", "__"), ("`", "`"), ('"', '"'), ("'", "'"),
    ("\u201c", "\u201d"), ("\u2018", "\u2019"), ("*", "*"),
)
_QUOTE_PAIRS: tuple[tuple[str, str], ...] = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"))
_WRAPPER_STARTS = "".join(sorted({opener[0] for opener, _ in _WRAPPERS + _QUOTE_PAIRS}))
"""The first characters of every wrapper and quote: a value that begins otherwise has
none to strip (most values: `_clean` runs a few times a step)."""
_JSON_KEYS: tuple[str, ...] = ("query", "keyword", "answer", "input", "q", "text", "term", "title")


@dataclass(frozen=True, slots=True)
class ParsedAction:
    """One parsed agent action.

    Attributes:
        name: one of ACTION_NAMES, lower-case.
        argument: the query, keyword or answer ("" only for an empty finish).
        thought: the agent's thought preceding the action, stripped.
        decision: "CONTINUE" / "ANSWER_NOW" from a `DECISION:` line before the action,
            else None.
    """

    name: str
    argument: str
    thought: str
    decision: str | None = None


def parse_action(text: str) -> ParsedAction | None:
    """Parse the first action of a ReAct reply.

    Args:
        text: the raw model reply.

    Returns:
        The parsed action, or None when the reply has no readable action (format failure).
    """
    if not text:
        return None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "think>" in text or "THINK>" in text:
        text = _strip_think(text)
    if "```" in text:
        text = _FENCE_LINE_RE.sub("", text)
    found = _keyed_action(text)
    if found is None:
        found = _oneliner_action(text)
    if found is None:
        return None
    start, name, argument = found
    if name is None or argument is None:
        return None
    thought, decision = _thought_and_decision(text[:start])
    return ParsedAction(name, argument, thought, decision)


def _strip_think(text: str) -> str:
    """Remove `<think>` reasoning blocks (and stray tags) from a reply."""
    text = THINK_BLOCK_RE.sub("", text)
    lowered = text.lower()
    close = lowered.rfind(THINK_CLOSE)
    if close >= 0:
        text = text[close + len(THINK_CLOSE):]
    return THINK_TAG_RE.sub("", text)


def _keyed_action(text: str) -> tuple[int, str | None, str | None] | None:
    """Find the first usable `Action:` key; None when the reply has none."""
    for match in _ACTION_KEY_RE.finditer(text):
        line_end = text.find("\n", match.end())
        if line_end < 0:
            line_end = len(text)
        rest = text[match.end():line_end]
        inline_input: str | None = None
        input_match = _INPUT_KEY_RE.search(rest)
        if input_match is not None:
            inline_input = rest[input_match.end():]
            rest = rest[:input_match.start()]
        name, bracket = _split_name(rest)
        if name not in ACTION_NAMES:
            if _starts_line(text, match.start()):
                return match.start(), None, None
            continue
        if bracket:
            return match.start(), name, bracket
        if inline_input is not None:
            value: str | None = _first_line(inline_input) or _first_line(_segment(text, line_end))
        else:
            value = _action_input(text, line_end)
        if value:
            return match.start(), name, value
        if name == "finish":
            return match.start(), name, ""
        if _starts_line(text, match.start()):
            return match.start(), name, None
    return None


def _oneliner_action(text: str) -> tuple[int, str | None, str | None] | None:
    """Find the first closed `name[argument]` one-liner anywhere in the reply."""
    for match in _ONELINER_RE.finditer(text):
        content = _bracket_content(text, match.end() - 1)
        if content is None:
            continue
        name = _normalise_name(match.group(1))
        argument = _clean(content)
        if not argument and name != "finish":
            return match.start(), name, None
        return match.start(), name, argument
    return None


def _starts_line(text: str, pos: int) -> bool:
    """True when only whitespace/markdown precedes `pos` on its line."""
    line_start = text.rfind("\n", 0, pos) + 1
    return not text[line_start:pos].strip(_LINE_PREFIX_CHARS)


def _normalise_name(raw: str) -> str:
    """Lower-case a tool name and join its words with underscores."""
    name = raw.lower().replace(" ", "_").replace("-", "_")
    return "lookup" if name == "look_up" else name


def _split_name(rest: str) -> tuple[str | None, str | None]:
    """Split an Action line into (tool name, bracket argument or None)."""
    cleaned = _clean(rest, json_value=False)
    match = _NAME_RE.match(cleaned)
    if match is None:
        return None, None
    name = _normalise_name(match.group(0))
    after = cleaned[match.end():].lstrip()
    if not after or after[0] not in "[(":
        return name, None
    content = _bracket_content(after, 0)
    if content is None:
        content = after[1:].rstrip().rstrip("])")
    if after[0] == "(":
        content = _KWARG_RE.sub("", content.strip(), count=1)
    return name, _clean(content)


def _bracket_content(text: str, open_pos: int) -> str | None:
    """Text inside the bracket opened at `open_pos`, up to its match on the same line."""
    opener = text[open_pos]
    closer = "]" if opener == "[" else ")"
    depth = 0
    for i in range(open_pos, len(text)):
        char = text[i]
        if char == opener:
            depth += 1
        elif char == closer:
            depth -= 1
            if depth == 0:
                return text[open_pos + 1:i]
        elif char == "\n":
            return None
    return None


def _segment(text: str, pos: int) -> str:
    """Text from `pos` up to the next Observation/Thought/Action key."""
    stop = _STOP_KEY_RE.search(text, pos)
    return text[pos:stop.start() if stop else len(text)]


def _action_input(text: str, pos: int) -> str | None:
    """The cleaned `Action Input` value after `pos`; None when there is no such key."""
    segment = _segment(text, pos)
    match = _INPUT_KEY_RE.search(segment)
    return None if match is None else _first_line(segment[match.end():])


def _first_line(value: str) -> str:
    """The first non-empty line of `value`, cleaned ("" when all lines are empty)."""
    for line in value.split("\n"):
        cleaned = _clean(line)
        if cleaned:
            return cleaned
    return ""


def _clean(value: str, json_value: bool = True) -> str:
    """Strip whitespace and matching quotes, backticks or emphasis around a value."""
    value = value.strip()
    changed = value[:1] in _WRAPPER_STARTS  # "" too: the loop then ends at once
    while changed and value:
        changed = False
        for opener, closer in _WRAPPERS:
            if (len(value) >= len(opener) + len(closer) and value.startswith(opener)
                    and value.endswith(closer)):
                value = value[len(opener):len(value) - len(closer)].strip()
                changed = True
                break
        if not changed and len(value) > 2 and value[-1] in ".,;":
            for opener, closer in _QUOTE_PAIRS:
                if value[0] == opener and value[-2] == closer:
                    value = value[:-1]
                    changed = True
                    break
    if value.endswith("**"):
        value = value[:-2].rstrip()
    if value.startswith("**"):
        value = value[2:].lstrip()
    if json_value and value[:1] == "{" and value[-1:] == "}":
        value = _json_string(value)
    return value


def _json_string(value: str) -> str:
    """The string value of a JSON-ish object argument, else `value` unchanged."""
    try:
        data = json_text.loads(value)
    except ValueError:
        return value
    if not isinstance(data, dict):
        return value
    lowered = {str(k).lower(): v for k, v in data.items()}
    for key in _JSON_KEYS:
        if isinstance(lowered.get(key), str):
            return lowered[key].strip()
    strings = [v for v in data.values() if isinstance(v, str)]
    return strings[0].strip() if len(data) == 1 and strings else value


def parse_decision(text: str) -> str | None:
    """The decide arm's decision from its decision turn: the last `DECISION:` line.

    Args:
        text: the raw reply to the decision prompt.

    Returns:
        "CONTINUE" or "ANSWER_NOW" (`ANSWER NOW` and `ANSWER-NOW` read as ANSWER_NOW)
        from the last `DECISION: …` in the reply; a reply without such a line is read
        as the authors' harness reads it: the later of the last bare CONTINUE and the
        last bare ANSWER_NOW (any case); None when it holds neither.
    """
    matches = list(_DECISION_RE.finditer(text or ""))
    if matches:
        return "CONTINUE" if matches[-1].group(1).upper() == "CONTINUE" else "ANSWER_NOW"
    last: dict[str, int] = {}
    for m in _BARE_DECISION_RE.finditer(text or ""):
        word = "CONTINUE" if m.group(1).upper() == "CONTINUE" else "ANSWER_NOW"
        last[word] = m.start()
    if not last:
        return None
    return max(last, key=lambda w: last[w])


_BARE_DECISION_RE = re.compile(r"(?i)(continue|answer[ _]now)")
"""A decision word anywhere in a decision turn's reply, inside a longer word too
("continues"), as the harness's substring search finds it (the fallback reading)."""


def _thought_and_decision(head: str) -> tuple[str, str | None]:
    """Read the thought and the DECISION line from the text before the action."""
    decision: str | None = None
    if "ecision" in head or "ECISION" in head:
        matches = list(_DECISION_RE.finditer(head))
        if matches:
            word = matches[-1].group(1).upper()
            decision = "CONTINUE" if word == "CONTINUE" else "ANSWER_NOW"
    thought_key = _THOUGHT_KEY_RE.search(head)
    thought = head[thought_key.end():] if thought_key else head
    if decision is not None:
        thought = _DECISION_RE.sub("", thought)
    return thought.strip(_THOUGHT_STRIP_CHARS), decision


_R1_TAG_RE = re.compile(r"<(search|backup_search|answer)>", re.IGNORECASE)
_R1_ANY_TAG_RE = re.compile(r"</?(?:search|backup_search|answer|information|think)>",
                            re.IGNORECASE)
_R1_NAMES = {"search": "search", "backup_search": "backup_search", "answer": "finish"}


def parse_search_r1(text: str) -> ParsedAction | None:
    """Parse the first action of a reply in Search-R1's tag format.

    Args:
        text: the raw model reply.

    Returns:
        The parsed action (search, backup_search or finish), or None when the reply
        has no readable action (format failure).
    """
    if not text:
        return None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    reasoning = [m.group(1) for m in THINK_BLOCK_RE.finditer(text)]
    outside = _strip_think(text) if "think>" in text.lower() else text
    match = _R1_TAG_RE.search(outside)
    if match is None:
        return None
    tag = match.group(1).lower()
    close = re.search(rf"</{tag}>", outside[match.end():], re.IGNORECASE)
    end = match.end() + close.start() if close else len(outside)
    argument = " ".join(_R1_ANY_TAG_RE.sub(" ", outside[match.end():end]).split())
    name = _R1_NAMES[tag]
    if not argument and name != "finish":
        return None
    head = "\n".join([*reasoning, outside[:match.start()]])
    thought, decision = _thought_and_decision(_R1_ANY_TAG_RE.sub(" ", head))
    return ParsedAction(name, _clean(argument), " ".join(thought.split()), decision)


def parse_reply(text: str, prompt_format: str = "react") -> ParsedAction | None:
    """Parse a reply in the model's prompt format ("react" or "search_r1").

    Args:
        text: the raw model reply.
        prompt_format: the registry's `prompt_format` of the model.

    Returns:
        The parsed action, or None for a format failure.
    """
    return parse_search_r1(text) if prompt_format == "search_r1" else parse_action(text)
