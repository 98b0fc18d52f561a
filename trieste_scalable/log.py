"""The package's messages go through ``logging``, under the ``trieste_scalable`` logger: progress
and reports at ``INFO``, what a user should act on (a damaged cache entry, a repaired record) at
``WARNING``.

As Ray and Hugging Face's libraries do for their loggers, importing the package gives that logger
one handler, so a command, a script and a notebook show the messages with no setup: ``INFO`` on
standard output and ``WARNING`` and above on standard error, each message as it is (the streams
are looked up for every record, so a notebook's or a test's redirected streams get them). Its
records do not propagate to the root logger (no message twice under ``logging.basicConfig``).

To quieten it: ``logging.getLogger("trieste_scalable").setLevel(logging.WARNING)``. To route it
through your own handlers instead: :func:`use_root_handlers`.
"""

from __future__ import annotations

import logging
import sys

NAME = "trieste_scalable"


class ConsoleHandler(logging.Handler):
    """``INFO`` and below to the current ``sys.stdout``, ``WARNING`` and above to the current
    ``sys.stderr``, one message a line."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stdout if record.levelno < logging.WARNING else sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # logging's own convention: a failing handler never raises
            self.handleError(record)


def install() -> None:
    """Give the package logger its console handler and the ``INFO`` level (once)."""
    package = logging.getLogger(NAME)
    if not any(isinstance(handler, ConsoleHandler) for handler in package.handlers):
        package.addHandler(ConsoleHandler())
        package.setLevel(logging.INFO)
        package.propagate = False


def use_root_handlers() -> None:
    """Remove the console handler and let the package's records propagate to the root logger's
    handlers (an application's own logging)."""
    package = logging.getLogger(NAME)
    for handler in [h for h in package.handlers if isinstance(h, ConsoleHandler)]:
        package.removeHandler(handler)
    package.propagate = True
