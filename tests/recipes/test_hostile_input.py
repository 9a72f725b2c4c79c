"""Hostile input to the data files and the values validated from them (issue 15, items 1 and 2).

Each finding is replayed as it was reported: a trailing newline that passed every validator, a YAML
alias bomb in base-images.yaml, duplicate keys, YAML 1.1 typing, complex keys, and recipe
directories that cannot be read.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import NO_FILE_KINDS, ROOT, one_error_line, plant_no_file, run_cli
from tfbuild.core import resources
from tfbuild.core.errors import InputError, TfbuildError, UsageError
from tfbuild.plan import PlanOptions
from tfbuild.recipes.images import load_base_images, parse_base_images
from tfbuild.recipes.recipe import load_recipes, parse_recipe
from tfbuild.recipes.tools import load_tools, parse_tools

MODEL = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
TOOLS = (ROOT / "recipes" / "tools.yaml").read_text()

DIGEST = "sha256:" + "8a8c" * 16
ENTRY = (
    "debian-12:\n"
    "  image: docker.io/library/debian\n"
    '  tag: "12"\n'
    f"  digest: {DIGEST}\n"
    "  distro: debian\n"
    "  suite: bookworm\n"
    '  glibc: "2.36"\n'
    '  python: "3.11"\n'
    "  tcmalloc_package: libgoogle-perftools4\n"
    "  packaged_compilers: [gcc-12, clang-16]\n"
)


def _variant(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _line_of(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


# --- 1. a trailing newline passes no validator ---------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("compiler: clang-18.1.8", 'compiler: "clang-18.1.8\\n"', "compiler"),
        ("tensorflow: 2.21.0", 'tensorflow: "2.21.0\\n"', "tensorflow"),
        ("bazel: 7.4.1", 'bazel: "7.4.1\\n"', "bazel"),
        ("base_image: ubuntu-24.04", 'base_image: "ubuntu-24.04\\n"', "base_image"),
        ("  tag: v2.21.0", '  tag: "v2.21.0\\n"', "source.tag"),
        ('python: ["3.10"', 'python: ["3.10\\n"', "python[0]"),
    ],
)
def test_a_trailing_newline_in_a_recipe_value_is_refused_at_its_line(
    old: str, new: str, key: str
) -> None:
    text = _variant(MODEL, old, new)
    with pytest.raises(InputError) as caught:
        parse_recipe(text, path="recipes/x.yaml")
    message = caught.value.line()
    assert message.startswith(f"invalid recipe recipes/x.yaml:{_line_of(text, new)}: '{key}' is ")
    assert "\\n'" in message  # the value is shown with its newline escaped, on one line


def test_a_second_2_21_0_recipe_spelt_with_a_newline_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tf-2.21.yaml").write_text(
        _variant(MODEL, "tensorflow: 2.21.0", 'tensorflow: "2.21.0\\n"')
    )
    result = run_cli("recipes", "--recipes-dir", str(tmp_path))
    assert result.returncode == 3
    assert "'tensorflow' is '2.21.0\\n'; expected a version X.Y.Z" in one_error_line(result)


@pytest.mark.parametrize(
    "options",
    [PlanOptions(remote_cache="http://h\n"), PlanOptions(cache_volume="vol\n")],
)
def test_a_trailing_newline_in_remote_cache_or_volume_is_refused(options: PlanOptions) -> None:
    from tests.plan.test_plan import plan

    with pytest.raises(UsageError, match=r"'(http://h|vol)\\n'"):
        plan(options)


def test_the_cli_refuses_a_remote_cache_with_a_trailing_newline() -> None:
    result = run_cli("plan", "--tf", "2.21", "--remote-cache", "http://h\n")
    assert result.returncode == 2
    assert "--remote-cache 'http://h\\n' is not a plain URL" in one_error_line(result)


def test_the_compiler_and_requirement_validators_match_whole() -> None:
    from tfbuild.detect.compilers import parse_compiler
    from tfbuild.measure.envs import WheelSpec
    from tfbuild.wheel.labels import parse_label

    with pytest.raises(UsageError):
        parse_compiler("clang-18\nRUN x")
    with pytest.raises(UsageError, match="neither a wheel file nor a requirement"):
        WheelSpec.parse("tensorflow-cpu==2.21.0\n")
    assert WheelSpec.parse("tensorflow-cpu==2.21.0").kind == "requirement"
    # A segment with a newline inside is not a CUDA segment (re.match took "cu125\n" for one).
    assert parse_label("x86_64v4.cu125\n.x").cuda is None
    assert parse_label("x86_64v4.cu125").cuda == "12.5"


# --- 2. base-images.yaml and tools.yaml are loaded like the recipes -----------------------------------


def _bomb(size: int) -> str:
    """A base-images.yaml of exactly ``size`` bytes whose entry's packaged_compilers is a 9-level
    "billion laughs": 9**9 (387,420,489) compilers once expanded."""
    names = "abcdefghi"
    lines = ["a: &a [" + ", ".join(["x"] * 9) + "]"]
    lines += [f"{n}: &{n} [" + ", ".join([f"*{p}"] * 9) + "]" for p, n in itertools.pairwise(names)]
    text = "\n".join(lines) + "\n" + ENTRY.replace("[gcc-12, clang-16]", "*i")
    padding = size - len(text.encode()) - 2
    assert padding >= 0
    text = "#" + "x" * padding + "\n" + text
    assert len(text.encode()) == size
    return text


@pytest.mark.parametrize("size", [653, 757])
def test_an_alias_bomb_is_refused_at_once_with_one_line(tmp_path: Path, size: int) -> None:
    (tmp_path / "base-images.yaml").write_text(_bomb(size))
    result = run_cli("plan", "--tf", "2.21", "--recipes-dir", str(tmp_path))
    assert result.returncode == 3
    assert (
        f"invalid base image file {tmp_path}/base-images.yaml:2: it uses a YAML anchor or alias"
        in one_error_line(result)
    )


def test_an_alias_is_refused_in_recipes_and_tools_too() -> None:
    text = _variant(MODEL, 'python: ["3.10"', 'python: &p ["3.10"')
    with pytest.raises(InputError, match=r"recipes/x.yaml:\d+: it uses a YAML anchor or alias"):
        parse_recipe(text, path="recipes/x.yaml")
    tools = "one: &one\n  version: v1\n  sha256: {amd64: " + "a" * 64 + "}\ntwo: *one\n"
    with pytest.raises(InputError, match=r"invalid tools file t.yaml:1: it uses a YAML anchor"):
        parse_tools(tools, path="t.yaml")


def test_a_duplicate_key_cannot_swap_a_reviewed_pin() -> None:
    swapped = ENTRY + f"  digest: sha256:{'0' * 64}\n"
    with pytest.raises(InputError) as caught:
        parse_base_images(swapped, path="b.yaml")
    assert caught.value.line().startswith(
        f"invalid base image file b.yaml:{swapped.count(chr(10))}: key 'debian-12.digest' appears "
        "twice"
    )
    twice = ENTRY + ENTRY.replace("docker.io/library/debian", "docker.io/evil/debian")
    with pytest.raises(InputError, match=r"b.yaml:11: 'debian-12' appears twice"):
        parse_base_images(twice, path="b.yaml")
    tools_twice = TOOLS + "bazelisk:\n  version: v9\n  sha256: {amd64: " + "0" * 64 + "}\n"
    with pytest.raises(InputError, match=r"tools.yaml:\d+: 'bazelisk' appears twice"):
        parse_tools(tools_twice, path="tools.yaml")


def test_an_unquoted_python_version_stays_text() -> None:
    images = parse_base_images(ENTRY.replace('"3.11"', "3.10"), path="b.yaml")
    assert images["debian-12"].python == "3.10"
    assert parse_base_images(ENTRY.replace('"12"', "12"), path="b.yaml")["debian-12"].reference == (
        f"docker.io/library/debian:12@{DIGEST}"
    )


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("suite: bookworm", "suite: bookworm/../x", "suite"),
        ("distro: debian", "distro: deb/ian", "distro"),
        ("tcmalloc_package: libgoogle-perftools4", "tcmalloc_package: a/b", "tcmalloc_package"),
        ('tag: "12"', 'tag: "12/x"', "tag"),
        ('python: "3.11"', 'python: "3.11\\n"', "python"),
        ("image: docker.io/library/debian", 'image: "docker.io/library/debian\\n"', "image"),
        ("image: docker.io/library/debian", "image: docker.io/library/debian x", "image"),
        (f"digest: {DIGEST}", f"digest: {DIGEST}0", "digest"),
        ("[gcc-12, clang-16]", "[gcc-12, clang-16/x]", "packaged_compilers[1]"),
    ],
)
def test_a_base_image_field_is_checked_with_its_line(old: str, new: str, key: str) -> None:
    text = _variant(ENTRY, old, new)
    with pytest.raises(InputError) as caught:
        parse_base_images(text, path="b.yaml")
    assert caught.value.line().startswith(
        f"invalid base image file b.yaml:{_line_of(text, new)}: 'debian-12.{key}' is "
    )


def test_base_image_errors_name_unknown_and_missing_keys() -> None:
    with pytest.raises(InputError, match=r"unknown key 'debian-12.sute' at b.yaml:6"):
        parse_base_images(_variant(ENTRY, "suite:", "sute:"), path="b.yaml")
    with pytest.raises(InputError, match=r"b.yaml:2: missing key 'debian-12.digest'"):
        parse_base_images(_variant(ENTRY, f"  digest: {DIGEST}\n", ""), path="b.yaml")
    with pytest.raises(InputError, match=r"b.yaml:1: it must map image names to their pins"):
        parse_base_images("- a\n- b\n", path="b.yaml")


def test_the_shipped_data_files_load() -> None:
    images = load_base_images()
    assert images["ubuntu-22.04"].python == "3.10"
    assert images["ubuntu-22.04"].glibc == "2.35"
    assert set(load_tools()["bazelisk"].sha256) == {"amd64", "arm64"}


@pytest.mark.parametrize("key", ["? [a, b]\n: 1\n", "? {a: b}\n: 1\n"])
def test_a_complex_key_is_one_line_with_exit_3(tmp_path: Path, key: str) -> None:
    with pytest.raises(InputError, match=r"x.yaml:\d+: a key under the top level is a list"):
        parse_recipe(MODEL + key, path="x.yaml")
    (tmp_path / "tf-2.99.yaml").write_text(
        _variant(MODEL, "tensorflow: 2.21.0", "tensorflow: 2.99.0") + key
    )
    result = run_cli("recipes", "--recipes-dir", str(tmp_path))
    assert result.returncode == 3
    assert "a key under the top level is a list or mapping" in one_error_line(result)


@pytest.mark.parametrize("word", ["yes", "on", "no", "off", "y"])
def test_yaml_1_1_booleans_are_refused_with_write_true_or_false(word: str) -> None:
    text = _variant(MODEL, "  hermetic_python: true", f"  hermetic_python: {word}")
    with pytest.raises(InputError) as caught:
        parse_recipe(text, path="x.yaml")
    assert (
        f"x.yaml:{_line_of(text, f'hermetic_python: {word}')}: 'wheel.hermetic_python' is '{word}'; expected true or "
        "false (write true or false: yes, no, on and off are not booleans here)"
        in caught.value.line()
    )


# --- recipe directories that cannot be read ------------------------------------------------------------


def test_a_dangling_link_named_like_a_recipe_is_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "tf-2.21.yaml").symlink_to(tmp_path / "gone.yaml")
    result = run_cli("recipes", "--recipes-dir", str(tmp_path))
    assert result.returncode == 3
    assert (
        f"cannot read recipe {tmp_path}/tf-2.21.yaml: it does not exist (a dangling symbolic link?)"
        in one_error_line(result)
    )


def test_a_directory_named_like_a_recipe_is_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "tf-2.21.yaml").mkdir()
    with pytest.raises(InputError, match=r"cannot read recipe .*tf-2.21.yaml: it is a directory"):
        load_recipes([tmp_path])


@pytest.mark.parametrize("name", ["tf-2.21.yaml", "base-images.yaml"])
@pytest.mark.parametrize("kind", NO_FILE_KINDS)
def test_a_recipe_that_is_a_fifo_or_dev_zero_is_one_line_not_a_hang(
    tmp_path: Path, name: str, kind: str
) -> None:
    """Issue 21, item 15: a --recipes-dir file is an input like any other, read by the one reader."""
    path = tmp_path / name
    said = plant_no_file(path, kind)
    plan = ("plan", "--tf", "2.21", "--target", "x86_64_v3", "--skip-disk-check")
    result = run_cli(*plan, "--recipes-dir", str(tmp_path), timeout=60)
    assert result.returncode == 3, result.stderr
    noun = "recipe" if name.startswith("tf-") else "base image file"
    assert one_error_line(result) == (
        f"tfbuild: error: cannot read {noun} {path}: {path} is {said}; tfbuild reads regular "
        "files only. Make it a readable file, or remove it."
    )


def test_an_unreadable_base_images_file_is_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "base-images.yaml").symlink_to(tmp_path / "gone.yaml")
    with pytest.raises(InputError, match=r"cannot read base image file .*: it does not exist"):
        load_base_images([tmp_path])


def test_recipes_dir_that_is_a_file_or_absent(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    for path in (tmp_path / "file", tmp_path / "absent"):
        result = run_cli("recipes", env={"TFBUILD_RECIPES_DIR": str(path)})
        assert result.returncode == 3
        assert f"cannot read recipes from {path}: it is not a directory" in one_error_line(result)


def _as_nobody(call: Callable[[], object]) -> str:
    """What ``call`` raised, as ``CODE LINE`` (a TfbuildError) or ``other ...``, run in a child
    process that drops to the unprivileged uid 65534 (nobody) first when this one is root (root may
    enter and list anything). Nothing the child does after forking may import a module: the
    checkout itself may be closed to nobody (a clone in root's 0700 home)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            try:
                call()
                message = "returned"
            except TfbuildError as exc:
                message = f"{exc.exit_code} {exc.line()}"
            except BaseException as exc:  # reported to the parent
                message = f"other {type(exc).__name__}: {exc}"
            os.write(write_fd, message.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        message = pipe.read()
    os.waitpid(pid, 0)
    return message


def _child_uid() -> int:
    return 65534 if os.geteuid() == 0 else os.getuid()


def _first_closed(path: Path) -> Path:
    """Where the child is first stopped on the way to ``path``, which is closed to it: a directory
    above it that nobody may not enter (a private $TMPDIR), when the child is nobody."""
    if os.geteuid() != 0:
        return path  # the child is this user, who made path in a directory it may enter
    return next((p for p in reversed(path.parents) if not p.stat().st_mode & 0o001), path)


def test_an_unreadable_recipes_dir_is_one_line() -> None:
    """A directory this process may not list; the same line wherever the checkout is, even where
    tfbuild's own recipes/ is closed to the child as well (the user's directories are said first)."""
    top = Path(tempfile.mkdtemp())
    try:
        top.chmod(0o755)
        locked = top / "recipes"
        locked.mkdir(mode=0o000)
        locked.chmod(0o000)
        message = _as_nobody(lambda: load_recipes([locked]))
    finally:
        (top / "recipes").chmod(0o755)
        (top / "recipes").rmdir()
        top.rmdir()
    assert message == (
        f"3 cannot read recipes from {locked}: Permission denied. Pass a readable directory to "
        "--recipes-dir (or $TFBUILD_RECIPES_DIR)."
    )


@pytest.mark.parametrize("closed", ["above", "itself"])
def test_tfbuild_own_recipes_dir_closed_to_this_user_is_one_line(
    closed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tfbuild's own recipes/ where this user may not read it: a checkout in root's 0700 home run
    by another user (closed above it), or the directory itself closed. One line, exit 5, that names
    tfbuild's data directory, what closes it and what to do; never a raw PermissionError. A tree
    laid out as a checkout is made in a temporary directory, and tfbuild is pointed at it."""
    top = Path(tempfile.mkdtemp())
    checkout = top / "checkout"
    (checkout / "tfbuild").mkdir(parents=True)
    (checkout / "recipes").mkdir()
    monkeypatch.setattr(resources, "_PACKAGE", checkout / "tfbuild")
    stop = top if closed == "above" else checkout / "recipes"
    try:
        top.chmod(0o755)
        stop.chmod(0o000)
        stopped_at = _first_closed(stop)
        message = _as_nobody(load_recipes)
    finally:
        stop.chmod(0o755)
        shutil.rmtree(top)
    assert message == (
        f"5 tfbuild cannot read its own data directory recipes/ in {checkout}: {stopped_at} is "
        f"closed to this user (uid {_child_uid()}): permission denied. Run tfbuild as a user who "
        f"may read {checkout}, or install tfbuild where this user can (python3 -m venv DIR && "
        "DIR/bin/pip install tfbuild)."
    )


@pytest.mark.parametrize("text", ["[" * 5000, "- " * 5000 + "x\n", "{a: " * 3000])
def test_deep_nesting_is_refused_not_a_recursion_error(text: str) -> None:
    """PyYAML composes recursively: a few kilobytes of '[' ended in a RecursionError."""
    for parse in (parse_recipe, parse_base_images, parse_tools):
        with pytest.raises(InputError, match=r"x.yaml:1: it nests lists or mappings over 32 deep"):
            parse(text, path="x.yaml")
