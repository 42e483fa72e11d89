"""The block pool: references, prefix names, reuse order."""

from __future__ import annotations

from accord.engine.local._blocks import BlockPool, chain_hashes


def test_names_chain_so_a_block_stands_for_its_whole_prefix() -> None:
    a = chain_hashes([1, 2, 3, 4, 5, 6, 7, 8, 9], 4)
    b = chain_hashes([9, 2, 3, 4, 5, 6, 7, 8], 4)
    assert len(a) == 2 and len(b) == 2
    assert a[1] != b[1]  # same second block, different first block
    assert chain_hashes([1, 2, 3, 4, 5, 6, 7, 8], 4, parent=a[0], start=1) == a[1:]


def test_allocation_is_all_or_nothing() -> None:
    pool = BlockPool(4, 16)
    assert pool.allocate(5) is None
    assert pool.counts().free == 4
    got = pool.allocate(4)
    assert got is not None and sorted(got) == [0, 1, 2, 3]
    assert pool.allocate(1) is None


def test_a_released_named_block_is_cached_and_shared_by_the_next_request() -> None:
    pool = BlockPool(4, 16)
    blocks = pool.allocate(2)
    assert blocks is not None
    names = [101, 102]
    for b, n in zip(blocks, names, strict=True):
        pool.name(b, n)
    pool.release(blocks)
    assert pool.counts().cached == 2
    hits = pool.match([101, 102, 103])
    assert hits == blocks
    pool.share(hits)
    assert pool.counts().cached == 0 and pool.counts().free == 2


def test_fresh_blocks_are_used_before_cached_ones_and_tails_are_evicted_first() -> None:
    pool = BlockPool(3, 16)
    blocks = pool.allocate(2)
    assert blocks is not None
    pool.name(blocks[0], 1)
    pool.name(blocks[1], 2)
    pool.release(blocks)
    fresh = pool.allocate(1)
    assert fresh is not None and fresh[0] not in blocks
    evicted = pool.allocate(1)
    assert evicted == [blocks[1]]  # the tail of the released prefix goes first
    assert pool.match([1, 2]) == [blocks[0]]


def test_a_name_keeps_its_first_holder() -> None:
    pool = BlockPool(2, 16)
    a, b = pool.allocate(1), pool.allocate(1)
    assert a is not None and b is not None
    pool.name(a[0], 7)
    pool.name(b[0], 7)
    pool.release(b)
    assert pool.counts().cached == 0  # b was never named, so it is plainly free
    assert pool.match([7]) == a


def test_forgetting_prefixes_frees_the_cached_blocks() -> None:
    pool = BlockPool(2, 16)
    blocks = pool.allocate(2)
    assert blocks is not None
    pool.name(blocks[0], 5)
    pool.release(blocks)
    pool.forget_prefixes()
    assert pool.match([5]) == []
    assert pool.counts().cached == 0 and pool.counts().free == 2
