"""`tfbuild base` on any host: every suite it offers has its facts, its debootstrap script and its
keyring (found or brought), and a debootstrap that fails is read back as the mirror's fault where it
is. Pure: the script directories are real files laid out as debootstrap lays them out; the failures
are debootstrap's and wget's own output, recorded on this project's machine (2026-11-23, Debian 12,
debootstrap 1.0.128+nmu2+deb12u2)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.engine_fake import FakeEngine, recording
from tfbuild.build.base_images import (
    FAMILY_SCRIPTS,
    HOST_KEYRINGS,
    SHIPPED_KEYRINGS,
    Debootstrap,
    debootstrap_failure,
    debootstrap_for,
    debootstrap_scripts,
    make_base_image,
    shipped_keyrings,
)
from tfbuild.core.errors import BuildFailed, EnvironmentProblem, UsageError
from tfbuild.recipes.images import SUITES, load_base_images, suite_facts

IN_CI = bool(os.environ.get("CI") or os.environ.get("GITHUB_ACTIONS"))
#: recipes/keyrings/README.md names this sha256; a refreshed keyring changes both.
UBUNTU_KEYRING_SHA256 = "80a36b0a6de2f69f49d2df75ef473ccde121e9e190b9ea01d20a4f63778d5c31"
#: Ubuntu Archive Automatic Signing Key (2018): it signs jammy's and noble's Release files.
UBUNTU_2018_KEY = "F6ECB3762474EDA9D21B7022871920D1991BC93C"


def debian12_scripts(root: Path) -> Path:
    """A scripts directory laid out as Debian 12's debootstrap has it: sid and gutsy, and links to
    them for the suites it knew (jammy, bookworm, trixie), none for noble."""
    scripts = root / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "sid").write_text("mirror_style release\n")
    (scripts / "gutsy").write_text("mirror_style release\n")
    for suite, family in (("bullseye", "sid"), ("bookworm", "sid"), ("trixie", "sid")):
        (scripts / suite).symlink_to(family)
    (scripts / "jammy").symlink_to("gutsy")
    return scripts


def host_root(root: Path, *distros: str) -> Path:
    """A file-system root whose keyring packages for ``distros`` are installed."""
    for distro in distros:
        path = root / HOST_KEYRINGS[distro][1].relative_to("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"keyring")
    return root


# --- facts -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_every_suite_base_makes_has_its_facts(suite: str) -> None:
    """--base-image takes every image tfbuild base makes: its suite's facts are in base-images.yaml."""
    facts = suite_facts(suite, load_base_images())
    assert facts is not None, f"{suite}: no plain base-images.yaml entry with suite {suite}"
    assert facts.distro == SUITES[suite]
    assert facts.python and facts.glibc and facts.tcmalloc_package and facts.packaged_compilers
    assert facts.cuda is None


def test_bullseyes_facts_are_the_ones_read_inside_its_image() -> None:
    """Read in tfbuild/base:bullseye (python3 --version, ldd --version, apt-cache policy)."""
    facts = suite_facts("bullseye", load_base_images())
    assert facts is not None
    assert (facts.python, facts.glibc, facts.tcmalloc_package) == (
        "3.9",
        "2.31",
        "libgoogle-perftools4",
    )
    assert facts.packaged_compilers == (
        "gcc-9",
        "gcc-10",
        "clang-9",
        "clang-11",
        "clang-13",
        "clang-16",
    )


# --- the script and the keyring --------------------------------------------------------------------


def test_a_suite_the_host_debootstrap_knows_runs_its_own_script(tmp_path: Path) -> None:
    boot = debootstrap_for(
        "jammy",
        scripts=debian12_scripts(tmp_path),
        shipped=shipped_keyrings(),
        root=host_root(tmp_path / "root"),
    )
    assert boot.script is None
    assert boot.mirror == "http://archive.ubuntu.com/ubuntu"


def test_noble_on_debian_12_runs_gutsy_with_the_keyring_tfbuild_brings(tmp_path: Path) -> None:
    """Debian 12's debootstrap has no noble script, and Debian 12 no ubuntu-keyring."""
    scripts = debian12_scripts(tmp_path)
    boot = debootstrap_for(
        "noble", scripts=scripts, shipped=shipped_keyrings(), root=host_root(tmp_path / "root")
    )
    assert boot.script == "gutsy"
    assert boot.keyring == shipped_keyrings() / SHIPPED_KEYRINGS["ubuntu"]
    argv = boot.argv(tmp_path / "rootfs", ["python3", "gcc", "python3"])
    assert argv == [
        "debootstrap",
        "--variant=minbase",
        "--components=main,universe",
        f"--keyring={boot.keyring}",
        "--include=gcc,python3",
        "noble",
        str(tmp_path / "rootfs"),
        "http://archive.ubuntu.com/ubuntu",
        "gutsy",  # debootstrap SUITE TARGET MIRROR SCRIPT: debootstrap(8)
    ]
    assert any("no noble script" in note for note in boot.notes)
    assert any("tfbuild's copy" in note for note in boot.notes)


def test_the_hosts_own_keyring_comes_first(tmp_path: Path) -> None:
    root = host_root(tmp_path / "root", "ubuntu", "debian")
    for suite in ("noble", "bookworm"):
        boot = debootstrap_for(
            suite, scripts=debian12_scripts(tmp_path / suite), shipped=shipped_keyrings(), root=root
        )
        assert boot.keyring == root / HOST_KEYRINGS[SUITES[suite]][1].relative_to("/")


def test_a_debian_suite_without_debians_keyring_is_refused_before_debootstrap(
    tmp_path: Path,
) -> None:
    with pytest.raises(EnvironmentProblem) as caught:
        debootstrap_for(
            "trixie",
            scripts=debian12_scripts(tmp_path),
            shipped=shipped_keyrings(),
            root=host_root(tmp_path / "root"),
        )
    assert caught.value.line() == (
        "tfbuild base --suite trixie needs Debian's archive keyring: "
        "/usr/share/keyrings/debian-archive-keyring.gpg is missing, and without it the trixie "
        "Release file cannot be checked. Install it: apt-get install debian-archive-keyring."
    )
    assert caught.value.exit_code == 5


def test_a_debootstrap_without_the_distributions_script_is_refused(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "sid").write_text("")  # a debootstrap that knows Debian only
    with pytest.raises(EnvironmentProblem, match="this debootstrap cannot make noble") as caught:
        debootstrap_for(
            "noble", scripts=scripts, shipped=shipped_keyrings(), root=host_root(tmp_path / "r")
        )
    assert "has neither noble nor gutsy" in caught.value.line()


def test_an_unknown_suite_is_a_usage_error() -> None:
    stored = recording("base-image")
    ((tag, _image_id),) = stored.made.items()  # a tag the engine has not
    with pytest.raises(UsageError, match="unknown --suite 'buster'"):
        make_base_image(FakeEngine.replaying(stored), suite="buster", tag=tag)


def test_every_suite_is_made_by_this_hosts_debootstrap() -> None:
    """The real debootstrap here (CI installs it): a script for every suite, its own or its
    distribution's, and a keyring, its own or tfbuild's."""
    scripts = debootstrap_scripts(os.environ)
    if not scripts.is_dir():
        message = f"no debootstrap here ({scripts} is missing)"
        if IN_CI:
            pytest.fail(f"CI installs debootstrap (.ci/run): {message}")
        pytest.skip(message)
    for suite, distro in SUITES.items():
        boot = debootstrap_for(suite, scripts=scripts, shipped=shipped_keyrings())
        assert (scripts / (boot.script or suite)).is_file(), suite
        assert boot.script in (None, FAMILY_SCRIPTS[distro])
        assert boot.keyring.is_file(), suite


def test_the_shipped_ubuntu_keyring_is_the_pinned_one(tmp_path: Path) -> None:
    keyring = shipped_keyrings() / SHIPPED_KEYRINGS["ubuntu"]
    assert hashlib.sha256(keyring.read_bytes()).hexdigest() == UBUNTU_KEYRING_SHA256
    readme = (shipped_keyrings() / "README.md").read_text(encoding="utf-8")
    assert UBUNTU_KEYRING_SHA256 in readme
    gpg = shutil.which("gpg")
    if gpg is None:  # the sha256 above pins the file either way
        return
    shown = subprocess.run(
        [gpg, "--show-keys", "--with-colons", str(keyring)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GNUPGHOME": str(tmp_path)},  # reads the file, touches no keyring
    ).stdout
    fingerprints = [f.split(":")[9] for f in shown.splitlines() if f.startswith("fpr:")]
    assert UBUNTU_2018_KEY in fingerprints


# --- a failed debootstrap, read back -------------------------------------------------------------

NOBLE = Debootstrap(
    suite="noble",
    distro="ubuntu",
    mirror="http://127.0.0.1:9/ubuntu",
    script="gutsy",
    keyring=Path("/k.gpg"),
)
#: debootstrap's output and its debootstrap.log, as they were (recorded on 2026-11-23).
RECORDED = {
    "refused": (
        "http://127.0.0.1:9/ubuntu",
        [
            "I: Target architecture can be executed",
            "I: Retrieving InRelease ",
            "I: Retrieving Release ",
            "E: Failed getting release file http://127.0.0.1:9/ubuntu/dists/noble/Release",
        ],
        ["amd64: ok", "failed: Connection refused.", "failed: Connection refused."],
    ),
    "unresolvable": (
        "http://mirror.invalid/ubuntu",
        [
            "I: Target architecture can be executed",
            "I: Retrieving InRelease ",
            "I: Retrieving Release ",
            "E: Failed getting release file http://mirror.invalid/ubuntu/dists/noble/Release",
        ],
        [
            "amd64: ok",
            "wget: unable to resolve host address 'mirror.invalid'",
            "wget: unable to resolve host address 'mirror.invalid'",
        ],
    ),
    "not-an-archive": (
        "http://deb.debian.org/nonexistent",
        [
            "I: Target architecture can be executed",
            "I: Retrieving InRelease ",
            "I: Retrieving Release ",
            "E: Failed getting release file http://deb.debian.org/nonexistent/dists/noble/Release",
        ],
        [
            "amd64: ok",
            "http://deb.debian.org/nonexistent/dists/noble/InRelease:",
            "2026-11-23 17:20:51 ERROR 400: Bad Request.",
            "http://deb.debian.org/nonexistent/dists/noble/Release:",
            "2026-11-23 17:20:52 ERROR 400: Bad Request.",
        ],
    ),
}


def failure(case: str) -> EnvironmentProblem | BuildFailed:
    mirror, output, log = RECORDED[case]
    error = debootstrap_failure(
        Debootstrap(
            suite=NOBLE.suite,
            distro=NOBLE.distro,
            mirror=mirror,
            script=NOBLE.script,
            keyring=NOBLE.keyring,
        ),
        1,
        output,
        log,
    )
    assert isinstance(error, (EnvironmentProblem, BuildFailed))
    return error


def test_a_refused_mirror_is_the_mirrors_fault_in_one_line() -> None:
    error = failure("refused")
    assert isinstance(error, EnvironmentProblem) and error.exit_code == 5
    assert error.line() == (
        "cannot reach the Ubuntu mirror http://127.0.0.1:9/ubuntu: 127.0.0.1: connection refused. "
        "Pass --mirror URL of an Ubuntu mirror this machine reaches, or set http_proxy "
        "(debootstrap's wget uses it)."
    )


def test_an_unresolvable_mirror_says_its_host_does_not_resolve() -> None:
    error = failure("unresolvable")
    assert error.exit_code == 5
    assert error.line().startswith(
        "cannot reach the Ubuntu mirror http://mirror.invalid/ubuntu: mirror.invalid does not "
        "resolve."
    )


def test_a_mirror_that_answers_without_the_suite_is_named_so() -> None:
    error = failure("not-an-archive")
    assert error.exit_code == 5
    assert error.line() == (
        "the Ubuntu mirror http://deb.debian.org/nonexistent has no noble: it answered HTTP 400 "
        "Bad Request for http://deb.debian.org/nonexistent/dists/noble/Release. Pass --mirror URL "
        "of an Ubuntu archive that has noble (the default is http://archive.ubuntu.com/ubuntu)."
    )


def test_any_other_debootstrap_failure_is_a_failed_build_with_its_last_lines() -> None:
    output = [
        "I: Extracting base-files...",
        "E: Tried to extract package, but file already exists.",
    ]
    error = debootstrap_failure(NOBLE, 1, output, [])
    assert isinstance(error, BuildFailed) and error.exit_code == 6
    assert "debootstrap noble from http://127.0.0.1:9/ubuntu failed (exit code 1)" in error.line()
    assert "file already exists" in error.line()


def test_a_release_file_the_keyring_cannot_check_names_the_keyring() -> None:
    """Recorded: noble from archive.ubuntu.com checked against Debian's keyring."""
    output = [
        "I: Target architecture can be executed",
        "I: Retrieving InRelease ",
        "I: Checking Release signature",
        "E: Release signed by unknown key (key id 871920D1991BC93C)",
        "   The specified keyring /usr/share/keyrings/debian-archive-keyring.gpg may be incorrect "
        "or out of date.",
        "   You can find the latest Debian release key at https://ftp-master.debian.org/keys.html",
    ]
    boot = Debootstrap(
        suite="noble",
        distro="ubuntu",
        mirror="http://archive.ubuntu.com/ubuntu",
        script="gutsy",
        keyring=Path("/usr/share/keyrings/debian-archive-keyring.gpg"),
    )
    error = debootstrap_failure(boot, 1, output, ["amd64: ok"])
    assert error.exit_code == 5
    assert error.line() == (
        "the noble Release file from http://archive.ubuntu.com/ubuntu does not verify against "
        "/usr/share/keyrings/debian-archive-keyring.gpg: Release signed by unknown key (key id "
        "871920D1991BC93C). Install a current ubuntu-keyring, and check that the mirror is an "
        "Ubuntu archive."
    )


def test_the_image_gets_the_updates_and_security_pockets_the_registrys_image_has() -> None:
    """jammy's clang-15 is in jammy-updates only: without it the entry's facts would not hold."""
    jammy = Debootstrap(
        suite="jammy",
        distro="ubuntu",
        mirror="http://archive.ubuntu.com/ubuntu",
        script=None,
        keyring=Path("/k.gpg"),
    )
    assert jammy.sources_list() == (
        "deb http://archive.ubuntu.com/ubuntu jammy main universe\n"
        "deb http://archive.ubuntu.com/ubuntu jammy-updates main universe\n"
        "deb http://archive.ubuntu.com/ubuntu jammy-security main universe\n"
    )
    bookworm = Debootstrap(
        suite="bookworm",
        distro="debian",
        mirror="http://mirror.example/debian",
        script=None,
        keyring=Path("/k.gpg"),
    )
    assert bookworm.sources_list() == (
        "deb http://mirror.example/debian bookworm main\n"
        "deb http://mirror.example/debian bookworm-updates main\n"
        "deb http://deb.debian.org/debian-security bookworm-security main\n"
    )
