"""Values the encoders pack as float64 bytes: each must convert as ``float()`` / ``array('d')``
would convert it, and a sequence they refuse must fail (or be left out) as it did."""

from __future__ import annotations

from typing import Any


class Real:
    """A number that is not a float: converted through its ``__float__``."""

    def __float__(self) -> float:
        return 2.5


#: Sequences of every kind the packers meet or must refuse: floats, ints (a bool, one past
#: 2**53), an object with ``__float__``, a numeric string, None, a string itself, a tuple, an
#: int too large for a double, nothing.
FLOAT_SEQUENCES: list[Any] = [
    [0.0, 1.5, -2.25, 1e300],
    [1, 2, 3],
    [True, 2**60 + 1, 0.1],
    [],
    [Real(), 1.0],
    [1.0, None],
    ["1.0", 2.0],
    ["x"],
    "abc",
    "12",
    (4.0, 5),
    [10**400],
]
