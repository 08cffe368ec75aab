"""Requests in other languages than English, in a real Home Assistant: HA's own intent
matching says whether they ask or act, replies are in the request's language (HA's own
intent responses and translations, BotPsy's translated phrases), and a held call is
answered with a yes or a no in that language."""

from __future__ import annotations

from dataclasses import replace

from hassil.intents import Intents
from home_assistant_intents import get_intents
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from botpsy_runtime.formats import ToolCall
from custom_components.botpsy.core.home import HomeEntity
from custom_components.botpsy.core.requested import VALUE_SERVICES, Named, named_in
from custom_components.botpsy.language import (
    INTENT_SERVICES,
    Recognized,
    asked_services,
    async_recognize,
    first_words,
    in_another_script,
    joined_parts,
    named_by_slots,
    outdoors,
    read_in_language,
    said_degrees,
    said_share,
    says_value,
)
from scripts.testing.scripted import XML, script

from .test_agent import async_put_in_den, tool_results

UNLOCK = XML.render(ToolCall("lock", {"entity_id": "lock.front_door", "action": "unlock"}))


async def ask(hass: HomeAssistant, text: str, language: str, conversation_id: str | None = None) -> tuple[str, str]:
    result = await conversation.async_converse(
        hass, text, conversation_id, Context(), language=language, agent_id="conversation.botpsy"
    )
    return result.response.speech["plain"]["speech"], result.conversation_id or ""


async def test_a_french_question_never_acts_and_is_answered_in_french(
    hass: HomeAssistant, model_agent: MockConfigEntry
) -> None:
    """HA's French sentences know "est-ce que … est allumée": a question, whatever the model
    writes; what it reads is said with HA's French words."""
    agent = model_agent
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


async def test_a_french_question_has_sentences_read_gets_has_french_answer(
    hass: HomeAssistant, agent: MockConfigEntry
) -> None:
    """Where HA's French sentences read the question, HA's own intents answer it, in French;
    a bare yes or no says how the device is, in HA's words."""
    engine = script(agent)
    assert (await ask(hass, "Est-ce que Bed Light est allumée ?", "fr"))[0] == "Non, Bed Light: éteint."
    assert hass.states.get("light.bed_light").state == "off"  # type: ignore[union-attr]
    assert engine.requests == []


@pytest.mark.parametrize(
    ("asked", "on", "answer"),
    [
        (("¿Está encendida Bed Light?", "es"), True, "Sí, Bed Light: "),
        (("¿Está apagada Bed Light?", "es"), True, "No, Bed Light: "),
        (("Ist Bed Light denn an?", "de"), False, "Nein, Bed Light: aus."),
        (("Ist Bed Light denn an?", "de"), True, "Ja, Bed Light: "),
        (("Bed Light, elle est allumée là ?", "fr"), True, "Oui, Bed Light: allumé"),
        (("¿Cómo está Bed Light?", "es"), True, "Bed Light: "),
    ],
)
async def test_a_question_of_one_state_hass_sentences_miss_gets_has_yes_or_no(
    hass: HomeAssistant, model_agent: MockConfigEntry, asked: tuple[str, str], on: bool, answer: str
) -> None:
    """ "¿Está abierta la ventana?" (HA's Spanish sentences say the state after the name):
    the model reads the device, and the answer starts with HA's own yes or no for the
    state the question names (the reply said how it was, with no "sí"); none where it
    names no state."""
    await hass.services.async_call("light", "turn_on" if on else "turn_off", {"entity_id": "light.bed_light"})
    await hass.async_block_till_done()
    engine = script(model_agent, XML.render(ToolCall("get_state", {"entity_id": "light.bed_light"})))
    speech, _conversation_id = await ask(hass, *asked)
    assert speech.startswith(answer), speech
    assert len(engine.requests) == 1, "HA's sentences read it: the test asks nothing of them"


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
    assert engine.requests == []  # HA's own French sentence read it; the answers need no model


async def test_a_german_action_is_said_in_german(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    call = XML.render(ToolCall("light", {"entity_id": "light.kitchen_lights", "action": "turn_off"}))
    script(agent, call)
    speech, _conversation_id = await ask(hass, "Schalte Kitchen Lights aus", "de")
    assert hass.states.get("light.kitchen_lights").state == "off"  # type: ignore[union-attr]
    assert speech == "Licht ausgeschaltet: Kitchen Lights.", speech


def _intents() -> Intents:
    return Intents.from_dict(
        {
            "language": "fr",
            "intents": {
                "HassTurnOff": {"data": [{"sentences": ["(éteins|éteindre|coupe) [le|la] {name}"]}]},
                "HassTurnOn": {"data": [{"sentences": ["<allume> [le|la] {name}"]}]},
                "HassGetState": {"data": [{"sentences": ["est-ce que {name} est allumée", "[le|la] {name} est-il"]}]},
            },
            "lists": {"name": {"values": ["lampe"]}},
            "expansion_rules": {"allume": "allum(e|er)"},
            "skip_words": ["tu peux", "s'il te plaît"],
        }
    )


def test_unrecognised_requests_are_read_by_how_has_sentences_start() -> None:
    """A request HA's intents did not match is a question only if it ends with a question
    mark and does not start (past HA's skip words) as sentences for an action do; its
    first word tells the intents (and services) its verb may mean."""
    words = first_words(_intents())
    assert words.asks("Est-ce que la lampe de la cuisine est allumée ?")
    assert words.asks("La lampe du salon est allumée ?")
    assert not words.asks("Tu peux éteindre la lampe du salon ?")
    assert not words.asks("Tu peux allumer la lampe, s'il te plaît ?")  # "allum*": HA's alternatives
    assert not words.asks("Éteins la lampe")  # no question mark
    # A request that asks politely: a pronoun or a way of asking before its verb.
    assert not words.asks("Tu m'allumes la lampe ?")
    assert not words.asks("Tu me coupes la lampe ?")
    assert not words.asks("Pourriez-vous éteindre la lampe ?")
    assert words.asks("Vous pouvez me dire si la lampe est allumée ?")
    # Asking to be told is a question, with a question mark or not.
    assert words.asks("Dis-moi si la lampe est allumée")
    assert words.asks("Regarde si la lampe est allumée")
    assert not words.asks("Regarde, allume la lampe")
    assert words.likely("Tu m\u2019allumes la lampe ?") == {"HassTurnOn"}
    # A verb said again, or with its pronoun, after a word that tells nothing of it.
    assert words.likely("Bon, rallume-la") == {"HassTurnOn"}
    assert words.likely("Finalement, recoupe-les") == {"HassTurnOff"}
    assert words.likely("Coupe la lampe du salon") == {"HassTurnOff"}
    assert words.likely("Allumer la lampe") == {"HassTurnOn"}
    assert words.likely("La lampe est allumée ?") == frozenset()


def test_a_german_verb_is_read_by_its_first_and_last_words() -> None:
    """ "Mach … aus", "Küche Deckenlampe aus": a German verb's particle comes last, and
    says which of the intents its first word starts is meant."""
    intents = Intents.from_dict(
        {
            "language": "de",
            "intents": {
                "HassTurnOff": {"data": [{"sentences": ["(schalte|mach) {name} (aus|ab)", "{name} aus[schalten]"]}]},
                "HassTurnOn": {
                    "data": [
                        {"sentences": ["(schalte|mach) {name} (an|ein)", "führe {name} aus", "{name} (ein|an)schalten"]}
                    ]
                },
                "HassBroadcast": {"data": [{"sentences": ["im ganzen Haus {name} durchsagen"]}]},
                "HassGetState": {"data": [{"sentences": ["ist {name} (an|aus)"]}]},
            },
            "lists": {"name": {"values": ["lampe"]}},
            "skip_words": ["kannst du", "kannst du mir", "bitte"],
        }
    )
    words = first_words(intents)
    assert words.likely("Mach im Schlafzimmer das ganze Licht aus") == {"HassTurnOff"}
    assert words.likely("Schalte den Handtuchwärmer ein") == {"HassTurnOn"}
    assert words.likely("Küche Deckenlampe ausschalten") == {"HassTurnOff"}  # not "führe … aus"
    # "(ein|an)schalten" ends with "einschalten", not with any "…schalten".
    assert words.likely("Küche Deckenlampe einschalten") == {"HassTurnOn"}
    assert words.likely("Mach die Lampe heller") == {"HassTurnOff", "HassTurnOn"}  # the first word alone
    # The imperative without its "e" ("schalt" for "schalte"); not a shorter word.
    assert words.likely("Schalt die Lampe ab") == {"HassTurnOff"}
    assert words.likely("Scha die Lampe ab") == frozenset()
    # A place said first, which starts sentences of another intent: the verb said last.
    assert words.likely("Im Flur bitte die Lampe ausschalten") == {"HassTurnOff"}
    assert words.likely("Im Flur bitte die Lampe einschalten") == {"HassTurnOn"}
    # Asked politely, the verb comes last: a request, not a question.
    assert not words.asks("Kannst du die Lampe im Flur ausschalten?")
    assert words.likely("Kannst du die Lampe im Flur ausschalten?") == {"HassTurnOff"}
    assert words.asks("Kannst du mir sagen, ob die Lampe an ist?")
    assert words.asks("Sag mir, ob die Lampe an ist")
    assert words.asks("Schau mal nach, ob die Lampe an ist")
    assert words.asks("Ist die Lampe im Flur aus?")


def test_kinds_and_floors_said_in_german_name_every_one_of_them() -> None:
    """Where HA's sentences do not read the request, its words still say the kind, "all"
    and the floor by where it is (the 0.5B switched one light, or read an area's states)."""
    intents = Intents.from_dict(
        {
            "language": "de",
            "intents": {"HassTurnOff": {"data": [{"sentences": ["schalte {name} aus"]}]}},
            "lists": {
                "name": {"values": ["x"]},
                "cover_classes": {
                    "values": [
                        {"in": "(Rollladen|Rollläden)", "out": "shutter"},
                        {"in": "Vorh(a|ä)ng[e]", "out": "curtain"},
                    ]
                },
            },
        }
    )
    words = first_words(intents)
    home = (
        HomeEntity("light.kuche", "Deckenlampe Küche", area="Küche", floor="EG", floor_level=0),
        HomeEntity("light.bett", "Nachttischlampe", area="Schlafzimmer", floor="OG", floor_level=1),
        HomeEntity("cover.wohnzimmer", "Rollladen Wohnzimmer", area="Wohnzimmer", floor="EG", device_class="shutter"),
        HomeEntity(
            "cover.schlafzimmer", "Schlafzimmervorhang", area="Schlafzimmer", floor="OG", device_class="curtain"
        ),
        HomeEntity("switch.kaffee", "Kaffeemaschine", area="Küche", floor="EG", floor_level=0),
        HomeEntity("fan.bad", "Abzug", area="Badezimmer", area_aliases=("Bad",), floor="OG", floor_level=1),
    )

    def fitting(text: str) -> set[str]:
        named = words.said(text).named(named_in(text, home), home, None)
        assert named.all_that_fit, text
        return {e.entity_id for e in home if named.fits(e)}

    assert fitting("Mach alle Lichter im ganzen Haus aus") == {"light.kuche", "light.bett"}
    assert fitting("Unten alle Lampen aus") == {"light.kuche"}
    assert fitting("Mach im Schlafzimmer das ganze Licht aus") == {"light.bett"}
    assert fitting("Schließ alle Rollläden und Vorhänge") == {"cover.wohnzimmer", "cover.schlafzimmer"}
    # A place and a kind in one word.
    assert fitting("Mach das Küchenlicht aus") == {"light.kuche"}
    assert fitting("Schlafzimmervorhänge auf 50 Prozent") == {"cover.schlafzimmer"}
    assert fitting("Wohnzimmerrollläden runter") == {"cover.wohnzimmer"}
    assert fitting("Badlüfter an") == {"fan.bad"}  # the area's other name


def test_a_device_named_by_a_word_of_its_name_is_that_device_alone() -> None:
    """ "Coupe la guirlande du salon" is the Guirlande lumineuse, not the salon's shutters
    (the 0.5B closed them); "la lámpara de techo" is the Lámpara de techo del salón, not
    the other lamps (the 0.5B switched off the floor lamp); a word of every name of the
    kind ("la lámpara") narrows nothing."""
    home = (
        HomeEntity("light.guirlande", "Guirlande lumineuse", area="Salon"),
        HomeEntity("light.lampadaire", "Lampadaire", area="Salon"),
        HomeEntity("cover.volets", "Volets du salon", area="Salon", device_class="shutter"),
        HomeEntity("light.plafonnier", "Plafonnier chambre", area="Chambre"),
        HomeEntity("light.chevet", "Lampe de chevet", area="Chambre"),
        HomeEntity("light.techo", "Lámpara de techo del salón", area="Salón"),
        HomeEntity("light.pie", "Lámpara de pie", area="Salón"),
        HomeEntity("fan.techo", "Ventilador de techo", area="Dormitorio"),
    )

    def fitting(text: str, language: str) -> set[str]:
        words = first_words(Intents.from_dict({"language": language, "intents": {}}))
        named = words.said(text).named(named_in(text, home), home, None)
        return {e.entity_id for e in home if named.fits(e)}

    assert fitting("Coupe la guirlande du salon", "fr") == {"light.guirlande"}
    assert fitting("Éteins le plafonnier de la chambre", "fr") == {"light.plafonnier"}
    assert fitting("Éteins tout dans le salon", "fr") == {"light.guirlande", "light.lampadaire", "cover.volets"}
    assert fitting("Apaga la lámpara de techo", "es") == {"light.techo"}
    lights = {e.entity_id for e in home if e.domain == "light"}
    assert fitting("Apaga la lámpara", "es") == lights


def test_a_plural_of_a_word_of_several_names_is_every_one_of_them() -> None:
    """ "Enciende las mesitas" for Mesita izquierda and Mesita derecha, "éteins toutes les
    prises": every device of one domain whose name has the word (the 0.5B switched one); in
    the singular it is still one of them, and words of names of several domains say none.
    A cover named with the word of its kind is of it: "las persianas del salón" where the
    shutters are named Persiana (a blind in HA's Spanish: the 0.5B found nothing)."""
    home = (
        HomeEntity("light.izquierda", "Mesita izquierda", area="Dormitorio"),
        HomeEntity("light.derecha", "Mesita derecha", area="Dormitorio"),
        HomeEntity("switch.tele", "Enchufe de la tele", area="Salón"),
        HomeEntity("switch.despacho", "Enchufe del despacho", area="Despacho"),
        HomeEntity("cover.ventanal", "Persiana del ventanal", area="Salón", device_class="shutter"),
        HomeEntity("cover.ventana", "Persiana de la ventana", area="Salón", device_class="shutter"),
        HomeEntity("cover.dormitorio", "Persiana del dormitorio", area="Dormitorio", device_class="shutter"),
        HomeEntity("cover.estor", "Estor", area="Niños", device_class="blind"),
        HomeEntity("light.ventana", "Luz de la ventana", area="Salón"),
    )
    intents = Intents.from_dict(
        {
            "language": "es",
            "intents": {},
            "lists": {"cover_classes": {"values": [{"in": "persiana[s]", "out": "blind"}]}},
        }
    )
    words = first_words(intents)

    def meant(text: str) -> Named:
        named = named_in(text, home)
        if "salón" in text:
            named = replace(named, areas=frozenset({"Salón"}))
        return words.said(text).named(named, home, None)

    def every_one(text: str) -> set[str]:
        named = meant(text)
        assert named.every and named.all_that_fit, text  # a call is spread over all of them
        return set(named.entity_ids)

    assert every_one("Enciende las mesitas") == {"light.izquierda", "light.derecha"}
    assert every_one("Apaga todos los enchufes") == {"switch.tele", "switch.despacho"}
    assert every_one("Cierra todas las persianas del salón") == {"cover.ventanal", "cover.ventana"}
    assert every_one("Sube todas las persianas") == {
        "cover.ventanal",
        "cover.ventana",
        "cover.dormitorio",
        "cover.estor",
    }
    # ... so where HA's sentences read the kind (its "persianas" are blinds).
    blinds = Recognized(
        "HassTurnOff",
        {"device_class": "blind", "area": "Salón", "domain": "cover"},
        question=False,
        texts={"device_class": "persianas", "area": "salón"},
    )
    text = "Baja las persianas del salón"
    read, _question = read_in_language(text, named_in(text, home), home, blinds, "es")
    assert read.all_that_fit and set(read.entity_ids) == {"cover.ventanal", "cover.ventana"}
    # The singular is one of them; a word of the names of a cover and of a light, neither.
    assert not meant("Enciende la mesita").every and not meant("Enciende la mesita").entity_ids
    assert not meant("Abre las ventanas").entity_ids
    # A kind said in one word with what is no place: the lamps so named, not every lamp.
    german = first_words(Intents.from_dict({"language": "de", "intents": {}}))
    lamps = (
        HomeEntity("light.links", "Nachttischlampe links", area="Schlafzimmer"),
        HomeEntity("light.rechts", "Nachttischlampe rechts", area="Schlafzimmer"),
        HomeEntity("light.steh", "Stehlampe", area="Wohnzimmer"),
        HomeEntity("light.decke", "Deckenlampe Schlafzimmer", area="Schlafzimmer"),
        HomeEntity("light.kuche", "Deckenlampe Küche", area="Küche"),
    )
    for text in ("Mach die Nachttischlampen an", "Schalte beide Nachttischlampen ein"):
        named = german.said(text).named(named_in(text, lamps), lamps, None)
        assert named.all_that_fit and named.entity_ids == {"light.links", "light.rechts"}, text
    # ... in the place said: "die Deckenlampe im Schlafzimmer" (the 0.5B had every lamp there).
    for text in ("Mach die Deckenlampe im Schlafzimmer aus", "Ist die Deckenlampe im Schlafzimmer an?"):
        named = german.said(text).named(named_in(text, lamps), lamps, None)
        assert {e.entity_id for e in lamps if named.fits(e)} == {"light.decke"}, text
    # A kind said in the plural is every one of it (said to a satellite, those in its area).
    fans = (
        HomeEntity("fan.chambre", "Ventilo chambre", area="Chambre"),
        HomeEntity("fan.bureau", "Ventilo bureau", area="Bureau"),
    )
    french = first_words(Intents.from_dict({"language": "fr", "intents": {}}))
    for text, here, meant in (
        ("Arrête les ventilateurs", None, {"fan.chambre", "fan.bureau"}),
        ("Arrête les ventilateurs", "Bureau", {"fan.bureau"}),
    ):
        named = french.said(text).named(named_in(text, fans), fans, here)
        assert named.all_that_fit and {e.entity_id for e in fans if named.fits(e)} == meant, (text, here)
    assert not french.said("Arrête le ventilateur").named(named_in("Arrête le ventilateur", fans), fans, None).every
    assert german.said("Mach die Lichter aus").plural and not german.said("Mach das Licht aus").plural


def test_floors_and_lights_said_in_more_words() -> None:
    """ "Les lumières du haut" is the upper floor's (the 0.5B switched one light off);
    "toda la iluminación" every light."""
    home = (
        HomeEntity("light.bas", "Lampadaire", area="Salon", floor="RDC", floor_level=0),
        HomeEntity("light.haut", "Chevet", area="Chambre", floor="Étage", floor_level=1),
        HomeEntity("light.haut2", "Veilleuse", area="Enfants", floor="Étage", floor_level=1),
    )
    for language, text, meant in (
        ("fr", "Éteins les lumières du haut", {"light.haut", "light.haut2"}),
        ("fr", "Allume la lumière d'en bas", {"light.bas"}),
        ("es", "Apaga toda la iluminación", {"light.bas", "light.haut", "light.haut2"}),
    ):
        words = first_words(Intents.from_dict({"language": language, "intents": {}}))
        named = words.said(text).named(named_in(text, home), home, None)
        assert named.all_that_fit and {e.entity_id for e in home if named.fits(e)} == meant, text


@pytest.mark.parametrize(
    ("language", "text", "meant"),
    [
        ("fr", "Allume partout en haut", {"light.haut", "light.haut2"}),
        ("fr", "Éteins tout dans le salon", {"light.bas"}),
        ("es", "Apaga todo en el salón", {"light.bas"}),
        # Not a verb HA's sentences also say of covers.
        ("fr", "Ferme tout dans le salon", {"light.bas", "cover.bas", "media_player.bas"}),
        # Everything, with no place: every light ("todo" is no to-do list).
        ("es", "Apaga todo", {"light.bas", "light.haut", "light.haut2"}),
        ("fr", "Éteins tout", {"light.bas", "light.haut", "light.haut2"}),
        # ... and said with no such verb, still nothing named.
        ("es", "Muchas gracias, eso es todo", set()),
    ],
)
def test_a_place_said_with_a_verb_of_lights_alone_is_its_lights(language: str, text: str, meant: set[str]) -> None:
    """HA reads "allume {floor}", "apaga {area}" as the place's lights; so is the place
    said in words its sentences do not read ("partout en haut": the 0.5B was given every
    device upstairs, shutters and sensors too)."""
    home = (
        HomeEntity("light.bas", "Lampadaire", area="Salon", area_aliases=("Salón",), floor="RDC", floor_level=0),
        HomeEntity("cover.bas", "Volet", area="Salon", area_aliases=("Salón",), floor="RDC", floor_level=0),
        HomeEntity("media_player.bas", "Enceinte", area="Salon", area_aliases=("Salón",), floor="RDC", floor_level=0),
        HomeEntity("light.haut", "Chevet", area="Chambre", floor="Étage", floor_level=1),
        HomeEntity("light.haut2", "Veilleuse", area="Enfants", floor="Étage", floor_level=1),
        HomeEntity("todo.compra", "Lista de la compra"),
    )
    words = first_words(Intents.from_dict(get_intents(language)))
    named = words.said(text).named(named_in(text, home), home, None)
    assert {e.entity_id for e in home if named.fits(e)} == meant, text


@pytest.mark.parametrize(
    ("language", "text", "meant"),
    [
        ("fr", "Éteins toutes les lumières sauf les spots", {"light.plafon", "light.aplique", "light.pie"}),
        # "Tout" names no kind: every other one of the kind left out, never it alone.
        ("fr", "Éteins tout sauf les spots", {"light.plafon", "light.aplique", "light.pie"}),
        ("es", "Apágalo todo en el salón menos el aplique", {"light.pie"}),
        ("es", "Apaga todas las luces menos los focos", {"light.plafon", "light.aplique", "light.pie"}),
        ("es", "Apaga las luces del salón excepto el aplique", {"light.pie"}),
        ("de", "Mach alle Lichter aus außer den Strahlern", {"light.plafon", "light.aplique", "light.pie"}),
        ("de", "Schalte im Salon alle Lampen aus, außer der Wandleuchte", {"light.pie"}),
    ],
)
def test_what_a_request_for_all_leaves_out_is_left_out(language: str, text: str, meant: set[str]) -> None:
    """ "Sauf", "menos", "außer": every other device of the kind or place (the 0.5B switched
    off the one left out alone); what is left out is no request of its own."""
    home = (
        HomeEntity("light.spots", "Spots", aliases=("Focos", "Strahler"), area="Cocina"),
        HomeEntity("light.plafon", "Plafón", area="Cocina"),
        HomeEntity("light.aplique", "Aplique", aliases=("Wandleuchte",), area="Salón", area_aliases=("Salon",)),
        HomeEntity("light.pie", "Lámpara de pie", area="Salón", area_aliases=("Salon",)),
    )
    words = first_words(Intents.from_dict({"language": language, "intents": {}}))
    named = words.said(text).named(named_in(text, home), home, None)
    assert named.every and set(named.entity_ids) == meant, text
    assert len(joined_parts(text, language)) == 1


def test_a_verb_restricts_the_services_unless_two_requests_are_joined() -> None:
    lamp = HomeEntity("light.lampe", "Lampe", area="Salon")
    fan = HomeEntity("fan.ventilo", "Ventilo", area="Salon")
    off = Recognized(None, {}, question=False, likely=frozenset({"HassTurnOff"}))
    named = Named(frozenset({"light.lampe"}), frozenset(), frozenset(), ())
    read, question = read_in_language("Éteins la lampe", named, (lamp, fan), off, "fr")
    assert not question and read.services == (INTENT_SERVICES["HassTurnOff"],) and not read.several
    both = Named(frozenset({"light.lampe", "fan.ventilo"}), frozenset(), frozenset(), ())
    read, _question = read_in_language("Éteins la lampe et allume le ventilo", both, (lamp, fan), off, "fr")
    assert read.several and read.services == ()
    # A value said is set, whatever the verb starts ("baisse" also starts closing).
    for request in ("Baisse la lampe à 20 %", "Stell die Lampe auf 21 Grad", "Pon la lampara al 50 por ciento"):
        read, _question = read_in_language(request, named, (lamp, fan), off, "fr")
        assert read.services == VALUE_SERVICES, request
    # One word before a comma is no request of its own: the half said is the value set.
    for request, language in (("Finalement, referme-les à moitié", "fr"), ("Ach, mach sie halb auf", "de")):
        read, _question = read_in_language(request, named, (lamp, fan), off, language)
        assert read.services == VALUE_SERVICES and read.share == 0.5, request
    # A name before a comma is a request of its own.
    assert joined_parts("Bouilloire, lampe de chevet et ventilateur", "fr") == [
        "Bouilloire",
        "lampe de chevet",
        "ventilateur",
    ]
    # "Both X and Y" joins them.
    assert joined_parts("Enciende tanto la cafetera como el enchufe de la tele", "es") == [
        "Enciende la cafetera",
        "el enchufe de la tele",
    ]
    assert len(joined_parts("Schalte sowohl die Kaffeemaschine als auch den Fernseher ein", "de")) == 2
    assert len(joined_parts("Allume à la fois la lampe et le ventilo", "fr")) == 2
    assert joined_parts("Pon la luz tan brillante como ayer", "es") == ["Pon la luz tan brillante como ayer"]
    # HA's reading names the area's devices of a domain: every light there, nothing else.
    by_slots = named_by_slots({"area": "salon", "domain": "light"}, (lamp, fan))
    assert by_slots is not None and by_slots.fits(lamp) and not by_slots.fits(fan) and by_slots.all_that_fit
    # A word for several classes ("stores": blinds and shades) is each of them, no other cover.
    covers = (
        HomeEntity("cover.store", "Store", area="Salon", device_class="blind"),
        HomeEntity("cover.toile", "Toile", area="Salon", device_class="shade"),
        HomeEntity("cover.volet", "Volet", area="Salon", device_class="shutter"),
    )
    by_slots = named_by_slots({"area": "salon", "device_class": "blind,shade", "domain": "cover"}, covers)
    assert by_slots is not None and [c.entity_id for c in covers if by_slots.fits(c)] == ["cover.store", "cover.toile"]


async def test_the_agent_offers_the_languages_it_was_measured_in(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    """HA offers the agent to voice assistants of these languages only (no more "*")."""
    entity = hass.data[conversation.const.DATA_COMPONENT].get_entity("conversation.botpsy")
    assert entity is not None and entity.supported_languages == ["en", "de", "fr", "es"]


async def test_a_french_request_for_one_thing_is_one_call(hass: HomeAssistant, model_agent: MockConfigEntry) -> None:
    """As in English, the grammar of a request for one device allows one call: a small
    model otherwise reads area after area instead of acting."""
    engine = script(model_agent, XML.render(ToolCall("light", {"entity_id": "light.bed_light", "action": "turn_on"})))
    await ask(hass, "Allume Bed Light", "fr")
    assert hass.states.get("light.bed_light").state == "on"  # type: ignore[union-attr]
    assert 'calls ::= call ( "\\n" call ){0,0}' in (engine.requests[0].grammar or "")


async def test_a_french_request_joining_two_may_be_two_calls(hass: HomeAssistant, model_agent: MockConfigEntry) -> None:
    """ "X et Y" that BotPsy's word rules cannot read: the model may write a call for each."""
    bed = XML.render(ToolCall("light", {"entity_id": "light.bed_light", "action": "turn_on"}))
    kitchen = XML.render(ToolCall("light", {"entity_id": "light.kitchen_lights", "action": "turn_off"}))
    engine = script(model_agent, f"{bed}\n{kitchen}")
    await ask(hass, "Allume donc la lampe du lit et éteins la cuisine", "fr")
    assert 'calls ::= call ( "\\n" call ){0,0}' not in (engine.requests[0].grammar or "")


async def test_a_french_request_joining_two_is_done_one_part_at_a_time(
    hass: HomeAssistant, model_agent: MockConfigEntry
) -> None:
    """HA's French sentences read neither part whole: the model is asked for each part in
    turn, and may act only on what that part names (the 0.5B did the first part alone,
    or the first part's action on both)."""
    kitchen_off = XML.render(ToolCall("light", {"entity_id": "light.kitchen_lights", "action": "turn_off"}))
    bed_on = XML.render(ToolCall("light", {"entity_id": "light.bed_light", "action": "turn_on"}))
    engine = script(model_agent, kitchen_off, bed_on)
    speech, _conversation_id = await ask(hass, "Coupe vite Kitchen Lights, puis mets Bed Light en marche", "fr")
    assert hass.states.get("light.kitchen_lights").state == "off", speech  # type: ignore[union-attr]
    assert hass.states.get("light.bed_light").state == "on", speech  # type: ignore[union-attr]
    first, second = (request.grammar or "" for request in engine.requests)
    assert "light.kitchen_lights" in first and "light.bed_light" not in first
    assert "light.bed_light" in second and "light.kitchen_lights" not in second


async def test_each_part_is_done_with_its_own_verb_and_no_value_unsaid(
    hass: HomeAssistant, model_agent: MockConfigEntry
) -> None:
    """A part HA's sentences do not read takes its own verb, not the part before's
    ("éteins" after "ouvre" is no opening); a part that asks an action may not only
    read (the 0.5B read the second device instead); and a part that says no value may
    set none (the 0.5B switched a lamp on at 12 %)."""
    bed_on = XML.render(ToolCall("light", {"entity_id": "light.bed_light", "action": "turn_on"}))
    window = XML.render(ToolCall("cover", {"entity_id": "cover.kitchen_window", "action": "close_cover"}))
    engine = script(model_agent, bed_on, window)
    speech, _conversation_id = await ask(hass, "Allume vite Bed Light, puis ferme vite Kitchen Window", "fr")
    assert hass.states.get("light.bed_light").state == "on", speech  # type: ignore[union-attr]
    first, second = (request.grammar or "" for request in engine.requests)
    assert '"turn_on"' in first and "brightness" not in first
    assert '"close_cover"' in second and '"open_cover"' not in second and "get_state" not in second


@pytest.mark.parametrize(
    ("request_text", "language"),
    [
        ("Ferme vite Kitchen Window et la Hall Window", "fr"),
        ("Cierra rápido Kitchen Window y la Hall Window", "es"),
        ("Schließe schnell Kitchen Window und die Hall Window", "de"),
    ],
)
async def test_a_part_without_a_verb_takes_the_verb_before_it(
    hass: HomeAssistant, model_agent: MockConfigEntry, request_text: str, language: str
) -> None:
    """ "Ferme les volets et les rideaux": the second part says no verb (its article starts
    sentences of every kind), so it closes as the first does (the 0.5B opened the
    curtains); and "cierra", "schließe" (which also start locking a lock) open no cover."""
    kitchen = XML.render(ToolCall("cover", {"entity_id": "cover.kitchen_window", "action": "close_cover"}))
    hall = XML.render(ToolCall("cover", {"entity_id": "cover.hall_window", "action": "close_cover"}))
    engine = script(model_agent, kitchen, hall)
    await ask(hass, request_text, language)
    grammars = [request.grammar or "" for request in engine.requests]
    assert len(grammars) == 2, grammars
    for grammar in grammars:
        assert '"close_cover"' in grammar and '"open_cover"' not in grammar


@pytest.mark.parametrize(
    "request_text", ["Bitte das Window in der Kitchen schließen", "Kannst du das Window in der Kitchen schließen?"]
)
async def test_a_german_verb_said_last_that_locks_a_lock_closes_a_cover(
    hass: HomeAssistant, model_agent: MockConfigEntry, request_text: str
) -> None:
    """HA's German sentences end with "schließen" only to lock a lock: said last of a
    cover, it closes the cover (asked politely, too), and opens none."""
    kitchen = XML.render(ToolCall("cover", {"entity_id": "cover.kitchen_window", "action": "close_cover"}))
    engine = script(model_agent, kitchen)
    await ask(hass, request_text, "de")
    grammars = [request.grammar or "" for request in engine.requests]
    assert grammars, "the model was not asked"
    assert '"close_cover"' in grammars[0] and '"open_cover"' not in grammars[0]


def test_a_value_is_said_by_a_number_or_the_languages_words_for_one() -> None:
    """Only where no value is said at all are levels left out; where the words for
    values of a language are not known here, the model decides."""
    assert not says_value("Stehlampe an", "de") and not says_value("Mets le ventilateur en marche", "fr")
    for said, language in (
        ("Mach die Vorhänge halb zu", "de"),
        ("Mach es noch ein Grad wärmer", "de"),
        ("Monte le son", "fr"),
        ("Pon la luz al 50", "es"),
        ("Baja la persiana a la mitad", "es"),
        ("Accendi la luce", "it"),
        ("Turn the heating up to twenty", "en"),
        ("the other two, two notches brighter", "en"),
    ):
        assert says_value(said, language), said
    # How many devices is no value: "the other two", "all three".
    assert not says_value("Not the kids room, the other two", "en") and not says_value("all three of them", "en")
    # ... in any language: "les deux chevets", "las dos lámparas", "alle drei Lampen".
    for said, language in (
        ("Allume les deux chevets", "fr"),
        ("Enciende las dos lámparas", "es"),
        ("Mach alle drei Lampen an", "de"),
    ):
        assert not says_value(said, language), said
    assert says_value("Mets les deux lampes à 50 %", "fr") and says_value("Monte les deux degrés", "fr")
    # Nor a floor said by where it is ("la planta baja": the ground floor).
    assert not says_value("Abre las persianas de la planta baja", "es")


def test_a_reply_in_another_script_than_the_language_is_no_answer() -> None:
    assert in_another_script("抱歉我无法协助完成这个请求", "fr")
    assert in_another_script("抱歉我无法协助完成这个请求", "en")
    assert not in_another_script("Il fait -3 °C dehors.", "fr")
    assert not in_another_script("Привет, свет включён.", "ru")
    assert not in_another_script("Wohnzimmer: 21 °C", "de")


def test_outdoors_is_the_weather_else_the_sensors_named_for_it() -> None:
    outside = HomeEntity("sensor.aussen", "Außentemperatur", "-3", device_class="temperature")
    inside = HomeEntity("sensor.bad", "Temperatur Bad", "21", area="Bad", device_class="temperature")
    weather = HomeEntity("weather.home", "Zuhause", "sunny")
    assert outdoors("Wie kalt ist es draußen?", "de", (outside, inside)) == {"sensor.aussen"}
    assert outdoors("Wie kalt ist es draußen?", "de", (outside, inside, weather)) == {"weather.home"}
    assert outdoors("Wie kalt ist es im Bad?", "de", (outside, inside)) == frozenset()
    assert outdoors("Il fait froid dehors ?", "fr", (outside, inside)) == {"sensor.aussen"}


async def test_a_second_request_is_not_read_as_what_to_play(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    """HA's French sentences read "joue X et ferme Y sur Z" as playing "X et ferme Y": a
    joining word then a verb in what to play is a second request (the 0.5B then only
    closed the curtains); what to play may still join words."""
    joined = await async_recognize(hass, "Joue du jazz et ferme Kitchen Window sur Living Room", "fr")
    assert joined is not None and joined.intent is None and joined.likely
    played = await async_recognize(hass, "Joue du jazz et du blues sur Living Room", "fr")
    assert played is not None and played.intent == "HassMediaSearchAndPlay"
    assert played.slots["search_query"] == "du jazz et du blues"


async def test_a_kind_of_device_is_not_read_as_what_to_play(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    """HA's Spanish sentences read "pon todas las luces del salón" as playing "todas las
    luces" there (the 0.5B then switched one light on; here, on the player Living Room):
    lights are nothing to play; music is."""
    lights = await async_recognize(hass, "Pon todas las luces en Living Room", "es")
    assert lights is not None and lights.intent is None and "turn_on" in lights.services[0]
    assert lights.said is not None and lights.said.kinds == ("light",) and lights.said.every
    music = await async_recognize(hass, "Pon música en Living Room", "es")
    assert music is not None and music.intent == "HassMediaSearchAndPlay"


async def test_half_said_in_words_is_half(hass: HomeAssistant, model_agent: MockConfigEntry) -> None:
    """ "Ferme … à moitié", "halb zu": the level is half, the only value its grammar allows
    (the 0.5B closed the curtains, or opened them all the way)."""
    half = XML.render(ToolCall("light", {"entity_id": "light.bed_light", "action": "turn_on", "brightness_pct": 50}))
    engine = script(model_agent, half)
    speech, _conversation_id = await ask(hass, "Allume vite Bed Light à moitié", "fr")
    assert hass.states.get("light.bed_light").attributes["brightness"] == 128, speech  # type: ignore[union-attr]
    grammar = engine.requests[0].grammar or ""
    assert '"50"' in grammar and "brightness_pct" in grammar and '"turn_off"' not in grammar, grammar
    assert "0-9" not in grammar.split("brightness_pct", 1)[1].split("\n", 1)[0], grammar


def test_a_share_of_the_whole_is_said_by_half_words() -> None:
    assert said_share("Mach die Vorhänge halb zu", "de") == 0.5
    assert said_share("Finalement, referme-les à moitié", "fr") == 0.5
    assert said_share("Baja la persiana a la mitad", "es") == 0.5
    assert said_share("Mach die Vorhänge auf 50 Prozent", "de") == 0.5  # said as a number
    assert said_share("Mach die Vorhänge zu", "de") is None


async def test_a_relative_change_in_german_is_a_step_from_where_it_is(
    hass: HomeAssistant, model_agent: MockConfigEntry
) -> None:
    """ "Ein Grad wärmer": one degree up from the set temperature, without the model (the
    0.5B switched the heating on instead)."""
    engine = script(model_agent)
    before = hass.states.get("climate.heatpump").attributes["temperature"]  # type: ignore[union-attr]
    speech, _conversation_id = await ask(hass, "Mach HeatPump noch ein Grad wärmer", "de")
    after = hass.states.get("climate.heatpump").attributes["temperature"]  # type: ignore[union-attr]
    assert after == before + 1, speech
    assert engine.requests == []


async def test_a_part_read_with_the_verb_before_it_passes_that_verb_on(
    hass: HomeAssistant, model_agent: MockConfigEntry
) -> None:
    """ "Apaga el plafón, los focos y la cafetera": the third part is switched off too (its
    article, said before the second part's name, was taken for a verb, and the third part
    read alone switched the coffee maker on)."""
    for light in ("light.bed_light", "light.ceiling_lights", "light.kitchen_lights"):
        hass.states.async_set(light, "on")
    offs = [
        XML.render(ToolCall("light", {"entity_id": e, "action": "turn_off"}))
        for e in ("light.bed_light", "light.ceiling_lights", "light.kitchen_lights")
    ]
    engine = script(model_agent, *offs)
    await ask(hass, "Apaga el Bed Light, los Ceiling Lights y la Kitchen Lights", "es")
    grammars = [request.grammar or "" for request in engine.requests]
    assert grammars and all('"turn_on"' not in grammar for grammar in grammars), grammars


@pytest.mark.parametrize(
    ("dark", "cold", "language"),
    [
        ("Es ist dunkel im Den", "Mir ist kalt im Den", "de"),
        ("Il fait sombre dans le Den", "Il fait froid dans le Den", "fr"),
        ("Está oscuro en el Den", "Tengo frío en el Den", "es"),
    ],
)
async def test_how_a_place_feels_in_other_languages(
    hass: HomeAssistant, model_agent: MockConfigEntry, dark: str, cold: str, language: str
) -> None:
    """Dark there puts its light on, cold there warms its thermostat, without the model, as
    in English; asked, neither changes anything."""
    await async_put_in_den(hass, "climate.heatpump", "light.bed_light")
    await hass.services.async_call("light", "turn_off", {"entity_id": "light.bed_light"}, blocking=True)
    before = hass.states.get("climate.heatpump").attributes["temperature"]  # type: ignore[union-attr]
    engine = script(model_agent)
    await ask(hass, dark, language)
    await ask(hass, cold, language)
    assert hass.states.get("light.bed_light").state == "on"  # type: ignore[union-attr]
    assert hass.states.get("climate.heatpump").attributes["temperature"] > before  # type: ignore[union-attr]
    assert engine.requests == []


async def test_a_question_about_outdoors_reads_the_outdoor_sensor(
    hass: HomeAssistant, model_agent: MockConfigEntry
) -> None:
    """ "Wie kalt ist es draußen?", "how cold is it outside?" in a home without a weather
    entity: its one outdoor sensor is read, without the model (the 0.5B read the
    satellite's area)."""
    for entity_id in [*hass.states.async_entity_ids("weather"), "sensor.outside_humidity"]:
        hass.states.async_remove(entity_id)
    engine = script(model_agent)
    speech, _conversation_id = await ask(hass, "Wie kalt ist es draußen?", "de")
    temperature = hass.states.get("sensor.outside_temperature")
    assert temperature is not None and speech.startswith("Outside Temperature: ") and temperature.state in speech
    speech, _conversation_id = await ask(hass, "How cold is it outside?", "en")
    assert temperature.state in speech and "Outside Temperature" in speech, speech
    assert engine.requests == []


@pytest.mark.parametrize(
    ("first", "again", "language"),
    [
        ("Allume Bed Light", "Et la Kitchen Lights aussi", "fr"),
        ("Enciende Bed Light", "Y la Kitchen Lights también", "es"),
        ("Schalte Bed Light ein", "Und die Kitchen Lights auch", "de"),
    ],
)
async def test_the_turn_before_again_in_other_languages(
    hass: HomeAssistant, model_agent: MockConfigEntry, first: str, again: str, language: str
) -> None:
    """ "Et la lumière de l'entrée aussi" after switching a light on switches that one on
    too, without the model (the 0.5B switched it off)."""
    await hass.services.async_call("light", "turn_off", {"entity_id": "all"}, blocking=True)
    bed_light = XML.render(ToolCall("light", {"entity_id": "light.bed_light", "action": "turn_on"}))
    engine = script(model_agent, bed_light)
    _speech, conversation_id = await ask(hass, first, language)
    asked = len(engine.requests)
    speech, _conversation_id = await ask(hass, again, language, conversation_id)
    assert hass.states.get("light.kitchen_lights").state == "on", speech  # type: ignore[union-attr]
    assert len(engine.requests) == asked


def test_words_for_an_action_that_no_sentence_starts_with_ask_it_first() -> None:
    """ "Remonte les volets" (HA's French sentences lack it): opening first, for a cover;
    a pause said as a noun ("Pon en pausa el altavoz": the 0.5B played it), pausing;
    "ferme … à clé", locking."""
    unread = Recognized(None, {}, question=False, likely=frozenset())
    assert asked_services("Remonte complètement les volets", unread, "fr") == (frozenset({"open_cover"}),)
    assert asked_services("Rollladen runter", unread, "de") == (frozenset({"close_cover"}),)
    assert asked_services("Sube la persiana", unread, "es")[0] == frozenset({"open_cover"})
    assert asked_services("Remonte les volets", unread, "it") == ()
    # A floor said by where it is says no lowering: "la planta baja" is the ground floor.
    opening = Recognized(None, {}, question=False, likely=frozenset({"HassTurnOn"}))
    assert asked_services("Abre las persianas de la planta baja", opening, "es") == opening.services
    assert asked_services("Baja las persianas de la planta baja", opening, "es")[0] == frozenset({"close_cover"})
    playing = Recognized(None, {}, question=False, likely=frozenset({"HassTurnOn", "HassMediaUnpause"}))
    for text, language in (
        ("Pon en pausa el altavoz", "es"),
        ("Mach mal kurz Pause mit der Musik", "de"),
        ("Mets l'enceinte en pause", "fr"),
    ):
        assert asked_services(text, playing, language)[0] == frozenset({"media_pause"}), text
    assert asked_services("Pon la música", playing, "es")[0] != frozenset({"media_pause"})
    closing = Recognized(None, {}, question=False, likely=frozenset({"HassTurnOff"}))
    assert asked_services("Ferme la porte d'entrée à clé", closing, "fr")[0] == frozenset({"lock"})


def test_a_level_said_with_its_unit_is_that_level() -> None:
    """One number said in percent or degrees is the value the call sets (the 0.5B set 22
    for "a 20 grados"); with two numbers, or none, nothing is fixed."""
    assert said_share("Baja el volumen al 10 %", "es") == 0.1
    assert said_share("Dimm die Leselampe auf 30 Prozent", "de") == 0.3
    assert said_share("Pon la luz de noche a media intensidad", "es") == 0.5
    assert said_share("Mets le thermostat à 21 et la lampe à 30 %", "fr") is None
    assert said_degrees("baja la calefacción a 20 grados") == 20
    assert said_degrees("Stell die Heizung auf 21,5 Grad") == 21.5
    assert said_degrees("Mach das Licht aus") is None


async def test_a_temperature_said_is_the_one_the_grammar_allows(
    hass: HomeAssistant, model_agent: MockConfigEntry
) -> None:
    """ "… à 19 degrés": set_temperature to 19 and nothing else."""
    call = ToolCall("climate", {"entity_id": "climate.heatpump", "action": "set_temperature", "temperature": 19})
    engine = script(model_agent, XML.render(call))
    speech, _conversation_id = await ask(hass, "Règle vite HeatPump à 19 degrés", "fr")
    assert hass.states.get("climate.heatpump").attributes["temperature"] == 19, speech  # type: ignore[union-attr]
    grammar = engine.requests[0].grammar or ""
    value = next(line for line in grammar.splitlines() if "temperature-v0 ::=" in line)
    assert value.split("::= ", 1)[1].startswith('"19" ') and "[0-9]" not in value, value
