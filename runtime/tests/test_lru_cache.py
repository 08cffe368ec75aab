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


def test_past_the_budget_the_least_recently_used_go_until_it_holds() -> None:
    freed: list[bytes] = []
    cache: LruCache[str, bytes] = LruCache(10, on_evict=freed.append, weight=len, budget=10)
    cache["a"], cache["b"], cache["c"] = b"aaaa", b"bbb", b"cc"
    assert cache.weight == 9 and freed == []
    assert cache["a"] == b"aaaa"  # now the most recent: "b" goes next, then "c"
    cache["d"] = b"dddddd"  # 15: both "b" and "c" go (one is not enough)
    assert freed == [b"bbb", b"cc"] and list(cache) == ["a", "d"] and cache.weight == 10
    cache["d"] = b"d"  # written again: its old weight no longer counts
    assert cache.weight == 5 and freed == [b"bbb", b"cc"]
    cache.clear()
    assert cache.weight == 0


def test_the_size_still_bounds_a_cache_with_a_budget() -> None:
    cache: LruCache[str, bytes] = LruCache(2, weight=len, budget=100)
    cache["a"], cache["b"], cache["c"] = b"a", b"b", b"c"
    assert list(cache) == ["b", "c"] and cache.weight == 2


def test_a_lower_budget_evicts_at_once() -> None:
    freed: list[bytes] = []
    cache: LruCache[str, bytes] = LruCache(10, on_evict=freed.append, weight=len, budget=10)
    cache["a"], cache["b"], cache["c"] = b"aaa", b"bbb", b"ccc"
    cache.budget = 4
    assert freed == [b"aaa", b"bbb"] and list(cache) == ["c"] and cache.weight == 3 and cache.budget == 4
