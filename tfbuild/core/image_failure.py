"""Why an image build failed: its step, and the cause its output names (FROM, download, error)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from tfbuild.core.errors import BuildFailed, EnvironmentProblem, TfbuildError

# The legacy builder's own lines between a step and its output; they say nothing about a failure.
_BUILDER_CHATTER = (" ---> ", "Removing intermediate container", "Successfully ")


class StepOutput:
    """Remembers the current ``Step N/M``, its instruction and its output, for the message of a
    failed build."""

    def __init__(self) -> None:
        self.step = ""  # "5/11"; "" before the first step
        self.instruction = ""  # "RUN apt-get update && ..."
        # The step's output, where a failed download says which host it could not reach (apt
        # says so in its update, many lines before the install that fails for it).
        self.lines: deque[str] = deque(maxlen=400)

    def note(self, line: str) -> None:
        step = _STEP.match(line)
        if step:
            self.step, self.instruction = step.group(1), " ".join(step.group(2).split())
            self.lines.clear()
        elif line.strip() and not line.startswith(_BUILDER_CHATTER):
            self.lines.append(line.strip())

    def failure(self, tag: str, error: str) -> TfbuildError:
        """The error for the build of ``tag`` failing with the engine's ``error``: the cause first,
        then where (the step, its instruction once and shortened), then what to do."""
        code = _EXIT_CODE.search(error)
        where = f"step {self.step}, {_shorten(self.instruction)}" if self.step else "no step ran"
        if code:
            where += f", exit code {code.group(1)}"
        if self.instruction.upper().startswith("FROM "):
            # The image of FROM [--platform=P] IMAGE [AS NAME].
            words = [w for w in self.instruction.split()[1:] if not w.startswith("--")]
            return ImageUnavailable(
                words[0] if words else self.instruction,
                why=one_reason(error),
                fix="Put the image on this engine (docker pull where its registry is reachable, "
                "then docker save IMAGE | docker load here), or use another FROM image.",
            )
        failure = download_failure([*self.lines, error], self.instruction)
        if failure is not None:
            return DownloadFailed(tag, failure, where=where)
        cause = next((line for line in reversed(self.lines) if _ERROR_LINE.match(line)), None)
        cause = cause or (self.lines[-1] if self.lines else one_reason(error))
        return BuildFailed(
            f"building image {tag} failed: {cause}",
            why=where,
            fix="Read the build output above, fix that step, and rerun.",
        )


# --- the forms a failure takes in a step's output -------------------------------------------------

_STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")
_EXIT_CODE = re.compile(r"returned a non-zero code: (\d+)")
#: The legacy builder's error for a failed RUN, which repeats the whole command.
_COMMAND_FAILED = re.compile(r"^The command '.*' returned a non-zero code: (\d+)$", re.DOTALL)
#: Lines that state an error, in the forms of apt, dpkg, compilers, shells, curl and wget.
_ERROR_LINE = re.compile(
    r"^(E: |Error|ERROR|error|fatal|FATAL|curl: \(\d+\)|wget: |.*: (error|not found)\b)"
)
#: How download tools say that a host cannot be reached, each form as they print it (recorded for
#: real in tests/build/test_download_failures.py): apt, curl, wget, the engine's own pull (Go), pip.
_HOST_UNREACHABLE = (
    re.compile(r"Could not resolve '(?P<host>[^']+)'"),  # apt
    re.compile(r"Temporary failure resolving '(?P<host>[^']+)'"),  # apt
    re.compile(r"Could not connect to (?P<host>[^\s:()]+)(:\d+)? \("),  # apt
    re.compile(r"Unable to connect to (?P<host>[^\s:]+)"),  # apt
    re.compile(r"curl: \(\d+\) Could not resolve (host|proxy): (?P<host>\S+)"),
    re.compile(r"curl: \(\d+\) Failed to connect to (?P<host>\S+) port \d+"),
    re.compile(r"curl: \(\d+\) Connection timed out after .*"),
    re.compile(r"unable to resolve host address [\u2018'](?P<host>[^\u2019']+)[\u2019']"),  # wget
    re.compile(r"Connecting to (?P<host>[^\s(|:]+)[^|]*?(\|[^|]*\|)?(:\d+)?\.\.\. failed: "),
    re.compile(r"lookup (?P<host>\S+?)( on \S+)?: (no such host|server misbehaving|i/o timeout)"),
    re.compile(
        r"dial tcp (?P<host>[^\s:]+):\d+: (connect: )?"
        r"(connection refused|i/o timeout|no route to host|network is unreachable)"
    ),
    re.compile(r"HTTPSConnectionPool\(host='(?P<host>[^']+)'.*(NewConnection|ConnectTimeout)"),
)
#: How they say that a server's TLS certificate did not verify (a proxy that inspects TLS?).
_TLS_FAILED = re.compile(
    r"SSL certificate problem|certificate verify failed|CERTIFICATE_VERIFY_FAILED|"
    r"Certificate verification failed|server certificate verification failed"
)
_HTTPS_HOST = re.compile(r"https://([A-Za-z0-9.-]+)")


@dataclass(frozen=True, kw_only=True)
class DownloadFailure:
    """A download in a build step that did not happen: the hosts it could not reach (in the order
    they were named; empty when the output names none), the line that says so, and whether it was
    a TLS certificate that did not verify rather than a host that did not answer."""

    hosts: tuple[str, ...]
    evidence: str
    tls: bool = False


def download_failure(lines: Iterable[str], instruction: str = "") -> DownloadFailure | None:
    """What ``lines`` (a step's output) say about a download that failed; None when nothing."""
    hosts: dict[str, None] = {}
    evidence = ""
    tls = ""
    for line in lines:
        for form in _HOST_UNREACHABLE:
            found = form.search(line)
            if found:
                host = found.groupdict().get("host")
                if host:
                    hosts.setdefault(host.strip("'\u2018\u2019"), None)
                evidence = evidence or line.strip()
                break
        else:
            if not tls and _TLS_FAILED.search(line):
                tls = line.strip()
    if evidence:
        return DownloadFailure(hosts=tuple(hosts), evidence=evidence)
    if tls:
        # The TLS errors name no host: the step's https URLs do, when it has one host.
        named = tuple(dict.fromkeys(_HTTPS_HOST.findall(instruction)))
        return DownloadFailure(hosts=named if len(named) == 1 else (), evidence=tls, tls=True)
    return None


def _shorten(text: str, limit: int = 72) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def one_reason(error: str) -> str:
    """The engine's error without the failed command (which the step line already shows)."""
    failed = _COMMAND_FAILED.match(error.strip())
    if failed:
        return f"exit code {failed.group(1)}"
    return " ".join(error.split()).rstrip(".")


class ImageUnavailable(EnvironmentProblem):
    """A build's FROM image is neither on the engine nor can it be pulled."""

    def __init__(self, image: str, *, why: str, fix: str) -> None:
        super().__init__(f"cannot get the image {image}", why=why, fix=fix)
        self.image = image


class DownloadFailed(EnvironmentProblem):
    """A build step could not download what it needs: a host did not answer, or its TLS
    certificate did not verify."""

    def __init__(self, tag: str, failure: DownloadFailure, *, where: str) -> None:
        hosts = " and ".join(failure.hosts) or "a download"
        super().__init__(
            self.headline(failure, f"image {tag}"),
            why=f"{failure.evidence.rstrip('.')} ({where})",
            fix=f"Make {hosts} reachable from the build (a proxy, passed as the HTTP_PROXY and "
            f"HTTPS_PROXY build arguments), or build the image where it is reachable and load "
            f"it here (docker save {tag} | docker load).",
        )
        self.tag = tag
        self.failure = failure

    @staticmethod
    def headline(failure: DownloadFailure, subject: str) -> str:
        """``cannot reach HOST while building SUBJECT`` (or what a TLS failure is)."""
        hosts = " and ".join(failure.hosts) or "a download"
        if failure.tls:
            return f"the TLS certificate of {hosts} did not verify while building {subject}"
        return f"cannot reach {hosts} while building {subject}"
