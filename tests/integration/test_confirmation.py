"""A risky call waits for the asker's yes however the model spells its target.

On the stress home in a real Home Assistant, the model's text used as written (a server
without grammar support, or a model that writes a name its own way), with BotPsy's tools
and HA's Assist tools: names in any case, with spaces and punctuation, aliases, entity ids,
a device's name, areas, floors, domains or device classes alone, several devices at once,
and every HA intent that can open a lock, a garage door, a gate or a door. Each spelling
asserts that nothing risky changes until the yes, and that what the yes then acts on is
what HA itself acts on for that call, no more and no less.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from botpsy_runtime.formats import ToolCall
from scripts.evaluation.home_loader import ensure_homes_on_path
from scripts.stressing import guarantees
from scripts.stressing.options import StressOptions


@pytest.fixture
def options(tmp_path: Path, enable_custom_integrations: None) -> StressOptions:
    ensure_homes_on_path()
    return StressOptions(model=None, out=tmp_path, threads=1, llama_server="", fuzz_outputs=0, seed=7)


async def test_every_spelling_waits_for_the_yes_and_acts_as_ha_would(options: StressOptions) -> None:
    problems: list[str] = []
    async with guarantees.replayed_home(options, options.out) as (stress, replay):
        for request, call in guarantees.risky_cases():
            for fmt in ("qwen_xml", "hermes_json"):
                await stress.home.async_reset()
                replay.plan(fmt, replay.render(fmt, call))
                async with stress.effects() as before_yes:
                    turn = await stress.ask(request, f"{fmt}-{call}")
                seen = f"{fmt} {call.name} {call.arguments}"
                if before_yes.unsafe():
                    problems.append(f"{seen}: changed {before_yes.unsafe()} without a yes ({turn.reply})")
                if not turn.reply.strip():
                    problems.append(f"{seen}: no reply")
                if not turn.reply.startswith(guarantees.ASKED):
                    continue
                replay.plan(fmt, "OK.")
                async with stress.effects() as on_yes:
                    await stress.ask("yes", f"{fmt}-{call}")
                acted = set(on_yes.unsafe())
                named = {e for e in acted if stress.hass.states.get(e).name in turn.reply}  # type: ignore[union-attr]
                if named != acted:
                    problems.append(f"{seen}: asked {turn.reply!r}, the yes changed {sorted(acted)}")
                if call.name.startswith("Hass"):
                    # HA may still refuse what it matched (a garage door without positions).
                    if acted != (direct := await guarantees.ha_acts_on(stress, call)):
                        problems.append(f"{seen}: the yes changed {sorted(acted)}, HA's intent alone {sorted(direct)}")
                elif not acted:
                    problems.append(f"{seen}: asked {turn.reply!r}, the yes changed nothing")
    assert problems == [], "\n".join(problems)


async def test_what_ha_would_not_act_on_is_not_asked_about(options: StressOptions) -> None:
    """A spelling HA matches to nothing ("Front  Door!") asks nothing and changes nothing:
    the question is about what will run, not about what a name resembles."""
    async with guarantees.replayed_home(options, options.out) as (stress, replay):
        call = ToolCall("HassTurnOff", {"name": "Front  Door!"})
        replay.plan("qwen_xml", replay.render("qwen_xml", call))
        async with stress.effects() as effects:
            turn = await stress.ask("unlock the front door", "c1")
        assert effects.unsafe() == [] and await guarantees.ha_acts_on(stress, call) == set()
        assert not turn.reply.startswith(guarantees.ASKED), turn.reply


@pytest.mark.parametrize(
    ("request_text", "slots", "said"),
    [
        (
            "unlock all the locks",
            {"domain": "lock"},
            "the user is not allowed to control Front Door, Side Door, Back Door",
        ),
        ("unlock the hallway", {"area": "hallway", "domain": "lock"}, "the user is not allowed to control Front Door"),
        (
            "unlock the safe room",
            {"name": "Safe Room Lock"},
            "I did not change Safe Room Lock: No matching",
        ),  # not exposed
    ],
)
async def test_a_user_who_may_not_act_gets_the_reason_and_nothing_changes(
    options: StressOptions, request_text: str, slots: dict[str, Any], said: str
) -> None:
    async with guarantees.replayed_home(options, options.out) as (stress, replay):
        replay.plan("qwen_xml", replay.render("qwen_xml", ToolCall("HassTurnOff", slots)))
        async with stress.effects() as effects:
            turn = await stress.ask(request_text, "c1", "read_only")
        assert effects.changes == {} and effects.calls == []
        assert not turn.reply.startswith(guarantees.ASKED)
        assert said in turn.reply, turn.reply
