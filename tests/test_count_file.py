"""Laws of a compiled count's shipped file (`solver.engine.countfile`): xz streams of whole
records, each unpacked when a pass first reads one of its records. The file unpacks (as one
`.xz`) to the bytes `to_bytes` wrote; read a stream at a time it gives the records, the counts and
the splits of the form read whole; a pass unpacks only the streams of the records it reads; and a
file cut, padded or corrupted is a miss (`read_packed` or the record's read raises
ValueError), never a count."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest
from hypothesis import given
from test_count_compiled import FEW, brute, every_query, models, splits_equal_brute_force
from test_count_diagrams import NAMES, SHARED, shared_domain_checks

from solver.engine import count as count_module
from solver.engine import countfile
from solver.engine.countfile import StreamRecords, pack_streams, read_buffer, read_packed, streams
from solver.engine.ddnnf import CompiledCount, compile_count
from solver.engine.diagrams import DiagramCounter
from solver.pack.expr import Condition
from solver.pack.loader import load_directory

PACKS = Path(__file__).resolve().parent.parent / "constraints"
BOUND = 1 << 30


def _compiled(checks: list[Condition]) -> bytes:
    return compile_count(DiagramCounter(dict.fromkeys(NAMES, SHARED), checks)).to_bytes("k")


def _small_pack() -> bytes:
    checks = [
        Condition.over(("w", "x"), lambda v: v[0] != v[1]),
        Condition.over(("x", "y"), lambda v: v[0] <= v[1]),
        Condition.over(("y", "z"), lambda v: v[0] != v[1]),
    ]
    return compile_count(DiagramCounter(dict.fromkeys(NAMES, SHARED), checks)).to_bytes("k")


@pytest.mark.property
@FEW
@given(checks=shared_domain_checks())
def test_a_form_read_a_stream_at_a_time_is_the_form_read_whole(checks: list[Condition]) -> None:
    """Packed in streams of 1, 2 or 3 records, the file unpacks to the same bytes; read a stream
    at a time, every record is the one read whole, and counts and splits equal brute force."""
    data, domains, found = _compiled(checks), dict.fromkeys(NAMES, SHARED), models(NAMES, checks)
    whole = CompiledCount(*read_buffer(data, "k"))
    for per in (1, 2, 3):
        packed = _packed(data, per)
        assert lzma.decompress(packed) == data
        compiled = CompiledCount(*read_packed(packed, "k", BOUND))
        assert list(compiled.records) == list(whole.records) and compiled.root == whole.root
        assert compiled.to_bytes("k") == data
        fresh = CompiledCount(*read_packed(packed, "k", BOUND))
        for pins in every_query(NAMES):
            assert fresh.count(domains, pins)[0] == brute(found, pins), pins
        splits_equal_brute_force(CompiledCount(*read_packed(packed, "k", BOUND)), NAMES, found)


def _packed(data: bytes, per: int) -> bytes:
    saved = countfile.RECORDS_PER_STREAM
    countfile.RECORDS_PER_STREAM = per
    try:
        return pack_streams(data, 1)
    finally:
        countfile.RECORDS_PER_STREAM = saved


def test_a_pass_unpacks_only_the_streams_of_the_records_it_reads() -> None:
    """A count unpacks exactly the streams holding the records its pass read (and the first,
    which tells how many records a stream holds): the whole count only the root's children."""
    data = _small_pack()
    packed = _packed(data, 1)
    domains = dict.fromkeys(NAMES, SHARED)
    compiled = CompiledCount(*read_packed(packed, "k", BOUND))
    records = compiled.records
    assert isinstance(records, StreamRecords) and len(records.found) == len(records) + 1 > 3
    compiled.count(domains, {})
    assert set(records.lines) == {1} | {1 + at for at in records.read}
    assert len(records.lines) < len(records)
    compiled.count(domains, {"z": 0})
    assert set(records.lines) == {1} | {1 + at for at in records.read}


def test_a_file_not_as_written_is_a_miss() -> None:
    """Cut, padded, with a stream dropped or corrupted, with a stream of another number of
    records, or past the bound: `read_packed` raises ValueError or the record's read does."""
    data = _small_pack()
    packed = _packed(data, 1)
    found = streams(packed)
    assert [end for _, end, _ in found[:-1]] == [start for start, _, _ in found[1:]]
    assert sum(size for _, _, size in found) == len(data)
    pieces = [packed[start:end] for start, end, _ in found]
    flipped = bytearray(pieces[2])
    flipped[len(flipped) // 2] ^= 0x40
    bad = [
        packed[:-1],
        packed[1:],
        packed + b"\0\0\0\0",
        packed + pieces[-1],
        b"".join(pieces[:2] + pieces[3:]),
        b"".join([*pieces[:2], bytes(flipped), *pieces[3:]]),
        pieces[0] + lzma.compress(b"1 2 3\n") + b"".join(pieces[2:]),
        # Two records in a stream of one (and the streams still as many as the records).
        b"".join([*pieces[:2], lzma.compress(lzma.decompress(b"".join(pieces[2:4]))), lzma.compress(b"\n")]),
    ]
    assert len(pieces) == 5
    for packed_bad in bad:
        with pytest.raises(ValueError):
            compiled = CompiledCount(*read_packed(packed_bad, "k", BOUND))
            for at in range(len(compiled.records)):
                compiled.records[at]
    with pytest.raises(ValueError):
        read_packed(packed, "k", len(data) - 1)
    with pytest.raises(ValueError):
        read_packed(packed, "another", BOUND)
    assert CompiledCount(*read_packed(lzma.compress(data), "k", BOUND)).to_bytes("k") == data  # one stream


def test_the_shipped_form_is_read_a_stream_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SGLang pack's shipped file is streams of records, and `platform=cuda`'s pass unpacks
    under a quarter of them (the whole file was 80 MB unpacked, the pass reads 560 records)."""
    monkeypatch.setenv("CONFSOLVE_NO_CACHE", "1")
    monkeypatch.setattr(count_module, "_COMPILED", type(count_module._COMPILED)(8))
    pack = load_directory(PACKS / "sglang")
    compiled = count_module.read_shipped(pack)
    assert compiled is not None and isinstance(compiled.records, StreamRecords)
    count_module._COMPILED.put(pack.digest, compiled)
    count_module.count(pack, {"platform": "cuda"})
    assert 0 < len(compiled.records.lines) < (len(compiled.records.found) - 1) / 4
