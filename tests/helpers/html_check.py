"""Reading `lab report`'s HTML back in tests, with Python's own parser.

`check_html` is a strict well-formedness check: every non-void element closed in order,
ids unique, every in-page link and SVG reference resolving, and nothing loaded from the
network; `report_tables` reads each results table back as its rows (header fields from
``data-f``; each cell's text and exact ``data-v``).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import TypedDict

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
"""HTML elements with no end tag."""
_URL = re.compile(r"url\(#([^)]+)\)")
_NAMESPACES = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")
"""xmlns values: names, not fetched."""


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, tuple[int, int]]] = []
        self.errors: list[str] = []
        self.ids: dict[str, int] = {}
        self.refs: list[str] = []
        self.doctype = ""
        self.svg_depth = 0

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attrs(tag, attrs)
        if tag == "svg":
            self.svg_depth += 1
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attrs(tag, attrs)
        if tag not in VOID and not self.svg_depth:
            self.errors.append(f"self-closing <{tag}/> outside SVG at {self.getpos()}")

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.errors.append(f"end tag </{tag}> of a void element at {self.getpos()}")
            return
        if not self.stack or self.stack[-1][0] != tag:
            open_tag = self.stack[-1] if self.stack else None
            self.errors.append(f"</{tag}> at {self.getpos()} closes {open_tag}")
            return
        self.stack.pop()
        if tag == "svg":
            self.svg_depth -= 1

    def _attrs(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = [a for a, _ in attrs]
        if len(names) != len(set(names)):
            self.errors.append(f"<{tag}> repeats an attribute at {self.getpos()}")
        for name, value in attrs:
            value = value or ""
            if name == "id":
                self.ids[value] = self.ids.get(value, 0) + 1
            if name in ("href", "xlink:href") and value.startswith("#"):
                self.refs.append(value[1:])
            elif name in ("src", "href", "xlink:href", "action", "poster"):
                self.errors.append(f"<{tag} {name}={value!r}> loads something (no network, "
                                   "no files beside the report)")
            elif value.startswith(("http://", "https://", "//")) and value not in _NAMESPACES:
                self.errors.append(f"<{tag} {name}={value!r}> names a URL")
            self.refs += _URL.findall(value)


def check_html(text: str) -> list[str]:
    """Problems found in `text` (empty when the page is well formed and self-contained)."""
    checker = _Checker()
    checker.feed(text)
    checker.close()
    errors = list(checker.errors)
    if checker.doctype.lower() != "doctype html":
        errors.append(f"doctype is {checker.doctype!r}, not 'DOCTYPE html'")
    errors += [f"unclosed <{tag}> from {pos}" for tag, pos in checker.stack]
    errors += [f"id {i!r} used {n} times" for i, n in checker.ids.items() if n > 1]
    errors += [f"reference #{r} has no element" for r in checker.refs if r not in checker.ids]
    for needle in ('<html lang="en">', '<meta charset="utf-8">', "<title>"):
        if needle not in text:
            errors.append(f"missing {needle}")
    if "@import" in text or "<link" in text:
        errors.append("a style sheet is loaded, not inline")
    return errors


class Cell(TypedDict):
    """One cell of a report table: its text, and its exact ``data-v`` (None without one)."""

    text: str
    v: str | None


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, dict[str, list]] = {}
        self.current: dict[str, list] | None = None
        self.cell: Cell | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("data-table"):
            self.current = {"fields": [], "rows": []}
            self.tables[str(a["data-table"])] = self.current
        elif self.current is None:
            return
        elif tag == "th" and "data-f" in a:
            self.current["fields"].append(a["data-f"])
        elif tag == "tr":
            self.current["rows"].append([])
        elif tag == "td":
            self.cell = {"text": "", "v": a.get("data-v") if "data-v" in a else None}

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell["text"] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self.cell is not None and self.current is not None:
            self.current["rows"][-1].append(self.cell)
            self.cell = None
        elif tag == "table":
            self.current = None


def report_tables(text: str) -> dict[str, list[dict[str, Cell]]]:
    """Each results table of the report: its rows as {field: {"text", "v"}} in order."""
    parser = _Tables()
    parser.feed(text)
    out = {}
    for name, t in parser.tables.items():
        if t["fields"]:
            out[name] = [dict(zip(t["fields"], cells)) for cells in t["rows"] if cells]
    return out
