"""A compiled count on disk (`solver.engine.ddnnf`'s `CompiledCount`): its header, its records
parsed when a pass first reads them, and the shipped file read a part at a time (xz streams of
whole records).

A pack's compiled count (`solver.engine.ddnnf`) is one line per node (the SGLang pack's: 335k
lines, 80 MB unpacked), but a count under pins reads only the nodes above its pins
(`platform=cuda`: 560 records), and the whole pack's count only the root. One xz stream made
every cold `count` unpack and index all of it first (~0.6 s of a 1.3 s process, quiet, round 27).

So the file is a run of xz streams: the first holds the header and the root's line, each other
`RECORDS_PER_STREAM` records (the last the rest). Concatenated xz streams are one valid `.xz`
file: `lzma.decompress` (and the `xz` tool) give the same bytes as before, which is what
tests/test_count_shipped.py compares with a fresh compile. Each stream's place in the file comes
from its own footer and index (walked back from the end of the file: no table of our own), and a
stream is unpacked the first time a pass reads one of its records (`StreamRecords`):
`platform=cuda` unpacks 90 of SGLang's 656 streams. A file of one stream (what earlier code wrote)
is read whole, as before.

Everything is checked as it is read: the streams' footers and indexes (sizes, magic bytes), the
total unpacked size against a bound, each stream's CRC (xz's own) and its line count. (Two whole
streams swapped, which no cut or flipped bit makes, would pass: the CRCs are per stream.) A bad file
is `None` from `read` (a miss: the count compiles or searches); a bad stream met later raises
ValueError, as a bad record does (the count forgets the form).

Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = [
    "FORMAT",
    "RECORDS_PER_STREAM",
    "Arm",
    "Record",
    "Records",
    "StreamRecords",
    "header_line",
    "pack_streams",
    "read_buffer",
    "read_packed",
    "streams",
]

# The version of what `CompiledCount.to_bytes` writes and `read_buffer` reads, in the header: a
# form shipped with a pack (`solver.engine.shipped`) is keyed by the pack's digest and this, not
# by the code, so a change of the compiler or of the format must change it
# (tests/test_count_shipped.py pins the bytes of a small compile to it). How the shipped file
# packs those bytes (one xz stream or several) is not part of it: the bytes are the same.
FORMAT = 1

# What a file may say a domain or the node count is (a mask of 2^size is built per pinned field).
MAX_DOMAIN = 10_000_000

Arm = tuple[int, int, tuple[int, ...], tuple[int, ...]]
"""(values of the branched field as bits, free fields as bits, child nodes, one-field parts as
`level, mask, level, mask, ...`)."""


Record = tuple[int, int, int, list[Arm]]
"""A node: (level of the field it branches on, fields it reads as bits, its count, its arms)."""

Parts = tuple[list[str], list[int], "Records", Arm, dict[int, int]]
"""What `CompiledCount` is made of: field order, domain sizes, records, root arm, counted values."""

# Records per stream: the SGLang pack's 335k records in 656 streams of ~120 KB. Smaller streams
# leave a pass less to unpack but pack worse (xz -9e, SGLang, round 28: 256 records 6.0 MB,
# 512 5.4, 1,024 4.9, one stream 3.5; `platform=cuda` unpacks 97 / 90 / 75 of them).
RECORDS_PER_STREAM = 512

_HEADER_MAGIC = b"\xfd7zXZ\x00"
_FOOTER_MAGIC = b"YZ"


def header_line(key: str, order: list[str], sizes: list[int], counted: dict[int, int], nodes: int) -> bytes:
    """The first line of a compiled count's bytes; `key`: what it was compiled from."""
    doc = {
        "format": FORMAT,
        "key": key,
        "order": order,
        "sizes": sizes,
        "counted": sorted(counted.items()),
        "nodes": nodes,
    }
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def _header(line: bytes, key: str) -> tuple[list[str], list[int], int, dict[int, int]]:
    """The header line's order, sizes, node count and counted values, checked to be of this
    format and made for `key`; raises ValueError (or KeyError, TypeError)."""
    header = json.loads(line)
    order, sizes, nodes, counted = header["order"], header["sizes"], header["nodes"], header["counted"]
    if header.get("format") != FORMAT or header.get("key") != key:
        raise ValueError("compiled count: of another pack or format")
    if not (isinstance(order, list) and isinstance(sizes, list) and len(order) == len(sizes)):
        raise ValueError("compiled count: a bad header")
    if not all(type(n) is int and 0 <= n <= MAX_DOMAIN for n in [*sizes, nodes]):
        raise ValueError("compiled count: a size out of range")
    pairs = [tuple(pair) for pair in counted if isinstance(pair, list)]
    if len(pairs) != len(counted) or not all(
        len(p) == 2 and all(type(n) is int and n >= 0 for n in p) and p[0] < len(order) for p in pairs
    ):
        raise ValueError("compiled count: bad counted values")
    return order, sizes, nodes, {level: mask for level, mask in pairs}


def read_buffer(data: bytes, key: str) -> Parts:
    """A compiled count's unpacked bytes, made for `key`. Raises ValueError on data
    `CompiledCount.to_bytes` did not write (a record is checked when read) or wrote for another
    `key` (a file name holds only the start of a digest)."""
    header_end = data.index(b"\n")
    root_end = data.index(b"\n", header_end + 1)
    order, sizes, nodes, counted = _header(data[:header_end], key)
    records = BufferRecords(data, root_end + 1, nodes, len(order))
    records.body = header_end + 1
    return order, sizes, records, records.root(data[header_end + 1 : root_end]), counted


class Records(Sequence[Record]):
    """The nodes of a compiled count on disk, each parsed (and checked: children before their
    parent, levels in range, no negative number) the first time a pass reads it, from its
    `line` (one buffer: `BufferRecords`; the shipped file's streams: `StreamRecords`)."""

    def __init__(self, nodes: int, fields: int) -> None:
        self.nodes, self.fields = nodes, fields
        self.read: dict[int, Record] = {}

    def line(self, at: int) -> bytes:
        """Record `at`'s line (with or without its newline)."""
        raise NotImplementedError

    def tail(self) -> bytes:
        """The root's line and every record's, each ended by a newline (what `to_bytes` keeps)."""
        raise NotImplementedError

    def __len__(self) -> int:
        return self.nodes

    def __getitem__(self, at: Any) -> Any:
        found = self.read.get(at)
        if found is None:
            words = self.line(at).split()
            level, reads, count, arms = map(int, words[:4])
            if level >= self.fields or min(level, reads, count) < 0 or reads >> self.fields:
                raise ValueError("compiled count: a bad record")
            found = self.read[at] = (level, reads, count, self.arms(words[4:], arms, at))
        return found

    def root(self, line: bytes) -> Arm:
        """The root arm from its line (the arm over every field, above every node)."""
        return self.arms(line.split(), 1, self.nodes)[0]

    def arms(self, words: list[bytes], arms: int, node: int) -> list[Arm]:
        try:
            return self._arms(list(map(int, words)), arms, node)
        except IndexError:
            raise ValueError("compiled count: a record cut short") from None

    def _arms(self, numbers: list[int], arms: int, node: int) -> list[Arm]:
        if min(numbers, default=0) < 0:
            raise ValueError("compiled count: a negative number")
        fields = self.fields
        out: list[Arm] = []
        at = 0
        for _ in range(arms):
            mask, free, kids = numbers[at : at + 3]
            end = at + 3 + kids
            kid_ids = tuple(numbers[at + 3 : end])
            size = numbers[end]
            parts = tuple(numbers[end + 1 : end + 1 + size])
            at = end + 1 + size
            if (kid_ids and max(kid_ids) >= node) or free >> fields or size % 2 or len(parts) != size:
                raise ValueError("compiled count: a bad arm (a child not before its parent, or cut short)")
            if parts and max(parts[::2]) >= fields:
                raise ValueError("compiled count: a level out of range")
            out.append((mask, free, kid_ids, parts))
        if at != len(numbers):
            raise ValueError("compiled count: a record of the wrong length")
        return out


class BufferRecords(Records):
    """The records in one unpacked buffer, their lines found once."""

    def __init__(self, data: bytes, start: int, nodes: int, fields: int) -> None:
        super().__init__(nodes, fields)
        self.data = data
        self.starts: list[int] = []
        at = start
        for _ in range(nodes):
            self.starts.append(at)
            at = data.find(b"\n", at) + 1
            if not at:
                raise ValueError("compiled count: fewer records than nodes")
        self.starts.append(at)
        if at != len(data):
            raise ValueError("compiled count: more records than nodes")
        self.body = start  # where the root's line starts (what `tail` keeps)

    def line(self, at: int) -> bytes:
        return self.data[self.starts[at] : self.starts[at + 1]]

    def tail(self) -> bytes:
        return self.data[self.body :]


class StreamRecords(Records):
    """The records in the shipped file's streams, each stream unpacked and split into its lines
    the first time one of its records is read (and kept: a pass reads a node's neighbours)."""

    def __init__(self, packed: bytes, found: list[tuple[int, int, int]], nodes: int, fields: int) -> None:
        super().__init__(nodes, fields)
        self.packed, self.found = packed, found  # found[0]: the header's stream
        self.lines: dict[int, list[bytes]] = {}
        if not nodes or len(found) < 2:
            raise ValueError("compiled count: streams for another number of records")
        self.per = len(self._stream(1))  # records per stream: the first's (the last has the rest)
        if len(found) - 1 != -(-nodes // self.per):
            raise ValueError("compiled count: streams for another number of records")

    def _stream(self, at: int) -> list[bytes]:
        lines = self.lines.get(at)
        if lines is None:
            if not 0 < at < len(self.found):
                raise ValueError("compiled count: a record past the last stream")
            data = _unpack(self.packed, self.found[at])
            if not data.endswith(b"\n"):
                raise ValueError("compiled count: a stream cut inside a record")
            lines = self.lines[at] = data[:-1].split(b"\n")
            if at > 1 and len(lines) != min(self.per, self.nodes - (at - 1) * self.per):
                raise ValueError("compiled count: a stream of the wrong number of records")
        return lines

    def line(self, at: int) -> bytes:
        if not 0 <= at < self.nodes:
            raise IndexError(at)
        return self._stream(1 + at // self.per)[at % self.per]

    def tail(self) -> bytes:
        root = _unpack(self.packed, self.found[0]).split(b"\n")[1]
        streams = [b"\n".join(self._stream(at)) + b"\n" for at in range(1, len(self.found))]
        return b"".join([root, b"\n", *streams])


def read_packed(packed: bytes, key: str, max_unpacked: int) -> Parts:
    """The compiled count in a shipped file (`pack_streams`'s streams, or one xz stream), made
    for `key`, at most `max_unpacked` bytes unpacked. Raises ValueError on anything else."""
    found = streams(packed)
    if sum(size for _, _, size in found) > max_unpacked:
        raise ValueError("compiled count: larger than its bound")
    if len(found) == 1:
        return read_buffer(_unpack(packed, found[0]), key)
    lines = _unpack(packed, found[0]).split(b"\n")
    if len(lines) != 3 or lines[2]:
        raise ValueError("compiled count: a first stream of more than the header and the root")
    order, sizes, nodes, counted = _header(lines[0], key)
    records = StreamRecords(packed, found, nodes, len(order))
    return order, sizes, records, records.root(lines[1]), counted


def pack_streams(data: bytes, preset: int) -> bytes:
    """`data` (`CompiledCount.to_bytes`: a header line, the root's line, one line per record) as
    concatenated xz streams: the first two lines, then `RECORDS_PER_STREAM` lines each."""
    import lzma

    lines = data.split(b"\n")
    if len(lines) < 3 or lines.pop():
        raise ValueError("compiled count: not a header, a root and ended lines")
    parts = [b"\n".join(lines[:2]) + b"\n"]
    for at in range(2, len(lines), RECORDS_PER_STREAM):
        parts.append(b"\n".join(lines[at : at + RECORDS_PER_STREAM]) + b"\n")
    # Each stream's dictionary no larger than the largest stream: its reader allocates that much.
    dictionary = max(4096, 1 << (max(map(len, parts)) - 1).bit_length())
    filters = [{"id": lzma.FILTER_LZMA2, "preset": preset, "dict_size": dictionary}]
    return b"".join(
        lzma.compress(part, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, filters=filters) for part in parts
    )


def streams(packed: bytes) -> list[tuple[int, int, int]]:
    """The xz streams of `packed`, in order: (start, end, unpacked bytes), each found from the
    end of the file by its footer (the size of its index) and its index (the sizes of its
    blocks). Raises ValueError when they do not tile the file exactly (stream padding included:
    `pack_streams` writes none)."""
    found: list[tuple[int, int, int]] = []
    end = len(packed)
    while end:
        if end < 32 or packed[end - 2 : end] != _FOOTER_MAGIC:
            raise ValueError("compiled count: not a run of xz streams")
        index_size = (int.from_bytes(packed[end - 8 : end - 4], "little") + 1) * 4
        index_at = end - 12 - index_size
        if index_at < 12 or packed[index_at] != 0:
            raise ValueError("compiled count: a bad xz index")
        blocks, unpacked = _index_sizes(packed[index_at : end - 12])
        start = index_at - blocks - 12
        if start < 0 or packed[start : start + 6] != _HEADER_MAGIC:
            raise ValueError("compiled count: a bad xz stream")
        found.append((start, end, unpacked))
        end = start
    found.reverse()
    return found


def _index_sizes(index: bytes) -> tuple[int, int]:
    """An xz index's blocks: their bytes in the file (each padded to four) and unpacked."""
    records, at = _varint(index, 1)
    blocks = unpacked = 0
    for _ in range(records):
        unpadded, at = _varint(index, at)
        size, at = _varint(index, at)
        blocks += (unpadded + 3) & ~3
        unpacked += size
    return blocks, unpacked


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """xz's multibyte integer at `at` (at most 9 bytes): (value, where the next starts)."""
    value = 0
    for step in range(9):
        if at + step >= len(data):
            break
        byte = data[at + step]
        value |= (byte & 0x7F) << (7 * step)
        if not byte & 0x80:
            return value, at + step + 1
    raise ValueError("compiled count: a bad xz index")


def _unpack(packed: bytes, stream: tuple[int, int, int]) -> bytes:
    """One stream's bytes: exactly its index's size, the stream whole (its CRC checked by xz)."""
    import lzma

    start, end, size = stream
    try:
        unpack = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        data = unpack.decompress(packed[start:end], size + 1)
    except lzma.LZMAError:
        raise ValueError("compiled count: a bad xz stream") from None
    if len(data) != size or not unpack.eof or unpack.unused_data:
        raise ValueError("compiled count: a stream of the wrong size")
    return data
