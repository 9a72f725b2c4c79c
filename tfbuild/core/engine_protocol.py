"""What tfbuild asks of a container engine: :class:`Engine`.

:class:`tfbuild.core.engine.DockerEngine` is the one in the product. Every stage that uses an engine
takes it as this type, so what they do with the engine's answers (the OOM retry, a container killed
or removed from outside, signals during the clean-up, an image reused, a wheel that does not load
elsewhere, the engine's own facts judged) also runs against the tests' in-memory engine,
``tests/engine_fake.py``, which replays what the real one was recorded doing
(``tests/fixtures/engine/``). Planning with a local base image (``plan.here``) and doctor's
``run_canary``, which plans the canary's builds with it, still take the DockerEngine itself.

Loads no docker: the types named below are only looked at by the type checker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tfbuild.core.engine import EngineInfo, LineCallback, Mount, RunResult


class Engine(Protocol):
    """The engine's methods tfbuild calls; each behaves as DockerEngine's of the same name says."""

    @property
    def endpoint(self) -> str: ...  # the receipt records it

    def info(self) -> EngineInfo: ...

    def image_id(self, tag: str) -> str | None: ...

    def image_exists(self, tag: str) -> bool: ...

    def import_image(
        self, archive: Path, *, repository: str, tag: str, changes: Sequence[str] = ()
    ) -> str: ...

    def ensure_image(
        self,
        context: Path,
        *,
        repository: str,
        labels: dict[str, str] | None = None,
        on_line: LineCallback | None = None,
        build_args: dict[str, str] | None = None,
    ) -> tuple[str, bool]: ...

    def push_image(
        self, tag: str, repository: str, *, on_line: LineCallback | None = None
    ) -> str: ...

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
    ) -> RunResult: ...

    def ensure_volume(
        self, name: str, *, labels: Mapping[str, str] | None = None, part_of: str | None = None
    ) -> str: ...

    def remove_volume(self, name: str) -> None: ...
