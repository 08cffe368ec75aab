"""Requests in other languages than English, in a real Home Assistant: HA's own intent
matching says whether they ask or act, replies are in the request's language (HA's own
intent responses and translations, BotPsy's translated phrases), and a held call is
answered with a yes or a no in that language."""

from __future__ import annotations

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.botpsy.core.formats import ToolCall

from .scripted import XML, script
from .test_agent import tool_results

UNLOCK = XML.render(ToolCall("lock", {"entity_id": "lock.front_door", "action": "unlock"}))


async def ask(hass: HomeAssistant, text: str, language: str, conversation_id: str | None = None) -> tuple[str, str]:
    result = await conversation.async_converse(
        hass, text, conversation_id, Context(), language=language, agent_id="conversation.botpsy"
    )
    return result.response.speech["plain"]["speech"], result.conversation_id or ""


async def test_a_french_question_never_acts_and_is_answered_in_french(
    hass: HomeAssistant, agent: MockConfigEntry
) -> None:
    """HA's French sentences know "est-ce que … est allumée": a question, whatever the model
    writes; what it reads is said with HA's French words."""
    switch_on = XML.render(ToolCall("light", {"entity_id": "light.bed_light", "action": "turn_on"}))
    engine = script(agent, switch_on, switch_on)
    speech, conversation_id = await ask(hass, "Est-ce que Bed Light est allumée ?", "fr")
    assert hass.states.get("light.bed_light").state == "off"  # type: ignore[union-attr]
    assert tool_results(hass, conversation_id) == []
    assert "light-turn-on" not in (engine.requests[0].grammar or "")
    assert speech == "Désolé, je n'ai pas pu terminer cette demande."
    read = XML.render(ToolCall("get_state", {"entity_id": "climate.hvac"}))
    script(agent, read)
    speech, _conversation_id = await ask(hass, "Quelle est la température de Hvac ?", "fr")
    assert speech.startswith("Hvac: ") and "température actuelle" in speech, speech


async def test_an_unlock_asked_in_french_waits_for_oui(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine = script(agent, UNLOCK, UNLOCK)
    speech, conversation_id = await ask(hass, "Déverrouille Front Door", "fr")
    assert hass.states.get("lock.front_door").state == "locked"  # type: ignore[union-attr]
    assert speech == "Par sécurité, je demande d'abord : Déverrouiller la serrure Front Door ?"
    speech, _conversation_id = await ask(hass, "Non", "fr", conversation_id)
    assert speech == "D'accord, je laisse Front Door comme avant."
    assert hass.states.get("lock.front_door").state == "locked"  # type: ignore[union-attr]
    speech, conversation_id = await ask(hass, "Déverrouille Front Door", "fr")
    speech, _conversation_id = await ask(hass, "Oui, vas-y", "fr", conversation_id)
    assert hass.states.get("lock.front_door").state == "unlocked"  # type: ignore[union-attr]
    # HA's own French response for unlocking, and the device.
    assert speech == "Déverrouillé: Front Door.", speech
    assert len(engine.requests) == 2  # the answers needed no model


async def test_a_german_action_is_said_in_german(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    call = XML.render(ToolCall("light", {"entity_id": "light.kitchen_lights", "action": "turn_off"}))
    script(agent, call)
    speech, _conversation_id = await ask(hass, "Schalte Kitchen Lights aus", "de")
    assert hass.states.get("light.kitchen_lights").state == "off"  # type: ignore[union-attr]
    assert speech == "Licht ausgeschaltet: Kitchen Lights.", speech
