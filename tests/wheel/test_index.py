"""``tfbuild index DIR``: the page pip and ``tfbuild pick`` read, and SHA256SUMS.

The wheels here are real, small, valid wheels (METADATA, WHEEL, RECORD with hashes) written with
zipfile, so that the real ``pip`` and the real ``sha256sum`` can be pointed at the result: pip must
find the right file through the page, offline, and refuse a file whose bytes no longer match the
sha256 in its link.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests import wheels
from tests.conftest import one_error_line, run_cli
from tests.http_server import served
from tests.receipts import make_receipt, write_receipt
from tfbuild.core.errors import InputError
from tfbuild.wheel.index import collect, render_html, write_index
from tfbuild.wheel.receipt import WheelFloor

TF_V4 = "tensorflow_cpu-2.21.0+x86_64v4-cp311-cp311-linux_x86_64.whl"
TF_V3_MKL = "tensorflow_cpu-2.21.0+x86_64v3.mkl-cp312-cp312-linux_x86_64.whl"
TF_CUDA = "tensorflow-2.20.0+zen4.cu125-cp311-cp311-linux_x86_64.whl"
STANDIN_V3 = "tfbuild_standin-2.21.0+x86_64v3-py3-none-any.whl"
STANDIN_V4 = "tfbuild_standin-2.21.0+x86_64v4-py3-none-any.whl"


# --- real wheels and receipts ---------------------------------------------------------------------


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    """A dist/ as the build jobs leave it: receipts for most wheels, one wheel without."""
    directory = tmp_path / "dist"
    directory.mkdir()
    floor = WheelFloor(
        glibc="2.27", libstdcxx="3.4.22", libgcc="4.2.0", policy="manylinux_2_27_x86_64"
    )
    write_receipt(wheels.make_wheel(directory, TF_V4), floor=floor)
    wheels.make_wheel(directory, TF_V3_MKL)  # no receipt: described by its label
    write_receipt(
        wheels.make_wheel(directory, TF_CUDA),
        target="zen4",
        variant="cuda",
        label="zen4.cu125",
        plan_overrides={
            "cuda": {"hermetic": True, "cuda": "12.5.1", "cudnn": "9.3.0", "capabilities": []}
        },
    )
    write_receipt(
        wheels.make_wheel(directory, STANDIN_V3), standin=True, target="x86_64_v3", label="x"
    )
    write_receipt(wheels.make_wheel(directory, STANDIN_V4), standin=True)
    (directory / "logs").mkdir()
    (directory / "notes.txt").write_text("not a wheel\n")
    return directory


class Page(HTMLParser):
    """The parts of index.html that matter: anchors, table rows, title, every start tag."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[str, str]] = []
        self.rows: list[list[str]] = []
        self.header: list[str] = []
        self.tags: list[str] = []
        self.title = ""
        self._href: str | None = None
        self._text: list[str] = []
        self._cell: list[str] | None = None
        self._in_title = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "a":
            self._href = dict(attrs)["href"]
            self._text = []
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.anchors.append((self._href, "".join(self._text)))
            self._href = None
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._in_title:
            self.title += data


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the page and the sums --------------------------------------------------------------------------


def test_every_wheel_gets_one_pep503_anchor_with_its_own_sha256(dist: Path) -> None:
    result = write_index(dist)
    page = Page((dist / "index.html").read_text(encoding="utf-8"))
    wheels = sorted(p.name for p in dist.glob("*.whl"))
    assert page.anchors == [(f"{name}#sha256={_sha256(dist / name)}", name) for name in wheels]
    assert [e.name for e in result.entries] == wheels
    assert page.title == "TensorFlow wheels built by tfbuild"


def test_the_table_says_what_each_wheel_was_built_for(dist: Path) -> None:
    write_index(dist)
    page = Page((dist / "index.html").read_text(encoding="utf-8"))
    header, *rows = page.rows
    assert header == [
        "wheel",
        "TensorFlow version",
        "Python tag",
        "CPU target",
        "variant",
        "CUDA",
        "runs on",
        "size",
        "sha256",
    ]
    by_name = {row[0].removesuffix(" STAND-IN"): row for row in rows}
    size = (dist / TF_V4).stat().st_size
    assert by_name[TF_V4] == [
        TF_V4,
        "2.21.0",
        "cp311",
        "x86_64_v4",
        "cpu",
        "-",
        "glibc 2.27, libstdc++ 3.4.22",  # the floor auditwheel found, from the receipt
        f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} bytes",
        _sha256(dist / TF_V4),
    ]
    # No receipt: everything comes from the label.
    assert by_name[TF_V3_MKL][1:6] == ["2.21.0", "cp312", "x86_64_v3", "mkl", "-"]
    # The receipt's CUDA is the exact one the build used.
    assert by_name[TF_CUDA][1:6] == ["2.20.0", "cp311", "zen4", "cuda", "12.5.1"]
    # The receipt wins over the label (this receipt says x86_64_v4 for a +x86_64v3 name).
    assert by_name[STANDIN_V3][1:6] == ["2.21.0", "py3", "x86_64_v3", "cpu", "-"]


def test_stand_in_wheels_are_marked(dist: Path) -> None:
    result = write_index(dist)
    text = (dist / "index.html").read_text(encoding="utf-8")
    page = Page(text)
    marked = sorted(row[0] for row in page.rows if row[0].endswith("STAND-IN"))
    assert marked == [f"{STANDIN_V3} STAND-IN", f"{STANDIN_V4} STAND-IN"]
    assert "STAND-IN: 2 of these 5 wheels are tfbuild's canary, not TensorFlow." in text
    assert [e.name for e in result.entries if e.standin] == [STANDIN_V3, STANDIN_V4]


def test_json_lists_the_wheels_and_where_their_facts_came_from(dist: Path) -> None:
    result = run_cli("index", str(dist), "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["schema"] == "tfbuild.index/1"
    assert data["index"] == str(dist / "index.html")
    entries = {w["name"]: w for w in data["wheels"]}
    assert list(entries) == sorted(entries)
    assert entries[TF_V3_MKL] == {
        "name": TF_V3_MKL,
        "distribution": "tensorflow-cpu",
        "version": "2.21.0+x86_64v3.mkl",
        "tensorflow": "2.21.0",
        "python": ["cp312"],
        "tags": ["cp312-cp312-linux_x86_64"],
        "label": "x86_64v3.mkl",
        "target": "x86_64_v3",
        "variant": "mkl",
        "cuda": None,
        "standin": False,
        "size": (dist / TF_V3_MKL).stat().st_size,
        "sha256": _sha256(dist / TF_V3_MKL),
        "receipt": None,
        "described_by": "label",
        "floor": None,  # no receipt: never inspected
        "overlay": None,  # a wheel, not an overlay
    }
    assert entries[TF_V4]["receipt"] == TF_V4.removesuffix(".whl") + ".json"
    assert entries[TF_V4]["described_by"] == "receipt"
    assert entries[TF_V4]["floor"]["policy"] == "manylinux_2_27_x86_64"


def test_plain_output_is_sha256sum_lines_then_the_files(dist: Path) -> None:
    result = run_cli("index", str(dist))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"{_sha256(dist / TF_CUDA)}  {TF_CUDA}",
        f"{_sha256(dist / TF_V3_MKL)}  {TF_V3_MKL}",
        f"{_sha256(dist / TF_V4)}  {TF_V4}",
        f"{_sha256(dist / STANDIN_V3)}  {STANDIN_V3}  STAND-IN",
        f"{_sha256(dist / STANDIN_V4)}  {STANDIN_V4}  STAND-IN",
        f"wrote {dist / 'index.html'} and {dist / 'SHA256SUMS'}: 5 wheels",
    ]
    assert (dist / "SHA256SUMS").read_text() == "".join(
        line.removesuffix("  STAND-IN") + "\n" for line in result.stdout.splitlines()[:-1]
    )


def test_output_is_deterministic_and_written_whole(dist: Path) -> None:
    write_index(dist, title="release v1")
    first = {name: (dist / name).read_bytes() for name in ("index.html", "SHA256SUMS")}
    for wheel in dist.glob("*.whl"):
        wheel.touch()  # a new mtime changes nothing
    write_index(dist, title="release v1")
    assert {name: (dist / name).read_bytes() for name in first} == first
    assert not [p.name for p in dist.iterdir() if p.name.startswith(".")]  # no temp files left
    assert ((dist / "index.html").stat().st_mode & 0o777) == 0o644


def test_sha256sum_checks_the_sums_file_for_real(dist: Path) -> None:
    write_index(dist)
    checked = subprocess.run(
        ["sha256sum", "-c", "SHA256SUMS"], cwd=dist, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert sorted(checked.stdout.splitlines()) == sorted(
        f"{p.name}: OK" for p in dist.glob("*.whl")
    )
    # The check is live: a changed wheel fails it.
    with (dist / TF_V4).open("ab") as handle:
        handle.write(b"\0")
    failed = subprocess.run(
        ["sha256sum", "-c", "SHA256SUMS"], cwd=dist, capture_output=True, text=True, check=False
    )
    assert failed.returncode == 1
    assert f"{TF_V4}: FAILED" in failed.stdout


# --- what must never be published ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("sha256", "0" * 64, "records sha256 " + "0" * 64),
        ("size", 1, "records 1 bytes"),
        ("name", "other-1.0-py3-none-any.whl", "describes 'other-1.0-py3-none-any.whl'"),
    ],
)
def test_a_wheel_that_does_not_match_its_receipt_stops_everything(
    dist: Path, field: str, value: Any, said: str
) -> None:
    wheel = dist / TF_V4
    receipt = make_receipt(wheel)
    receipt["wheel"][field] = value
    write_receipt(wheel, receipt)
    result = run_cli("index", str(dist))
    one_error_line(result, InputError.exit_code, TF_V4, said)
    assert not (dist / "index.html").exists()
    assert not (dist / "SHA256SUMS").exists()


def _schema_1(receipt: dict[str, Any]) -> None:
    receipt["schema"] = "tfbuild.receipt/1"


def _no_sha256(receipt: dict[str, Any]) -> None:
    receipt["wheel"]["sha256"] = None


def _plan_edited(receipt: dict[str, Any]) -> None:
    receipt["plan"]["target"] = "x86_64_v2"  # after the build: plan_sha256 no longer fits


def _inputs_edited(receipt: dict[str, Any]) -> None:
    receipt["inputs"]["tools"]["bazel"] = "7.4.2"  # after the build: inputs_sha256 no longer fits


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (
            _schema_1,
            "is not a usable receipt: its schema is 'tfbuild.receipt/1'; this tfbuild reads "
            "tfbuild.receipt/2",
        ),
        (
            _no_sha256,
            "is not a usable receipt: its wheel.sha256 holds None, not a sha256 (64 lowercase "
            "hex digits)",
        ),
        (
            _plan_edited,
            "was edited after {wheel} was built: its plan no longer matches its "
            "plan_sha256. Do not publish {wheel}",
        ),
        (
            _inputs_edited,
            "was edited after {wheel} was built: its inputs no longer match its "
            "inputs_sha256. Do not publish {wheel}",
        ),
    ],
    ids=["schema-1", "no-sha256", "plan-edited", "inputs-edited"],
)
def test_an_unusable_receipt_stops_everything(
    dist: Path, spoil: Callable[[dict[str, Any]], None], said: str
) -> None:
    wheel = dist / TF_V4
    receipt = make_receipt(wheel)
    spoil(receipt)
    path = write_receipt(wheel, receipt)
    result = run_cli("index", str(dist))
    assert InputError.exit_code == 3
    line = one_error_line(result, 3, said.format(wheel=TF_V4))
    assert line.startswith(f"tfbuild: error: {path} ")
    assert not (dist / "index.html").exists()
    assert not (dist / "SHA256SUMS").exists()


def test_a_corrupted_wheel_is_caught_by_its_receipt(dist: Path) -> None:
    wheel = dist / TF_CUDA
    data = bytearray(wheel.read_bytes())
    data[100] ^= 0xFF  # one flipped byte, same size
    wheel.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"does not match its receipt: sha256") as caught:
        collect(dist)
    assert TF_CUDA in str(caught.value)
    assert "Do not publish" in caught.value.fix


@pytest.mark.parametrize("content", ["{not json", '{"schema": "x"}', "[]"])
def test_a_broken_receipt_is_an_input_error(dist: Path, content: str) -> None:
    (dist / TF_V4).with_suffix(".json").write_text(content)
    with pytest.raises(InputError, match=re.escape(TF_V4.removesuffix(".whl"))):
        collect(dist)


def test_an_empty_directory_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".tfbuild-x-1.whl").write_bytes(b"a temp file of a running build")
    (tmp_path / "notes.txt").write_text("no wheels here\n")
    result = run_cli("index", str(tmp_path))
    assert result.returncode == InputError.exit_code
    assert result.stderr == (
        f"tfbuild: error: no wheels in {tmp_path}: an index of nothing would publish an empty "
        "page. Build one with tfbuild wheel --dist DIR, or name the directory that holds the "
        ".whl files.\n"
    )
    assert not (tmp_path / "index.html").exists()


def test_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    result = run_cli("index", str(tmp_path / "nowhere"))
    assert result.returncode == InputError.exit_code
    assert "is not a directory" in result.stderr


def test_a_file_that_is_not_a_wheel_name_is_named(tmp_path: Path) -> None:
    (tmp_path / "garbage.whl").write_bytes(b"PK")
    result = run_cli("index", str(tmp_path))
    assert result.returncode == InputError.exit_code
    assert "garbage.whl is not a wheel file name" in result.stderr


# --- escaping ---------------------------------------------------------------------------------------------


def test_everything_on_the_page_is_escaped(tmp_path: Path) -> None:
    # The file name cannot carry markup (tests/wheel/test_index_hostile.py: such a name is refused), nor
    # can a receipt's target or variant (tests/wheel/test_receipt_untrusted.py: refused by their grammar),
    # so the markup comes from the receipt's plan and the title, and the name is one "+" needs no
    # escape for.
    name = "tfbuild_standin-2.21.0+x86_64v3-1_x-py3-none-any.whl"
    wheel = wheels.make_wheel(tmp_path, name)
    cuda = {"cuda": '12"><script>'}
    write_receipt(wheel, target="x86_64_v3", variant="cuda", plan_overrides={"cuda": cuda})
    title = '<script>alert("t")</script> & co'
    write_index(tmp_path, title=title)
    text = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "<script" not in text
    assert "<img" not in text
    page = Page(text)
    assert set(page.tags) <= {
        *("html", "head", "meta", "title", "style", "body", "h1", "p", "code", "table"),
        *("thead", "tbody", "tr", "th", "td", "a", "strong"),
    }
    assert page.title == title
    href = f"{urllib.parse.quote(name, safe='+')}#sha256={_sha256(wheel)}"
    assert page.anchors == [(href, name)]
    assert page.rows[1][3:6] == ["x86_64_v3", "cuda", '12"><script>']
    assert urllib.parse.unquote(href.partition("#")[0]) == name


def test_render_html_depends_on_the_wheels_alone(dist: Path, tmp_path: Path) -> None:
    """The same wheels give the same page, byte for byte: from another directory with other file
    times, and in another process with another time zone, locale and hash seed."""
    entries = collect(dist)
    page = render_html(entries, title="t")
    assert "<title>t</title>" in page
    assert all(f">{entry.name}</a>" in page for entry in entries)
    moved = Path(shutil.copytree(dist, tmp_path / "elsewhere"))
    for path in moved.iterdir():
        os.utime(path, (1, 1))
    assert render_html(collect(moved), title="t") == page
    code = (
        "import sys; from pathlib import Path; from tfbuild.wheel.index import collect, render_html; "
        "sys.stdout.buffer.write(render_html(collect(Path(sys.argv[1])), title='t').encode())"
    )
    # The C locale for all but the characters: under LC_CTYPE=C, Python before 3.13 reads its
    # virtualenv's .pth files as ASCII and cannot start from a checkout whose path is not ASCII.
    env = {k: v for k, v in os.environ.items() if k != "LC_ALL"}
    env |= {"TZ": "Pacific/Kiritimati", "LANG": "C", "LC_CTYPE": "C.UTF-8", "PYTHONHASHSEED": "7"}
    other = subprocess.run(
        [sys.executable, "-c", code, str(moved)], capture_output=True, env=env, check=True
    )
    assert other.stdout.decode() == page


# --- pip reads the page ------------------------------------------------------------------------------------


def _pip(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real pip of this interpreter, isolated from user config and offline (--no-index)."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_pip_finds_the_right_wheel_through_the_page_offline(dist: Path, tmp_path: Path) -> None:
    write_index(dist)
    out = tmp_path / "out"
    done = _pip(
        "download",
        "--no-deps",
        "--no-index",
        "--find-links",
        str(dist / "index.html"),
        "tfbuild_standin==2.21.0+x86_64v3",
        "-d",
        str(out),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p.name for p in out.iterdir()] == [STANDIN_V3]
    assert (out / STANDIN_V3).read_bytes() == (dist / STANDIN_V3).read_bytes()


def test_pip_refuses_a_wheel_whose_bytes_no_longer_match_the_link(
    dist: Path, tmp_path: Path
) -> None:
    write_index(dist)
    wheels.make_wheel(dist, STANDIN_V4, module_text="# changed after the index was written\n")
    done = _pip(
        "download",
        "--no-deps",
        "--no-index",
        "--find-links",
        str(dist / "index.html"),
        "tfbuild_standin==2.21.0+x86_64v4",
        "-d",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in done.stderr
    assert _sha256(dist / STANDIN_V4) in done.stderr


# --- tfbuild pick reads the page -----------------------------------------------------------------------


def test_tfbuild_pick_reads_every_wheel_and_its_sha256_from_the_page(dist: Path) -> None:
    write_index(dist)
    with served(dist) as url:
        result = run_cli("pick", f"{url}/index.html", "--python", "3.12", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["source"]["kind"] == "index"
    assert {w["filename"]: w["sha256"] for w in data["wheels"]} == {
        p.name: _sha256(p) for p in dist.glob("*.whl")
    }


def test_a_base_url_page_lives_apart_from_its_wheels(dist: Path, tmp_path: Path) -> None:
    """As in a release: the page at one address, each wheel downloaded from --base-url."""
    with served(dist) as files_url:
        base = f"{files_url}/"
        result = run_cli("index", str(dist), "--base-url", files_url)  # "/" added
        assert result.returncode == 0, result.stderr
        page = Page((dist / "index.html").read_text())
        expected = {
            p.name: f"{base}{p.name.replace('+', '%2B')}#sha256={_sha256(p)}"
            for p in dist.glob("*.whl")
        }
        assert {text: href for href, text in page.anchors} == expected
        # The page alone, elsewhere: pip and tfbuild pick follow its absolute links (pick only to
        # an origin it is allowed: here another port; a release's page and wheels share one).
        elsewhere = tmp_path / "pages"
        elsewhere.mkdir()
        (elsewhere / "index.html").write_bytes((dist / "index.html").read_bytes())
        out = tmp_path / "out"
        done = _pip(
            "download", "--no-deps", "--no-index", "--find-links", str(elsewhere / "index.html"),
            "tfbuild_standin==2.21.0+x86_64v4", "-d", str(out), cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert [p.name for p in out.iterdir()] == [STANDIN_V4]
        with served(elsewhere) as page_url:
            address = f"{page_url}/index.html"
            refused = run_cli("pick", address, "--python", "3.12", "--json")
            origin = files_url.removeprefix("http://")
            picked = run_cli(
                "pick", address, "--python", "3.12", "--json", "--allow-origin", origin
            )
        assert refused.returncode == 3
        assert f"pass --allow-origin {origin} to follow links to {origin}" in refused.stderr
        assert picked.returncode == 0, picked.stderr
        locations = {w["filename"]: w["location"] for w in picked.json()["wheels"]}
        assert locations[STANDIN_V4] == expected[STANDIN_V4].split("#")[0]


@pytest.mark.parametrize("url", ["ftp://example.org/x/", "example.org/wheels", "https://h/x?y=1"])
def test_a_base_url_must_be_an_http_directory(dist: Path, url: str) -> None:
    result = run_cli("index", str(dist), "--base-url", url)
    one_error_line(result, 2, "--base-url")
    assert not (dist / "index.html").exists()
