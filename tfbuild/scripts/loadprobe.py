#!/usr/bin/env python3
"""Does a wheel load, install and import here? Run by ``tfbuild smoke --in-image`` inside a
container of another system (standard library only, any Python 3.6+):

    python3 loadprobe.py WHEEL [--wheelhouse DIR]

1. The native code: unpacks the wheel and asks this system's dynamic loader to load every shared
   object in it (``dlopen`` through ctypes, lazy binding): the loader checks each library's needed
   symbol versions (``GLIBC_2.34``, ``GLIBCXX_3.4.30``) against this system's libraries. Libraries
   that need others of the same wheel are retried until nothing more loads.
2. The wheel's own words: the Tag lines of ``.dist-info/WHEEL``; Name, Requires-Python and
   Requires-Dist of ``METADATA``; the top-level import names (``top_level.txt``, else the
   top-level packages and modules). The tags are checked against this interpreter the way pip
   checks a wheel's Python and ABI tags (a cp311 wheel does not install on Python 3.9; py3-none
   does), and Requires-Python too (its simple forms; one it cannot read does not refuse the wheel).
3. The requirements: each unmarked Requires-Dist is looked up among the distributions this Python
   sees (importlib.metadata; without it, "unknown"). Requirements for an extra are skipped; other
   marked ones are reported "not evaluated" (no ``packaging`` here to evaluate markers).
4. The import: each top-level name is imported in a fresh ``python3`` with the unpacked wheel first
   on ``sys.path`` (PYTHONPATH), or, with ``--wheelhouse DIR`` and pip in this image, from a
   ``pip install --no-index --find-links DIR --target TMP WHEEL`` (the dependencies come from DIR,
   offline). Each import says ok (and the file it ran) or the exception's last line, with the
   missing dependency that likely caused it, if any.

Prints one JSON object. The platform tag is not judged here: the loader (1) is the real test, and
pip, when it installs, judges it in its own words.
"""

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

# A signature's annotations are strings: old Pythons evaluate them when the function is defined,
# and ``list[str]`` (3.9+) or ``str | None`` (3.10+) would fail there.

IMPORT_TIMEOUT = 300  # seconds for one import (TensorFlow's takes a few)
PIP_TIMEOUT = 900
_IMPORT_CODE = (
    "import importlib, sys\n"
    "module = importlib.import_module(sys.argv[1])\n"
    "print('tfbuild-imported: ' + str(getattr(module, '__file__', None)))\n"
)
_MARKER = "tfbuild-imported: "


# --- the native code ---------------------------------------------------------------------------


def load_libraries(root: str) -> "list[dict[str, Any]]":
    """Every shared object below ``root``, loaded with this system's loader: path, loads, error."""
    libraries = sorted(
        str(path)
        for path in Path(root).rglob("*")
        if path.is_file() and (path.name.endswith(".so") or ".so." in path.name)
    )
    errors: dict[str, str] = {}
    pending = list(libraries)
    while pending:
        still = []
        for path in pending:
            try:
                ctypes.CDLL(path, mode=os.RTLD_LAZY | ctypes.RTLD_GLOBAL)
                errors.pop(path, None)
            except OSError as exc:
                errors[path] = str(exc).replace(root + "/", "")
                still.append(path)
        if len(still) == len(pending):
            break
        pending = still
    return [
        {
            "path": str(Path(path).relative_to(root)),
            "loads": path not in errors,
            "error": errors.get(path),
        }
        for path in libraries
    ]


# --- the wheel's own words ---------------------------------------------------------------------


def tags_from_filename(filename: str) -> "list[str]":
    """``name-version(-build)?-python-abi-platform.whl`` -> ``["python-abi-platform"]``."""
    parts = Path(filename).name[: -len(".whl")].split("-")
    return ["-".join(parts[-3:])] if len(parts) >= 5 else []


def expand_tag(tag: str) -> "list[tuple[str, str, str]]":
    """A compressed tag set (``py2.py3-none-any``) as every (python, abi, platform) it stands for."""
    parts = tag.split("-")
    if len(parts) != 3:
        return []
    pythons, abis, platforms = (part.split(".") for part in parts)
    return [(p, a, f) for p in pythons for a in abis for f in platforms]


_EXTENSION = re.compile(r"^([A-Za-z_]\w*)\.(?:cpython-[^.]+|abi3)\.so$")


def top_level_names(names: "list[str]", top_level_txt: str = "") -> "list[str]":
    """The import names a wheel installs: ``top_level.txt``'s lines when it has them, else its
    top-level packages (a directory with ``__init__.py``), ``.py`` modules and extension modules
    with an ABI suffix (``_speedups.cpython-311-x86_64-linux-gnu.so``, ``_x.abi3.so``; a bare
    ``libx.so`` may be a plain library). ``*.dist-info`` and ``*.data`` are not import names, but
    ``*.data/purelib`` and ``*.data/platlib`` install at the top level, so what they hold counts."""
    listed = {line.strip().replace("/", ".") for line in top_level_txt.splitlines()}
    listed.discard("")
    if listed:
        return sorted(listed)
    found = set()
    for name in names:
        parts = name.split("/")
        if len(parts) >= 3 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
            parts = parts[2:]
        top = parts[0]
        extension = _EXTENSION.match(top)
        if top.endswith((".dist-info", ".data")):
            continue
        if len(parts) == 1 and top.endswith(".py"):
            found.add(top[: -len(".py")])
        elif len(parts) == 1 and extension:
            found.add(extension.group(1))
        elif len(parts) == 2 and parts[1] == "__init__.py":
            found.add(top)
    return sorted(found)


def read_wheel(archive: "zipfile.ZipFile") -> "dict[str, Any]":
    """What the wheel says of itself: name, version, tags (the ``Tag:`` lines of WHEEL, else its
    file name's), Requires-Python, Requires-Dist (METADATA) and top-level names. They are read
    from the top-level ``*.dist-info`` directory that holds WHEEL (the first by name if several)."""
    names = archive.namelist()
    found = sorted(
        n.split("/")[0] for n in names if n.count("/") == 1 and n.endswith(".dist-info/WHEEL")
    )
    dist_info = found[0] if found else None

    def text(member: str) -> str:
        if dist_info is None or dist_info + "/" + member not in names:
            return ""
        return archive.read(dist_info + "/" + member).decode("utf-8", "replace")

    tags = [value.strip() for value in HeaderParser().parsestr(text("WHEEL")).get_all("Tag") or []]
    metadata = HeaderParser().parsestr(text("METADATA"))
    return {
        "name": metadata.get("Name"),
        "version": metadata.get("Version"),
        "tags": [tag for tag in tags if tag] or tags_from_filename(archive.filename or ""),
        "requires_python": (metadata.get("Requires-Python") or "").strip() or None,
        "requires_dist": [value.strip() for value in metadata.get_all("Requires-Dist") or []],
        "top_level": top_level_names(names, text("top_level.txt")),
    }


# --- this interpreter and the wheel's tags -----------------------------------------------------


def interpreter() -> "dict[str, Any]":
    """This Python: implementation, version, and its own ABI tag (``cp39``, ``cp37m``, ``cp313t``)."""
    soabi = sysconfig.get_config_var("SOABI") or ""
    parts = soabi.split("-")
    major, minor = sys.version_info[:2]
    abi = "cp" + parts[1] if soabi.startswith("cpython-") and len(parts) > 1 else None
    return {
        "implementation": sys.implementation.name,
        "version": ".".join(str(part) for part in sys.version_info[:3]),
        "major": major,
        "minor": minor,
        "abi": abi or f"cp{major}{minor}",
    }


def _python_version(tag: str) -> "tuple[str, int, int | None] | None":
    """``cp311`` -> ("cp", 3, 11); ``py3`` -> ("py", 3, None); anything else -> None."""
    match = re.match(r"^([a-z]+)(\d)(\d+)?$", tag)
    if not match:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3)) if match.group(3) else None


def tag_fits(python: str, abi: str, here: "dict[str, Any]") -> bool:
    """Would pip take a wheel with these Python and ABI tags for this interpreter? As in
    ``packaging.tags``: ``pyX``/``pyXY`` (Y up to this minor) with ABI ``none``; ``cpXY`` of this
    version with ``none`` or this ABI; ``cpXY`` with ``abi3`` for this version and older CPythons."""
    parsed = _python_version(python)
    if parsed is None:
        return False
    kind, major, minor = parsed
    here_minor = int(here["minor"])
    if major != here["major"]:
        return False
    if kind == "py":
        return abi == "none" and (minor is None or minor <= here_minor)
    if kind != "cp" or here["implementation"] != "cpython" or minor is None:
        return False
    if abi == "abi3":
        return minor <= here_minor
    return minor == here_minor and abi in ("none", here["abi"])


def _wants(python: str, abi: str) -> str:
    """Which Python a tag asks for, in words."""
    parsed = _python_version(python)
    if parsed is None:
        return f"the interpreter {python}"
    kind, major, minor = parsed
    version = f"{major}.{minor}" if minor is not None else str(major)
    if kind == "py":
        return "Python {}{}".format(version, " or newer" if minor is not None else "")
    if kind == "cp":
        if abi == "abi3":
            return f"CPython {version} or newer (abi3)"
        if abi not in ("none", "cp" + str(major) + str(minor or "")):
            return f"CPython {version} with the ABI {abi}"
        return f"CPython {version}"
    return f"the interpreter {python}"


def _release(text: str) -> "tuple[int, ...]":
    return tuple(int(part) for part in text.split("."))


def _clause_holds(operator: str, wanted: str, star: bool, version: "tuple[int, ...]") -> bool:
    """One ``OP X.Y`` clause of a version specifier against a release version."""
    target = _release(wanted)
    if star:  # ==X.Y.* / !=X.Y.*: a prefix match
        same = version[: len(target)] == target
        return same if operator == "==" else not same
    length = max(len(version), len(target))
    mine, theirs = version + (0,) * (length - len(version)), target + (0,) * (length - len(target))
    if operator == "~=":  # >= X.Y and == X.*
        prefix = target[:-1] if len(target) > 1 else target
        return mine >= theirs and version[: len(prefix)] == prefix
    return {
        "==": mine == theirs,
        "===": mine == theirs,
        "!=": mine != theirs,
        ">=": mine >= theirs,
        "<=": mine <= theirs,
        ">": mine > theirs,
        "<": mine < theirs,
    }[operator]


def requires_python_holds(specifier: str, version: "tuple[int, ...]") -> "bool | None":
    """Does ``version`` meet a Requires-Python specifier (``>=3.10``, ``>=3.8,!=3.9.*,<4``)?
    None when a clause is beyond these simple forms (pre-releases, local versions, ...)."""
    clause = re.compile(r"^\s*(~=|===|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?\s*$")
    held = True
    for part in specifier.split(","):
        if not part.strip():
            continue
        match = clause.match(part)
        if match is None or (match.group(3) and match.group(1) not in ("==", "!=")):
            return None
        held = held and _clause_holds(match.group(1), match.group(2), bool(match.group(3)), version)
    return held


def installable(info: "dict[str, Any]", here: "dict[str, Any]") -> "tuple[bool, str | None]":
    """(does the wheel suit this interpreter, why not): its Python/ABI tags, then Requires-Python."""
    tags = info["tags"]
    expanded = [triple for tag in tags for triple in expand_tag(tag)]
    has = "{} {}".format(
        "CPython" if here["implementation"] == "cpython" else here["implementation"],
        here["version"],
    )
    if not expanded:
        return False, "the wheel has no valid tag ({}); this system has {}".format(
            ", ".join(tags) or "none", has
        )
    if not any(tag_fits(python, abi, here) for python, abi, _ in expanded):
        wanted = dict.fromkeys(_wants(python, abi) for python, abi, _ in expanded)
        return False, "the wheel is for {} ({}); this system has {}".format(
            " or ".join(wanted), ", ".join(tags), has
        )
    specifier = info.get("requires_python")
    if specifier and requires_python_holds(specifier, _release(here["version"])) is False:
        return (
            False,
            f"the wheel requires Python {specifier} (Requires-Python); this system has {has}",
        )
    return True, None


# --- the requirements --------------------------------------------------------------------------


def normalise_name(name: str) -> str:
    """A distribution name as PEP 503 compares them: ``Foo_Bar.baz`` -> ``foo-bar-baz``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def classify_requirement(text: str) -> "tuple[str, str]":
    """(distribution name, kind) of a Requires-Dist line: kind ``plain`` (no marker), ``extra``
    (a marker naming an extra: not needed by a plain install) or ``marked`` (another marker,
    which this probe does not evaluate)."""
    requirement, _, marker = text.partition(";")
    match = re.match(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)", requirement)
    name = match.group(1) if match else requirement.strip()
    if not marker.strip():
        return name, "plain"
    if re.search(r"\bextra\s*==", marker):
        return name, "extra"
    return name, "marked"


def installed_distributions(paths: "list[str]") -> "dict[str, str] | None":
    """Normalised name -> version of every distribution found on ``paths``; None when this Python
    has no importlib.metadata (3.7 and older, without the importlib_metadata backport)."""
    try:
        from importlib import metadata  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        try:
            import importlib_metadata as metadata  # type: ignore[import-not-found, no-redef, unused-ignore]
        except ImportError:
            return None
    found: dict[str, str] = {}
    for distribution in metadata.distributions(path=paths):
        name = distribution.metadata["Name"]
        if name:
            found.setdefault(normalise_name(name), distribution.version)
    return found


def check_requirements(
    requires_dist: "list[str]", installed: "dict[str, str] | None"
) -> "list[dict[str, Any]]":
    """Each Requires-Dist but those for an extra: installed (with the version found), missing,
    unknown (no importlib.metadata) or not evaluated (a marker). The version found is not checked
    against the requirement's specifier."""
    results = []
    for text in requires_dist:
        name, kind = classify_requirement(text)
        if kind == "extra":
            continue
        version = None
        if kind == "marked":
            state = "not evaluated"
        elif installed is None:
            state = "unknown"
        else:
            version = installed.get(normalise_name(name))
            state = "installed" if version is not None else "missing"
        results.append({"requirement": text, "name": name, "state": state, "version": version})
    return results


def likely_cause(error: str, missing: "list[str]", own: "list[str]") -> "str | None":
    """The missing dependency an import error most likely comes from: the one named like the module
    Python could not find, else the only one missing; None when the error is not a missing module
    (or the module is the wheel's own)."""
    match = re.search(r"No module named '([^'.]+)", error)
    if not match or not missing or match.group(1) in own:
        return None
    module = normalise_name(match.group(1))
    for name in missing:
        if normalise_name(name) == module:
            return name
    return missing[0] if len(missing) == 1 else None


# --- installing and importing ------------------------------------------------------------------


def _run(argv: "list[str]", timeout: float, **options: Any) -> "tuple[int | None, str, str]":
    """(exit code or None on timeout, stdout, stderr) of a command."""
    try:
        done = subprocess.run(  # noqa: UP022 (capture_output and text are Python 3.7+)
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,  # noqa: UP021
            timeout=timeout,
            check=False,
            **options,
        )
    except subprocess.TimeoutExpired:
        return None, "", ""
    except OSError as exc:
        return 127, "", str(exc)
    return done.returncode, done.stdout, done.stderr


def pip_version() -> "str | None":
    """The version of this Python's pip, or None when it has none."""
    code, out, _ = _run([sys.executable, "-m", "pip", "--version"], 120)
    if code != 0 or not out.startswith("pip "):
        return None
    return out.split()[1]


def pip_install(wheel: str, wheelhouse: str, target: str) -> "str | None":
    """Install ``wheel`` with its dependencies from ``wheelhouse`` into ``target``, offline; the
    error (pip's own ERROR lines) or None."""
    code, out, err = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-index",
            "--find-links",
            wheelhouse,
            "--target",
            target,
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            wheel,
        ],
        PIP_TIMEOUT,
        env=dict(os.environ, PIP_NO_INPUT="1"),
    )
    if code == 0:
        return None
    if code is None:
        return f"pip did not finish in {PIP_TIMEOUT} s"
    lines = [line.strip() for line in (err + "\n" + out).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    return " ".join(errors or lines[-1:]) or f"pip exited with {code}"


def import_module(
    name: str, paths: "list[str]", *, cwd: str, strip: "list[str]"
) -> "dict[str, Any]":
    """Import ``name`` in a fresh Python with ``paths`` first on sys.path, in ``cwd``: ok and the
    file it ran, or the exception's last line (or the signal that killed it). ``strip``:
    directories left out of the words (the paths are then relative to them)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH")] if p])
    code, out, err = _run(
        [sys.executable, "-c", _IMPORT_CODE, name], IMPORT_TIMEOUT, env=env, cwd=cwd
    )

    def clean(text: str) -> str:
        for directory in sorted(strip, key=len, reverse=True):
            text = text.replace(directory.rstrip("/") + "/", "")
        return text

    file = None
    for line in out.splitlines():
        if line.startswith(_MARKER):
            file = clean(line[len(_MARKER) :])
    if code == 0:
        return {"name": name, "ok": True, "file": None if file == "None" else file, "error": None}
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    if code is None:
        error = f"no result after {IMPORT_TIMEOUT} s"
    elif code < 0:
        try:
            signame = signal.Signals(-code).name
        except ValueError:
            signame = f"signal {-code}"
        error = f"killed by {signame}" + (": " + lines[-1] if lines else "")
    else:
        error = lines[-1] if lines else f"exited with {code}"
    return {"name": name, "ok": False, "file": None, "error": clean(error)}


# --- the probe ---------------------------------------------------------------------------------


def probe(wheel: str, wheelhouse: "str | None" = None) -> "dict[str, Any]":
    """Everything above for ``wheel``, as one JSON-ready dictionary."""
    work = tempfile.mkdtemp(prefix="tfbuild-probe-")
    try:
        return _probe(wheel, wheelhouse, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _probe(wheel: str, wheelhouse: "str | None", work: str) -> "dict[str, Any]":
    out, target, cwd = (str(Path(work) / name) for name in ("wheel", "target", "cwd"))
    Path(cwd).mkdir()  # where the imports run: nothing in it shadows the wheel's names
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(out)
        info = read_wheel(archive)
    libraries = load_libraries(out)
    here = interpreter()
    fits, why = installable(info, here)
    install = {"by": "unpacked", "wheelhouse": wheelhouse is not None, "pip": None, "error": None}
    paths = [out] + [str(path) for path in sorted(Path(out).glob("*.data/p*lib")) if path.is_dir()]
    if wheelhouse is not None:
        install["pip"] = pip_version()
        if fits and install["pip"] is not None:
            install["error"] = pip_install(wheel, wheelhouse, target)
            if install["error"] is None:
                install["by"] = "pip"
                paths = [target]
    installed = installed_distributions(paths + sys.path)
    requirements = check_requirements(info["requires_dist"], installed)
    missing = [r["name"] for r in requirements if r["state"] == "missing"]
    imports = []
    if fits:
        for name in info["top_level"]:
            result = import_module(name, paths, cwd=cwd, strip=[*paths, out, target])
            result["cause"] = (
                None if result["ok"] else likely_cause(result["error"], missing, info["top_level"])
            )
            imports.append(result)
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    return {
        "glibc": glibc.split()[-1] if glibc else None,
        "libraries": libraries,
        "python": here["version"],
        "wheel": {
            key: info[key] for key in ("name", "version", "tags", "requires_python", "top_level")
        },
        "installable": fits,
        "not_installable": why,
        "install": install,
        "requirements": requirements,
        "imports": imports,
    }


def main(argv: "list[str]") -> None:
    parser = argparse.ArgumentParser(prog="loadprobe", description=__doc__.split("\n")[0])
    parser.add_argument("wheel")
    parser.add_argument("--wheelhouse", default=None)
    args = parser.parse_args(argv)
    print(json.dumps(probe(args.wheel, args.wheelhouse)))


if __name__ == "__main__":
    main(sys.argv[1:])
