"""What a build asks of a container engine: :class:`Engine`.

:class:`tfbuild.core.engine.DockerEngine` is the one in the product. The build stage (``build.run``,
``build.container``, ``build.toolchain_image``, ``build.credentials``, ``build.rebuild``'s verify)
takes its engine as this type, so that its orchestration (the OOM retry, a container killed or
removed from outside, signals during the clean-up, publishing) also runs against the tests'
in-memory engine, ``tests/engine_fake.py``, which replays what the real one was recorded doing
(``tests/fixtures/engine/``).

Loads no docker: the types named below are only looked at by the type checker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tfbuild.core.engine import LineCallback, Mount, RunResult


class Engine(Protocol):
    """The engine's methods a build calls; each behaves as DockerEngine's of the same name says."""

    @property
    def endpoint(self) -> str:
        """Where the engine answers (``unix:///var/run/docker.sock``): the receipt records it."""
        ...

    def image_id(self, tag: str) -> str | None:
        """The image's id, None when there is no such image."""
        ...

    def ensure_image(
        self,
        context: Path,
        *,
        repository: str,
        labels: dict[str, str] | None = None,
        on_line: LineCallback | None = None,
        build_args: dict[str, str] | None = None,
    ) -> tuple[str, bool]:
        """``(repository:<input hash>, built now)``: the image of ``context``, built if missing."""
        ...

    def push_image(self, tag: str, repository: str, *, on_line: LineCallback | None = None) -> str:
        """``tag`` pushed to ``repository``; the pushed manifest as ``repository@sha256:...``."""
        ...

    def run(
        self,
        image: str,
        command: Sequence[str],
        *,
        mounts: Sequence[Mount] = (),
        env: Mapping[str, str] | None = None,
        user: str | None = None,
        workdir: str | None = None,
        labels: Mapping[str, str] | None = None,
        mem_limit: str | None = None,
        name: str | None = None,
        on_line: LineCallback | None = None,
        keep: bool = False,
        network_mode: str | None = None,
    ) -> RunResult:
        """``command`` in a new container, its output line by line to ``on_line``; how it ended.

        The container is removed afterwards unless ``keep``, and on any exception (a signal's
        included) before the exception goes on. One removed from outside while it runs raises
        :class:`tfbuild.core.engine.ContainerGone`."""
        ...

    def ensure_volume(
        self, name: str, *, labels: Mapping[str, str] | None = None, part_of: str | None = None
    ) -> str:
        """A named volume, created when missing (``part_of``: removed with that one); its name."""
        ...

    def remove_volume(self, name: str) -> None:
        """Remove volume ``name`` and the volumes that are part of it; missing ones are fine."""
        ...
