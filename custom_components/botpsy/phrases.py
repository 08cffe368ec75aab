"""What BotPsy says, in the language a request came in that is not English.

English is BotPsy's own wording (`core.reply`, `confirmation`). In another language an
action is said with HA's own per-language intent responses (home-assistant-intents, as
the built-in agent says "Allumé" or "Licht ausgeschaltet"), a state with HA's
translations of the state and of its attributes, and BotPsy's few phrases of its own
(asking first, leaving a held call, a failure) from its translations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
import re
from typing import Any

from homeassistant.components.conversation.agent_manager import get_agent_manager
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import TemplateError
from homeassistant.helpers import template, translation

from .const import DOMAIN
from .core.reply import attribute_value
from .language import SAID_BY, async_state_words

# A light's brightness or color said as HA's HassLightSet says it.
_LIGHT_SET = {"brightness": "brightness", "brightness_pct": "brightness", "rgb_color": "color", "color_name": "color"}
# Attributes a question is usually about, said with HA's translation of their name.
_FACTS = (
    "current_temperature", "temperature", "current_position", "brightness", "percentage", "volume_level", "media_title",
)  # fmt: skip


@dataclass(slots=True)
class Phrases:
    """The wording of one language: HA's intent responses and translations, BotPsy's own."""

    hass: HomeAssistant
    language: str
    responses: Mapping[str, Any]  # HA's intent responses: intent -> key -> template
    own: Mapping[str, str]  # BotPsy's translated phrases
    translated: Mapping[str, str]  # HA's translations of the devices' domains
    # HA's words for the states its questions ask of, by domain (`language.state_words`).
    asked_states: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def say(self, key: str, **placeholders: str) -> str:
        """One of BotPsy's own phrases, with its placeholders."""
        text = self.own.get(f"component.{DOMAIN}.exceptions.reply_{key}.message") or key
        return text.format(**placeholders)

    def _render(
        self, text: str, slots: Mapping[str, Any], entity_id: str | None, *, matched: bool = True
    ) -> str | None:
        state = self.hass.states.get(entity_id) if entity_id else None
        said = template.TemplateState(self.hass, state) if state else None
        found = [said] if said else []
        query = {"matched": found if matched else [], "unmatched": [] if matched else found}
        variables = {"slots": dict(slots), "state": said, "query": query}
        try:
            said = template.Template(text, self.hass).async_render(variables, parse_result=False)
        except TemplateError:
            return None
        return " ".join(str(said).split()) or None

    def _action(self, result: Mapping[str, Any]) -> tuple[str | None, str]:
        """How HA's intent response says what one call did, and the device's name."""
        arguments = result.get("arguments") or {}
        entity_id = str(arguments.get("entity_id") or "")
        domain = entity_id.split(".", 1)[0]
        name = str(result.get("target_name") or arguments.get("name") or entity_id)
        service = str(arguments.get("action") or "")
        intent = SAID_BY.get(service)
        key = next((_LIGHT_SET[a] for a in arguments if domain == "light" and a in _LIGHT_SET), None)
        if key is not None:
            intent = "HassLightSet"
        responses = self.responses.get(intent or "") or {}
        text = responses.get(key or domain) or responses.get("default") or next(iter(responses.values()), None)
        if not text:
            return None, name
        slots = {"name": name, **{k: v for k, v in arguments.items() if k not in ("entity_id", "action")}}
        return self._render(text, slots, entity_id or None), name

    def done(self, results: Sequence[Mapping[str, Any]]) -> str:
        """What the calls did: HA's own words for each action and the devices, the failures."""
        sentences: dict[str, list[str]] = {}
        for result in results:
            said, name = self._action(result)
            if result.get("error"):
                sentences.setdefault(self.say("not_changed", name=name), [])
            elif not (result.get("changes") or result.get("intent")) and result.get("unchanged_state"):
                sentences.setdefault(self.say("unchanged", name=name), [])
            elif said and name.casefold() in said.casefold():
                sentences.setdefault(said.rstrip(".") + ".", [])
            else:
                sentences.setdefault((said or self.say("done")).rstrip("."), []).append(name)
        return " ".join(f"{s}: {', '.join(dict.fromkeys(n))}." if n else s for s, n in sentences.items())

    def states(self, results: Sequence[Mapping[str, Any]], asked: str = "") -> str:
        """The facts read for a question, a sentence per device, in HA's translated words;
        where it `asked` whether one device is in a state, HA's yes or no first."""
        states = [r["state"] for r in results if isinstance(r.get("state"), Mapping)]
        states += [s for r in results for s in r.get("entities") or () if isinstance(s, Mapping) and "state" in s]
        said = self._facts(states)
        answer = self._yes_or_no(asked, states[0]) if len(states) == 1 and asked else None
        return f"{answer}, {said}" if answer and said else said

    def _yes_or_no(self, asked: str, state: Mapping[str, Any]) -> str | None:
        """HA's "Sí" or "Nein" to a question that names one state of the device read
        ("¿Está abierta la ventana del dormitorio?", which HA's sentences do not read:
        they say the state after the name); None where it names none, or several."""
        entity_id = str(state.get("entity_id") or "")
        words = self.asked_states.get(entity_id.split(".", 1)[0], {})
        text = asked.casefold()
        named = {out for word, out in words.items() if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text)}
        template_text = (self.responses.get("HassGetState") or {}).get("one_yesno")
        if len(named) != 1 or not template_text:
            return None
        rendered = self._render(template_text, {}, entity_id, matched=named == {state.get("state")})
        # Its first word: the rest of HA's answer says the state untranslated.
        return rendered.split(",")[0].split()[0] if rendered else None

    def _facts(self, states: Sequence[Mapping[str, Any]]) -> str:
        sentences = []
        for state in states:
            domain = str(state.get("entity_id", "")).split(".", 1)[0]
            unit = f" {state['unit_of_measurement']}" if state.get("unit_of_measurement") else ""
            facts = [
                f"{self._attribute_name(domain, key)} {attribute_value(key, state[key])}"
                for key in _FACTS
                if state.get(key) is not None
            ]
            text = (
                f"{state.get('name') or state.get('entity_id')}: {state.get('state_said') or state.get('state')}{unit}"
            )
            sentences.append(f"{text}, {', '.join(facts)}." if facts else f"{text}.")
        return " ".join(dict.fromkeys(sentences))

    def _attribute_name(self, domain: str, attribute: str) -> str:
        key = f"component.{domain}.entity_component._.state_attributes.{attribute}.name"
        return (self.translated.get(key) or attribute.replace("_", " ")).lower()

    def asked(self, actions: Iterable[tuple[str, str, str]]) -> str:
        """Asking first, in this language: each (domain, service, device) as HA names the
        service ("Déverrouiller Porte d'entrée")."""
        said = [
            f"{self.translated.get(f'component.{domain}.services.{service}.name') or service} {name}"
            for domain, service, name in actions
        ]
        return self.say("ask_first", actions=", ".join(said))


async def async_phrases(hass: HomeAssistant, language: str, domains: Iterable[str]) -> Phrases:
    """The wording of `language` for devices of `domains` (HA's intent responses as its
    built-in agent loaded them; translations as HA caches them)."""
    agent = get_agent_manager(hass).default_agent
    loaded = await agent.async_get_or_load_intents(language) if agent else None
    domains = sorted(set(domains))
    own = await translation.async_get_translations(hass, language, "exceptions", [DOMAIN])
    translated = {
        **await translation.async_get_translations(hass, language, "entity_component", domains),
        **await translation.async_get_translations(hass, language, "services", domains),
    }
    asked_states = await async_state_words(hass, language, loaded.intents) if loaded else {}
    return Phrases(hass, language, loaded.intent_responses if loaded else {}, own, translated, asked_states)
