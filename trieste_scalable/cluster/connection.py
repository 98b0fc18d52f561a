"""Connecting to Ray: a campaign owns the local cluster it starts, and joins another only where
``--ray-address`` names it (the ``[distributed]`` extra).

``ray.init()`` without an address attaches to whatever cluster ``RAY_ADDRESS`` or a stale
``/tmp/ray/ray_current_cluster`` names (a user's own ``ray start``, or one left by a killed
run), where it then fails on ``num_cpus`` or shares another job's workers. :func:`connect`
starts a fresh local cluster (``address="local"``) unless an address is given.

A local cluster's processes are the driver's descendants (the GCS server, the raylet, and the
raylet's ``ray::DashboardAgent`` / ``ray::RuntimeEnvAgent`` and workers). Ray ties the first
ones to the driver, but when the driver is SIGKILLed the raylet's agents were seen still
running long after (orphaned to init), and a killed driver runs no ``atexit`` hook. So a
:mod:`~trieste_scalable.cluster.reaper` process, in its own session so that a signal to the
driver's process group spares it, watches the driver through a pipe only the driver holds (the
kernel closes it however the driver ends), keeps a list of the driver's descendants, and when
the pipe closes stops every one of them still running (SIGTERM, then SIGKILL after
:data:`~trieste_scalable.cluster.reaper.GRACE_SECONDS`). Linux only (it reads ``/proc``); elsewhere
Ray's own clean-up is all there is.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Mapping, Optional

CONNECT_SECONDS = 10.0
"""How long :func:`check_reachable` tries a cluster's address."""

_reaper: Optional[subprocess.Popen[bytes]] = None
_pipe: Optional[IO[bytes]] = None  # the driver's end of the reaper's pipe: held until exit


def connect(address: Optional[str] = None, num_cpus: Optional[float] = None) -> None:
    """Start a local Ray cluster of ``num_cpus`` logical CPUs (default: every core) that this
    process owns (module docstring), or join the one at ``address``; nothing if Ray is already
    initialised in this process.

    :raise ConnectionError: If nothing listens at ``address``'s ``host:port``.
    """
    import ray

    if ray.is_initialized():
        return
    if address is not None:
        check_reachable(address)
        try:
            ray.init(address, include_dashboard=False, log_to_driver=False)
        except ConnectionError as error:
            raise ConnectionError(f"{error}{connection_hint(os.environ)}") from None
        return
    cpus = None if num_cpus is None else math.ceil(num_cpus)
    ray.init("local", num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    start_reaper()


def connection_hint(environment: Mapping[str, str]) -> str:
    """What to add to a failure to join a cluster at an address: where ``RAY_AUTH_MODE`` is not
    set, how to present the cluster's token.

    ``ray start`` turns token authentication on by default (Ray 2.5x), and ``ray.init`` with an
    explicit address presents a token only where ``RAY_AUTH_MODE=token`` says so (Ray's choice:
    a token is not sent to an address unasked). Joining without it failed after a long wait with
    "Failed to connect" and no reason but log lines of "Authentication token is missing".
    """
    if "RAY_AUTH_MODE" in environment:
        return ""
    return (
        ": a cluster started by `ray start` wants its token (Ray 2.5x): export "
        "RAY_AUTH_MODE=token, with the token in ~/.ray/auth_token or RAY_AUTH_TOKEN "
        "(`ray get-auth-token` on the head node prints it)"
    )


def start_reaper() -> None:
    """Start this process's reaper (once; later local clusters are its descendants too)."""
    global _reaper, _pipe
    if _reaper is not None and _reaper.poll() is None or not Path("/proc/self/stat").exists():
        return
    read, write = os.pipe()
    _reaper = subprocess.Popen(
        [sys.executable, "-m", "trieste_scalable.cluster.reaper", str(os.getpid())],
        stdin=read,
        start_new_session=True,
    )
    os.close(read)
    _pipe = os.fdopen(write, "wb")  # not inheritable (PEP 446): only this process holds it


def check_reachable(address: str, seconds: float = CONNECT_SECONDS) -> None:
    """Fail fast on a ``host:port`` (or ``ray://host:port``) address nothing listens on: Ray's
    own connection retries for minutes. ``"auto"`` and addresses without a port are left to Ray.

    :raise ConnectionError: Naming the address, if no connection opens within ``seconds``.
    """
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as error:
        raise ConnectionError(
            f"cannot reach a Ray cluster at {address} ({error}); check --ray-address"
        ) from None
