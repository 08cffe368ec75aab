"""The home as the core sees it: entities looked up by id."""

from __future__ import annotations

from dataclasses import replace

from custom_components.botpsy.core.home import Home, HomeEntity
from scripts.testing.sample_home import generated_home


def test_entities_are_found_by_id() -> None:
    home = generated_home(1000)
    assert all(home.entity(e.entity_id) is e for e in home.entities)
    assert home.entity("light.nowhere") is None
    assert Home((), ()).entity("light.kitchen") is None
    # The first of two with one id, as a scan finds it.
    first, second = HomeEntity("light.a", "A"), HomeEntity("light.a", "A again")
    assert Home((first, second), ()).entity("light.a") is first


def test_a_changed_home_finds_its_own_entities() -> None:
    home = Home((HomeEntity("light.a", "A"),), ())
    assert home.entity("light.a") is not None
    changed = replace(home, entities=(HomeEntity("light.b", "B"),))
    assert changed.entity("light.a") is None
    assert changed.entity("light.b") == HomeEntity("light.b", "B")
    assert changed == Home((HomeEntity("light.b", "B"),), ())  # the index is no part of equality
