"""A build's remote cache and executor: their URLs, a reach check, bazel's words on failure."""

from __future__ import annotations

import re
import socket
import urllib.parse

from tfbuild.core.errors import EnvironmentProblem
from tfbuild.plan import BuildPlan

#: Where a remote cache or executor on this machine's loopback lives (the build container then
#: shares the host's network to reach it).
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def host_network(plan: BuildPlan) -> bool:
    """Does the build reach a remote cache or executor on this machine's loopback? A container's
    127.0.0.1 is its own: only the host's network reaches the host's loopback."""
    hosts = {urllib.parse.urlsplit(url).hostname for _, url in remotes(plan)}
    return bool(hosts & _LOOPBACK)


#: bazel's words when its first call to the remote (the capabilities check) fails, e.g.
#: "ERROR: Failed to query remote execution capabilities: Connection refused: /127.0.0.1:47999" or
#: "...: DEADLINE_EXCEEDED: deadline exceeded after 9.999591210s. [...]" (bazel 4.2.3).
_CAPABILITIES = re.compile(r"Failed to query remote execution capabilities: (.*)$")
_REFUSED = re.compile(r"Connection refused|UNAVAILABLE|UnknownHost|Name or service not known")
_DENIED = re.compile(r"UNAUTHENTICATED|PERMISSION_DENIED")
_DEADLINE = re.compile(r"DEADLINE_EXCEEDED")
#: How long the preflight connect waits for a TCP answer.
CONNECT_TIMEOUT_S = 5.0


def remotes(plan: BuildPlan) -> tuple[tuple[str, str], ...]:
    """The plan's remotes as (what, URL): "remote cache" and "remote executor"."""
    names = {"--remote_cache=": "remote cache", "--remote_executor=": "remote executor"}
    return tuple(
        (what, option[len(prefix) :])
        for option in plan.build_options
        for prefix, what in names.items()
        if option.startswith(prefix)
    )


def remote_failure(plan: BuildPlan, tail: list[str]) -> EnvironmentProblem | None:
    """A build that failed because its remote cache or executor failed bazel's first call, as one
    line (exit 5); None for any other failure."""
    found = next((m for line in reversed(tail) if (m := _CAPABILITIES.search(line))), None)
    named = remotes(plan)
    if found is None or not named:
        return None
    (what, url), cause = named[-1], found.group(1).strip()  # the executor, where there is one
    if _DEADLINE.search(cause):
        waited = _wait_bound(plan)
        return EnvironmentProblem(
            f"the {what} at {url} did not answer"
            + (f" (waited {waited} s)" if waited is not None else ""),
            why="it accepts connections but answers no call: " + cause[:200],
            fix=f"Check the {what}'s server, or build without it (drop the option).",
        )
    if _DENIED.search(cause):
        return EnvironmentProblem(
            f"the {what} at {url} refused the build's credentials",
            why=cause[:200],
            fix="Check the headers of --remote-header-file (their values are not shown).",
        )
    if _REFUSED.search(cause):
        return _unreachable(what, url, cause[:200])
    return None


def _unreachable(what: str, url: str, why: str) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"the {what} at {url} is unreachable",
        why=why,
        fix=f"Start the {what} or correct its URL, or build without it (drop the option).",
    )


def _wait_bound(plan: BuildPlan) -> int | None:
    """How long bazel waits for a remote that never answers: each call's --remote_timeout, tried
    1 + --remote_retries times (bazel's defaults 60 s and 5)."""
    values = dict(
        o.split("=", 1) for o in plan.build_options if o.startswith("--remote_") and "=" in o
    )
    try:
        timeout = int(values.get("--remote_timeout", "60").rstrip("s"))
        retries = int(values.get("--remote_retries", "5"))
    except ValueError:
        return None
    return timeout * (retries + 1)


def check_remote_reachable(plan: BuildPlan) -> None:
    """A TCP connect to each remote on this machine's loopback (which the build container shares),
    before any image or container: a closed port is one line, exit 5, in a second instead of after
    the toolchain image. A remote elsewhere is left to bazel (this host's network may not be the
    container's)."""
    for what, url in remotes(plan):
        parts = urllib.parse.urlsplit(url)
        if parts.hostname not in _LOOPBACK or parts.port is None:
            continue
        try:
            socket.create_connection(
                (parts.hostname, parts.port), timeout=CONNECT_TIMEOUT_S
            ).close()
        except OSError as exc:
            raise _unreachable(what, url, exc.strerror or str(exc)) from None


def waiting_note(plan: BuildPlan) -> str | None:
    """What the build waits for before its first action: bazel's first call to each remote."""
    named = remotes(plan)
    if not named:
        return None
    bound = _wait_bound(plan)
    each = " and ".join(f"the {what} at {url}" for what, url in named)
    limit = f" (bazel gives up after about {bound} s without an answer)" if bound else ""
    return f"waiting for {each}{limit}"
