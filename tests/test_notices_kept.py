"""The notices a test reads outlive their toasts (`tests.helpers.notices`)."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App

from tests.helpers.notices import said


@pytest.mark.asyncio
async def test_a_notice_stays_readable_after_textual_forgot_it() -> None:
    app: App[None] = App()
    async with app.run_test() as pilot:
        app.notify("first", title="t", severity="warning", timeout=0.01)
        app.notify("second")
        await asyncio.sleep(0.05)  # past the first one's timeout: any machine
        await pilot.pause()
        assert [n.message for n in app._notifications] == ["second"]  # Textual forgot it
        assert [(n.message, n.title, n.severity) for n in said(app)] == [
            ("first", "t", "warning"), ("second", "", "information")]
