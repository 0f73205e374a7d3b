"""The shared confirmation dialogs: an opaque panel sized to its text (never the empty
4×2 box of before), y/n/escape/q answers, and the Jobs actions' text for every action
on a grid with errored, failed and paused jobs (E's dialog included)."""

from __future__ import annotations

from typing import cast

import pytest
from textual.app import App
from textual.widgets import Static

from console.widgets.confirm import Choose, Confirm
from console.widgets.jobs_confirm import act_prompt, nothing_text
from core.store.progress import JobRow
from jobs.control import GridStatus


class Host(App[None]):
    """An empty app with a `q` that quits, like the console's."""

    BINDINGS = [("q", "quit", "Quit")]

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[object] = []


@pytest.mark.asyncio
@pytest.mark.parametrize("key, answer", [("y", True), ("n", False), ("escape", False),
                                         ("q", False)])
async def test_confirm_is_sized_to_its_text_and_answers(key: str, answer: bool) -> None:
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(Confirm("Pause grid 3 of run pilot?", "Jobs paused: 16\nEpisodes: 480",
                                "pause 16 jobs"), app.answers.append)
        await pilot.pause()
        dialog = app.screen
        box = dialog.query_one("#ask-box")
        keys = "y = pause 16 jobs    n / escape = no, do nothing"
        assert box.region.width >= len(keys) + 4 and box.region.height >= 7
        shown = [str(w.render()) for w in dialog.query(Static)]
        assert shown == ["Pause grid 3 of run pilot?", "Jobs paused: 16\nEpisodes: 480", keys]
        await pilot.press(key)
        await pilot.pause()
        assert app.answers == [answer] and app.return_code is None  # q never quits here


@pytest.mark.asyncio
async def test_long_detail_scrolls_and_the_keys_stay_in_view() -> None:
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        detail = "\n".join(f"line {i}" for i in range(40))
        app.push_screen(Confirm("Queue it?", detail), app.answers.append)
        await pilot.pause()
        keys = app.screen.query_one("#ask-keys")
        assert 0 < keys.region.bottom <= 23 and keys.region.height == 1


@pytest.mark.asyncio
async def test_choose_gives_the_chosen_value_and_escape_the_default() -> None:
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        for key, value in (("s", "save"), ("d", "discard"), ("escape", "stay"), ("q", "stay")):
            app.push_screen(Choose("Unsaved", "", [("s", "save", "save"),
                                                   ("d", "discard", "discard"),
                                                   ("n", "stay", "stay")], "stay"),
                            app.answers.append)
            await pilot.pause()
            assert cast(Choose, app.screen).text \
                == "Unsaved\ns = save    d = discard    n / escape = stay"
            await pilot.press("x")  # any other key: nothing
            await pilot.pause()
            assert isinstance(app.screen, Choose)
            await pilot.press(key)
            await pilot.pause()
            assert app.answers[-1] == value
        assert app.return_code is None


GRID = GridStatus(grid=3, run="pilot", cells=4, expected=200, stored=120, errored=7, running=1,
                  jobs={"queued": 2, "running": 1, "paused": 3, "done": 4, "failed": 1,
                        "cancelled": 2}, rate=0.0, eta_s=None)
"""A grid in every state: 2 queued, 1 running, 3 paused, 4 done, 1 failed, 2 cancelled."""

GRID_DIALOGS = {
    "pause": ("Pause grid 3 of run pilot?",
              "Jobs paused: 3 (2 queued, 1 running; running ones stop at their next "
              "heartbeat)\nEpisodes: 80 of 200 not stored yet; they wait until u resumes them",
              "pause 3 jobs"),
    "resume": ("Resume grid 3 of run pilot?",
               "Jobs queued again: 3 (paused)\nEpisodes: 80 of 200 not stored yet",
               "resume 3 jobs"),
    "cancel": ("Cancel grid 3 of run pilot?",
               "Jobs cancelled: 6 (2 queued, 1 running, 3 paused; running ones stop at their "
               "next heartbeat, stored episodes stay)\nEpisodes: 80 of 200 not stored yet; "
               "they will not run (t retries them later)",
               "cancel 6 jobs"),
    "retry": ("Retry grid 3 of run pilot?",
              "Jobs queued again: 3 (1 failed, 2 cancelled)\nErrored episodes re-run as new "
              "jobs: 7\nEpisodes: 80 of 200 not stored yet",
              "retry 3 jobs + 7 errored episodes"),
    "retry_errored": ("Re-run the errored episodes of grid 3 of run pilot?",
                      "Errored episodes re-run as new jobs: 7\nFailed and cancelled jobs "
                      "stay as they are (t retries those)",
                      "re-run 7 episodes"),
}


@pytest.mark.parametrize("action", list(GRID_DIALOGS))
def test_every_jobs_action_names_its_target_and_counts(action: str) -> None:
    prompt = act_prompt(action, "grid", 3, [GRID])
    assert (prompt.question, prompt.detail, prompt.yes) == GRID_DIALOGS[action]
    assert not prompt.empty


def test_a_run_sums_its_grids_and_nothing_to_do_is_said_not_asked() -> None:
    other = GridStatus(grid=4, run="pilot", cells=1, expected=50, stored=50, errored=0,
                       running=0, jobs={"done": 2}, rate=0.0, eta_s=None)
    prompt = act_prompt("cancel", "run", "pilot", [GRID, other])
    assert prompt.question == "Cancel run pilot (2 grids)?"
    assert prompt.detail.startswith("Jobs cancelled: 6 (")
    assert "Episodes: 80 of 250 not stored yet" in prompt.detail
    done = act_prompt("retry_errored", "grid", 4, [other])
    assert done.empty
    assert nothing_text("retry_errored", done) == (
        "Re-run the errored episodes of grid 4 of run pilot: no errored episodes "
        "(as last read; r re-reads)")


def test_a_job_is_named_by_its_cell() -> None:
    job = JobRow(id=9, state="failed", model="sim-own5", condition_spec='{"name": "none"}',
                 regime="clean", seed=1, budget=8, expected=10, stored=6, errored=2,
                 attempts=3, last_error="boom")
    prompt = act_prompt("retry", "job", 9, [GRID], job)
    assert prompt.question.startswith("Retry job 9 of grid 3 (sim-own5 · ")
    assert prompt.question.endswith(" · clean · seed 1)?")
    assert prompt.detail == ("Jobs queued again: 1 (1 failed, 0 cancelled)\n"
                             "Errored episodes re-run as new jobs: 2\n"
                             "Episodes: 4 of 10 not stored yet")
