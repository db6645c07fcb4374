"""The width of the terminal answers are folded to: its own module, light (the standard library
only), for the command line's parser, which asks for it before any answer is made."""

from __future__ import annotations

import os
import sys
from typing import TextIO

__all__ = ["terminal_width"]


def terminal_width(stream: TextIO | None = None, fallback: int = 80) -> int:
    """The columns to fill: `$COLUMNS` when it is a number (the shell's, or a caller's), else the
    width of the terminal `stream` (default: the current stdout) is, else `fallback` (output piped
    to a file or another program). `shutil.get_terminal_size`'s order, without importing shutil
    (and the compressors it brings) on `check`'s path."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = sys.stdout if stream is None else stream
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns or fallback
    except (AttributeError, ValueError, OSError):
        pass
    return fallback
