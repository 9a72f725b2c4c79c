"""Which kernels oneDNN runs for matmul and conv in the stock wheel, read from its verbose output.

matmul and conv run oneDNN's JIT kernels, chosen at run time, so the forecast forecasts no gain
there: it says which ISA oneDNN detected and which implementation each primitive ran.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tfbuild.core import commands
from tfbuild.measure.envs import clean_env
from tfbuild.measure.forecast_report import OneDnn

_KINDS = {
    "matmul": "matmul",
    "gemm_api": "matmul",
    "inner_product": "matmul",
    "convolution": "conv",
}


def onednn_call(python: str, env: Mapping[str, str] | None = None) -> commands.Command:
    """The probe: ``python`` runs a matmul and a conv (``scripts/onednn_probe.py``) with
    ONEDNN_VERBOSE=1, in ``env`` (default: :func:`~tfbuild.measure.envs.clean_env`; its
    PYTHONPATH first on the script's path)."""
    env = clean_env() if env is None else env
    return commands.Command(
        argv=commands.in_python(python, "onednn_probe.py", paths=commands.python_path(env)),
        what="tfbuild's oneDNN probe did not run",
        env={**env, "ONEDNN_VERBOSE": "1", "TF_CPP_MIN_LOG_LEVEL": "1"},
        timeout=300,
    )


#: The verbose lines of oneDNN: "onednn_verbose," (2.x, 3.x), "dnnl_verbose," (before 2.x).
_VERBOSE_PREFIXES = ("onednn_verbose", "dnnl_verbose")


def _verbose_fields(line: str) -> list[str] | None:
    """A oneDNN verbose line's fields after its prefix, the same for every format oneDNN has had:
    without the format marker ("v1", from oneDNN 3.1) and the "primitive" category (3.x), so
    that "info,cpu,isa:..." and "exec,cpu,KIND,IMPLEMENTATION,..." come first."""
    fields = line.split(",")
    if fields[0] not in _VERBOSE_PREFIXES:
        return None
    rest = fields[1:]
    if rest and re.fullmatch(r"v\d+", rest[0]):
        rest = rest[1:]
    if rest and rest[0] == "primitive":
        rest = rest[1:]
    return rest


def read_probe(done: commands.Finished) -> OneDnn:
    """What the probe's run (:func:`onednn_call`) says oneDNN ran, in its verbose output: the ISA
    it detected and each primitive's implementation; or how the probe failed. Every failure to
    read it is said as tfbuild's, never as a question about the wheel."""
    error = None
    if done.returncode is None:
        error = f"tfbuild's oneDNN probe did not run: {done.problem}"
    elif done.returncode != 0:
        error = f"tfbuild's oneDNN probe exited with {done.returncode}: {done.last_line[:200]}"
    isa = None
    kernels: dict[str, list[str]] = {}
    seen = False
    for line in (done.stdout + done.stderr).splitlines():
        fields = _verbose_fields(line.strip())
        if fields is None:
            continue
        seen = True
        if fields[:2] == ["info", "cpu"] and len(fields) > 2 and fields[2].startswith("isa:"):
            isa = ",".join(fields[2:])[4:].strip()
        if fields[:2] == ["exec", "cpu"] and len(fields) > 3 and fields[2] in _KINDS:
            impl = fields[3] or ("oneDNN's sgemm" if fields[2] == "gemm_api" else "?")
            kind = _KINDS[fields[2]]
            if impl not in kernels.setdefault(kind, []):
                kernels[kind].append(impl)
    if error is None and not seen:
        error = (
            "the stock wheel printed no oneDNN verbose line under tfbuild's probe: oneDNN ran "
            "none of its matmul and conv there"
        )
    elif error is None and isa is None:
        error = "tfbuild's oneDNN probe could not read the ISA from oneDNN's verbose lines"
    elif error is None and not kernels:
        error = "tfbuild's oneDNN probe read no matmul or conv kernel from oneDNN's verbose lines"
    return OneDnn(isa=isa, kernels={k: tuple(v) for k, v in sorted(kernels.items())}, error=error)
