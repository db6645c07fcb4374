"""A pack's compiled count shipped with the pack, so that its first wide `count` is a pass.

`solver.engine.ddnnf` compiles a pack's count once (the SGLang pack: ~1 million search steps, 15-18
s CPU and ~280 MB) and keeps it on disk keyed by the pack's digest and the code, so the first wide
count after an install, a pack change or a code change pays the compile. A pack directory may
hold that compiled form, made by

    python -m solver.engine.shipped constraints/sglang [more pack directories]

as `compiled-count.xz`: xz streams of 512 records each (`solver.engine.countfile`: one `.xz`
to the `xz` tool; `count` unpacks only the streams its pass reads; the SGLang pack's 80 MB of
records in 5.4 MB).
Its header names `count.shipped_key` (a digest of what the compile reads: the pack's fields,
named sets and rules, not its messages, preferences or lint acknowledgements, so editing those
leaves the file valid) and `ddnnf.FORMAT`; `count` reads it when both match the pack it counts,
and otherwise ignores it (rules edited since: the compile and the user's cache as before). What
keeps a shipped form right: tests/test_count_shipped.py compiles each shipped pack again and
requires the same bytes, so a form stale for its pack or for the compiler cannot land, and pins
the bytes of a small compile to `FORMAT`, so a change of what the compiler writes must change the
version. The form is made from a fresh counter (a counter that already counted in this process
has more diagram nodes, which changes the order of the records though not the counts).

`count` reads it (`solver.engine.count.read_shipped`) like the pack's own TOML files (it ships in
the same directory, installed with them), bounded in size; anything malformed is a miss and the
count compiles or searches as before. This module is the command that writes it, and the pack's
prebuilt form beside it (`prebuilt.py`, what a first start loads instead of the TOML files:
`solver.pack.prebuilt`; `--prebuilt-only` writes that alone, in a second or two); it imports the
standard library, `solver.engine.count` and, inside functions, the pack loader and writer.
"""

from __future__ import annotations

import lzma
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from solver.engine.count import SHIPPED_NAME, compile_whole, read_shipped, shipped_key
from solver.engine.countfile import pack_streams

if TYPE_CHECKING:
    from solver.model import Pack

__all__ = ["SHIPPED_NAME", "main", "read_shipped", "shipped_bytes", "write_prebuilt", "write_shipped"]

# xz's strongest preset, per stream (SGLang 0.5.23+30: 5.4 MB in 656 streams, 30 s to write,
# once per pack change; `platform=cuda` unpacks 90 streams in ~0.1 s).
_PRESET = 9 | lzma.PRESET_EXTREME


def shipped_bytes(pack: Pack) -> bytes:
    """What the shipped file holds, unpacked (what the test compares: xz's packed bytes may
    differ between liblzma versions)."""
    return compile_whole(pack).to_bytes(shipped_key(pack))


def write_shipped(directory: str | Path) -> tuple[Path, int, int, float]:
    """Compile the pack in `directory` and write its shipped form: (path, unpacked bytes,
    packed bytes, CPU seconds)."""
    from solver.pack.loader import load_directory

    started = time.process_time()
    pack = load_directory(directory)
    data = shipped_bytes(pack)
    packed = pack_streams(data, _PRESET)
    path = Path(directory) / SHIPPED_NAME
    path.write_bytes(packed)
    return path, len(data), len(packed), time.process_time() - started


def write_prebuilt(directory: str | Path) -> tuple[Path, int, float]:
    """Write the prebuilt form of the pack in `directory` (`solver.pack.prebuilt`): (path,
    bytes, CPU seconds)."""
    from solver.pack import prebuild, prebuilt

    started = time.process_time()
    text = prebuild.source(directory).encode()
    path = Path(directory) / f"{prebuilt.MODULE}.py"
    path.write_bytes(text)
    return path, len(text), time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    prebuilt_only = "--prebuilt-only" in args
    directories = [a for a in args if a != "--prebuilt-only"]
    if not directories:
        print("usage: python -m solver.engine.shipped [--prebuilt-only] PACK_DIRECTORY...", file=sys.stderr)
        return 2
    for directory in directories:
        if not prebuilt_only:
            path, unpacked, packed, seconds = write_shipped(directory)
            print(f"{path}: {packed:,} bytes ({unpacked:,} unpacked), {seconds:.1f} s CPU")
        path, size, seconds = write_prebuilt(directory)
        print(f"{path}: {size:,} bytes, {seconds:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
