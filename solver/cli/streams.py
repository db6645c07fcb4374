"""The command line's standard streams when something goes wrong with them: a reader of stdout
that went away, a terminal whose encoding cannot show an answer. Light (the standard library
only): `solver.cli.commands` imports it for every command, `--help` included."""

from __future__ import annotations

import os
import sys
from contextlib import suppress

__all__ = ["drop_stdout", "tolerant_stdout"]


def drop_stdout() -> None:
    """The reader of stdout went away: send what is left to /dev/null, so that the interpreter's
    last flush does not fail again (see the note on SIGPIPE in Python's `signal` docs)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a launcher's own stream): nothing of ours to flush later


def tolerant_stdout() -> None:
    """Text that the terminal's encoding cannot show (a Latin-1 or ASCII locale) is replaced
    rather than ending the command; JSON stays exact (`render.documents.json_text` escapes
    non-ASCII for such a stdout)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with suppress(ValueError, OSError, TypeError):
                reconfigure(errors="backslashreplace")
