"""matplotlib SVG made fit to sit inline in an HTML page beside other figures."""

from __future__ import annotations

import re

_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^")]+)')
_PROLOGUE = re.compile(r"\A\s*<\?xml[^>]*\?>\s*(<!DOCTYPE[^>]*>\s*)?", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
_STYLE = re.compile(r"<style[^>]*>.*?</style>", re.S)
"""matplotlib's `*{stroke-linejoin: round; stroke-linecap: butt}`: inline it would style
the whole page once per figure; the page's CSS holds it once, scoped to figures."""
_NEWLINE = re.compile(r"[ \t]*\n\s*")
_GAP = re.compile(r">\s+<")


def inline_svg(svg: str, prefix: str, title: str) -> str:
    """`svg` for an HTML page: no XML prologue, doctype or RDF metadata; the ids that
    something references (glyphs, markers, clip paths) prefixed with `prefix`, so
    figures that each define the same ones do not collide, and the others dropped;
    whitespace between tags collapsed; role="img" and an aria-label for screen readers.

    Args:
        svg: matplotlib's SVG text.
        prefix: unique per figure in the page, e.g. "f3-".
        title: the figure's accessible name.

    Returns:
        The <svg> element's text.
    """
    from html import escape

    body = _STYLE.sub("", _METADATA.sub("", _PROLOGUE.sub("", svg, count=1), count=1))
    used = {m.group(2) for m in _REF.finditer(body)}
    # matplotlib names every group; only referenced ids are kept (a third of the bytes
    # of a large figure), and the indentation between tags and inside paths goes
    body = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"' if m.group(1) in used else "",
                   body)
    body = _REF.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", body)
    body = _GAP.sub("><", _NEWLINE.sub(" ", body)).replace(' >', '>')
    return body.replace("<svg ", f'<svg role="img" aria-label="{escape(title)}" ', 1)
