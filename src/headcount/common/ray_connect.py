"""Reaching a Ray cluster (the sweeps' "ray" scheduler, learn.sweep.schedulers, and distributed
certification, core.certify.distributed): Ray imported with a one-line error when the extra is
missing, the address's form, a TCP pre-check before anything is touched, and ray.init's connection
bounded, each failure one line.

The Ray address (the parameter `address`) is one of: ``host:port``, the head's GCS port (host a
name, an IPv4 literal or a bracketed IPv6 literal such as ``[::1]:6379``; port 1..65535), ``auto``
(the cluster that ``ray start`` last started on this machine), or ``ray://host:port`` (the Ray
Client: only when its extra, ``pip install 'ray[client]'``, is importable). make_scheduler checks
the form and that host:port accepts a TCP connection within RAY_CONNECT_S seconds before the
database is touched (check_ray_address); ray.init then runs (connect_ray) with its connection steps
bounded by RAY_CONNECT_S each and one try (RayConfig knobs set in the environment unless the user
set them), its C++ log lines on stderr captured. Every failure — a bad form, no client extra,
nothing listening, something that is not Ray, a token refused or missing (a head started with
RAY_AUTH_MODE=token needs RAY_AUTH_MODE=token and the token in this process too), a version mismatch
— is a RayAddressError (exit 2), one line naming `address`, within about 15 s. (The Ray Client's own
retries are bounded only by the TCP check.) Without an `address`, a RAY_ADDRESS in the environment
(other than "local") is checked and named the same way.
"""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import os
import re
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any

from headcount.common.errors import InputError, param

RAY_MISSING = "backend 'ray' needs the optional extra: pip install 'headcount[ray]'"


class BackendUnavailableError(InputError):
    """The requested backend is not installed (e.g. Ray without the extra)."""


class RayAddressError(InputError):
    """A Ray address that is not one, or no Ray cluster this process can connect to there
    (unreachable, not Ray, refusing its token): the message names the parameter `address` (or
    RAY_ADDRESS, where it came from there) and says what to fix."""


def import_ray() -> Any:
    """The ray module, or BackendUnavailableError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise BackendUnavailableError(RAY_MISSING) from None
    return ray


@contextlib.contextmanager
def raylet_messages_dropped() -> Iterator[None]:
    """While Ray runs tasks, the messages its raylet pushes to the driver (e.g. "A worker died …
    the task will be retried", many lines on stdout, which would break a command's JSON output) are
    dropped: a lost task is retried, or its failure reported, by the caller. Ray prints them from a
    thread through the module's print_to_stdstream."""
    module = sys.modules.get("ray._private.worker")
    original = getattr(module, "print_to_stdstream", None)
    if original is None:  # another Ray version: its messages stay
        yield
        return

    def print_unless_raylet(data: dict, *args: Any, **kwargs: Any) -> None:
        if data.get("pid") != "raylet":
            original(data, *args, **kwargs)

    module.print_to_stdstream = print_unless_raylet
    try:
        yield
    finally:
        module.print_to_stdstream = original


_HOST_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"  # underscores: container names
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?")
_PORT = re.compile(r"[0-9]{1,5}")
# Each of Ray's connection steps (TCP connect, GCS channel, cluster id) while ray.init connects to
# `address`; the socket pre-check waits as long. Ray's defaults (5 s, 30 s, 20 tries) wait minutes
# and flood stderr for an address with no Ray cluster.
RAY_CONNECT_S = 4
# RayConfig and ray.init read these from the environment (a value the user set wins)
_RAY_CONNECT_ENV = {
    "RAY_gcs_rpc_server_connect_timeout_s": str(RAY_CONNECT_S),
    "RAY_py_gcs_connect_timeout_s": str(RAY_CONNECT_S),
    "RAY_gcs_server_port_wait_time_s": "1",  # one try
}

ADDRESS = param("address")  # the parameter the messages name, unless it came from RAY_ADDRESS


def _named(address: str, name: str) -> str:
    """E.g. "address '10.0.0.5:6379'" (name: ADDRESS, the marked parameter, or "RAY_ADDRESS" when it
    came from there)."""
    return f"{name} {address if len(address) <= 80 else address[:79] + '…'!r}"


def ray_client_installed() -> bool:
    """Whether the Ray Client extra (grpc) is importable: ``ray://`` addresses need it."""
    return importlib.util.find_spec("grpc") is not None


def parse_ray_address(address: str, name: str = ADDRESS) -> tuple[str, int] | None:
    """The (host, port) to reach for `address` (None for "auto"): RayAddressError unless it is
    host:port (a host name, an IPv4 literal or an [IPv6] literal; port 1..65535), auto, or
    ray://host:port with the Ray Client installed. `name` is what the messages call the address
    (_named)."""
    if address == "auto":
        return None
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host_ok = _is_ip(host[1:-1], ipaddress.IPv6Address)
        host = host[1:-1]
    elif all(part.isdigit() for part in host.rstrip(".").split(".")):
        host_ok = _is_ip(host, ipaddress.IPv4Address)
    else:
        host_ok = _HOST_NAME.fullmatch(host) is not None
    if not (sep and host_ok and _PORT.fullmatch(port) and 1 <= int(port) <= 65535):
        raise RayAddressError(
            f"{_named(address, name)} is not a Ray address: give host:port, auto or ray://host:port"
        )
    if rest != address and not ray_client_installed():
        raise RayAddressError(
            f"{_named(address, name)} uses the Ray Client, which needs pip install 'ray[client]' "
            "(or give the cluster's host:port)"
        )
    return host, int(port)


def _is_ip(text: str, kind: type) -> bool:
    try:
        kind(text)
    except ValueError:
        return False
    return True


def check_reachable(
    address: str, host: str, port: int, timeout: float = RAY_CONNECT_S, name: str = ADDRESS
) -> None:
    """RayAddressError unless a plain TCP connection to host:port opens within `timeout` seconds
    (name lookup included: the probe runs in a thread that is abandoned when late)."""
    result: list[OSError | None] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result.append(None)
        except OSError as err:
            result.append(err)

    thread = threading.Thread(target=probe, name="ray-address-probe", daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    if result and result[0] is None:
        return
    err = result[0] if result else None
    if err is None or isinstance(err, TimeoutError):
        why = f"no answer within {timeout:g} s"
    elif isinstance(err, socket.gaierror):
        why = f"unknown host {host!r}"
    else:
        why = (err.strerror or str(err) or type(err).__name__).lower()
    raise RayAddressError(
        f"{_named(address, name)}: no Ray cluster answers there ({why}); start a Ray "
        "head node there (Ray's `ray start` command) or give its head's host:port"
    )


def check_ray_address(address: str, name: str = ADDRESS) -> None:
    """`address` is a Ray address (parse_ray_address) whose host:port accepts connections:
    RayAddressError otherwise, before Ray is asked to connect."""
    target = parse_ray_address(address, name)
    if target is not None:
        check_reachable(address, *target, name=name)


@contextlib.contextmanager
def connect_env() -> Iterator[None]:
    """Ray's connection knobs set (where the user has not) and RayConfig re-read while ray.init
    connects; the environment is restored afterwards."""
    added = {k: v for k, v in _RAY_CONNECT_ENV.items() if k not in os.environ}
    os.environ.update(added)
    try:
        # RayConfig re-read: a private API of Ray's; without it Ray's defaults apply (slower)
        with contextlib.suppress(Exception):
            from ray._raylet import Config

            Config.initialize("")
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


@contextlib.contextmanager
def _stderr_captured() -> Iterator[Callable[[], str]]:
    """File descriptor 2 (where Ray's C++ core logs its retries) goes to a temporary file for the
    block; yields a function that reads what was written there."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lambda: (sink.seek(0), sink.read(65536).decode(errors="replace"))[1]
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def _connect_failure(address: str, name: str, err: Exception, logged: str) -> str:
    """The one line for a ray.init(address) that failed with `err` after logging `logged`."""
    text = " ".join(str(err).split())
    where = f"{_named(address, name)}:"
    if any(
        s in f"{text} {logged}"
        for s in ("Unauthenticated", "InvalidAuthToken", "authentication token")
    ):
        if "no authentication token was found" in text:
            return (
                f"{where} RAY_AUTH_MODE=token, but no token is set: set RAY_AUTH_TOKEN or "
                "RAY_AUTH_TOKEN_PATH"
            )
        if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
            return (
                f"{where} the Ray cluster there refused this process's token (check "
                "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)"
            )
        return (
            f"{where} the Ray cluster there needs its token: set RAY_AUTH_MODE=token and "
            "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH)"
        )
    if address == "auto" and "Could not find any running Ray instance" in text:
        return (
            f"{where} no Ray cluster runs on this machine: start a Ray head node on it (Ray's "
            "`ray start` command)"
        )
    if "Timed out" in logged or "Failed to connect" in text:
        return (
            f"{where} no Ray cluster answered there (is host:port the GCS port of a Ray head, "
            "e.g. 6379?)"
        )
    text = text if len(text) <= 300 else text[:299] + "…"
    return f"{where} Ray could not connect there: {type(err).__name__}: {text}"


def connect_ray(ray: Any, address: str, name: str = ADDRESS, **kwargs: Any) -> None:
    """ray.init(address=address, **kwargs) with the connection knobs set and Ray's stderr captured;
    when it fails, Ray is shut down and RayAddressError gives the one line (`name`: _named)."""
    failure, text = None, ""
    with connect_env(), _stderr_captured() as logged:
        try:
            ray.init(address=address, **kwargs)
        except Exception as err:  # unreachable, not Ray, a token refused, a version mismatch
            failure, text = err, logged()
            with contextlib.suppress(Exception):
                ray.shutdown()
    if failure is not None:
        raise RayAddressError(_connect_failure(address, name, failure, text))
