"""--remote-header-file: headers read, written privately for bazel, server logs removed."""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from tfbuild.build.log import BuildLog
from tfbuild.build.remotes import remotes
from tfbuild.core.engine import Mount
from tfbuild.core.engine_protocol import Engine
from tfbuild.core.errors import InputError
from tfbuild.core.files import read_input
from tfbuild.plan import OUTPUT_BASE, BuildPlan

#: Where --remote-header-file's private directory is seen in the container, read-only: bazel's
#: credential helper and the headers it prints, or (a bazel without credential helpers) an rc file.
REMOTE_DIR = "/etc/tfbuild/remote"
REMOTE_RC_NAME = "remote.bazelrc"
HELPER_NAME = "credential-helper"
HEADERS_NAME = "headers.json"
#: --remote-header-file holds a few 'Name: value' lines: more is refused while reading.
REMOTE_HEADERS_LIMIT = 64 * 1024
_HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


@dataclass(frozen=True, kw_only=True)
class RemoteHeaders:
    """--remote-header-file's headers, checked: (name, value) pairs. No value is ever shown: not in
    a repr, a message, a log line or bazel's command line."""

    pairs: tuple[tuple[str, str], ...] = field(repr=False)


def read_remote_headers(path: Path) -> RemoteHeaders:
    """``--remote-header-file``'s ``Name: value`` lines (blank lines and ``#`` comments skipped),
    read as every input file is (a regular file of at most 64 KiB, or ``-``). A bad line is named
    by its number, never by its value."""
    fix = "Name a file of 'Name: value' lines, e.g. 'Authorization: Bearer TOKEN'."
    what = f"--remote-header-file {path}"
    try:
        raw = read_input(path, limit=REMOTE_HEADERS_LIMIT, what=what, fix=fix)
    except FileNotFoundError:
        raise InputError(f"cannot read {what}", why="no such file", fix=fix) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"cannot read {what}", why="it is not UTF-8 text", fix=fix) from None
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not _HEADER_NAME.fullmatch(name) or not value.isprintable() or not value:
            raise InputError(
                f"{what}:{number} is not a 'Name: value' header",
                why="a header is a name of letters, digits, '-' and '_', a colon and a printable "
                "value (the value is not shown here)",
                fix="Write one header per line, e.g. 'Authorization: Bearer TOKEN'.",
            )
        pairs.append((name, value))
    if not pairs:
        raise InputError(
            f"{what} holds no header",
            fix="Write one 'Name: value' line per header, or drop the option.",
        )
    return RemoteHeaders(pairs=tuple(pairs))


#: Each spelling of bazel's credential helper flag, with the first bazel that has it:
#: --experimental_credential_helper came in 5.3.0 (bazelbuild/bazel#15966, the 5.3.0 cherry-pick of
#: #15947 "Wire up credential helper to command-line flag(s)"), and 6.3.0 declared it stable as
#: --credential_helper, keeping the old name (#18751, #18752; AuthAndTLSOptions.java: name
#: "credential_helper", oldName "experimental_credential_helper").
CREDENTIAL_HELPER_FLAGS: tuple[tuple[tuple[int, int], str], ...] = (
    ((6, 3), "--credential_helper"),
    ((5, 3), "--experimental_credential_helper"),
)
_BAZEL_VERSION = re.compile(r"(\d+)\.(\d+)")

#: bazel's credential helper: bazel runs it with the argument ``get``, writes ``{"uri": "..."}`` to
#: its standard input and reads ``{"headers": {"Name": ["value", ...]}}`` from its standard output
#: (the Credential Helper Specification, github.com/EngFlow/credential-helper-spec spec.md, which
#: bazel's --credential_helper help names). An unscoped helper is asked for every URI bazel reaches
#: (repository downloads too, from bazel 6.3), so this one answers the headers only for the hosts of
#: the remote cache and executor, and ``{}`` (no credentials) for any other.
CREDENTIAL_HELPER = f'''#!/usr/bin/env python3
"""tfbuild's bazel credential helper: --remote-header-file's headers, for the remote's hosts only."""
import json
import sys
import urllib.parse
from pathlib import Path

if sys.argv[1:] != ["get"]:
    sys.exit("usage: {HELPER_NAME} get (bazel's credential helper protocol)")
request = json.load(sys.stdin)
stored = json.loads(Path(__file__).with_name("{HEADERS_NAME}").read_text(encoding="utf-8"))
host = (urllib.parse.urlsplit(str(request.get("uri", ""))).hostname or "").lower()
json.dump({{"headers": stored["headers"] if host in stored["hosts"] else {{}}}}, sys.stdout)
'''


def credential_helper_flag(plan: BuildPlan) -> str | None:
    """The flag that gives the plan's bazel a credential helper; None where the bazel that runs has
    none: the canary's (Debian's bazel-bootstrap 4.2.3) and any bazel before 5.3."""
    if plan.canary:
        return None
    found = _BAZEL_VERSION.match(plan.bazel)
    if found is None:
        return None
    version = (int(found.group(1)), int(found.group(2)))
    return next((flag for first, flag in CREDENTIAL_HELPER_FLAGS if version >= first), None)


def remote_header_rc(headers: RemoteHeaders) -> str:
    """The rc text for a bazel without credential helpers (given with --bazelrc): one quoted
    ``--remote_header`` each, then ``--noannounce_rc``. build.sh also puts ``--noannounce_rc`` and
    empty build event outputs after every ``--config`` on the command line, where no rc file of the
    tree can turn them back on."""
    lines = [
        "build " + shlex.quote(f"--remote_header={name}={value}") for name, value in headers.pairs
    ]
    return "\n".join([*lines, "build --noannounce_rc", ""])


def helper_headers(headers: RemoteHeaders, plan: BuildPlan) -> str:
    """The JSON the credential helper answers from: the headers (a name given twice keeps both
    values) and the hosts of the plan's remote cache and executor."""
    merged: dict[str, list[str]] = {}
    for name, value in headers.pairs:
        merged.setdefault(name, []).append(value)
    hosts = sorted(
        {(urllib.parse.urlsplit(url).hostname or "").lower() for _, url in remotes(plan)}
    )
    return json.dumps({"hosts": [h for h in hosts if h], "headers": merged}, indent=2) + "\n"


@dataclass(frozen=True, kw_only=True)
class RemoteCredentials:
    """--remote-header-file's headers written for bazel into a private directory (0700, its files
    0600 or 0700), mounted read-only at REMOTE_DIR: a credential helper and its headers, or an rc
    file where the bazel that runs has no credential helper (``helper_flag`` None)."""

    directory: Path
    count: int
    helper_flag: str | None

    def environment(self) -> dict[str, str]:
        """What build.sh needs (paths and a count, never a value)."""
        env = {"TFBUILD_REMOTE_HEADERS": str(self.count)}
        if self.helper_flag is not None:
            env["TFBUILD_CREDENTIAL_HELPER"] = f"{self.helper_flag}={REMOTE_DIR}/{HELPER_NAME}"
        else:
            env["TFBUILD_REMOTE_RC"] = f"{REMOTE_DIR}/{REMOTE_RC_NAME}"
        return env


def _private_file(path: Path, text: str, mode: int) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_remote_credentials(
    headers: RemoteHeaders, plan: BuildPlan, directory: Path
) -> RemoteCredentials:
    """Write ``headers`` for the plan's bazel into ``directory`` (new, private: the caller made it
    with mkdtemp and removes it on every way out)."""
    flag = credential_helper_flag(plan)
    if flag is not None:
        _private_file(directory / HEADERS_NAME, helper_headers(headers, plan), 0o600)
        _private_file(directory / HELPER_NAME, CREDENTIAL_HELPER, stat.S_IRWXU)
    else:
        _private_file(directory / REMOTE_RC_NAME, remote_header_rc(headers), 0o600)
    return RemoteCredentials(directory=directory, count=len(headers.pairs), helper_flag=flag)


#: What bazel leaves in its output base that can hold the options of a command, rc files' included:
#: the server's log (java.log, a link, and the java.log.* files it names: every request's argv,
#: rc options as --default_override) and the last command's output (command.log: what --announce_rc
#: printed). Found by a build with a planted token (tests/docker/test_remote_cache.py scans the
#: whole volume after each credentialed build).
SERVER_LOGS = ("java.log", "java.log.*", "command.log")


def remove_server_logs(engine: Engine, tag: str, output_base: str, log: BuildLog) -> None:
    """Remove bazel's server logs from the output base volume after a credentialed build, however
    it ended (the bazel server died with its container). Run as root: bazel's files are the build
    user's, and a root-owned leftover must go too."""
    names = " ".join(f"{OUTPUT_BASE}/{name}" for name in SERVER_LOGS)
    result = engine.run(
        tag,
        ["sh", "-c", f"rm -f {names}"],
        mounts=[Mount(output_base, OUTPUT_BASE, kind="volume")],
        user="0:0",
    )
    if result.exit_code != 0:
        log.note(
            f"WARNING: bazel's server logs in the volume {output_base} could not be removed (exit "
            f"code {result.exit_code}); they may hold the remote headers: docker volume rm it"
        )


def give_to(directory: Path, user: str) -> None:
    """Root building as another user: the directory and its files become that user's, the only
    one that reads (or writes) them in the build container."""
    uid, _, gid = user.partition(":")
    if os.geteuid() != 0 or int(uid) == 0:
        return
    for path in (directory, *directory.iterdir()):
        os.chown(path, int(uid), int(gid or uid), follow_symlinks=False)
