"""The one least-recently-used cache of the runtime and the integration."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator


class LruCache[K, V]:
    """A mapping of at most `size` entries: reading or writing one makes it the most
    recent, and past `size` the least recent goes (to `on_evict`, which frees what it holds)."""

    def __init__(self, size: int, on_evict: Callable[[V], None] | None = None) -> None:
        self._size = size
        self._on_evict = on_evict
        self._items: OrderedDict[K, V] = OrderedDict()

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
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            _key, evicted = self._items.popitem(last=False)
            if self._on_evict is not None:
                self._on_evict(evicted)

    def peek(self, key: K) -> V | None:
        """The value of `key` (None if absent), left where it is in the order."""
        return self._items.get(key)

    def clear(self) -> None:
        """Forget every entry (without `on_evict`: nothing is freed)."""
        self._items.clear()
