"""Pinned tools (``tools.yaml``): each tool the toolchain image downloads, its version and sha256s."""

from __future__ import annotations

from dataclasses import dataclass

from tfbuild.core.resources import data_dir
from tfbuild.recipes.strict_yaml import DataFile, Field, entries_of, read_text, refusal, validate

TOOLS_FILE = "tools.yaml"


@dataclass(frozen=True, kw_only=True)
class ToolPin:
    """A tool the toolchain image downloads: its version and the sha256 of each architecture's file."""

    name: str
    version: str
    sha256: dict[str, str]  # Debian architecture name (amd64, arm64) -> sha256


#: Debian's architecture names (dpkg-architecture -L, the release architectures).
DEBIAN_ARCHITECTURES = ("amd64", "arm64", "armel", "armhf", "i386", "ppc64el", "riscv64", "s390x")

TOOL_SCHEMA: dict[str, Field] = {
    "version": Field("token"),
    "sha256": Field(
        "map",
        children={arch: Field("hex64", required=False) for arch in DEBIAN_ARCHITECTURES},
    ),
}


def parse_tools(text: str, *, path: str) -> dict[str, ToolPin]:
    """The text of a ``tools.yaml``: name -> ToolPin, validated like a recipe."""
    doc = DataFile(
        path=path, noun="tools file", fix="Fix the file (its header comment documents it)."
    )
    tools: dict[str, ToolPin] = {}
    for name, value_node in entries_of(doc, text, "tool names to their pins"):
        entry = validate(doc, value_node, TOOL_SCHEMA, f"{name}.", {})
        if not entry["sha256"]:
            raise refusal(doc, value_node, f"'{name}.sha256' names no architecture")
        tools[name] = ToolPin(name=name, version=entry["version"], sha256=entry["sha256"])
    return tools


def load_tools() -> dict[str, ToolPin]:
    """``tools.yaml`` (shipped only: pins are reviewed with tfbuild, not overridden per site)."""
    path = data_dir("recipes") / TOOLS_FILE
    return parse_tools(read_text(path, "tools file"), path=f"recipes/{TOOLS_FILE}")
