"""Ending a run on a signal: SIGTERM, SIGHUP and SIGINT become `Stopped`, raised where the program is."""

from __future__ import annotations

import signal


class Stopped(BaseException):
    """A signal that ends the run (SIGTERM, SIGHUP, SIGINT): raised where the program is, so that every
    `finally` runs (a half-written `-o` file is removed) before attn exits with 128 + the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame) -> None:
    raise Stopped(signum)


def stop_on_signals() -> None:
    """From now on SIGTERM, SIGHUP and SIGINT raise `Stopped`."""
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stop)
