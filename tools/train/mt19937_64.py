"""std::mt19937_64 and zoc's epoch order in pure Python, bit for bit.

Every implementation of a training run (the generated trainer, LibTorch, PyTorch eager) must
visit the training set in the same order, and that order is defined in C++ by
`zoc::data::shuffled_order` (runtime/zoc/train/datasets.h): Fisher-Yates from the last index down,
j = rng() % (i + 1), rng = std::mt19937_64(seed * 16 + 3 + epoch). The C++ standard fixes the
generator's output, so this module reproduces it from the published MT19937-64 parameters (the
same ones the standard lists for mt19937_64) instead of relying on numpy or random, whose
64-bit generators differ. tests/train checks it against the C++ header.
"""

_MASK = (1 << 64) - 1
_N, _M = 312, 156
_MATRIX_A = 0xB5026F5AA96619E9
_UPPER = 0xFFFFFFFF80000000  # the 33 most significant bits (w - r with r = 31)
_LOWER = 0x000000007FFFFFFF
_INIT_MULTIPLIER = 6364136223846793005


class MT19937_64:
    """The 64-bit Mersenne Twister with std::mt19937_64's parameters and seeding."""

    def __init__(self, seed):
        mt = [0] * _N
        mt[0] = seed & _MASK
        for i in range(1, _N):
            prev = mt[i - 1]
            mt[i] = (_INIT_MULTIPLIER * (prev ^ (prev >> 62)) + i) & _MASK
        self._mt = mt
        self._index = _N

    def _twist(self):
        mt = self._mt
        for i in range(_N):
            x = (mt[i] & _UPPER) | (mt[(i + 1) % _N] & _LOWER)
            xa = x >> 1
            if x & 1:
                xa ^= _MATRIX_A
            mt[i] = mt[(i + _M) % _N] ^ xa
        self._index = 0

    def __call__(self):
        if self._index >= _N:
            self._twist()
        y = self._mt[self._index]
        self._index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & _MASK


def epoch_seed(seed, epoch):
    """The generator seed of an epoch, with C++'s uint64 wrap-around."""
    return (seed * 16 + 3 + epoch) & _MASK


def shuffled_order(count, seed, epoch):
    """The visiting order of one epoch, exactly zoc::data::shuffled_order(count, seed, epoch)."""
    order = list(range(max(count, 0)))
    rng = MT19937_64(epoch_seed(seed, epoch))
    for i in range(count - 1, 0, -1):
        j = rng() % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


if __name__ == "__main__":
    # The C++ standard's own check ([rand.predef]): the 10000th output of a default-constructed
    # std::mt19937_64 (seed 5489) is 9981545732273789042.
    g = MT19937_64(5489)
    for _ in range(9999):
        g()
    value = g()
    print("mt19937_64(5489) 10000th output: %d (%s)" % (
        value, "ok" if value == 9981545732273789042 else "WRONG"))
    raise SystemExit(0 if value == 9981545732273789042 else 1)
