"""A publisher process for the publishing tests: real ``build.publish`` calls on real files.

``python -m tests.build.publisher DIST [STOP_FILE]`` publishes generation after generation of one
wheel name into DIST (a real zip with ``GENERATION = n`` in its module, its receipt, an env file
saying ``GENERATION=n``), and prints ``published COUNT GENERATION`` after each. The generations
(1 to POOL, again and again) are built first in a work directory inside DIST, as ``tfbuild wheel``
builds, so that the loop does little but publish: each is hard linked to a fresh name there, then
published (moved). It stops when STOP_FILE exists; SIGTERM and SIGINT stop it as they stop
``tfbuild wheel`` (:func:`tfbuild.core.stopping.stop_on_signals`), the message printed and exit 130.
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

from tests.receipts import make_receipt
from tests.wheels import make_wheel
from tfbuild.build.publish import publish
from tfbuild.core.errors import Interrupted
from tfbuild.core.stopping import stop_on_signals
from tfbuild.wheel.receipt import Receipt

NAME = "tfbuild_standin-2.21.0+x86_64v4-py3-none-any.whl"
#: How many generations the publisher cycles through.
POOL = 8


def built(dist: Path, generation: int, *, padding: int = 0) -> tuple[Path, Receipt, str]:
    """Generation ``generation`` of the wheel, built in a work directory inside ``dist``, with its
    receipt and env text: what ``tfbuild wheel`` has in hand when it publishes."""
    work = dist / f".tfbuild-test-{os.getpid()}-work"
    work.mkdir(exist_ok=True)
    module = f"GENERATION = {generation}\n" + "#" * padding + "\n"
    wheel = make_wheel(work, NAME, module_text=module)
    return wheel, Receipt.from_json(make_receipt(wheel)), f"GENERATION={generation}\n"


def generation_of(wheel: Path) -> int:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read("tfbuild_standin/__init__.py").decode()
    return int(text.split("\n", 1)[0].removeprefix("GENERATION = "))


def next_generation(generation: int) -> int:
    return generation % POOL + 1


def main(argv: list[str]) -> int:
    dist = Path(argv[1])
    stop = Path(argv[2]) if len(argv) > 2 else None
    pool = []
    for generation in range(1, POOL + 1):
        wheel, receipt, env_text = built(dist, generation)
        kept = wheel.with_name(f"{generation}.whl")
        wheel.replace(kept)
        pool.append((kept, receipt, env_text))
    count = 0
    try:
        with stop_on_signals():
            while stop is None or not stop.exists():
                kept, receipt, env_text = pool[count % POOL]
                count += 1
                wheel = kept.with_name(NAME)
                os.link(kept, wheel)
                publish(dist, wheel, receipt, env_text)
                print(f"published {count} {count % POOL or POOL}", flush=True)
    except Interrupted as exc:
        print(exc.line(), flush=True)
        return 130
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
