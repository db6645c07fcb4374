"""Model paths as users give them: a local path, or a Hugging Face hub id already downloaded.

`model_path(text)` returns a local path for `--model-config` (and a launcher's `--model-path`):
the text itself when it names something on disk, else the snapshot of that hub id in the local
Hugging Face cache, read offline from the cache's own layout —
`<cache>/models--ORG--NAME/refs/main` holds the revision whose files are in
`<cache>/models--ORG--NAME/snapshots/<revision>/`. The cache is `$HF_HUB_CACHE`, else
`$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`.
Nothing is ever downloaded, and `huggingface_hub` is not needed. A hub id that is not in the
cache is an `InvalidInput` that says where it looked.

Standard library only; imports nothing of the solver but its errors.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from solver.errors import InputIssue, InvalidInput

__all__ = ["cache_roots", "model_path", "snapshot"]

# ORG/NAME as the hub spells repository ids (a bare NAME is a local path that does not exist).
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")


def cache_roots() -> list[Path]:
    """Where the Hugging Face hub cache may be, most specific first (no duplicates)."""
    roots: list[Path] = []
    if os.environ.get("HF_HUB_CACHE"):
        roots.append(Path(os.environ["HF_HUB_CACHE"]).expanduser())
    if os.environ.get("HF_HOME"):
        roots.append(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    if os.environ.get("XDG_CACHE_HOME"):
        roots.append(Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "huggingface" / "hub")
    roots.append(Path("~/.cache/huggingface/hub").expanduser())
    return list(dict.fromkeys(roots))


def snapshot(repo_id: str, roots: list[Path] | None = None) -> Path | None:
    """The local snapshot directory of a hub model id (the revision `refs/main` names; without
    that file, the one snapshot there is), or None when no cache root has it."""
    folder = "models--" + repo_id.replace("/", "--")
    for root in roots if roots is not None else cache_roots():
        repo = root / folder
        try:
            revision = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            revision = ""
        if revision and "/" not in revision and (repo / "snapshots" / revision).is_dir():
            return repo / "snapshots" / revision
        try:
            found = [p for p in (repo / "snapshots").iterdir() if p.is_dir()]
        except OSError:
            continue
        if len(found) == 1:  # no refs/main (a revision fetched by hash): the only one there
            return found[0]
    return None


def model_path(text: str | os.PathLike[str], *, flag: str = "--model-config") -> Path:
    """A local path for what the user gave: the path itself when it exists (or does not look like
    a hub id, so the caller's own "no such file" applies), else the hub id's cached snapshot.
    `flag`: the option the user gave the model with, which the error for an uncached hub id names.

    >>> model_path("/nonexistent/dir")
    PosixPath('/nonexistent/dir')
    """
    raw = os.fsdecode(text)
    if not raw:  # `Path("")` is the current directory: never read as the user's model
        raise InvalidInput(
            [
                InputIssue(
                    field="model_config",
                    value=raw,
                    message=f"{flag} {raw!r}: an empty path; give a config.json, a model directory "
                    "or the id of a model in the local Hugging Face cache",
                )
            ]
        )
    path = Path(raw).expanduser()
    if path.exists() or not _HUB_ID.match(raw):
        return path
    roots = cache_roots()
    found = snapshot(raw, roots)
    if found is not None:
        return found
    where = ", ".join(str(r / ("models--" + raw.replace("/", "--"))) for r in roots)
    raise InvalidInput(
        [
            InputIssue(
                field="model_config",
                value=raw,
                message=(
                    f"{flag} {raw}: not a local path, and the Hugging Face hub id is not in the "
                    f"local cache (looked in {where}); confsolve never downloads: fetch it first (e.g. "
                    f"`huggingface-cli download {raw} config.json`) or give a local directory or config.json"
                ),
            )
        ]
    )
