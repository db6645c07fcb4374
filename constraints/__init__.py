"""The rule packs shipped with confsolve, as data directories (TOML) next to this module.

This module and `solver.cli.commands` are the only places that know packs live on disk.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_PACK", "pack_directory", "shipped_packs"]

# The pack a command uses when no --pack is given: which launcher confsolve speaks for by default is
# a fact about the shipped packs, kept here with them rather than in the generic solver/.
DEFAULT_PACK = "sglang"


def shipped_packs() -> list[str]:
    """Names of the packs that ship with confsolve."""
    # The package directory itself (packs are plain files installed with it); importlib.resources
    # would say the same for a normal install and costs a launcher ~15 ms to import.
    root = Path(__file__).resolve().parent
    return sorted(
        entry.name for entry in root.iterdir() if entry.is_dir() and entry.joinpath("pack.toml").is_file()
    )


def pack_directory(name: str) -> Path | None:
    """The directory of a shipped pack, or None when no pack has that name."""
    if name not in shipped_packs():
        return None
    return Path(__file__).resolve().parent / name
