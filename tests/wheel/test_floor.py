"""A wheel's floor and manylinux policy, on real ELF files, and retagging it as a raw copy.

Tiny shared libraries are built here with the system's gcc and g++ (``-shared -fPIC``), packed into
wheels and judged by the real auditwheel. What the host decides (which GLIBCXX_ versions g++'s
headers need) is read back from the library with ``readelf -V`` and the policy computed from
auditwheel's own policy table; what the ABI fixes is written down (``printf`` is GLIBC_2.2.5 and
``getrandom`` GLIBC_2.25 on x86-64, so manylinux_2_5 and manylinux_2_26).
"""

from __future__ import annotations

import importlib.resources
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import wheels
from tests.wheel import test_wheelfile
from tests.wheel.test_wheelfile import raw_members, repacked, verify_record
from tests.wheels import record_hash
from tfbuild.core import serial
from tfbuild.core.errors import EnvironmentProblem, InputError, UsageError
from tfbuild.wheel.floor import inspect_wheel
from tfbuild.wheel.receipt import WheelFloor
from tfbuild.wheel.wheelfile import normalise, relabel, retag

pytestmark = pytest.mark.skipif(
    not (shutil.which("gcc") and shutil.which("g++") and shutil.which("readelf")),
    reason="needs gcc, g++ and readelf to build and read the test libraries",
)

EPOCH = test_wheelfile.EPOCH
VERSION = "2.21.0+x86_64v4"  # a labelled wheel, as tfbuild retags them
DIST = f"tfbuild_standin-{VERSION}"
stock_wheel = test_wheelfile.stock_wheel  # the session fixture: the real stock wheel

OLD_C = '#include <stdio.h>\nint hello(void) { return printf("hello %d\\n", 42); }\n'
CXX = """#include <iostream>
#include <string>
std::string greet(const std::string& who) {
  std::string text = "hello " + who;
  std::cout << text << std::endl;
  return text;
}
"""
GETRANDOM = """#include <stddef.h>
#include <sys/random.h>
long fill(void *buffer, size_t size) { return getrandom(buffer, size, 0); }
"""


def is_x86_64() -> bool:
    machine = subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True, check=True)
    return machine.stdout.startswith("x86_64")


def build(directory: Path, name: str, source: str, *args: str, cxx: bool = False) -> Path:
    """``lib{name}.so`` from ``source``, built with the system's compiler; extra ``args`` last."""
    suffix = ".cc" if cxx else ".c"
    (directory / f"{name}{suffix}").write_text(source)
    library = directory / f"lib{name}.so"
    subprocess.run(
        [
            "g++" if cxx else "gcc",
            "-shared",
            "-fPIC",
            "-O2",
            "-o",
            library,
            f"{name}{suffix}",
            *args,
        ],
        cwd=directory,
        check=True,
    )
    return library


def needed_versions(library: Path) -> set[str]:
    """The symbol versions ``library`` needs, as ``readelf -V`` prints its .gnu.version_r."""
    text = subprocess.run(
        ["readelf", "-V", "-W", library], capture_output=True, text=True, check=True
    ).stdout
    needs = text.partition("Version needs section")[2]
    return set(re.findall(r"Name: (\S+)\s+Flags", needs))


def newest(versions: set[str], family: str) -> str | None:
    found = [v.split("_", 1)[1] for v in versions if re.fullmatch(rf"{family}_[\d.]+", v)]
    return max(found, key=lambda v: tuple(map(int, v.split("."))), default=None)


def best_policy(versions: set[str]) -> str:
    """PEP 600's rule over auditwheel's table: the oldest-glibc policy that lists every version."""
    table = json.loads(
        importlib.resources.files("auditwheel.policy").joinpath("manylinux-policy.json").read_text()
    )
    for policy in sorted(table, key=lambda p: -p["priority"]):
        allowed = policy["symbol_versions"].get("x86_64", {})
        if policy["name"] != "linux" and all(
            v.partition("_")[2] in allowed[v.partition("_")[0]]
            for v in versions
            if v.partition("_")[0] in allowed
        ):
            return f"{policy['name']}_x86_64"
    raise AssertionError(f"no policy allows {versions}")


def library_wheel(
    directory: Path,
    libraries: dict[str, bytes],
    *,
    version: str = VERSION,
    platform: str = "linux_x86_64",
) -> Path:
    """A wheel holding ``libraries`` (name -> ELF bytes) in its package, RECORD listing them all."""
    members = {f"tfbuild_standin/{name}": data for name, data in libraries.items()}
    return wheels.make_wheel(
        directory,
        f"tfbuild_standin-{version}-cp311-cp311-{platform}.whl",
        module_text="VALUE = 42\n",
        members=members,
        modes={name: 0o755 for name in members if name.endswith(".so")},
    )


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The test libraries, built once: old C, C++, a newer glibc symbol."""
    if not is_x86_64():
        pytest.skip("the symbol versions written down here are x86-64's")
    directory = tmp_path_factory.mktemp("libs")
    return {
        "old": build(directory, "old", OLD_C),
        "cxx": build(directory, "cxx", CXX, cxx=True),
        "getrandom": build(directory, "getrandom", GETRANDOM),
    }


def wheel_of(tmp_path: Path, *libraries: Path) -> Path:
    return library_wheel(
        tmp_path / "in", {library.name: library.read_bytes() for library in libraries}
    )


def test_an_old_c_library_is_manylinux_2_5(libs: dict[str, Path], tmp_path: Path) -> None:
    assert needed_versions(libs["old"]) == {"GLIBC_2.2.5"}
    floor = inspect_wheel(wheel_of(tmp_path, libs["old"]))
    assert floor == WheelFloor(
        glibc="2.2.5",
        libstdcxx=None,
        libgcc=None,
        policy="manylinux_2_5_x86_64",
        tool=floor.tool,
    )
    assert re.fullmatch(r"auditwheel 6\.\d+\.\d+", floor.tool)


def test_a_cxx_library_has_a_libstdcxx_and_libgcc_floor(
    libs: dict[str, Path], tmp_path: Path
) -> None:
    versions = needed_versions(libs["cxx"])
    floor = inspect_wheel(wheel_of(tmp_path, libs["cxx"]))
    assert floor.libstdcxx is not None  # std::string and std::cout: GLIBCXX_ versions
    assert floor.libgcc is not None  # exceptions unwind through libgcc_s: GCC_3.0
    assert (floor.glibc, floor.libstdcxx, floor.libgcc) == (
        newest(versions, "GLIBC"),
        newest(versions, "GLIBCXX"),
        newest(versions, "GCC"),
    )
    assert floor.policy == best_policy(versions)
    assert floor.too_new == ()


def test_a_newer_glibc_symbol_raises_the_floor(libs: dict[str, Path], tmp_path: Path) -> None:
    assert "GLIBC_2.25" in needed_versions(libs["getrandom"])  # getrandom came in glibc 2.25
    floor = inspect_wheel(wheel_of(tmp_path, libs["getrandom"]))
    assert (floor.glibc, floor.policy) == ("2.25", "manylinux_2_26_x86_64")
    assert floor.policy == best_policy(needed_versions(libs["getrandom"]))


def test_the_wheel_floor_is_the_newest_of_its_files(libs: dict[str, Path], tmp_path: Path) -> None:
    versions = set().union(*(needed_versions(library) for library in libs.values()))
    floor = inspect_wheel(wheel_of(tmp_path, *libs.values()))
    assert floor.glibc == newest(versions, "GLIBC")
    assert floor.libstdcxx == newest(versions, "GLIBCXX")
    assert floor.policy == best_policy(versions)


def test_a_wheel_no_policy_allows_keeps_linux_and_says_why(
    libs: dict[str, Path], tmp_path: Path
) -> None:
    """A library in the wheel defines GLIBC_2.99 and GLIBCXX_3.4.99 (newer than any policy: a
    STAND-IN for a future glibc, which this machine has not), another needs them."""
    (tmp_path / "future.map").write_text(
        "GLIBC_2.99 { global: future_c; local: *; };\nGLIBCXX_3.4.99 { global: future_cxx; };\n"
    )
    future = build(
        tmp_path,
        "future",
        "int future_c(void) { return 1; }\nint future_cxx(void) { return 2; }\n",
        "-Wl,--version-script=future.map",
    )
    user = build(
        tmp_path,
        "user",
        "int future_c(void);\nint future_cxx(void);\nint use(void) { return future_c() + future_cxx(); }\n",
        "-L.",
        "-lfuture",
        "-Wl,-rpath,$ORIGIN",
    )
    assert {"GLIBC_2.99", "GLIBCXX_3.4.99"} <= needed_versions(user)
    floor = inspect_wheel(wheel_of(tmp_path, future, user, libs["old"]))
    assert floor.policy is None
    assert floor.too_new == ("GLIBC_2.99", "GLIBCXX_3.4.99")
    assert (floor.glibc, floor.libstdcxx) == ("2.99", "3.4.99")
    assert serial.to_data(floor)["too_new"] == ["GLIBC_2.99", "GLIBCXX_3.4.99"]


def test_a_library_outside_every_policy_counts_unless_excluded(tmp_path: Path) -> None:
    """libexternal.so is needed, is in no policy's whitelist, and is not in the wheel (like the
    CUDA libraries a TensorFlow wheel finds in other wheels): no policy, until it is excluded."""
    if not is_x86_64():
        pytest.skip("the symbol versions written down here are x86-64's")
    external = build(tmp_path, "external", "int external(void) { return 1; }\n")
    user = build(
        tmp_path,
        "needsexternal",
        "int external(void);\nint call(void) { return external(); }\n",
        "-L.",
        "-lexternal",
    )
    wheel = wheel_of(tmp_path, user)
    external.unlink()  # found nowhere, as on a machine without it
    floor = inspect_wheel(wheel)
    assert (floor.policy, floor.too_new) == (None, ("libexternal.so",))
    for exclude in (["libexternal.so"], ["libext*"], ("libnothing.so", "libexternal.so")):
        floor = inspect_wheel(wheel, exclude=exclude)
        assert (floor.policy, floor.too_new) == ("manylinux_2_5_x86_64", ()), exclude
    assert inspect_wheel(wheel, exclude="libexternal.so").policy == "manylinux_2_5_x86_64"


def test_the_instruction_set_is_the_labels_business(tmp_path: Path) -> None:
    """An ELF file marked as needing x86-64-v3 keeps its glibc policy: the target is in the label."""
    if not is_x86_64():
        pytest.skip("x86-64 levels")
    library = build(tmp_path, "v3", OLD_C, "-march=x86-64-v3", "-mneeded")
    notes = subprocess.run(
        ["readelf", "-n", library], capture_output=True, text=True, check=True
    ).stdout
    if "x86-64-v3" not in notes:
        pytest.skip("this toolchain does not write the ISA-needed note")
    floor = inspect_wheel(wheel_of(tmp_path, library))
    assert floor.policy == "manylinux_2_5_x86_64"


def test_a_wheel_without_elf_files_has_no_floor(tmp_path: Path) -> None:
    """Pure Python: it needs no glibc and runs anywhere; no manylinux tag (its tag is none-any)."""
    wheel = wheels.make_wheel(tmp_path, "tfbuild_standin-2.21.0-py3-none-any.whl")
    floor = inspect_wheel(wheel)
    assert floor == WheelFloor(
        glibc=None, libstdcxx=None, libgcc=None, policy=None, too_new=(), tool=floor.tool
    )
    assert floor.tool.startswith("auditwheel ")


def test_elf_files_for_no_known_machine_are_an_error(libs: dict[str, Path], tmp_path: Path) -> None:
    data = bytearray(libs["old"].read_bytes())
    data[18:20] = (2).to_bytes(2, "little")  # e_machine: EM_SPARC, which auditwheel has no tag for
    wheel = library_wheel(tmp_path, {"libold.so": bytes(data)})
    with pytest.raises(InputError, match="ELF files are for no machine auditwheel knows"):
        inspect_wheel(wheel)


def test_what_auditwheel_cannot_read_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        inspect_wheel(tmp_path / "missing-1.0-py3-none-any.whl")
    (tmp_path / "notes.zip").write_bytes(b"PK")
    with pytest.raises(InputError, match="not a wheel file name"):
        inspect_wheel(tmp_path / "notes.zip")
    damaged = wheels.make_wheel(tmp_path, "tfbuild_standin-2.21.0-cp311-cp311-linux_x86_64.whl")
    damaged.write_bytes(damaged.read_bytes()[:-100])
    with pytest.raises(InputError, match=r"auditwheel cannot inspect .*\. Rebuild the wheel"):
        inspect_wheel(damaged)
    wheels.pack(damaged, {"tfbuild_standin-2.21.0.dist-info/METADATA": b"Name: tfbuild_standin\n"})
    with pytest.raises(InputError, match=r"it has no \.dist-info/RECORD"):
        inspect_wheel(damaged)
    two = ("tfbuild_standin-2.21.0", "other-1.0")  # two .dist-info directories
    wheels.pack(damaged, {f"{top}.dist-info/RECORD": b"" for top in two})
    with pytest.raises(InputError, match=r"auditwheel cannot inspect .*: Should be exactly one"):
        inspect_wheel(damaged)


def test_without_auditwheel_the_fix_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "auditwheel", None)  # import auditwheel now fails
    with pytest.raises(EnvironmentProblem, match=r"pip install auditwheel") as caught:
        inspect_wheel(tmp_path / "any-1.0-py3-none-any.whl")
    assert "\n" not in caught.value.line()


# --- retag: the platform tag, in the name and WHEEL, everything else copied raw ------------------


def test_retag_changes_the_tag_and_copies_every_other_member_raw(
    libs: dict[str, Path], tmp_path: Path
) -> None:
    wheel = wheel_of(tmp_path, libs["old"], libs["cxx"])
    floor = inspect_wheel(wheel)
    assert floor.policy is not None
    out = tmp_path / "out"
    out.mkdir()
    tagged = retag(wheel, floor.policy, out)
    assert tagged.name == f"{DIST}-cp311-cp311-{floor.policy}.whl"  # the label stays
    assert [p.name for p in out.iterdir()] == [tagged.name]  # no temp file left
    before, after = raw_members(wheel), raw_members(tagged)
    assert after.keys() == before.keys()
    changed = {name for name in before if after[name] != before[name]}
    assert changed == {f"{DIST}.dist-info/WHEEL", f"{DIST}.dist-info/RECORD"}
    verify_record(tagged)
    with zipfile.ZipFile(tagged) as archive:
        text = archive.read(f"{DIST}.dist-info/WHEEL").decode()
    assert text == (
        "Wheel-Version: 1.0\nGenerator: tfbuild-tests\nRoot-Is-Purelib: false\n"
        f"Tag: cp311-cp311-{floor.policy}\n"
    )
    # auditwheel agrees with the retagged wheel, and so does pip on this machine.
    assert inspect_wheel(tagged) == floor
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"),
            *("--target", str(tmp_path / "site"), str(tagged)),
        ],
        check=True,
    )
    assert (tmp_path / "site" / "tfbuild_standin" / "libold.so").read_bytes() == libs[
        "old"
    ].read_bytes()


def test_retag_composes_with_relabel_and_normalise_in_one_pass(
    libs: dict[str, Path], tmp_path: Path
) -> None:
    plain = library_wheel(
        tmp_path / "plain", {"libold.so": libs["old"].read_bytes()}, version="2.21.0"
    )
    packed = repacked(plain, tmp_path / "packed", seed=1)  # another machine's zip layout
    tag = "manylinux_2_5_x86_64"
    once = relabel(packed, "x86_64v4", tmp_path / "once", epoch=EPOCH, platform=tag)
    again = relabel(packed, "x86_64v4", tmp_path / "again", epoch=EPOCH, platform=tag)
    assert once.name == f"{DIST}-cp311-cp311-{tag}.whl"
    assert once.read_bytes() == again.read_bytes()  # deterministic
    # One pass = the three steps one after the other, in any order.
    (tmp_path / "s1").mkdir()
    (tmp_path / "s2").mkdir()
    stepwise = normalise(
        retag(relabel(packed, "x86_64v4", tmp_path / "s1"), tag, tmp_path / "s2"),
        tmp_path / "s3",
        epoch=EPOCH,
    )
    (tmp_path / "t1").mkdir()
    (tmp_path / "t2").mkdir()
    other_order = relabel(
        retag(normalise(plain, tmp_path / "t1", epoch=EPOCH), tag, tmp_path / "t2"),
        "x86_64v4",
        tmp_path / "t3",
        epoch=EPOCH,
    )
    assert once.read_bytes() == stepwise.read_bytes() == other_order.read_bytes()
    verify_record(once)
    before, after = raw_members(packed), raw_members(once)
    assert after[f"{DIST}.dist-info/WHEEL"] != before["tfbuild_standin-2.21.0.dist-info/WHEEL"]
    assert after["tfbuild_standin/libold.so"] == before["tfbuild_standin/libold.so"]


def test_relabel_to_the_tag_the_wheel_has_is_a_copy(libs: dict[str, Path], tmp_path: Path) -> None:
    wheel = wheel_of(tmp_path, libs["old"])
    out = tmp_path / "out"
    out.mkdir()
    same = relabel(wheel, "x86_64v4", out, platform="linux_x86_64")
    assert same.read_bytes() == wheel.read_bytes()


def test_a_compressed_tag_set_and_several_python_tags(tmp_path: Path) -> None:
    wheel = library_wheel(tmp_path, {})
    contents = wheels.members_of(wheel)
    wheel_name = f"{DIST}.dist-info/WHEEL"
    contents[wheel_name] = (
        b"Wheel-Version: 1.0\r\nTag: cp311-cp311-linux_x86_64\r\nTag: cp311-abi3-linux_x86_64\r\n"
        b"Tag: cp311-cp311-linux_x86_64\r\nBuild: 1\r\n"
    )
    record = f"{DIST}.dist-info/RECORD"
    contents[record] = re.sub(
        rf"{re.escape(wheel_name)},[^\n]*".encode(),
        f"{wheel_name},{record_hash(contents[wheel_name])},{len(contents[wheel_name])}".encode(),
        contents[record],
    )
    wheels.pack(wheel, contents)
    tags = "manylinux_2_17_x86_64.manylinux2014_x86_64"
    tagged = retag(wheel, tags, tmp_path / "out")
    assert tagged.name == f"{DIST}-cp311-cp311-{tags}.whl"
    with zipfile.ZipFile(tagged) as archive:
        assert archive.read(wheel_name) == (
            b"Wheel-Version: 1.0\r\n"
            b"Tag: cp311-cp311-manylinux_2_17_x86_64\r\nTag: cp311-cp311-manylinux2014_x86_64\r\n"
            b"Tag: cp311-abi3-manylinux_2_17_x86_64\r\nTag: cp311-abi3-manylinux2014_x86_64\r\n"
            b"Build: 1\r\n"
        )
    verify_record(tagged)


def test_a_wrong_tag_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    wheel = library_wheel(tmp_path, {})
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UsageError, match="is not a platform tag"):
        retag(wheel, "manylinux 2.27", out)
    with pytest.raises(UsageError, match="the wheel is for x86_64, the tag for aarch64"):
        retag(wheel, "manylinux_2_27_aarch64", out)
    contents = wheels.members_of(wheel)
    contents[f"{DIST}.dist-info/WHEEL"] = b"Wheel-Version: 1.0\n"
    wheels.pack(wheel, contents)
    with pytest.raises(InputError, match="WHEEL has no Tag line"):
        retag(wheel, "manylinux_2_27_x86_64", out)
    assert list(out.iterdir()) == []


@pytest.mark.slow
def test_retagging_the_real_tensorflow_wheel(stock_wheel: Path, tmp_path: Path) -> None:
    """15,600 members: only WHEEL and RECORD written again, every other compressed byte as it was.
    (Inspecting it takes auditwheel about two minutes: benchmarks/floor_speed.py does.)"""
    tagged = retag(stock_wheel, "manylinux_2_28_x86_64", tmp_path)
    assert tagged.name == "tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(stock_wheel) as before, zipfile.ZipFile(tagged) as after:
        stock = {i.filename: (i.CRC, i.compress_size) for i in before.infolist()}
        ours = {i.filename: (i.CRC, i.compress_size) for i in after.infolist()}
        wheel_text = after.read("tensorflow_cpu-2.21.0.dist-info/WHEEL").decode()
    assert ours.keys() == stock.keys()
    assert {name for name in stock if ours[name] != stock[name]} == {
        "tensorflow_cpu-2.21.0.dist-info/WHEEL",
        "tensorflow_cpu-2.21.0.dist-info/RECORD",
    }
    assert "\nTag: cp311-cp311-manylinux_2_28_x86_64\n" in wheel_text
    assert wheel_text.count("Tag:") == 1
