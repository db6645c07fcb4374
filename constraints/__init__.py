"""The rule packs shipped with confsolve, as data directories (TOML), found with importlib.resources.

This module and `solver.cli` are the only places that know packs live on disk.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["pack_directory", "shipped_packs"]


def shipped_packs() -> list[str]:
    """Names of the packs that ship with confsolve."""
    root = resources.files(__name__)
    return sorted(
        entry.name for entry in root.iterdir() if entry.is_dir() and entry.joinpath("pack.toml").is_file()
    )


def pack_directory(name: str) -> Path | None:
    """The directory of a shipped pack, or None when no pack has that name."""
    if name not in shipped_packs():
        return None
    return Path(str(resources.files(__name__).joinpath(name)))
