"""Wheel labels: written from a plan's target, read back from any PEP 440 spelling of them."""

from __future__ import annotations

import pytest
from packaging.version import Version

from tfbuild.core.targets import targets
from tfbuild.core.variants import Variant
from tfbuild.wheel.labels import cpu_label, labelled_version, local_label, parse_label


@pytest.mark.parametrize("target", sorted(targets()))
def test_every_archspec_target_survives_pep440_normalisation(target: str) -> None:
    for variant, cuda in (("cpu", None), ("mkl", None), ("cuda", "12.5.1")):
        label = local_label(target, variant, cuda)  # type: ignore[arg-type]
        version = Version(labelled_version("2.21.0", label))
        # pip shows the normal form (x86.64v4); both spellings read back to the same wheel.
        for spelling in (label, str(version.local)):
            parsed = parse_label(spelling)
            assert (parsed.target, parsed.variant, parsed.other) == (target, variant, ())
            assert parsed.cuda == ("12.5" if cuda else None)


@pytest.mark.parametrize(
    ("target", "variant", "cuda", "label"),
    [
        ("x86_64_v4", "cpu", None, "x86_64v4"),
        ("x86_64_v3", "cuda", "12.5.1", "x86_64v3.cu125"),
        ("x86_64_v3", "cuda", "13.0", "x86_64v3.cu130"),
        ("x86_64_v2", "cuda", "11.8", "x86_64v2.cu118"),
        ("zen4", "mkl", None, "zen4.mkl"),
        ("skylake_avx512", "cpu", None, "skylake_avx512"),
        ("native", "cpu", None, "native"),
    ],
)
def test_labels_as_the_issue_spells_them(
    target: str, variant: str, cuda: str | None, label: str
) -> None:
    assert local_label(target, variant, cuda) == label  # type: ignore[arg-type]


def test_reading_labels_back() -> None:
    snapshot = parse_label("selfbuilt.x86_64v3")  # 2.20+ snapshot: 2.20.0.dev0+selfbuilt.x86_64v3
    assert (snapshot.target, snapshot.other) == ("x86_64_v3", ("selfbuilt",))
    assert parse_label("X86-64V4.CU125").cuda == "12.5"
    assert parse_label("cu92").cuda == "9.2"
    assert parse_label(None).target is None
    unknown = parse_label("pentium9")
    assert (unknown.target, unknown.other) == (None, ("pentium9",))
    assert parse_label("native").target == "native"
    assert labelled_version("2.20.0.dev0+selfbuilt", "zen4") == "2.20.0.dev0+selfbuilt.zen4"
    assert cpu_label("x86_64") == "x86_64"
    assert local_label("zen4", Variant.cuda, "12") == "zen4.cu120"
    with pytest.raises(ValueError, match="CUDA version"):
        local_label("x86_64_v3", "cuda")
