"""A realistic mix of requests: many different ones, in random order, each asked once.

The other sections ask one request again and again after a warm-up; a home's real use is
a different request each time: a device of any kind, by its name, an area, a question, a
greeting. `mix_requests` makes such a mix from a home's own entities (a fixture mapping,
`homes.generated_mapping`), with a fixed seed; each request carries what a right outcome
is: the named devices reached the asked state (and nothing else changed), the question's
reply says the state, or nothing changed. `async_run_mix` asks them one by one, each in a
new conversation, no warm-up between them; `mix_figures` reduces the results to
percentiles, tokens and shares.

Generated homes (scripts/testing/sample_home.generated_mapping) have no floors: their mix names
areas only. A home with floors (areas with a `floor`) gets requests about its floors too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
import logging
import random
import re
import statistics
from typing import TYPE_CHECKING, Any

from homeassistant.components.media_player import MediaPlayerEntityFeature

if TYPE_CHECKING:
    from homeassistant.core import HomeAssistant

    from .e2e import AgentBench

SEED = 27
REQUESTS = 100
SIZES = (200, 1000)
# Issue 27's goals, in both homes; and p90 in the largest home over p90 in the smallest.
GOALS = {"p50_s": 0.6, "p90_s": 1.0, "max_s": 2.0}
RATIO_GOAL = 1.2
# Goal 4: the worker's resident memory after the mix over the model file + its KV cache.
MEMORY_GOAL = 1.3

# Kinds of request, by the outcome that is right.
ACT = "act"  # one named device acted on: it reached the asked state, nothing else changed
AREA = "area"  # the devices of a kind in an area (or on a floor): all of them, nothing else
QUESTION = "question"  # answered: the reply says the state, nothing changed
NOTHING = "nothing"  # no action asked for: nothing changed
CONFIRM = "confirm"  # a risky action (unlocking): held for a yes, so nothing changed, and the reply asks

# What people say to an assistant that needs no action.
NO_ACTION = (
    "Hello",
    "Good morning",
    "Thank you",
    "Tell me a joke",
    "Who are you?",
    "What can you do?",
    "Good night",
    "How are you today?",
    "Never mind",
    "Sing me a song",
    "Goodbye",
    "What day is it today?",
)
_PERCENTS = (20, 30, 40, 60, 70, 80)
_DEGREES = (18, 19, 20, 21, 22, 23)


@dataclass(frozen=True, slots=True)
class Expect:
    """`entity_id`'s state (key "state") or attribute `key` is `value` after the request
    (numbers within `tolerance`)."""

    entity_id: str
    key: str
    value: Any
    tolerance: float = 0.0


@dataclass(frozen=True, slots=True)
class MixRequest:
    """One request of the mix, and what a right outcome is."""

    text: str
    kind: str
    # The domain of the device it is about (None: no device).
    domain: str | None
    expect: tuple[Expect, ...] = ()
    # States set before the request ({entity_id: {"state": ...}}): a lock left unlocked.
    setup: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # A word the reply of a question says (the state read).
    answer: str | None = None
    # The entities it is about (so that the mix names each device once, where it can).
    about: frozenset[str] = frozenset()
    place: str | None = None  # "area" or "floor", for requests that name one


@dataclass(frozen=True, slots=True)
class Device:
    """An entity of the home's mapping, its area by name."""

    entity_id: str
    name: str
    area: str | None
    state: str
    attributes: Mapping[str, Any]

    @property
    def domain(self) -> str:
        return self.entity_id.split(".", 1)[0]


def _devices(mapping: Mapping[str, Any]) -> list[Device]:
    areas = {str(a.get("id")): str(a.get("name")) for a in mapping.get("areas") or []}
    devices = []
    for item in mapping.get("entities") or []:
        area = item.get("area")
        devices.append(
            Device(
                str(item["id"]),
                str(item["name"]),
                areas.get(str(area), str(area)) if area else None,
                str(item.get("state", "")),
                dict(item.get("attributes") or {}),
            )
        )
    return devices


def _floors(mapping: Mapping[str, Any]) -> dict[str, str]:
    """Area name -> floor name, for the areas on a floor."""
    names = {str(f.get("id")): str(f.get("name") or f.get("id")) for f in mapping.get("floors") or []}
    return {
        str(a.get("name")): names.get(str(a["floor"]), str(a["floor"]))
        for a in mapping.get("areas") or []
        if a.get("floor")
    }


def _state(device: Device, key: str, value: Any, tolerance: float = 0.0) -> Expect:
    return Expect(device.entity_id, key, value, tolerance)


def _act(text: str, device: Device, *expect: Expect, setup: Mapping[str, Any] | None = None) -> MixRequest:
    return MixRequest(
        text,
        ACT,
        device.domain,
        expect,
        {device.entity_id: setup} if setup else {},
        about=frozenset({device.entity_id}),
    )


def _light(device: Device, rng: random.Random) -> list[MixRequest]:
    if device.state == "on":
        text, state = rng.choice(("Turn off the {}", "Switch off the {}", "Turn the {} off")), "off"
    else:
        text, state = rng.choice(("Turn on the {}", "Switch on the {}", "Turn the {} on, please")), "on"
    return [_act(text.format(device.name), device, _state(device, "state", state))]


def _dimmable(device: Device, rng: random.Random) -> list[MixRequest]:
    if "brightness" not in (device.attributes.get("supported_color_modes") or ()):
        return []
    percent = rng.choice(_PERCENTS)
    text = rng.choice(("Dim the {} to {}%", "Set the {} to {}%", "Set the {} brightness to {}%"))
    # HA's brightness_pct -> brightness (0-255), rounded either way.
    brightness = _state(device, "brightness", round(percent * 255 / 100), 1.0)
    return [_act(text.format(device.name, percent), device, _state(device, "state", "on"), brightness)]


def _switch(device: Device, rng: random.Random) -> list[MixRequest]:
    if rng.random() < 0.5:  # one left on
        return [_act(f"Turn off the {device.name}", device, _state(device, "state", "off"), setup={"state": "on"})]
    text = rng.choice(("Turn on the {}", "Switch the {} on"))
    return [_act(text.format(device.name), device, _state(device, "state", "on"))]


def _fan(device: Device, rng: random.Random) -> list[MixRequest]:
    choice = rng.randrange(3)
    if choice == 0:
        percent = rng.choice(_PERCENTS)
        return [_act(f"Set the {device.name} to {percent}%", device, _state(device, "percentage", percent))]
    modes = [str(m) for m in device.attributes.get("preset_modes") or ()]
    if choice == 1 and modes:
        mode = rng.choice(modes)
        return [_act(f"Put the {device.name} in {mode} mode", device, _state(device, "preset_mode", mode))]
    return [_act(f"Turn on the {device.name}", device, _state(device, "state", "on"))]


def _climate(device: Device, rng: random.Random) -> list[MixRequest]:
    modes = [str(m) for m in device.attributes.get("hvac_modes") or ()]
    if rng.random() < 0.3 and "heat" in modes and device.state != "heat":
        return [_act(f"Set the {device.name} to heat", device, _state(device, "state", "heat"))]
    degrees = rng.choice(_DEGREES)
    text = rng.choice(("Set the {} to {} degrees", "Set the {} to {}°C"))
    return [_act(text.format(device.name, degrees), device, _state(device, "temperature", degrees))]


def _media_player(device: Device, rng: random.Random) -> list[MixRequest]:
    """A request the player can do (by its features, HA's MediaPlayerEntityFeature: a
    generated speaker has a volume and sources, no pause or power); its volume or source
    set while it is on (an off player shows neither)."""
    sources = [str(s) for s in device.attributes.get("source_list") or ()]
    on = {"state": "on"}

    def volume() -> MixRequest:
        percent = rng.choice(_PERCENTS)
        level = _state(device, "volume_level", percent / 100, 0.011)
        return _act(f"Set the volume of the {device.name} to {percent}%", device, level, setup=on)

    def source() -> MixRequest:
        name = rng.choice(sources)
        return _act(f"Switch the {device.name} to {name}", device, _state(device, "source", name), setup=on)

    def pause() -> MixRequest:  # one playing
        return _act(f"Pause the {device.name}", device, _state(device, "state", "paused"), setup={"state": "playing"})

    def turn_on() -> MixRequest:
        return _act(f"Turn on the {device.name}", device, _state(device, "state", "on"))

    features = device.attributes.get("supported_features")
    feature = MediaPlayerEntityFeature
    choices = [
        make
        for needed, make in (
            (feature.VOLUME_SET, volume), (feature.SELECT_SOURCE, source),
            (feature.PAUSE, pause), (feature.TURN_ON, turn_on),
        )
        if (features is None or int(features) & needed) and (make is not source or sources)
    ]  # fmt: skip
    return [rng.choice(choices)()] if choices else []


def _lock(device: Device, rng: random.Random) -> list[MixRequest]:
    # One left unlocked (the home's locks are locked).
    return [_act(f"Lock the {device.name}", device, _state(device, "state", "locked"), setup={"state": "unlocked"})]


def _unlock(device: Device, rng: random.Random) -> list[MixRequest]:
    # Unlocking waits for a yes: asked, nothing done yet.
    return [MixRequest(f"Unlock the {device.name}", CONFIRM, device.domain, about=frozenset({device.entity_id}))]


def _question(device: Device, rng: random.Random) -> list[MixRequest]:
    """A question about one device: the reply says its state."""
    setup: dict[str, Any] = {}
    state = device.state
    match device.domain:
        case "lock":
            if rng.random() < 0.5:
                state, setup = "unlocked", {device.entity_id: {"state": "unlocked"}}
            text = f"Is the {device.name} locked?"
        case "climate":
            text = f"What mode is the {device.name} in?"
        case "media_player":
            text = f"Is the {device.name} playing?"
        case "sensor":
            text = rng.choice(("What is the {}?", "What does the {} say?")).format(device.name)
        case _:
            text = rng.choice(("Is the {} on?", "Is the {} off?", "Is the {} still on?")).format(device.name)
    return [MixRequest(text, QUESTION, device.domain, setup=setup, answer=state, about=frozenset({device.entity_id}))]


def _place_requests(devices: Sequence[Device], floors: Mapping[str, str], rng: random.Random) -> list[MixRequest]:
    """Lights of an area (or a floor), switched all together."""
    found = []
    places: dict[tuple[str, str], list[Device]] = {}
    for device in devices:
        if device.domain == "light" and device.area:
            places.setdefault(("area", device.area), []).append(device)
            if device.area in floors:
                places.setdefault(("floor", floors[device.area]), []).append(device)
    for (place, name), lights in places.items():
        on = rng.random() < 0.5
        word = "on" if on else "off"
        preposition = "on the" if place == "floor" else "in the"
        text = rng.choice(
            (f"Turn {word} the lights {preposition} {name}", f"Switch {word} all the lights {preposition} {name}")
        )
        expect = tuple(Expect(d.entity_id, "state", word) for d in lights)
        found.append(MixRequest(text, AREA, "light", expect, about=frozenset(d.entity_id for d in lights), place=place))
    return found


def _temperature_questions(devices: Sequence[Device], rng: random.Random) -> list[MixRequest]:
    """The temperature of an area, from its temperature sensors."""
    by_area: dict[str, list[Device]] = {}
    for device in devices:
        if device.domain == "sensor" and device.area and device.attributes.get("device_class") == "temperature":
            by_area.setdefault(device.area, []).append(device)
    return [
        MixRequest(
            rng.choice(("What is the temperature in the {}?", "How warm is it in the {}?")).format(area),
            QUESTION,
            "sensor",
            answer=sensors[0].state,
            about=frozenset(d.entity_id for d in sensors),
            place="area",
        )
        for area, sensors in by_area.items()
    ]


_BY_DOMAIN: dict[str, Callable[[Device, random.Random], list[MixRequest]]] = {
    "light": _light,
    "switch": _switch,
    "fan": _fan,
    "climate": _climate,
    "media_player": _media_player,
    "lock": _lock,
}
# One cycle of the mix, in order: about half actions on one device, a tenth on an area,
# a fifth questions, a tenth that need no action, an unlock. The first dozen already name
# every kind of device of a generated home. A home with floors gets a floor request too.
RECIPE = (
    "light", "area_temperature", "switch", "nothing", "fan", "area_lights", "climate", "question",
    "media_player", "lock", "dimmable", "nothing", "question", "fan", "switch", "floor_lights", "climate",
    "media_player", "area_lights", "unlock", "question",
)  # fmt: skip


def _candidates(mapping: Mapping[str, Any], rng: random.Random) -> dict[str, list[MixRequest]]:
    """Every request the home gives each step of the recipe, shuffled."""
    devices = _devices(mapping)
    rng.shuffle(devices)
    floors = _floors(mapping)
    pools: dict[str, list[MixRequest]] = {step: [] for step in RECIPE}
    for device in devices:
        if (make := _BY_DOMAIN.get(device.domain)) is not None:
            pools[device.domain] += make(device, rng)
        if device.domain == "light":
            pools["dimmable"] += _dimmable(device, rng)
        if device.domain == "lock":
            pools["unlock"] += _unlock(device, rng)
        pools["question"] += _question(device, rng)
    places = _place_requests(devices, floors, rng)
    pools["area_lights"] = [r for r in places if r.place == "area"]
    pools["floor_lights"] = [r for r in places if r.place == "floor"]
    pools["area_temperature"] = _temperature_questions(devices, rng)
    pools["nothing"] = [MixRequest(text, NOTHING, None) for text in rng.sample(NO_ACTION, len(NO_ACTION))]
    for step in ("area_lights", "floor_lights", "area_temperature"):
        rng.shuffle(pools[step])
    return pools


def mix_requests(mapping: Mapping[str, Any], count: int = REQUESTS, seed: int = SEED) -> list[MixRequest]:
    """`count` different requests about the home's own devices, areas and floors, in a
    random order (fixed by `seed`): the recipe's steps in turn, each a device not named
    before where the home has one left, until `count` or the home has nothing new to ask.
    """
    rng = random.Random(seed)
    pools = _candidates(mapping, rng)
    chosen: list[MixRequest] = []
    texts: set[str] = set()
    used: set[str] = set()
    while len(chosen) < count:
        before = len(chosen)
        for step in RECIPE:
            if len(chosen) >= count:
                break
            pool = pools[step]
            fresh = [r for r in pool if r.text not in texts]
            pick = next((r for r in fresh if not r.about & used), fresh[0] if fresh else None)
            if pick is None:
                continue
            pool.remove(pick)
            chosen.append(pick)
            texts.add(pick.text)
            used |= pick.about
        if len(chosen) == before:
            break  # the home has nothing new to ask
    rng.shuffle(chosen)
    return chosen


# --- the outcome --------------------------------------------------------------------------

States = Mapping[str, tuple[str, Mapping[str, Any]]]


def home_states(hass: HomeAssistant, entity_ids: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """The home's states and attributes now."""
    found = {}
    for entity_id in entity_ids:
        if (state := hass.states.get(entity_id)) is not None:
            found[entity_id] = (state.state, dict(state.attributes))
    return found


def changed(before: States, after: States) -> list[str]:
    """The entities whose state or attributes differ."""
    return sorted(e for e in set(before) | set(after) if before.get(e) != after.get(e))


def _holds(expect: Expect, states: States) -> bool:
    found = states.get(expect.entity_id)
    if found is None:
        return False
    actual = found[0] if expect.key == "state" else found[1].get(expect.key)
    if isinstance(expect.value, int | float) and not isinstance(expect.value, bool):
        if not isinstance(actual, int | float | str):
            return False
        try:
            return abs(float(actual) - float(expect.value)) <= expect.tolerance + 1e-9
        except ValueError:
            return False
    return str(actual) == str(expect.value)


def says(reply: str, word: str) -> bool:
    """Whether `reply` says `word` (a whole word: "locked" is not in "unlocked")."""
    return re.search(rf"(?<![\w.]){re.escape(word)}(?![\w]|\.\d)", reply, re.IGNORECASE) is not None


def is_right(request: MixRequest, before: States, after: States, reply: str, error: str | None) -> bool:
    """Whether the request's outcome was the right one: see the kinds (ACT, AREA, ...)."""
    if error is not None:
        return False
    moved = set(changed(before, after))
    if request.kind in (ACT, AREA):
        return all(_holds(e, after) for e in request.expect) and moved <= {e.entity_id for e in request.expect}
    if moved:
        return False
    if request.kind == QUESTION:
        return request.answer is None or says(reply, request.answer)
    if request.kind == CONFIRM:
        return "?" in reply
    return True


@dataclass(slots=True)
class MixResult:
    """One request of the mix, as it went."""

    text: str
    kind: str
    domain: str | None
    latency_s: float
    # Prompt tokens the engine evaluated for it, over all its generation rounds (0: answered
    # without the model).
    evaluated_tokens: int
    rounds: int
    right: bool
    reply: str = ""
    error: str | None = None
    changed: list[str] = field(default_factory=list)
    stall_ms: float | None = None
    gc_ms: float | None = None
    # The engine's own times and output over its rounds: where a slow request's time went.
    prefill_s: float = 0.0
    decode_s: float = 0.0
    output_tokens: int = 0

    def row(self) -> dict[str, Any]:
        """The request as bench.json keeps it."""
        return {
            "text": self.text,
            "kind": self.kind,
            "latency_s": round(self.latency_s, 4),
            "rounds": self.rounds,
            "tokens": self.evaluated_tokens,
            "prefill_s": round(self.prefill_s, 4),
            "decode_s": round(self.decode_s, 4),
            "output_tokens": self.output_tokens,
            "right": self.right,
        }


async def async_run_mix(bench: AgentBench, requests: Sequence[MixRequest], label: str = "") -> list[MixResult]:
    """Each request once, in order, in a new conversation: the home reset to its states
    (and the request's setup) first, the agent's background warm-up let finish, nothing
    asked before it to warm the cache."""
    log = logging.getLogger("bench")
    results = []
    for number, request in enumerate(requests, start=1):
        await bench.home.async_reset({k: dict(v) for k, v in request.setup.items()})
        await bench.hass.async_block_till_done()
        await bench.async_quiet()
        before = home_states(bench.hass, bench.home_entities)
        sample = await bench.async_ask(request.text, probe=True)
        after = home_states(bench.hass, bench.home_entities)
        results.append(
            MixResult(
                request.text,
                request.kind,
                request.domain,
                sample.latency_s,
                sum(g.timings.evaluated_tokens for g in sample.generations),
                len(sample.generations),
                is_right(request, before, after, sample.reply, sample.error),
                sample.reply,
                sample.error,
                changed(before, after),
                sample.stall_ms,
                sample.gc_ms,
                sum(g.timings.prompt_seconds for g in sample.generations),
                sum(g.timings.decode_seconds for g in sample.generations),
                sum(g.sampled_tokens + g.forced_tokens for g in sample.generations),
            )
        )
        if number % 25 == 0 or number == len(requests):
            log.warning("Mix %s: %d/%d requests", label, number, len(requests))
    return results


# --- the figures ----------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The `q`-th percentile (0-100), linear between the closest ranks (numpy's default,
    statistics' "inclusive" method): p50 is the median, p100 the maximum."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _rounded(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def mix_figures(results: Sequence[MixResult]) -> dict[str, Any]:
    """Latency percentiles (requests without an engine or agent error), tokens evaluated
    per request (median), the shares of requests that needed a second generation round,
    that reached the model at all, and whose outcome was right; the same by kind."""
    timed = [r for r in results if r.error is None]
    latencies = [r.latency_s for r in timed]
    total = len(results)
    right = sum(r.right for r in results)
    by_kind = {}
    for kind in dict.fromkeys(r.kind for r in results):
        of_kind = [r for r in results if r.kind == kind]
        kind_latencies = [r.latency_s for r in of_kind if r.error is None]
        by_kind[kind] = {
            "requests": len(of_kind),
            "p50_s": _rounded(percentile(kind_latencies, 50)),
            "max_s": _rounded(max(kind_latencies, default=None)),
            "right": f"{sum(r.right for r in of_kind)}/{len(of_kind)}",
        }
    slowest = sorted(timed, key=lambda r: r.latency_s, reverse=True)[:5]
    stalls = [r.stall_ms for r in timed if r.stall_ms is not None]
    pauses = [r.gc_ms for r in timed if r.gc_ms is not None]
    return {
        "requests": total,
        "p50_s": _rounded(percentile(latencies, 50)),
        "p90_s": _rounded(percentile(latencies, 90)),
        "max_s": _rounded(max(latencies, default=None)),
        "tokens_evaluated_median": _rounded(
            statistics.median([r.evaluated_tokens for r in timed]) if timed else None, 1
        ),
        "second_round_share": _share(sum(r.rounds >= 2 for r in results), total),
        "model_share": _share(sum(r.rounds >= 1 for r in results), total),
        "right_share": _share(right, total),
        "right": f"{right}/{total}",
        "by_kind": by_kind,
        "latencies_s": [round(r.latency_s, 4) for r in timed],
        "event_loop_worst_stall_ms": _rounded(max(stalls, default=None), 2),
        "gc_worst_pause_ms": _rounded(max(pauses, default=None), 2),
        "errors": [r.error for r in results if r.error][:3],
        "slowest": [r.row() for r in slowest],
        "wrong": [
            {"text": r.text, "kind": r.kind, "reply": r.reply[:160], "changed": r.changed[:5]}
            for r in results
            if not r.right
        ][:10],
        # Every request, in the order asked.
        "per_request": [r.row() for r in results],
    }


def mix_ratio(mix: Mapping[str, Any]) -> tuple[str, float | None]:
    """p90 in the largest home over p90 in the smallest: its key and value."""
    sizes = sorted((k for k in mix if k.isdigit()), key=int)
    if len(sizes) < 2:
        return "", None
    small, large = mix[sizes[0]].get("p90_s"), mix[sizes[-1]].get("p90_s")
    key = f"p90_{sizes[-1]}_over_{sizes[0]}"
    return key, round(large / small, 3) if small and large else None
