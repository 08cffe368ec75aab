"""The runtime's one LRU cache."""

from __future__ import annotations

from botpsy_runtime.lru_cache import LruCache


def test_the_least_recently_used_goes_first_to_on_evict() -> None:
    freed: list[str] = []
    cache: LruCache[str, str] = LruCache(2, on_evict=freed.append)
    cache["a"], cache["b"] = "A", "B"
    assert cache["a"] == "A"  # now the most recent: "b" goes next
    cache["c"] = "C"
    assert freed == ["B"] and list(cache) == ["a", "c"] and "b" not in cache and len(cache) == 2


def test_peek_leaves_the_order_and_clear_frees_nothing() -> None:
    freed: list[int] = []
    cache: LruCache[str, int] = LruCache(2, on_evict=freed.append)
    cache["a"], cache["b"] = 1, 2
    assert cache.peek("a") == 1 and cache.peek("z") is None
    cache["c"] = 3  # "a" was only peeked at: it goes
    assert freed == [1] and list(cache) == ["b", "c"]
    cache["b"] = 20  # written again: the most recent, nothing evicted
    assert list(cache) == ["c", "b"] and freed == [1]
    cache.clear()
    assert len(cache) == 0 and freed == [1]
