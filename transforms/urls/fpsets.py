"""Sets of 64-bit fingerprints as sorted int64 arrays: unique and membership by sorting and
binary search. numpy 2.4's hash-based np.unique / np.isin are ~40x slower on int64 keys,
and searching sorted keys walks the set in order (5x fewer cache misses than random keys).

`FpIndex` adds a bitmap and a directory on the top bits of a sorted set, for probing it
with many more values than it holds (a whole visited table against one round's links):
O(1) per value instead of a sort of the values plus a binary search each.
"""
import numpy as np

_SIGN = np.uint64(1 << 63)


def sorted_unique(a) -> np.ndarray:
    """np.unique of int64 values, by sorting."""
    a = np.sort(np.asarray(a, dtype=np.int64))
    if len(a) > 1:
        a = a[np.r_[True, a[1:] != a[:-1]]]
    return a


def sorted_union(arrays) -> np.ndarray:
    """The sorted distinct values of int64 arrays together. Associative and commutative,
    so `beam.CombineGlobally(sorted_union)` builds a probe set from a PCollection of arrays."""
    arrays = [np.asarray(a, np.int64) for a in arrays if a is not None and len(a)]
    return sorted_unique(np.concatenate(arrays)) if arrays else np.zeros(0, np.int64)


def member(values, sorted_set) -> np.ndarray:
    """values in sorted_set (sorted ascending): np.isin without the sort."""
    values = np.asarray(values, dtype=np.int64)
    if len(sorted_set) == 0 or len(values) == 0:
        return np.zeros(len(values), dtype=bool)
    order = np.argsort(values)
    keys = values[order]
    pos = np.searchsorted(sorted_set, keys)
    pos[pos == len(sorted_set)] = 0
    out = np.empty(len(values), dtype=bool)
    out[order] = sorted_set[pos] == keys
    return out


class FpIndex:
    """Membership in a sorted int64 set through a bitmap and a directory on the top bits.

    Fingerprints are hashes, so their top bits spread the set evenly. A bitmap on the top
    `BITMAP_EXTRA` more bits than the directory has (a few MiB, cache-friendly) rejects
    most absent values with one lookup; the rest look up their directory slot (top
    `bits` ~ log2(len)+1 bits: half a value per slot) and compare the few set values in
    it. A slot holding more than `MAX_SCAN` values (skewed input, or URLs chosen to
    collide) falls back to binary search for the values that land there, so the worst
    case is `member`'s, never a long loop.

    It holds 18-28 bytes a value: the values (8), the directory (int32, 2-4 slots a value)
    and the bitmap (2-4). (With an int64 directory counted in one array and the bitmap made
    from a bool per bit: 26-44 bytes a value; for 5 M values, beyond the values themselves,
    144 MB held and 498 MB at the peak of building, against 80 and 245 now.)
    """

    MAX_SCAN = 4
    BITMAP_EXTRA = 3

    SLOTS_AT_ONCE = 1 << 20   # directory slots counted at a time (bounds the count array)

    def __init__(self, sorted_set):
        self.values = np.asarray(sorted_set, dtype=np.int64)
        n = len(self.values)
        self.bits = int(min(26, max(1, np.ceil(np.log2(max(n, 1))) + 1)))
        self.shift = np.uint64(64 - self.bits)
        self.map_shift = np.uint64(64 - self.bits - self.BITMAP_EXTRA)
        u = self._unsigned(self.values)   # ascending, as the values are
        # the directory: where each slot's values start (int32 where the positions fit: it
        # has 2-4 slots a value, the index's largest part), counted one range of slots at a
        # time (a range's values are one run of the sorted top bits), so no whole-directory
        # count array is made beside it
        top = u >> self.shift
        slots = 1 << self.bits
        self.start = np.empty(slots + 1, dtype=np.int32 if n < 2**31 else np.int64)
        self.start[0] = 0
        for s0 in range(0, slots, self.SLOTS_AT_ONCE):
            s1 = min(slots, s0 + self.SLOTS_AT_ONCE)
            a, b = np.searchsorted(top, np.array([s0, s1], dtype=np.uint64))
            counts = np.bincount((top[a:b] - np.uint64(s0)).astype(np.int64), minlength=s1 - s0)
            self.start[s0 + 1:s1 + 1] = a + np.cumsum(counts)
        del top
        # the bitmap, bit m set for each value's top bits m: one OR per byte over the runs of
        # values that share it (the values are sorted), not a bool per bit (8x the bitmap)
        self.bitmap = np.zeros((1 << (self.bits + self.BITMAP_EXTRA)) // 8, dtype=np.uint8)
        if n:
            m = u >> self.map_shift
            byte = (m >> np.uint64(3)).astype(np.int64)
            bit = np.left_shift(np.uint8(1), (m & np.uint64(7)).astype(np.uint8))
            del m
            runs = np.flatnonzero(np.r_[True, byte[1:] != byte[:-1]])
            self.bitmap[byte[runs]] = np.bitwise_or.reduceat(bit, runs)

    def __len__(self):
        return len(self.values)

    @staticmethod
    def _unsigned(values):
        # flipping the sign bit makes the unsigned top bits follow signed (sorted) order
        return values.view(np.uint64) ^ _SIGN

    def contains(self, values) -> np.ndarray:
        values = np.ascontiguousarray(values, dtype=np.int64)
        out = np.zeros(len(values), dtype=bool)
        if len(values) == 0 or len(self.values) == 0:
            return out
        u = self._unsigned(values)
        m = (u >> self.map_shift).astype(np.int64)
        maybe = np.flatnonzero((self.bitmap[m >> 3] >> (m & 7).astype(np.uint8)) & 1)
        if len(maybe) == 0:
            return out
        values, slot = values[maybe], (u[maybe] >> self.shift).astype(np.int64)
        lo = self.start[slot]
        count = self.start[slot + 1] - lo
        crowded = count > self.MAX_SCAN
        todo = np.flatnonzero((count > 0) & ~crowded)
        for j in range(self.MAX_SCAN):
            if len(todo) == 0:
                break
            hit = self.values[lo[todo] + j] == values[todo]
            out[maybe[todo[hit]]] = True
            todo = todo[~hit & (count[todo] > j + 1)]
        if crowded.any():
            idx = np.flatnonzero(crowded)
            out[maybe[idx]] = member(values[idx], self.values)
        return out
