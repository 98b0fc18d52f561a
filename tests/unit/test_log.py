"""The package's messages: ``logging`` under ``trieste_scalable`` with one console handler
(``INFO`` to standard output, ``WARNING`` to standard error), and no ``print`` outside the
command line."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

import trieste_scalable
from trieste_scalable.log import NAME, ConsoleHandler, install, use_root_handlers


def test_info_goes_to_stdout_and_warnings_to_stderr_as_they_are(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = logging.getLogger("trieste_scalable.campaigns.example")
    log.info("resuming: %d evaluations logged", 12)
    log.warning("cache entry x is damaged; recomputing it")
    log.debug("not shown")
    out, err = capsys.readouterr()
    assert out == "resuming: 12 evaluations logged\n"
    assert err == "cache entry x is damaged; recomputing it\n"


def test_the_handler_is_installed_once_and_can_give_way_to_the_root_logger(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    package = logging.getLogger(NAME)
    install()
    assert sum(isinstance(h, ConsoleHandler) for h in package.handlers) == 1
    try:
        use_root_handlers()
        assert not any(isinstance(h, ConsoleHandler) for h in package.handlers)
        with caplog.at_level(logging.INFO, logger=NAME):
            logging.getLogger(f"{NAME}.x").info("through the root")
        assert set(caplog.messages) == {"through the root"}
        assert capsys.readouterr().out == ""
    finally:
        install()
    assert package.propagate is False and package.level == logging.INFO


def test_no_module_outside_the_command_line_prints() -> None:
    """The library logs; only ``cli/`` writes to the streams itself."""
    root = Path(trieste_scalable.__file__).parent
    printing = []
    for path in root.rglob("*.py"):
        if "cli" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                printing.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not printing, printing
