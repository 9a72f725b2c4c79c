"""The toolchain image: built or reused by its input hash, failures named, packages listed."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

from tfbuild.build.log import BuildLog
from tfbuild.core.defaults import BASE_REPOSITORY, TOOLCHAIN_REPOSITORY
from tfbuild.core.engine_protocol import Engine
from tfbuild.core.errors import (
    BuildFailed,
    EnvironmentProblem,
    Unreachable,
)
from tfbuild.core.image_failure import DownloadFailed, ImageUnavailable
from tfbuild.plan import BuildPlan
from tfbuild.plan.render import write_context

#: apt's words for a pinned version its sources do not offer: (version, package).
_NO_VERSION = re.compile(r"Version '([^']+)' for '([^']+)' was not found")
#: What dpkg-query prints for each installed package of the toolchain image.
_PACKAGE_LINE = re.compile(r"^(\S+)\t(\S+)$")


def ensure_toolchain_image(
    engine: Engine,
    plan: BuildPlan,
    files: dict[str, str],
    work: Path,
    log: BuildLog,
    proxies: tuple[tuple[str, str], ...] = (),
) -> tuple[str, bool]:
    image_dir = work / "image"
    write_context({"Dockerfile": files["Dockerfile"]}, image_dir)
    try:
        # The proxy variables are Docker's predefined build arguments: the RUN steps' downloads
        # (apt, curl) use them, and the image keeps none of them.
        tag, built = engine.ensure_image(
            image_dir,
            repository=TOOLCHAIN_REPOSITORY,
            labels={},
            on_line=log.line,
            build_args=dict(proxies),
        )
    except ImageUnavailable as exc:
        raise EnvironmentProblem(exc.what, why=exc.why, fix=_image_fix(plan, exc.image)) from exc
    except DownloadFailed as exc:
        raise Unreachable(
            exc.headline(exc.failure, "the toolchain image"),
            why=exc.why,
            fix=_download_fix(exc, proxies),
            details=tuple(log.tail),
        ) from exc
    except BuildFailed as exc:
        gone = next((m for line in log.tail if (m := _NO_VERSION.search(line))), None)
        if gone is not None and plan.package_versions:
            raise EnvironmentProblem(
                f"{gone.group(2)} {gone.group(1)} can no longer be had",
                why="the rebuild installs every package at the version the receipt records, and "
                "the package sources no longer offer this one",
                fix="Rebuild where that version is still offered (a mirror or snapshot of the "
                "time), or build anew without --from-receipt.",
            ) from exc
        raise BuildFailed(
            exc.what, why=exc.why, fix=f"The whole log: {log.path}", details=tuple(log.tail)
        ) from exc
    log.note(f"toolchain image {tag}: {'built' if built else 'reused (unchanged)'}")
    return tag, built


def _image_fix(plan: BuildPlan, image: str) -> str:
    """What to do when the toolchain image's FROM ``image`` cannot be had (no registry here)."""
    sysroot = plan.sysroot.image if plan.sysroot else None
    for made in (plan.base_image, sysroot):
        if made is not None and made.image_id and image == made.reference:
            return (
                "It was made by tfbuild base: make it again "
                f"(sudo tfbuild base --suite {made.suite} --tag {made.reference})."
            )
    base = plan.base_image
    if image == base.reference:
        return (
            "Where no container registry can be reached, make a local one with "
            f"sudo tfbuild base --suite {base.suite} and pass --base-image {BASE_REPOSITORY}:{base.suite}."
        )
    if sysroot is not None and image == sysroot.reference:
        return (
            "Where no container registry can be reached, link against a local image's C library "
            "instead: --sysroot-from tfbuild/base:SUITE (made by sudo tfbuild base --suite SUITE; "
            "the wheel then needs that system's glibc), or --no-portable (the base image's own)."
        )
    return "Put it on this engine: docker save it where a registry is reachable, docker load here."


def _download_fix(exc: DownloadFailed, proxies: tuple[tuple[str, str], ...]) -> str:
    """What to do when a toolchain image step cannot download (apt.llvm.org, github.com, a package
    mirror or snapshot): the proxy the build uses, or the same image made where the host answers."""
    proxy = next((v for n, v in proxies if n.lower() in ("https_proxy", "http_proxy")), None)
    host = ""
    if proxy is not None:
        host = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}").hostname or ""
    hosts = " and ".join(exc.failure.hosts)
    where_ok = f"{hosts} can be reached" if hosts and host not in exc.failure.hosts else "it works"
    premade = (
        f"build this image where {where_ok} and load it here "
        f"(docker save {exc.tag} | docker load): tfbuild reuses it by that tag"
    )
    if exc.failure.tls:
        return (
            "A proxy that inspects TLS needs its CA certificates inside the image, and tfbuild "
            f"bakes none in (--ca-bundle reaches the build container only): {premade}."
        )
    if proxy is None:
        return (
            "Behind a proxy, set HTTP_PROXY and HTTPS_PROXY (passed to the image build); "
            f"or {premade}."
        )
    loopback = host in {"localhost", "::1"} or host.startswith("127.")
    where = (
        " (this machine's loopback is not the containers': name it by an address they reach)"
        if loopback
        else ""
    )
    return f"Check the proxy {proxy} that the image build uses{where}; or {premade}."


def toolchain_packages(engine: Engine, tag: str) -> dict[str, str]:
    """Every package installed in the toolchain image, with its exact version (dpkg-query -W)."""
    lines: list[str] = []
    result = engine.run(
        tag,
        ["dpkg-query", "-W", "-f", "${binary:Package}\t${Version}\n"],
        on_line=lines.append,
    )
    if result.exit_code != 0:
        raise BuildFailed(
            f"cannot list the packages of the toolchain image {tag}",
            why=f"dpkg-query exited with {result.exit_code}: {' '.join(lines[-3:])}",
            fix="The image must be a Debian or Ubuntu one (base-images.yaml).",
        )
    packages: dict[str, str] = {}
    for line in lines:
        found = _PACKAGE_LINE.match(line.strip())
        if found:
            packages[found.group(1).split(":")[0]] = found.group(2)
    return packages
