"""Joining a Ray cluster at an address: a failure says how to present the token of a cluster
started by ``ray start`` (token authentication is its default), unless the mode is set."""

from __future__ import annotations

from trieste_scalable.cluster.connection import connection_hint


def test_without_a_mode_the_hint_says_how_to_present_the_token() -> None:
    hint = connection_hint({"PATH": "/bin"})
    assert "export RAY_AUTH_MODE=token" in hint and "ray get-auth-token" in hint


def test_with_a_mode_set_there_is_no_hint() -> None:
    for mode in ("token", "disabled"):
        assert connection_hint({"RAY_AUTH_MODE": mode}) == ""
