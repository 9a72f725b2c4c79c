"""Compilers and the flags they need for a CPU target.

archspec knows how each compiler *version* spells ``-march`` for each microarchitecture (and refuses
combinations that cannot work). tfbuild adds one thing on top: TensorFlow's cpu_feature_guard checks
features that a ``-march`` may not imply (``-march=znver4`` has no AVX-VNNI, ``-march=x86-64-v4`` no
AVX512-VNNI/BF16), so every guard feature the machine has but the ``-march`` lacks gets its own ``-m``
option when the compiler knows it; otherwise the wheel would still print "To enable the following
instructions ..." at import. Each feature's coverage is reported with the flag that provides it.

When archspec refuses the target for that compiler version (archspec's per-compiler version ranges),
the nearest ancestor it spells is used, plus the ``-m`` options for the rest, but only when those
still enable every guard feature the machine has: a compiler that cannot do that (gcc 4.8 for an
AVX-512 machine, gcc 9 for Zen 4's BF16) cannot build for the target, and neither can one archspec
has no flags for at all. Both are a valid request that cannot be met (exit 4).
"""

from __future__ import annotations

import difflib
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tfbuild.core.compilers import release_of
from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.detect import features
from tfbuild.detect.values import CommandLine
from tfbuild.recipes.tfversions import parse_version

if TYPE_CHECKING:
    from archspec.cpu import Microarchitecture

#: Compiler names archspec carries flags for.
KNOWN_COMPILERS = ("gcc", "clang", "aocc", "apple-clang", "intel", "oneapi", "nvhpc")

# Matched whole (re.fullmatch: with re.match, '$' also matches before a final newline).
_SPEC = re.compile(r"(?P<name>apple-clang|[a-z]+)(?:[-@](?P<version>.+))?")
_VERSION = re.compile(r"\d+(?:\.\d+){0,3}")


@dataclass(frozen=True, kw_only=True)
class Compiler:
    """A compiler family and a full version (``gcc``, ``12.1.0``)."""

    name: str
    version: str
    spec: str  # what the user wrote, e.g. "gcc-12"

    def __str__(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def archspec_version(self) -> str:
        """``major.minor``: archspec's ranges ("10.3:12.2") mean whole minor series, and it would
        compare 12.2.0 as newer than 12.2, wrongly excluding GCC 12.2.0 from "10.3:12.2"."""
        return ".".join(self.version.split(".")[:2])


def _first_release(name: str, major: int) -> str:
    # A bare major ("gcc-12") means that series. Since GCC 5 a series starts at N.1.0 (N.0 is the
    # development snapshot), so comparisons with archspec's ranges ("11.1:") must use N.1.0.
    # LLVM numbers its first release of a series N.1.0 since 18 (17 began at 17.0.1).
    if (name == "gcc" and major >= 5) or (name == "clang" and major >= 18):
        return f"{major}.1.0"
    return f"{major}.0.0"


def parse_compiler(spec: str) -> Compiler:
    """Parse ``gcc-12``, ``clang-18.1.8``, ``gcc@11.4`` or a bare ``gcc`` (version read from PATH)."""
    text = spec.strip().lower()
    match = _SPEC.fullmatch(text)
    what = f"unknown --compiler {spec!r}"
    if match is None:
        raise UsageError(
            what,
            why="expected NAME-VERSION such as gcc-12 or clang-18.1.8",
            fix=f"Use one of {', '.join(KNOWN_COMPILERS)} with a version, e.g. --compiler clang-18.",
        )
    name, version = match.group("name"), match.group("version")
    if version is not None and not _VERSION.fullmatch(version):
        raise UsageError(
            what,
            why=f"the version {version!r} is not dotted digits; expected NAME-VERSION such as "
            "gcc-12 or clang-18.1.8",
            fix="Write the version as digits, e.g. --compiler gcc-12.2.",
        )
    if name not in KNOWN_COMPILERS:
        close = difflib.get_close_matches(name, KNOWN_COMPILERS, n=1)
        hint = f"Did you mean {close[0]!r}? " if close else ""
        raise UsageError(
            what,
            why=f"{name!r} is not a compiler tfbuild knows flags for",
            fix=f"{hint}Known: {', '.join(KNOWN_COMPILERS)}.",
        )
    if version is not None:
        _check_released(name, version, spec)
    else:
        probed = release_of(name, family=name)
        if probed is None:
            raise UsageError(
                f"cannot tell the version of --compiler {spec!r}",
                why=f"no working {name} on PATH to ask",
                fix=f"Give the version explicitly, e.g. --compiler {name}-12.",
            )
        version = probed
    parts = version.split(".")
    if len(parts) == 1:
        version = _first_release(name, int(parts[0]))
    while len(version.split(".")) < 3:
        version += ".0"
    return Compiler(name=name, version=version, spec=spec)


#: The compilers whose release series archspec's data follows: each new microarchitecture names
#: the version of each that first spells it, so its newest named major is the newest it knows.
_TRACKED = ("gcc", "clang")


def newest_known(name: str) -> tuple[int, ...] | None:
    """The newest version of compiler ``name`` that archspec's microarchitectures name (the bounds
    of their version ranges), or None when they name none."""
    from tfbuild.core.targets import targets

    found = [
        tuple(int(p) for p in re.findall(r"\d+", bound))
        for target in targets().values()
        for entry in target.compilers.get(name, ())
        for bound in str(entry.get("versions", "")).split(":")
        if re.search(r"\d", bound)
    ]
    return max(found, default=None)


def _check_released(name: str, version: str, spec: str) -> None:
    """Refuse a gcc or clang version no release has (``gcc-99``): one whose major is beyond the
    newest archspec knows is taken only when that compiler is on PATH (``gcc-17``, or ``gcc``
    itself) and says it is that version; flags for a compiler neither knows would be a guess."""
    newest = newest_known(name) if name in _TRACKED else None
    major = int(version.split(".", maxsplit=1)[0])
    if newest is None or major <= newest[0]:
        return
    for program in (f"{name}-{major}", name):
        found = release_of(program, family=name)
        if found is not None and found.split(".", maxsplit=1)[0] == str(major):
            return
    known = ".".join(str(p) for p in newest)
    raise UsageError(
        f"unknown --compiler {spec!r}",
        why=f"{name} {major} is newer than any {name} archspec knows (its newest: {known}), and "
        f"no {name}-{major} on PATH says it exists",
        fix=f"Name a released version (e.g. --compiler {name}-{newest[0]}; archspec spells the "
        f"flags of every newer one the same), or install {name} {major} first.",
    )


@dataclass(frozen=True, kw_only=True)
class Coverage:
    """How one TensorFlow guard feature the machine has is (or is not) enabled by the flags."""

    feature: str
    flag: str | None  # the flag that enables it ("-march=znver4", "-mavxvnni"); None if uncovered
    note: str | None = None  # why it is uncovered


@dataclass(frozen=True, kw_only=True)
class CompilerFlags:
    """The flags a build for ``target`` with ``compiler`` passes, and what they cover."""

    compiler: Compiler
    target: str  # the archspec target asked for
    march_target: str  # the archspec target whose -march spelling is used (an ancestor on fallback)
    flags: CommandLine
    coverage: tuple[Coverage, ...]
    uncovered: tuple[str, ...] = field(init=False)  # the guard features no flag enables
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        uncovered = tuple(c.feature for c in self.coverage if c.flag is None)
        object.__setattr__(self, "uncovered", uncovered)


def _spelled(
    target: Microarchitecture, compiler: Compiler, refusals: list[str]
) -> Iterator[tuple[Microarchitecture, str, list[str]]]:
    """The target and its ancestors that archspec spells for ``compiler``, most specific first,
    each with its flags and the warnings archspec emits (collected, not printed); why archspec
    refuses the others (UnsupportedMicroarchitecture, InvalidCompilerVersion) goes to ``refusals``."""
    chain = [target, *target.ancestors]
    for candidate in sorted(chain, key=lambda t: (len(t.ancestors), len(t.features)), reverse=True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                flags = candidate.optimization_flags(compiler.name, compiler.archspec_version)
            except ValueError as exc:
                refusals.append(str(exc))
                continue
        yield candidate, flags, [str(w.message) for w in caught]


def _arch_token(flags: str) -> str | None:
    for token in flags.split():
        if token.startswith(("-march=", "-mcpu=", "-tp")):
            return token
    return None


def _plain(flags: str) -> bool:
    """True when the flags are just -march/-mcpu/-mtune: the name alone carries the feature set."""
    return all(t.startswith(("-march=", "-mcpu=", "-mtune=")) for t in flags.split())


def _march_features(base: Microarchitecture, flags: str, compiler: Compiler) -> frozenset[str]:
    """Guard features the -march/-mcpu name in ``flags`` turns on by itself.

    The name is archspec's spelling of some target (``znver3`` for zen3 in GCC 12); that target's
    feature list is what the name implies. Explicit ``-m`` options are accounted for separately.
    """
    token = _arch_token(flags)
    for candidate, candidate_flags, _ in _spelled(base, compiler, []):
        if _arch_token(candidate_flags) == token and _plain(candidate_flags):
            return frozenset(features.present(candidate.features))
    return frozenset()


def first_version(target: Microarchitecture, compiler: str) -> str | None:
    """The oldest version of ``compiler`` archspec spells ``target`` for (None: any, or none)."""
    lows = [str(entry["versions"]).split(":")[0] for entry in target.compilers.get(compiler, ())]
    if not lows or any(not low for low in lows):
        return None
    parsed = [tuple(int(p) for p in re.findall(r"\d+", low)) for low in lows]
    return ".".join(str(p) for p in min(parsed))


def _option_missing(feature: features.GuardFeature, compiler: Compiler) -> str | None:
    """Why ``compiler`` has no option for ``feature``; None when it has one."""
    minimum = {"gcc": feature.gcc, "clang": feature.clang}.get(compiler.name)
    if minimum is None:
        return f"tfbuild knows the -m options of gcc and clang only, not {compiler.name}"
    if parse_version(compiler.version) >= parse_version(minimum):
        return None
    return f"{compiler.name} {compiler.version} has no {feature.option} (needs {minimum}+)"


def flags_for(
    target: Microarchitecture, compiler: Compiler, *, machine_features: Iterable[str]
) -> CompilerFlags:
    """Flags for ``target`` built by ``compiler`` that cover every guard feature in
    ``machine_features`` (the guard features of the machine the wheel is for)."""
    refusals: list[str] = []
    spelled = next(_spelled(target, compiler, refusals), None)
    refusal = refusals[0] if refusals else ""
    if spelled is None:
        raise UnsupportedError(
            f"{compiler} cannot build for {target.name}",
            why=refusal or "archspec knows no flags for it",
            fix="Choose a newer compiler version or a more generic --target.",
        )
    base, flags, notes = spelled
    if not flags:
        # archspec's answer when it has no data for this compiler in the family: the compiler's
        # default would be built, not the target.
        raise UnsupportedError(
            f"{compiler} cannot build for {target.name}",
            why=f"archspec knows no {compiler.name} flags for the {target.family.name} family",
            fix="Use a compiler archspec knows there (gcc or clang), e.g. --compiler clang-18.",
        )
    if base is not target:
        notes.append(
            f"{compiler} does not know {target.name} ({refusal}); "
            f"using {base.name}'s flags plus explicit options for the rest"
        )

    wanted = features.in_guard_order(machine_features)
    march = _march_features(base, flags, compiler)
    covered: dict[str, str] = dict.fromkeys(march, _arch_token(flags) or "")
    tokens = flags.split()
    for token in tokens:
        option = features.BY_OPTION.get(token)
        if option is not None:
            for name in features.closure([option.name]):
                covered.setdefault(name, token)

    extras: list[str] = []
    coverage: list[Coverage] = []
    for name in wanted:
        if name in covered:
            coverage.append(Coverage(feature=name, flag=covered[name]))
            continue
        feature = features.BY_NAME[name]
        missing = _option_missing(feature, compiler)
        if missing:
            coverage.append(Coverage(feature=name, flag=None, note=missing))
            continue
        extras.append(feature.option)
        for implied in features.closure([name]):
            covered.setdefault(implied, feature.option)
        coverage.append(Coverage(feature=name, flag=feature.option))
    result = CompilerFlags(
        compiler=compiler,
        target=target.name,
        march_target=base.name,
        flags=CommandLine((*tokens, *extras)),
        coverage=tuple(coverage),
        warnings=tuple(notes),
    )
    if base is not target and result.uncovered:
        first = first_version(target, compiler.name)
        newer = f"{compiler.name} {first} or newer" if first else f"a newer {compiler.name}"
        raise UnsupportedError(
            f"{compiler} cannot build for {target.name}",
            why=f"archspec: {refusal}; the nearest target it knows, {base.name}, with the -m "
            f"options {compiler} has, leaves {', '.join(result.uncovered)} off",
            fix=f"Use {newer} (archspec spells {target.name} from there on), or build for "
            f"{base.name}.",
        )
    return result
