"""What `tfbuild tune` keeps for a wheel, its gain against TensorFlow's defaults, and its run time.

Runs ``tfbuild tune SPEC --json`` (the default 5-minute budget unless --budget) and prints each
setting it tried with its measured gain and interval, what it kept, and the kept profile against the
defaults as the confirmation measured it, side by side in alternation. A model's levers (``tune
--model``) have their own benchmark: benchmarks/model_levers.py.

    python benchmarks/tune.py [--spec tensorflow-cpu==2.21.0] [--budget 300]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="tensorflow-cpu==2.21.0")
    parser.add_argument("--budget", default="300")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "profile.env"
        start = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-m", "tfbuild", "tune", args.spec, "--budget", args.budget,
             "--env-file", str(profile), "--json"],
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        took = time.perf_counter() - start
        if run.returncode != 0:
            sys.stderr.write(run.stderr)
            return run.returncode
        data = json.loads(run.stdout)
        written = profile.read_text()
    print(f"tfbuild tune: {took:.0f} s (budget {args.budget} s)")
    for word in ("kept", "rejected"):
        for t in data[word]:
            low, high = t["interval"]
            print(
                f"  {word:<9}{t['name']:<28}{t['gain']:>6.2f}x  ({low:.2f}-{high:.2f}x)  {t['ops']}"
            )
    for name in data["not_tried"]:
        print(f"  not tried {name}")
    confirmation = data["confirmation"]
    if confirmation:
        low, high = confirmation["interval"]
        print(
            f"profile against the defaults, side by side: {confirmation['gain']:.2f}x "
            f"({low:.2f}-{high:.2f}x), {'confirmed' if confirmation['wins'] else 'not confirmed'}"
        )
    else:
        print("no setting won beyond the noise: the profile is TensorFlow's defaults")
    print("profile:\n" + written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
