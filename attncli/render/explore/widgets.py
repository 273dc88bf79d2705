"""The pieces the screens of `attn explore` share: a scrolling pane that leaves the arrow keys to the app, and a
screen that leaves once."""

from __future__ import annotations

import typing

from textual.await_complete import AwaitComplete
from textual.containers import VerticalScroll
from textual.screen import Screen


class Pane(VerticalScroll, can_focus=False):
    """A scrolling column that leaves the arrow keys to the app (they move the cursor)."""


class Once:
    """Mixed into a screen (before its Screen class): it leaves once, and only while it is the app's screen; a
    key that comes before it has gone (Enter twice a few ms apart, a burst of Esc) finds it leaving and does
    nothing. Textual's `dismiss` pops whatever screen is on top, so a second one took the main screen with it
    (ScreenStackError)."""

    _left = False

    def dismiss(self, result=None) -> AwaitComplete:
        screen = typing.cast(Screen, self)
        if self._left or screen.app.screen is not screen:
            return AwaitComplete()
        self._left = True  # the Screen class after this mixin dismisses it
        return super().dismiss(result)  # type: ignore[misc]
