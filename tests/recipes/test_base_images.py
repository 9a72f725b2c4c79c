"""recipes/base-images.yaml and its maintainer script, bin/refresh-base-images.

The data file is validated field by field (and against the recipes that name its entries); the
script's update logic runs against a replayed Docker Hub answer on a temporary copy, and the script
itself must fail cleanly, with one line, when the registry cannot be reached.
"""

from __future__ import annotations

import datetime as dt
import importlib.machinery
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tfbuild.recipes.recipe import load_recipes

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGES = ROOT / "recipes" / "base-images.yaml"
SCRIPT = ROOT / "bin" / "refresh-base-images"

FIELDS = {
    "image",
    "tag",
    "digest",
    "read",
    "source",
    "distro",
    "glibc",
    "suite",
    "python",
    "tcmalloc_package",
    "packaged_compilers",
}
NVIDIA_FIELDS = FIELDS | {"cuda", "cudnn"}
# The suites tfbuild builds on: their python3, and the package that provides libtcmalloc.so.4
# (renamed with the 64-bit time_t transition on noble and trixie).
SUITES = {
    ("ubuntu", "22.04"): ("jammy", "3.10", "libgoogle-perftools4"),
    ("ubuntu", "24.04"): ("noble", "3.12", "libgoogle-perftools4t64"),
    ("debian", "11"): ("bullseye", "3.9", "libgoogle-perftools4"),
    ("debian", "12"): ("bookworm", "3.11", "libgoogle-perftools4"),
    ("debian", "13"): ("trixie", "3.13", "libgoogle-perftools4t64"),
}
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("refresh_base_images", str(SCRIPT))
    spec = importlib.util.spec_from_loader("refresh_base_images", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["refresh_base_images"] = module  # dataclasses look their module up
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script()


@pytest.fixture(scope="module")
def entries() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load(BASE_IMAGES.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and data
    return data


# --- the data file -----------------------------------------------------------------------------------


def test_every_entry_has_exactly_the_documented_fields(entries: dict[str, dict[str, Any]]) -> None:
    for name, entry in entries.items():
        assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name), name
        expected = NVIDIA_FIELDS if entry.get("image") == "docker.io/nvidia/cuda" else FIELDS
        assert set(entry) == expected, f"{name}: {sorted(set(entry) ^ expected)}"


def test_image_tag_and_digest_are_well_formed(entries: dict[str, dict[str, Any]]) -> None:
    for name, entry in entries.items():
        assert re.fullmatch(r"docker\.io/[a-z0-9._-]+/[a-z0-9._-]+", entry["image"]), name
        assert isinstance(entry["tag"], str), f"{name}: quote the tag, {entry['tag']!r} is not text"
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", entry["tag"]), name
        assert DIGEST.match(entry["digest"]), f"{name}: {entry['digest']!r}"


def test_digests_are_not_shared_between_tags(entries: dict[str, dict[str, Any]]) -> None:
    seen: dict[str, str] = {}
    for name, entry in entries.items():
        assert entry["digest"] not in seen, f"{name} and {seen.get(entry['digest'])}"
        seen[entry["digest"]] = name


def test_read_dates_are_real_past_dates(entries: dict[str, dict[str, Any]]) -> None:
    today = dt.datetime.now(dt.timezone.utc).date()
    for name, entry in entries.items():
        read = entry["read"]
        assert isinstance(read, dt.date), f"{name}: read must be a YYYY-MM-DD date, not {read!r}"
        assert dt.date(2023, 1, 1) <= read <= today, f"{name}: {read}"


def test_source_says_where_the_digest_was_read(entries: dict[str, dict[str, Any]]) -> None:
    for name, entry in entries.items():
        assert isinstance(entry["source"], str) and len(entry["source"]) >= 20, name
        assert entry["digest"].removeprefix("sha256:")[:4] in entry["source"], (
            f"{name}: the source should quote the start of the digest it pins"
        )


def test_distribution_suite_and_tcmalloc_package_match(entries: dict[str, dict[str, Any]]) -> None:
    for name, entry in entries.items():
        if entry["image"] == "docker.io/nvidia/cuda":
            match = re.search(r"-ubuntu(\d+\.\d+)$", entry["tag"])
            assert match, f"{name}: NVIDIA tag without -ubuntuXX.YY"
            key = ("ubuntu", match.group(1))
        else:
            key = (entry["image"].rsplit("/", 1)[1], entry["tag"])
        assert entry["distro"] == key[0], name
        assert key in SUITES, f"{name}: unknown {key}"
        suite, python, tcmalloc = SUITES[key]
        assert entry["suite"] == suite, name
        assert entry["python"] == python, f"{name}: quote it, 3.10 is not 3.1"
        assert entry["tcmalloc_package"] == tcmalloc, name
        compilers = entry["packaged_compilers"]
        assert isinstance(compilers, list) and compilers, name
        assert all(re.fullmatch(r"(gcc|clang)-\d+", c) for c in compilers), name


def test_nvidia_entries_say_which_cuda_and_cudnn_they_hold(
    entries: dict[str, dict[str, Any]],
) -> None:
    for name, entry in entries.items():
        if entry["image"] != "docker.io/nvidia/cuda":
            continue
        assert isinstance(entry["cuda"], str) and entry["tag"].startswith(entry["cuda"] + "-"), name
        cudnn = entry["cudnn"]
        if cudnn is None:
            assert "cudnn" not in entry["tag"], name
        else:
            assert f"-cudnn{cudnn}-" in entry["tag"], name
        assert name == "nvidia-cuda-" + entry["tag"], f"{name}: key should be nvidia-cuda-<tag>"


def test_every_base_image_a_recipe_names_exists(entries: dict[str, dict[str, Any]]) -> None:
    recipes = load_recipes().recipes
    assert recipes
    for recipe in recipes:
        assert recipe.base_image in entries, f"{recipe.path}: base_image {recipe.base_image}"
        assert not entries[recipe.base_image]["image"].startswith("docker.io/nvidia/"), (
            f"{recipe.path}: the CPU base image should be a plain distribution image"
        )
        if recipe.cuda is None or recipe.cuda.base_image is None:
            continue
        entry = entries.get(recipe.cuda.base_image)
        assert entry is not None, f"{recipe.path}: cuda.base_image {recipe.cuda.base_image}"
        assert entry["image"] == "docker.io/nvidia/cuda", recipe.path
        # The image holds the release's CUDA major.minor and, when it has one, its cuDNN major.
        assert entry["cuda"].startswith(recipe.cuda.cuda + "."), recipe.path
        if entry["cudnn"] is not None:
            assert recipe.cuda.cudnn.split(".")[0] == entry["cudnn"], recipe.path
        else:
            assert "cuDNN" in recipe.notes, f"{recipe.path}: say how cuDNN gets into the image"


# --- the script's update logic, with a replayed registry ------------------------------------------------

# A replay of the answers Docker Hub gives (token JSON; HEAD headers, trimmed to those the script
# reads), not a live call.
NEW_JAMMY = "sha256:" + "1" * 64


def replayed_registry(
    digests: Mapping[str, str], calls: list[tuple[str, str]] | None = None
) -> Any:
    """An ``http`` callable answering like Docker Hub: tokens, and HEAD on manifests."""

    def http(method: str, url: str, headers: Mapping[str, str], timeout: float) -> Any:
        module = sys.modules["refresh_base_images"]
        if calls is not None:
            calls.append((method, url))
        if url.startswith("https://auth.docker.io/token?"):
            assert method == "GET"
            body = json.dumps(
                {"token": "t0k3n", "expires_in": 300, "issued_at": "2026-11-22T00:00:00Z"}
            )
            return module.Response(200, {"content-type": "application/json"}, body.encode())
        match = re.fullmatch(r"https://registry-1\.docker\.io/v2/(.+)/manifests/(.+)", url)
        assert match, url
        assert method == "HEAD"
        assert headers["Authorization"] == "Bearer t0k3n"
        assert "application/vnd.oci.image.index.v1+json" in headers["Accept"]
        assert "application/vnd.docker.distribution.manifest.list.v2+json" in headers["Accept"]
        key = f"{match.group(1)}:{match.group(2)}"
        return module.Response(
            200,
            {
                "content-type": "application/vnd.oci.image.index.v1+json",
                "docker-content-digest": digests[key],
                "docker-distribution-api-version": "registry/2.0",
            },
            b"",
        )

    return http


def current_digests(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    result = {}
    for entry in entries.values():
        repository = entry["image"].removeprefix("docker.io/")
        result[f"{repository}:{entry['tag']}"] = entry["digest"]
    return result


def test_update_rewrites_only_the_digest_and_read_lines_of_changed_entries(
    script: ModuleType, entries: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    copy = tmp_path / "base-images.yaml"
    shutil.copy(BASE_IMAGES, copy)
    before = copy.read_text(encoding="utf-8").splitlines(keepends=True)
    digests = current_digests(entries)
    old = digests["library/ubuntu:22.04"]
    digests["library/ubuntu:22.04"] = NEW_JAMMY
    calls: list[tuple[str, str]] = []

    changes = script.refresh(
        copy, http=replayed_registry(digests, calls), today=dt.date(2026, 12, 1)
    )

    assert [(c.name, c.old, c.new) for c in changes] == [("ubuntu-22.04", old, NEW_JAMMY)]
    assert (
        "HEAD",
        "https://registry-1.docker.io/v2/nvidia/cuda/manifests/12.3.2-devel-ubuntu22.04",
    ) in calls
    after = copy.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(after) == len(before)
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert changed == [
        (f"  digest: {old}\n", f"  digest: {NEW_JAMMY}\n"),
        (f"  read: {entries['ubuntu-22.04']['read'].isoformat()}\n", "  read: 2026-12-01\n"),
    ]
    reloaded = yaml.safe_load("".join(after))
    assert reloaded["ubuntu-22.04"]["digest"] == NEW_JAMMY
    assert reloaded["ubuntu-22.04"]["read"] == dt.date(2026, 12, 1)
    assert {k: v for k, v in reloaded.items() if k != "ubuntu-22.04"} == {
        k: v for k, v in entries.items() if k != "ubuntu-22.04"
    }
    assert not [p for p in tmp_path.iterdir() if p.name != "base-images.yaml"], "temp file left"


def test_update_with_nothing_changed_leaves_the_file_alone(
    script: ModuleType, entries: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    copy = tmp_path / "base-images.yaml"
    shutil.copy(BASE_IMAGES, copy)
    mtime = copy.stat().st_mtime_ns
    assert script.refresh(copy, http=replayed_registry(current_digests(entries))) == []
    assert copy.read_bytes() == BASE_IMAGES.read_bytes()
    assert copy.stat().st_mtime_ns == mtime


def test_main_prints_what_changed(
    script: ModuleType,
    entries: dict[str, dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    copy = tmp_path / "base-images.yaml"
    shutil.copy(BASE_IMAGES, copy)
    digests = current_digests(entries)
    digests["library/ubuntu:22.04"] = NEW_JAMMY
    code = script.main(
        ["--file", str(copy), "--registry", "https://registry-1.docker.io"],
        http=replayed_registry(digests),
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines() == [
        f"ubuntu-22.04: changed {entries['ubuntu-22.04']['digest']} -> {NEW_JAMMY}"
    ]


def test_a_registry_answer_without_a_digest_is_an_error_not_an_edit(
    script: ModuleType, tmp_path: Path
) -> None:
    copy = tmp_path / "base-images.yaml"
    shutil.copy(BASE_IMAGES, copy)

    def http(method: str, url: str, headers: Mapping[str, str], timeout: float) -> Any:
        if "token" in url:
            return script.Response(200, {}, b'{"token": "x"}')
        return script.Response(401, {"www-authenticate": "Bearer"}, b"")

    with pytest.raises(script.RegistryError, match="HTTP 401"):
        script.refresh(copy, http=http)
    assert copy.read_bytes() == BASE_IMAGES.read_bytes()


def test_script_fails_cleanly_when_the_registry_is_unreachable(tmp_path: Path) -> None:
    copy = tmp_path / "base-images.yaml"
    shutil.copy(BASE_IMAGES, copy)
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--file",
            str(copy),
            "--registry",
            "http://127.0.0.1:9",
            "--auth-url",
            "http://127.0.0.1:9/token",
            "--timeout",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr  # the script's code for "registry unreachable"
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "registry" in lines[0] and "127.0.0.1:9" in lines[0]
    assert copy.read_bytes() == BASE_IMAGES.read_bytes()


def test_script_is_executable_and_stdlib_only() -> None:
    assert SCRIPT.stat().st_mode & 0o111
    assert SCRIPT.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3\n")
    imported = set(re.findall(r"^(?:from|import) ([a-z_.]+)", SCRIPT.read_text(), re.MULTILINE))
    third_party = (
        {m.split(".")[0] for m in imported} - set(sys.stdlib_module_names) - {"__future__"}
    )
    assert not third_party
