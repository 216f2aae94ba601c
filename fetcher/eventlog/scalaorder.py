"""Iteration order of Scala 2.13 immutable ``Map[Int, _]`` (the order the SHS lists SQL job ids in).

``SQLExecutionUIData.jobs`` is an immutable Map built by ``jobs + (id -> status)``. Up to four
entries it is a ``Map1..Map4`` (insertion order); from the fifth it is a CHAMP ``HashMap``, whose
iteration order depends only on the keys' improved hashes: at every trie level (5 bits of the hash,
lowest bits first) the node's own entries come first, in order of their 5-bit slot, then its
sub-nodes in slot order, depth first.
"""

from __future__ import annotations

from collections.abc import Iterable


def _improve(h: int) -> int:
    """``scala.collection.Hashing.improve`` on a 32-bit int (Int.## is the int itself)."""
    m = 0xFFFFFFFF
    h &= m
    h = (h + (~(h << 9) & m)) & m
    h ^= h >> 14
    h = (h + (h << 4)) & m
    h ^= h >> 10
    return h


def _champ_order(items: list[tuple[int, int]], shift: int) -> list[int]:
    """items: (hash, key). Entries alone in their slot stay in this node; others go below."""
    slots: dict[int, list[tuple[int, int]]] = {}
    for h, k in items:
        slots.setdefault((h >> shift) & 31, []).append((h, k))
    here = [group[0][1] for slot, group in sorted(slots.items()) if len(group) == 1]
    out = list(here)
    for _slot, group in sorted(slots.items()):
        if len(group) > 1:
            if shift >= 30:  # full-hash collision node: insertion order
                out.extend(k for _, k in group)
            else:
                out.extend(_champ_order(group, shift + 5))
    return out


def int_map_order(keys_in_insertion_order: Iterable[int]) -> list[int]:
    """Keys of an immutable Scala Map[Int, _] built by successive ``+``, in iteration order."""
    keys: list[int] = []
    for k in keys_in_insertion_order:
        if k not in keys:
            keys.append(k)
    if len(keys) <= 4:
        return keys
    return _champ_order([(_improve(k), k) for k in keys], 0)
