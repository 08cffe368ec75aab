"""The one least-recently-used cache of the runtime and the integration."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator


class LruCache[K, V]:
    """A mapping of at most `size` entries, and (with `weight` and `budget`) of entries
    whose weights add up to at most `budget`: reading or writing one makes it the most
    recent, and past either bound the least recent go (to `on_evict`, which frees what
    they hold) until it holds again."""

    def __init__(
        self,
        size: int,
        on_evict: Callable[[V], None] | None = None,
        *,
        weight: Callable[[V], int] | None = None,
        budget: int | None = None,
    ) -> None:
        self._size = size
        self._on_evict = on_evict
        self._weigh = weight
        self._budget = budget
        self._items: OrderedDict[K, V] = OrderedDict()
        self._weight = 0

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        """The keys, least recent first."""
        return iter(list(self._items))

    def __getitem__(self, key: K) -> V:
        self._items.move_to_end(key)
        return self._items[key]

    def __setitem__(self, key: K, value: V) -> None:
        if key in self._items:
            self._weight -= self._weight_of(self._items[key])
        self._items[key] = value
        self._items.move_to_end(key)
        self._weight += self._weight_of(value)
        self._evict()

    @property
    def weight(self) -> int:
        """What the entries weigh together (0 without `weight`)."""
        return self._weight

    @property
    def budget(self) -> int | None:
        """The most the entries may weigh together (None: no bound)."""
        return self._budget

    @budget.setter
    def budget(self, budget: int | None) -> None:
        """A new bound: the least recent go now until the entries are within it."""
        self._budget = budget
        self._evict()

    def peek(self, key: K) -> V | None:
        """The value of `key` (None if absent), left where it is in the order."""
        return self._items.get(key)

    def clear(self) -> None:
        """Forget every entry (without `on_evict`: nothing is freed)."""
        self._items.clear()
        self._weight = 0

    def _evict(self) -> None:
        while len(self._items) > self._size or (self._budget is not None and self._weight > self._budget):
            _key, evicted = self._items.popitem(last=False)
            self._weight -= self._weight_of(evicted)
            if self._on_evict is not None:
                self._on_evict(evicted)

    def _weight_of(self, value: V) -> int:
        return self._weigh(value) if self._weigh is not None else 0
