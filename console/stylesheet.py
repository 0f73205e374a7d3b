"""The console's stylesheet: parses are made once per process and theme, and reused.

Textual re-parses the whole stylesheet whenever a source is added after the app started
(a screen's `.tcss` on its first show, the warm-up's `preload_css`) or the theme's
variables change. Its `Stylesheet.reparse` does that in a new `Stylesheet`, whose parse
cache starts empty, so every first show of a screen parsed every source again: 892
parses of the console's ~45 sources after the seven screens, 61 with this stylesheet
(an app start and a first visit 10-15 % less CPU).

A parse depends only on the source's text, where it was read from, its flags and the
variables. So the new stylesheet may start with this one's cache, and setting the same
variables again (Textual does it, then re-parses, whenever a mode's screen is first
shown) keeps it. For the same reason the parses are the process's, one cache per set of
variables, not each app's: an app started after another in one process (the console's
tests start hundreds) reads the parses the first made, and another theme reads the
parses made with its own variables.
"""

from __future__ import annotations

from textual.app import App
from textual.cache import LRUCache
from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet

PARSES = 1024
"""Parses kept: every source of the console with each tie-breaker it is read with (61
after the seven screens; Textual keeps 64, which a few more screens would pass)."""


Parses = LRUCache[tuple[object, ...], list[RuleSet]]
"""Rule sets by Textual's parse key (the CSS, where it was read from, its flags)."""

_PARSES: LRUCache[tuple[tuple[str, str], ...], Parses] = LRUCache(8)
"""This process's parses, one cache per set of CSS variables (a theme)."""


def parses_for(variables: dict[str, str]) -> Parses:
    """The process's parse cache for CSS read with `variables`."""
    key = tuple(sorted(variables.items()))
    cache = _PARSES.get(key)
    if cache is None:
        cache = LRUCache(PARSES)
        _PARSES.set(key, cache)
    return cache


class ReusingStylesheet(Stylesheet):
    """A `Stylesheet` whose parses are kept by a `reparse` and shared by every
    `ReusingStylesheet` of the process with the same variables."""

    def __init__(self, *, variables: dict[str, str] | None = None) -> None:
        super().__init__(variables=variables)
        self._parse_cache: Parses = parses_for(self._variables)

    def set_variables(self, variables: dict[str, str]) -> None:
        """Set the CSS variables; the parses made with the same ones are kept."""
        if variables == self._variables:
            self._invalid_css = set()  # as Textual's: invalid CSS is parsed again
            return
        self._parse_cache = LRUCache(1)  # Textual empties the cache it finds: not a shared one
        super().set_variables(variables)
        self._parse_cache = parses_for(variables)

    def reparse(self) -> None:
        """Re-parse every source, as Textual's `reparse` does (in a new stylesheet, so
        that an error leaves this one as it was), with this one's parses reused.

        Raises:
            StylesheetError: if the CSS could not be read.
            StylesheetParseError: if the CSS is invalid.
        """
        fresh = ReusingStylesheet(variables=self._variables)
        for read_from, (css, is_defaults, tie_breaker, scope) in self.source.items():
            fresh.add_source(css, read_from=read_from, is_default_css=is_defaults,
                             tie_breaker=tie_breaker, scope=scope)
        try:
            fresh.parse()
        except Exception:
            self._invalid_css.update(fresh._invalid_css)  # not parsed again (as Textual)
            raise
        self._rules = fresh.rules
        self._rules_map = None
        self.source = fresh.source
        self._require_parse = False


def install(app: App[None]) -> None:
    """Give `app` a `ReusingStylesheet` (call in its `__init__`, before any source is
    added: Textual adds them when the app starts running)."""
    assert not app.stylesheet.source, "install before the app reads its CSS"
    app.stylesheet = ReusingStylesheet(variables=app.stylesheet._variables)


class StyledUnder:
    """What a screen's styles depend on outside the screen, when they were last applied:
    the stylesheet and its rules (a new list whenever a source is added or the CSS is
    parsed again), Textual's count of CSS invalidations (a theme change), and the app's
    pseudo-classes and classes (`App:blur`, `:dark`, `-theme-…`), which every node's
    selectors may name through the app.

    Textual restyles every widget of a screen each time the screen is shown again, for
    whatever changed while another screen was shown; when none of these changed, the
    restyle gives each widget the styles it has (a digit key's screen switch spent about
    half of its CPU in it). Objects are compared by identity and held, so an object
    freed and another made at its address cannot pass for it.
    """

    def __init__(self, app: App[object]) -> None:
        sheet = app.stylesheet
        self._objects = (sheet, sheet.rules)
        self._values = (app._css_update_count, frozenset(app.get_pseudo_classes()),
                        frozenset(app.classes))

    def same(self, other: StyledUnder | None) -> bool:
        """Whether `other` was taken under the same stylesheet, rules and app state."""
        return other is not None and self._values == other._values and all(
            a is b for a, b in zip(self._objects, other._objects, strict=True))
