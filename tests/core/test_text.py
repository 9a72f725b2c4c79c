"""The one wrapper every printer uses (tfbuild.core.text.wrap): lines broken between words only, so
a hash, a path or a file name is whole on one line, and a command a sentence quotes is whole too."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tfbuild.core.text import wrap

#: Words of tfbuild's sentences: prose, options and values, versions, paths, a digest, commands.
WORDS = st.sampled_from(
    [
        "the", "wheel", "is", "built", "(it", "downloads", "release).", "To", "check", "it:",
        "tfbuild", "recipes", "verify", "2.21", "base", "--suite", "noble", "smoke", "doctor",
        "proves", "sudo", "python", "-c", "'import", "archspec.cpu;", "print(1)'", "lists",
        "/very/long/path/to/a/directory/that/is/longer/than/any/line/of/the/terminal.whl",
        "docker.io/library/ubuntu:24.04@sha256:" + "ab64a838" * 8, "--cpuinfo", "-march=znver4",
    ]
)  # fmt: skip


@given(words=st.lists(WORDS, min_size=1, max_size=40), width=st.integers(20, 120))
def test_every_word_stays_whole_and_in_order(words: list[str], width: int) -> None:
    text = " ".join(words)
    lines = wrap(text, width, rest=2)
    assert [word for line in lines for word in line.split(" ")] == words
    for line in lines:  # wider only when a word or a quoted command alone cannot fit
        assert (
            len(line) <= width or " " not in line or line.startswith(("tfbuild", "sudo", "python"))
        )


def test_a_quoted_command_is_never_broken() -> None:
    text = (
        "recipes/tf-2.21.yaml was not yet checked against TensorFlow 2.21.0's own files. To check "
        "it: tfbuild recipes verify 2.21 (it downloads the release). Without a registry: sudo "
        "tfbuild base --suite noble, then python -c 'import archspec.cpu; print(1)' lists them."
    )
    for width in range(30, 90):
        joined = "\n".join(wrap(text, width))
        for command in (
            "tfbuild recipes verify 2.21",
            "sudo tfbuild base --suite noble",
            "python -c 'import archspec.cpu; print(1)'",
        ):
            assert command in joined, (width, joined)
    # Prose after a command's name is prose: "tfbuild doctor proves ..." breaks after "doctor".
    lines = wrap("then tfbuild doctor proves this machine and the whole pipeline", 24)
    assert "tfbuild doctor" in "\n".join(lines) and max(map(len, lines)) <= 24, lines
