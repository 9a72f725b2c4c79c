"""Does a wheel load on another system? ``tfbuild smoke --in-image IMAGE``: shown, not assumed.

The wheel is mounted read-only into a container of ``IMAGE`` (for example an older suite made by
``tfbuild base --suite bullseye``), and that system's own dynamic loader is asked to load every
shared object in the wheel (``_loadprobe.py``, run with the image's ``python3``). A library needing a
newer glibc or libstdc++ than the image has fails there with the loader's own words ("version
`GLIBC_2.34' not found"), which the report keeps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfbuild.errors import EnvironmentProblem, InputError

if TYPE_CHECKING:
    from tfbuild.engine import DockerEngine

PROBE = Path(__file__).with_name("_loadprobe.py")


@dataclass(frozen=True, kw_only=True)
class LibraryLoad:
    path: str
    loads: bool
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "loads": self.loads, "error": self.error}


@dataclass(frozen=True, kw_only=True)
class LoadReport:
    image: str
    glibc: str | None  # the image's glibc
    libraries: tuple[LibraryLoad, ...]

    @property
    def loads(self) -> bool:
        return all(library.loads for library in self.libraries)

    def to_json(self) -> dict[str, Any]:
        return {
            "image": self.image,
            "glibc": self.glibc,
            "loads": self.loads,
            "libraries": [library.to_json() for library in self.libraries],
        }


def loads_in(engine: DockerEngine, wheel: Path, image: str) -> LoadReport:
    """Load every shared object of ``wheel`` with the dynamic loader of a container of ``image``."""
    from tfbuild.engine import Mount

    if not wheel.is_file() or wheel.suffix != ".whl":
        raise InputError(f"no wheel at {wheel}", fix="Name a .whl file for --in-image.")
    if not engine.image_exists(image):
        raise EnvironmentProblem(
            f"no image {image} on this engine",
            fix="Make one with tfbuild base --suite SUITE (an older suite shows an older glibc).",
        )
    wheel = wheel.resolve()
    lines: list[str] = []
    result = engine.run(
        image,
        ["python3", "/tfbuild/loadprobe.py", f"/wheel/{wheel.name}"],
        mounts=[
            Mount(str(PROBE), "/tfbuild/loadprobe.py", read_only=True),
            Mount(str(wheel.parent), "/wheel", read_only=True),
        ],
        env={"HOME": "/tmp"},
        on_line=lines.append,
    )
    found = next((line for line in reversed(lines) if line.startswith("{")), None)
    if result.exit_code != 0 or found is None:
        raise EnvironmentProblem(
            f"cannot check {wheel.name} in {image}",
            why=" ".join(lines[-3:]) or f"the probe exited with {result.exit_code}",
            fix="The image needs python3 (tfbuild base images have it).",
        )
    data = json.loads(found)
    return LoadReport(
        image=image,
        glibc=data.get("glibc"),
        libraries=tuple(
            LibraryLoad(path=str(d["path"]), loads=bool(d["loads"]), error=d.get("error"))
            for d in data["libraries"]
        ),
    )
