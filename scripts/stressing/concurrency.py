"""Twenty conversations at once on each engine (embedded, llama-server), real model.

Different users and conversation ids; some single requests, some two turns sent back to
back (the second while the first is still being answered), some answering a confirmation
with yes or no, and one saying "yes" where nothing is held. Checked from HA's record:
every turn answered, nothing lost, no call or confirmation crossing into another
conversation, turns kept in order in each chat log; measured: HA's event loop's largest
stall and each request's wait for the engine.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
import statistics
import time
from typing import Any

from homeassistant.components import conversation
from homeassistant.const import EVENT_CALL_SERVICE
from homeassistant.core import Context, Event, callback
from homeassistant.helpers import chat_session

from botpsy_runtime.embedded import EmbeddedOptions
from scripts.benchmark.server import LlamaServer

from .home import RISKY, StressHome, stress_home
from .options import StressOptions


@dataclass(frozen=True, slots=True)
class Script:
    """One conversation: its turns, whether the second waits for the first's answer, and
    the devices it is about (any call elsewhere crosses into another conversation)."""

    user: str
    turns: tuple[str, ...]
    own: frozenset[str]
    wait: bool = True


def _scripts() -> list[Script]:
    single = [
        ("turn on the bedroom light", "light.bedroom"),
        ("turn off the kitchen light", "light.kitchen"),
        ("set the thermostat to 23 degrees", "climate.thermostat"),
        ("open the living room blinds", "cover.living_room_blinds"),
        ("turn on the coffee machine", "switch.coffee_machine"),
        ("start the robot vacuum", "vacuum.robot"),
        ("turn on the ceiling fan", "fan.ceiling_fan"),
        ("pause the living room TV", "media_player.living_room_tv"),
    ]
    scripts = [Script("admin" if i % 2 else "user", (text,), frozenset({own})) for i, (text, own) in enumerate(single)]
    scripts += [
        Script(
            "user",
            ("turn on the porch light", "what is the outdoor temperature?"),
            frozenset({"light.porch"}),
            wait=False,
        ),
        Script(
            "admin",
            ("turn on the attic light", "is there motion in the hallway?"),
            frozenset({"light.attic"}),
            wait=False,
        ),
        Script(
            "user",
            ("open the garden sprinkler", "turn on the desk lamp"),
            frozenset({"valve.garden_sprinkler", "light.desk_lamp"}),
            wait=False,
        ),
        Script(
            "admin",
            ("what is on my shopping list?", "turn on the living room lamp"),
            frozenset({"light.living_room_lamp"}),
            wait=False,
        ),
        Script("user", ("turn on the siren", "turn off the siren"), frozenset({"siren.siren"}), wait=False),
        Script(
            "admin",
            ("activate movie night", "what is playing on the TV?"),
            frozenset({"scene.movie_night", "media_player.living_room_tv"}),
            wait=False,
        ),
    ]
    risky = [
        ("unlock the front door", "lock.front_door", "yes"),
        ("unlock the back door", "lock.back_door", "yes"),
        ("open the garage door", "cover.garage_door", "yes"),
        ("open the gate", "cover.driveway_gate", "no"),
        ("open the patio door", "cover.patio_door", "no"),
    ]
    scripts += [Script("admin", (text, answer), frozenset({own})) for text, own, answer in risky]
    # A yes where nothing is held: it must not confirm another conversation's question.
    scripts.append(Script("user", ("yes",), frozenset()))
    return scripts


async def _loop_stalls(stop: asyncio.Event, stalls: list[float]) -> None:
    """How late a 10 ms sleep wakes up: HA's event loop blocked for that long."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(0.01)
        stalls.append(loop.time() - before - 0.01)


@dataclass(slots=True)
class _Record:
    """What HA saw of the conversations, kept apart from the verdict that reads it afterwards."""

    stress: StressHome
    label: str
    contexts: dict[str, int] = field(default_factory=dict)  # context id -> conversation index
    calls: list[tuple[int | None, frozenset[str]]] = field(default_factory=list)
    replies: dict[tuple[int, int], str] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    in_order: dict[int, bool] = field(default_factory=dict)

    @callback
    def on_call(self, event: Event[Any]) -> None:
        """Note the entities of a service call and the conversation whose context made it."""
        data = event.data.get("service_data") or {}
        ids = data.get("entity_id") or []
        entities = frozenset([ids] if isinstance(ids, str) else ids)
        owner = self.contexts.get(event.context.id, self.contexts.get(event.context.parent_id or ""))
        if entities:
            self.calls.append((owner, entities))

    async def async_converse(self, index: int, script: Script) -> None:
        """One conversation's turns, each after the answer before it or (not `wait`) at once."""
        if script.wait:
            for number, text in enumerate(script.turns):
                await self._async_turn(index, script, number, text)
        else:  # the next turn while the first is being answered
            first = asyncio.create_task(self._async_turn(index, script, 0, script.turns[0]))
            await asyncio.sleep(0.05)
            await asyncio.gather(
                first, *(self._async_turn(index, script, n, t) for n, t in enumerate(script.turns) if n)
            )
        # Read at once: HA drops a chat log idle for 5 minutes, which a long run outlasts.
        self.in_order[index] = _in_order(self.stress, self._conversation_id(index), script)

    def _conversation_id(self, index: int) -> str:
        """The conversation's id, the engine's label in it so that both engines' runs differ."""
        return f"{self.label}-{index}"

    async def _async_turn(self, index: int, script: Script, number: int, text: str) -> None:
        """Send one turn as the script's user, its context marked as the conversation's for on_call."""
        context = Context(user_id=self.stress.users[script.user].id)
        self.contexts[context.id] = index
        started = time.monotonic()
        hass, cid = self.stress.hass, self._conversation_id(index)
        result = await conversation.async_converse(hass, text, cid, context, "en", self.stress.agent.agent_id)
        self.latencies.append(time.monotonic() - started)
        self.replies[(index, number)] = str(result.response.speech.get("plain", {}).get("speech", ""))

    def crossings(self, scripts: list[Script], before: dict[str, str]) -> list[str]:
        """Calls on another conversation's devices, and risky changes no yes in their conversation allowed."""
        crossed: list[str] = []
        owners: dict[str, set[int]] = {}
        for i, s in enumerate(scripts):
            for e in s.own:
                owners.setdefault(e, set()).add(i)
        for owner, entities in self.calls:
            for entity_id in entities:
                if entity_id in owners and owner is not None and owner not in owners[entity_id]:
                    crossed.append(
                        f"conversation {owner} called {entity_id} of conversation {sorted(owners[entity_id])}"
                    )
        for entity_id, state in before.items():
            now = self.stress.hass.states.get(entity_id)
            said_yes = any(entity_id in s.own and s.turns[-1] == "yes" for s in scripts)
            if now is not None and now.state != state and not said_yes:
                crossed.append(f"{entity_id} changed ({state} -> {now.state}) with no yes in its conversation")
        return crossed


async def _run_engine(stress: StressHome, label: str) -> dict[str, Any]:
    entry = stress.entry()
    # Each generation's wait for the engine (queued behind others), as the entry records it.
    stats = entry.runtime_data.stats
    waits: list[float] = []
    counted = stats.requests

    def on_figures() -> None:
        nonlocal counted
        if stats.requests > counted:
            counted = stats.requests
            waits.append(stats.recent[-1]["queued_seconds"])

    stop_listening = stats.async_add_listener(on_figures)
    scripts = _scripts()
    record = _Record(stress, label)
    await stress.home.async_reset()
    before = {e: s.state for e in RISKY if (s := stress.hass.states.get(e))}
    unsubscribe = stress.hass.bus.async_listen(EVENT_CALL_SERVICE, record.on_call)
    stop = asyncio.Event()
    stalls: list[float] = []
    monitor = asyncio.create_task(_loop_stalls(stop, stalls))
    started = time.monotonic()
    try:
        results = await asyncio.gather(
            *(asyncio.wait_for(record.async_converse(i, s), 600) for i, s in enumerate(scripts)),
            return_exceptions=True,
        )
        await stress.hass.async_block_till_done()
    finally:
        wall = time.monotonic() - started
        stop.set()
        await monitor
        unsubscribe()
        stop_listening()
    replies, latencies = record.replies, record.latencies
    turns = sum(len(s.turns) for s in scripts)
    lost = turns - sum(1 for text in replies.values() if text.strip())
    # An engine error is an answer, but not a served request: under load that is a flaw.
    failed = sum(1 for text in replies.values() if text.startswith(ENGINE_FAILED))
    crossed = record.crossings(scripts, before)
    disorder = [f"conversation {i}" for i in range(len(scripts)) if not record.in_order.get(i)]
    return {
        "conversations": len(scripts),
        "turns": turns,
        "answered": sum(
            1 for i, s in enumerate(scripts) if all(_served(replies.get((i, n), "")) for n in range(len(s.turns)))
        ),
        "engine_errors": failed,
        "lost": lost,
        "crossed": len(crossed),
        "out_of_order": len(disorder),
        "errors": [repr(r) for r in results if isinstance(r, BaseException)],
        "max_loop_stall_ms": round(max(stalls, default=0.0) * 1000, 1),
        "generations": len(waits),
        "max_queue_wait_s": round(max(waits, default=0.0), 2),
        "median_queue_wait_s": round(statistics.median(waits), 2) if waits else 0.0,
        "median_latency_s": round(statistics.median(latencies), 2) if latencies else 0.0,
        "wall_s": round(wall, 1),
        "crossings": crossed,
        "disorder": disorder,
        "replies": {f"{i}.{n}": text for (i, n), text in sorted(replies.items())},
    }


ENGINE_FAILED = "The model failed to answer"


def _served(reply: str) -> bool:
    return bool(reply.strip()) and not reply.startswith(ENGINE_FAILED)


def _in_order(stress: StressHome, conversation_id: str, script: Script) -> bool:
    """The chat log holds the conversation's turns in the order they were sent, each
    answered before the next began."""
    with (
        chat_session.async_get_chat_session(stress.hass, conversation_id) as session,
        conversation.async_get_chat_log(stress.hass, session) as chat_log,
    ):
        content = list(chat_log.content)
    users = [c.content for c in content if isinstance(c, conversation.UserContent)]
    if users != list(script.turns):
        return False
    kinds = [type(c).__name__ for c in content if not isinstance(c, conversation.SystemContent)]
    # Between two user turns, an answer.
    return all(kinds[i + 1] != "UserContent" for i, k in enumerate(kinds[:-1]) if k == "UserContent")


async def async_run(options: StressOptions) -> dict[str, Any]:
    out = options.out / "concurrency"
    out.mkdir(parents=True, exist_ok=True)
    engines: dict[str, Any] = {}
    async with stress_home(out / "embedded", model=options.model, threads=options.threads) as stress:
        engines["embedded"] = await _run_engine(stress, "embedded")
    async with (
        LlamaServer(EmbeddedOptions(str(options.model), n_ctx=8192, n_threads=options.threads, n_batch=512)) as server,
        stress_home(out / "remote", server=server.url, threads=options.threads) as stress,
    ):
        engines["llama-server"] = await _run_engine(stress, "remote")
    figures = list(engines.values())
    return {
        "conversations": figures[0]["conversations"],
        "answered": min(f["answered"] for f in figures),
        "lost": sum(f["lost"] for f in figures),
        "crossed": sum(f["crossed"] for f in figures),
        "out_of_order": sum(f["out_of_order"] for f in figures),
        "engine_errors": sum(f["engine_errors"] for f in figures),
        "max_loop_stall_ms": max(f["max_loop_stall_ms"] for f in figures),
        "max_queue_wait_s": max(f["max_queue_wait_s"] for f in figures),
        "engines": engines,
    }
