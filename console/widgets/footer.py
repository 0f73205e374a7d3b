"""The key bar at the bottom of every screen: the keys that matter most, always fitting."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.dom import NoScreen
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

APP_KEYS = ("help", "quit")
"""The app's keys every footer keeps (after the screen's most essential ones)."""


def key_width(key: str, description: str) -> int:
    """Cells a footer key takes: ` key description ` (Footer's padding)."""
    return cell_len(key) + 2 + (cell_len(description) + 1 if description else 0)


def rank_keys(entries: Sequence[tuple[str, str, str]], ranked: Iterable[str],
              width: int) -> list[int]:
    """Which footer keys fit in `width` cells, most useful first.

    Args:
        entries: (action, key display, description) of every key the footer could show,
            in binding order.
        ranked: the screen's actions from most to least essential (`FOOTER_KEYS`).
        width: cells available.

    Returns:
        Indexes into `entries` to show, in display order: the screen's ranked keys in
        rank order, then its other keys in binding order, then `?` and `q`. The ranked
        keys and `?`/`q` are taken first, so the least useful ones are the ones cut.
    """
    ranked = list(ranked)
    by_action = {action: i for i, (action, _, _) in enumerate(entries)}
    top = [by_action[a] for a in ranked if a in by_action and a not in APP_KEYS]
    app = [by_action[a] for a in APP_KEYS if a in by_action]
    rest = [i for i, (a, _, _) in enumerate(entries)
            if i not in top and a not in APP_KEYS]
    chosen: set[int] = set()
    used = 0
    essential = top[:2] + app + top[2:]
    for i in essential + rest:
        cost = key_width(entries[i][1], entries[i][2])
        if used + cost <= width:
            chosen.add(i)
            used += cost
    return [i for i in top + rest + app if i in chosen]


class Planned(NamedTuple):
    """One key the footer shows (what `FooterKey` is built from)."""

    key: str
    display: str
    description: str
    action: str
    enabled: bool
    tooltip: str
    palette: bool


class LabFooter(Footer):
    """Textual's Footer, ranked to fit and without its growth over a long session.

    Ranked: Footer shows every key in binding order and the terminal cuts the last ones
    (at 80 columns `? Help` and `q Quit` went first). This one shows the screen's
    `FOOTER_KEYS` (its actions, most essential first) and the app's `?`/`q`, then the
    screen's other keys while they fit; the rest are in `?` and the palette. It is
    rebuilt when the bindings change and when the terminal is resized.

    Leak-free: Footer rebuilds its keys whenever the bindings change (every screen
    switch), and Textual's binds each key to the footer's ``compact`` reactive; a watcher
    of a removed widget is dropped only when the watched value next changes, which
    ``compact`` never does, so every switch kept ~15 dead keys alive (the soak's console
    grew 0.2 MB/s). These keys take the footer's ``compact`` when built instead of being
    bound to it, so a rebuild leaves no watcher behind, and building them does not depend
    on which message pump runs the rebuild.
    """

    _planned: tuple[Planned, ...] | None = None

    def _live_screen(self) -> Screen | None:
        """The screen this footer is on, or None while it or its screen is being removed.

        A rebuild is asked for after the next refresh (bindings changed, resize); by then
        the screen may have been dismissed (Escape right after a screen was pushed), and
        `self.screen` of a removed widget raises `NoScreen`: such a footer shows nothing.
        """
        if not self.is_attached or self._pruning:
            return None
        try:
            screen = self.screen
        except NoScreen:
            return None
        return screen if screen.is_attached and not screen._pruning else None

    def _plan(self) -> tuple[Planned, ...]:
        """The keys to show: the ranked ones that fit, then the palette key."""
        screen = self._live_screen()
        if not self._bindings_ready or screen is None:
            return ()
        active = screen.active_bindings
        seen: dict[str, tuple[Binding, bool, str]] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in seen:
                seen[binding.action] = (binding, enabled, tooltip)
        keys = [(action, self.app.get_key_display(b), b.description)
                for action, (b, _, _) in seen.items()]
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        width = self.size.width or self.app.size.width
        if palette is not None and self.show_command_palette:
            width -= key_width(self.app.get_key_display(palette[1]),
                               palette[1].description) + 2  # its border and padding
        ranked = getattr(screen, "FOOTER_KEYS", ())
        out = []
        for i in rank_keys(keys, ranked, width):
            binding, enabled, tooltip = seen[keys[i][0]]
            out.append(Planned(binding.key, keys[i][1], binding.description, binding.action,
                               enabled, str(tooltip or ""), False))
        if palette is not None and self.show_command_palette and \
                self.app.ENABLE_COMMAND_PALETTE:
            _node, binding, enabled, _tooltip = palette
            out.append(Planned(binding.key, self.app.get_key_display(binding),
                               binding.description, binding.action, enabled,
                               binding.tooltip or binding.description, True))
        return tuple(out)

    def compose(self) -> ComposeResult:
        """The ranked keys that fit, then the palette key on the right."""
        self._planned = plan = self._plan()
        for key in plan:
            widget = FooterKey(key.key, key.display, key.description, key.action,
                               classes="-command-palette" if key.palette else "",
                               disabled=not key.enabled, tooltip=key.tooltip)
            if not key.palette:
                # the footer's style, set rather than bound: Textual's Footer binds it,
                # which needs compose to run as the footer's own message pump, and the
                # warm-up rebuilds a premounted screen's keys from the app's (a bound key
                # raised ReactiveError there and ended the console); lab never changes it
                widget.compact = self.compact
            yield widget

    def on_resize(self, event: events.Resize) -> None:
        """Another width fits other keys."""
        if self._bindings_ready:
            self.call_after_refresh(self.recompose)

    def text(self) -> str:
        """The keys as shown, `r Reload  ? Help …` (for tests and captures)."""
        return "  ".join(f"{k.key_display} {k.description}".strip()
                         for k in self.query(FooterKey))

    async def recompose(self) -> None:
        """Rebuild the keys when they changed (a screen's first show asked for eight
        rebuilds of the same keys, a third of its time), then release the removed ones;
        nothing on a footer whose screen is being removed. When only some keys turned
        enabled or disabled, those are restyled in place (`_enable`)."""
        if self._live_screen() is None:
            return
        if self._planned is not None:
            plan = self._plan()
            if plan == self._planned or self._enable(plan):
                return
        await super().recompose()

    def _enable(self, plan: tuple[Planned, ...]) -> bool:
        """Show the same keys as now with `plan`'s enabled states, dimming or undimming
        them where they sit instead of building every key again (the Results screen's
        keys on its tables light up when the first table arrives: a rebuild was 35–50 ms
        of the UI thread there).

        Args:
            plan: the keys to show (`_plan`).

        Returns:
            False when `plan` differs in more than enabled states (then rebuild).
        """
        old = self._planned or ()
        if len(plan) != len(old) or any(a._replace(enabled=True) != b._replace(enabled=True)
                                         for a, b in zip(plan, old)):
            return False
        keys = list(self.query_children(FooterKey))
        if len(keys) != len(plan):
            return False
        for key, planned in zip(keys, plan):
            key._disabled = not planned.enabled  # FooterKey's own flag (a click rings)
            key.set_class(not planned.enabled, "-disabled")
        self._planned = plan
        return True
