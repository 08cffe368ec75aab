"""The user's language, and what HA's own intent matching reads in a request in it.

BotPsy's word rules (question or command, kinds of device, "all", floors, what a request
names) are written in English. In another language, HA's intent matching (hassil over
the sentences of home-assistant-intents, as the built-in agent uses it, with the home's
exposed names, areas and floors) says whether a request asks or acts and what it names.
Where it recognises nothing, the first and last words of HA's sentences tell the verb
(`FirstWords`), the language's words for kinds of device, "all" and floors what it names
(`Said`), and the model reads the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
import re
from typing import Any
import unicodedata

from hassil.expression import Alternative, Expression, ListReference, Permutation, RuleReference, Sentence, TextChunk
from hassil.intents import Intents, TextSlotList
from hassil.recognize import RecognizeResult
from hassil.sample import sample_expression
from homeassistant.components import conversation
from homeassistant.components.conversation.agent_manager import get_agent_manager
from homeassistant.core import Context, HomeAssistant

from .core.follow_up import JOINING, says_an_action, says_no_verb
from .core.home import HomeEntity
from .core.policy import base_language
from .core.requested import KINDS, VALUE_SERVICES, LevelWords, Named, floors_by_level, named_in

# HA's intents that ask and change nothing: a request recognised as one is a question.
QUESTION_INTENTS = frozenset(
    {
        "HassGetState",
        "HassClimateGetTemperature",
        "HassGetWeather",
        "HassGetCurrentTime",
        "HassGetCurrentDate",
        "HassTimerStatus",
        "HassListGetItems",
        "HassGetTodoItems",
        "HassGetCalendarEvents",
    }
)
# HA's timer intents: they act on the asking device's timers, no device of the home, and
# only HA's own handler (with the satellite's timer support) can do them.
TIMER_INTENTS = frozenset(
    {
        "HassStartTimer",
        "HassCancelTimer",
        "HassCancelAllTimers",
        "HassIncreaseTimer",
        "HassDecreaseTimer",
        "HassPauseTimer",
        "HassUnpauseTimer",
    }
)
# HA's intents that say nothing to act on ("never mind"): no action either.
NOTHING_INTENTS = frozenset({"HassNevermind", "HassRespond"})
# What HA's on/off intents call on the domains they treat apart
# (`OnOffIntentHandler.async_call_service`); on others, `homeassistant.turn_on` calls the
# entity's own domain's service of that name.
ON_OFF_SERVICES: dict[tuple[str, str], str] = {
    ("lock", "turn_on"): "lock", ("lock", "turn_off"): "unlock",
    ("cover", "turn_on"): "open_cover", ("cover", "turn_off"): "close_cover",
    ("valve", "turn_on"): "open_valve", ("valve", "turn_off"): "close_valve",
    ("button", "turn_on"): "press", ("input_button", "turn_on"): "press",
}  # fmt: skip
# HA's on/off intents, by the service they are named after.
_ON_OFF_INTENTS = {"turn_on": "HassTurnOn", "turn_off": "HassTurnOff"}
# What the name of an on/off intent ends with for its sentences about locks alone.
_LOCKS = "/lock"
# The services HA's intents run (as its handlers do: HassTurnOff closes a cover): what a
# request's verb asks of its devices, in any language HA reads. A lock's only from HA's
# sentences about locks (see `first_words`).
INTENT_SERVICES: dict[str, frozenset[str]] = {
    **{
        intent: frozenset({service, *(ON_OFF_SERVICES[domain, service] for domain in ("cover", "valve"))})
        for service, intent in _ON_OFF_INTENTS.items()
    },
    # HA's on/off sentences about locks alone: "cierra" starts closing a cover and
    # locking a lock, and neither opens a cover (the 0.5B opened one). Locking closes a
    # cover too: "Die Rollläden schließen" ends as only locking sentences do. (Unlocking
    # opens none: "schließe … auf" unlocks, "schließe … zu" closes.)
    **{
        f"{intent}{_LOCKS}": frozenset({ON_OFF_SERVICES["lock", service]})
        | (frozenset({ON_OFF_SERVICES["cover", "turn_off"]}) if service == "turn_on" else frozenset())
        for service, intent in _ON_OFF_INTENTS.items()
    },
    "HassLightSet": frozenset({"turn_on"}),
    "HassSetPosition": frozenset({"set_cover_position", "set_valve_position"}),
    "HassClimateSetTemperature": frozenset({"set_temperature"}),
    "HassSetVolume": frozenset({"volume_set"}),
    "HassSetVolumeRelative": frozenset({"volume_set", "volume_up", "volume_down"}),
    "HassMediaPause": frozenset({"media_pause"}),
    "HassMediaUnpause": frozenset({"media_play"}),
    "HassMediaNext": frozenset({"media_next_track"}),
    "HassMediaPrevious": frozenset({"media_previous_track"}),
    "HassFanSetSpeed": frozenset({"set_percentage"}),
    "HassVacuumStart": frozenset({"start"}),
    "HassVacuumReturnToBase": frozenset({"return_to_base"}),
    "HassMediaPlayerMute": frozenset({"volume_mute"}),
    "HassMediaPlayerUnmute": frozenset({"volume_mute"}),
    "HassMediaSearchAndPlay": frozenset({"play_media"}),
    "HassLawnMowerStartMowing": frozenset({"start_mowing"}),
    "HassLawnMowerDock": frozenset({"dock"}),
    "HassListAddItem": frozenset({"add_item"}),
    "HassShoppingListAddItem": frozenset({"add_item"}),
    "HassListCompleteItem": frozenset({"update_item"}),
}
# The intent whose response says what a service did (HassTurnOn's "Allumé" for turn_on):
# the first of `INTENT_SERVICES` that runs it, and a lock's, as HA's handlers lock it.
SAID_BY: dict[str, str] = {
    **{service: intent for intent, services in reversed(INTENT_SERVICES.items()) for service in services},
    **{ON_OFF_SERVICES["lock", service]: intent for service, intent in _ON_OFF_INTENTS.items()},
}
# What HA's question intents are about, as BotPsy's kinds of device say it.
_INTENT_KINDS: dict[str, tuple[str, ...]] = {"HassClimateGetTemperature": ("temperature",)}


def chat_language(hass: HomeAssistant, chat_log: conversation.ChatLog) -> str:
    """The language the request came in (its LLM context's), else the home's."""
    api = chat_log.llm_api
    return (api.llm_context.language if api else None) or hass.config.language or "en"


def reads_english(language: str | None) -> bool:
    """Whether BotPsy's own word rules can read requests in `language`."""
    return base_language(language) == "en"


# The scripts each language is written in, where it is not the Latin script alone.
_SCRIPTS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("ru", "uk", "bg", "sr", "mk", "be", "kk"), frozenset({"CYRILLIC", "LATIN"})),
    "zh": frozenset({"CJK", "LATIN"}),
    "ja": frozenset({"CJK", "HIRAGANA", "KATAKANA", "LATIN"}),
    "ko": frozenset({"HANGUL", "CJK", "LATIN"}),
    "el": frozenset({"GREEK", "LATIN"}),
    **dict.fromkeys(("ar", "fa", "ur"), frozenset({"ARABIC", "LATIN"})),
    "he": frozenset({"HEBREW", "LATIN"}),
    **dict.fromkeys(("hi", "mr", "ne"), frozenset({"DEVANAGARI", "LATIN"})),
    "th": frozenset({"THAI", "LATIN"}),
}
_LATIN = frozenset({"LATIN"})


def in_another_script(text: str, language: str) -> bool:
    """Whether `text` is mostly written in a script its language is not (the 0.5B answered
    a French question in Chinese): then it is no answer the user can read."""
    scripts = _SCRIPTS.get(base_language(language), _LATIN)
    letters = [unicodedata.name(c, "").split(" ")[0] for c in text if c.isalpha()]
    foreign = sum(1 for script in letters if script not in scripts)
    return bool(letters) and foreign * 2 > len(letters)


# "Now lower the bedroom curtains", "okay, then switch off the fan", "and the nook lamp on
# instead": words that lead into a request or close it, which HA's sentences do not have.
# Fewer than a question may start with (policy's): what is left is matched against the
# home's names ("right lamp on" keeps its "right").
_LEAD = re.compile(r"^\W*(?:(?:ok(?:ay)?|alright|all right|so|now|then|and|also|please)\b[\s,.!]*)+", re.I)
_TAIL = re.compile(r"(?:[\s,]+(?:instead|too|as well|please))+[\s.!]*$", re.I)


def _said_plainly(utterance: str) -> str:
    """`utterance` without the words that lead into it or close it, where what is left
    still says an action ("and the ceiling lights too" is no request of its own: HA's
    sentences read a bare name as switching it on)."""
    plain = _TAIL.sub("", _LEAD.sub("", utterance))
    return plain if says_an_action(plain) else utterance


@dataclass(frozen=True, slots=True)
class Recognized:
    """What HA's intent matching read in a request: its intent, and the slots it filled
    (`name`, `area`, `floor`, `domain`, `device_class`: the names as the home has them)."""

    intent: str | None  # None: HA's sentences do not say it
    slots: dict[str, str]
    # Whether it asks: its intent is a question, or (unrecognised) see `FirstWords.asks`.
    question: bool
    # Unrecognised: the intents whose sentences start with the request's first word.
    likely: frozenset[str] = frozenset()
    # The slots' values as HA's intent takes them (a brightness is a number).
    values: dict[str, Any] = field(default_factory=dict)
    # The words of the request each slot was read from ("the kitchen" for the area).
    texts: dict[str, str] = field(default_factory=dict)
    # Unrecognised: what its words say of kinds and places (see `Said`).
    said: Said | None = None

    @property
    def services(self) -> tuple[frozenset[str], ...]:
        """The services its verb asks for, of every intent it may be (none: any; a
        device with none of them is left all of its own, see `requested.by_verb`)."""
        intents = {self.intent} if self.intent else self.likely
        asked = frozenset[str]().union(*(INTENT_SERVICES.get(i, frozenset()) for i in intents))
        return (asked,) if asked else ()


async def async_recognize(
    hass: HomeAssistant,
    utterance: str,
    language: str,
    *,
    device_id: str | None = None,
    context: Context | None = None,
) -> Recognized | None:
    """HA's reading of `utterance` in `language`, if its intents recognise it with the
    home's exposed names (a looser match of HA's, with names the home lacks, reads
    "how humid is the bathroom?" as switching something on)."""
    agent = get_agent_manager(hass).default_agent
    if agent is None:
        return None
    user_input = conversation.ConversationInput(
        text=_said_plainly(utterance) if base_language(language) == "en" else utterance,
        context=context or Context(),
        conversation_id=None,
        device_id=device_id,
        satellite_id=None,
        language=language,
        agent_id=conversation.HOME_ASSISTANT_AGENT,
    )
    result = await agent.async_recognize_intent(user_input, strict_intents_only=True)
    loaded = await agent.async_get_or_load_intents(language)
    words = _FIRST_WORDS.get(language)
    if loaded is not None and (words is None or words[0] is not loaded.intents):
        words = _FIRST_WORDS[language] = (
            loaded.intents,
            await hass.async_add_executor_job(first_words, loaded.intents),
        )
    if result is not None and not (words and _misread(result, language, words[1])):
        values = {key: entity.value for key, entity in result.entities.items() if entity.value is not None}
        slots = {
            key: ",".join(map(str, value)) if isinstance(value, list) else str(value) for key, value in values.items()
        }
        texts = {key: entity.text for key, entity in result.entities.items() if entity.text}
        return Recognized(result.intent.name, slots, result.intent.name in QUESTION_INTENTS, values=values, texts=texts)
    if loaded is None or words is None:
        return None
    return Recognized(None, {}, words[1].asks(utterance), words[1].likely(utterance), said=words[1].said(utterance))


def _misread(result: RecognizeResult, language: str, words: FirstWords) -> bool:
    """Whether HA's reading took more than a title for a free-text slot: a second request
    ("mets l'enceinte en pause et ferme les rideaux" read as playing "l'enceinte en pause
    et ferme les rideaux": a joining word, then a verb its sentences start with), or a
    kind of device that nothing plays ("pon todas las luces del salón" read as playing
    "todas las luces" there)."""
    joining = JOINING.get(base_language(language))
    for entity in result.entities.values():
        if not (entity.is_wildcard and isinstance(entity.value, str)):
            continue
        value = entity.value.casefold()
        for match in re.finditer(rf"(?<!\w)(?:{joining})\s+(\w+)", value) if joining else ():
            if _starts_as(match.group(1), words.actions):
                return True
        if any(
            k not in _PLAYED_KINDS and re.search(rf"(?<!\w){re.escape(w)}(?!\w)", value) for w, k in words.kind_words
        ):
            return True
    return False


# The shortest word that may name a device by itself: "guirlande", not "la" or "du".
_NAME_WORD = 4


def _singular(word: str) -> str:
    """`word` without a plural "s" or "x" ("volets": "volet")."""
    return word[:-1] if len(word) > _NAME_WORD and word[-1] in "sx" else word


# HA's kinds of cover that a cover's name may say besides its device class ("Persiana del
# salón" of a shutter): doors are left out, a door is also a lock.
_COVER_KINDS = frozenset({"blind", "shade", "curtain", "shutter", "awning", "window", "garage door", "gate"})


def _singulars(word: str) -> set[str]:
    """What `word` may be the plural of: "prises", "enchufes", "Steckdosen", "Ventilatoren"."""
    if len(word) <= _NAME_WORD:
        return set()
    ones = {word[:-1]} if word[-1] in "sxn" else set()
    return ones | {word[:-2]} if word[-2:] in ("en", "es") else ones


def _plural_of_one(words: str, kind_words: tuple[tuple[str, str], ...]) -> bool:
    """Whether `words` are the plural of other words for the same kind: "ventilateurs",
    "luces" (luz), "Lichter", "Lampen"."""
    kind = next(k for w, k in kind_words if w == words)
    ones = {w for w, k in kind_words if k == kind and w != words}
    return bool(
        _singulars(words) & ones
        or (words.endswith("ces") and f"{words[:-3]}z" in ones)
        or (words.endswith("er") and words[:-2] in ones)
    )


# Kinds of device said in a request for something to play ("pon música en el salón").
_PLAYED_KINDS = frozenset({"music", "tv", "speaker", "volume"})


@dataclass(frozen=True, slots=True)
class Said:
    """What the words of a request HA's sentences do not read say of kinds of device and
    places, in its language: "Mach alle Lichter im ganzen Haus aus", "Unten alle Lampen
    aus", "Coupe toutes les lumières" (the 0.5B switched one light, or read an area)."""

    text: str  # casefolded
    kinds: tuple[str, ...]  # BotPsy's kinds (`requested.KINDS`)
    every: bool  # every one of them ("alle", "toutes", "todas", "überall")
    levels: LevelWords | None  # how the language says floors by where they are
    # The first parts of words that end with a kind ("küchen" of "Küchenlicht"): a place
    # said in one word with the kind, as German and Dutch say it.
    before_kinds: tuple[str, ...] = ()
    # The words that said a kind of cover ("persianas"): covers named with them are of it.
    cover_words: tuple[str, ...] = ()
    # What it leaves out ("sauf les spots", "menos los focos", "außer den Strahlern"), said
    # after the rest (`text`).
    excepted: str = ""
    # A kind said in the plural ("die Ventilatoren"): every one of it, as in English.
    plural: bool = False
    # Said with a verb that HA's sentences use for the lights of a place said alone
    # ("allume {floor}", "apaga {area}"): a place with no kind and no name is its lights.
    place_lights: bool = False
    # "Tout", "todo", "alles": everything (no kind, and no to-do list).
    everything: bool = False

    def named(self, named: Named, entities: tuple[HomeEntity, ...], here: str | None) -> Named:
        """What the request names (see `_named_whole`), less what it leaves out: "Éteins
        toutes les lumières sauf les spots" is every other light (the 0.5B switched off the
        Spots alone), as `request._all_but` reads English."""
        if not self.excepted:
            return self._named_whole(named, entities, here)
        whole = self._named_whole(named_in(self.text, entities, here=here), entities, here)
        # "Éteins tout sauf la veilleuse" names no kind: every other one of the kind left out.
        everything = not (whole.all_that_fit or whole.every or whole.kinds or whole.entity_ids)
        places = whole.areas or whole.floors
        fitting = {
            e.entity_id: e
            for e in entities
            if (whole.fits(e) if not everything else not places or e.area in whole.areas or e.floor in whole.floors)
        }
        said = {
            w for word in _WORD.findall(self.excepted) if len(word) >= _NAME_WORD for w in {word, *_singulars(word)}
        }
        out = {
            entity_id
            for entity_id, e in fitting.items()
            if said
            & {w for n in (e.name, *e.aliases, e.area or "", *e.area_aliases) for w in _WORD.findall(n.casefold())}
        }
        if not (everything or whole.all_that_fit or whole.every):
            return self._named_whole(named, entities, here)
        return whole.all_but(fitting, out, of_their_kind=everything) or self._named_whole(named, entities, here)

    def _named_whole(self, named: Named, entities: tuple[HomeEntity, ...], here: str | None) -> Named:
        """`named` (the names and areas said) with the kinds said, and the floor said by
        where it is; unchanged where a device is named. A device named by a word of its
        name is that device alone: in the place said ("Coupe la guirlande du salon": the
        Guirlande lumineuse, not the salon's shutters), or of the kind said ("la lámpara de
        techo": the Lámpara de techo del salón, not every lamp)."""
        if named.entity_ids:
            return named
        if not self.kinds:
            return self._named_without_kind(named, entities, here)
        if not (named.areas or named.floors or self.every):
            # Of the kind said, those the other words name more closely than the rest.
            of_kind = [e for e in entities if e.entity_id in named.partly and any(KINDS[k](e) for k in self.kinds)]
            meant = frozenset(e.entity_id for e in of_kind if e.entity_id in named.closest)
            if meant and len(meant) < len(of_kind):
                return replace(named, entity_ids=meant, partly=frozenset())
        if self.before_kinds and (compound := self._by_compound_name(named, entities)) is not None:
            return compound
        floors, areas = named.floors, named.areas
        if not (floors or areas) and self.before_kinds:
            areas = frozenset(
                e.area for e in entities if e.area and any(map(self._said_before_a_kind, (e.area, *e.area_aliases)))
            )
        if not (floors or areas) and self.levels is not None:
            floors = floors_by_level(self.text, entities, here, self.levels)
        if not (floors or areas or self.every) and self.plural and here is not None:
            areas = frozenset({here})  # "les ventilateurs", said to a satellite: those there
        every = self.every or self.plural
        of_kinds = replace(
            named,
            areas=areas,
            floors=floors,
            kinds=self.kinds,
            domains=None,
            every=every,
            anywhere=every and not (areas or floors),
            partly=frozenset(),
            closest=frozenset(),
        )
        return with_covers_named_so(of_kinds, self.cover_words, entities)

    def _named_without_kind(self, named: Named, entities: tuple[HomeEntity, ...], here: str | None) -> Named:
        """What a request that says no kind names: the devices of a place named by its
        other words, else (said with a verb HA's sentences use so) the place's lights:
        "Allume partout en haut", as HA reads "allume {floor}" (the 0.5B was given every
        device upstairs, shutters and sensors too); else a plural of a word of names."""
        if self.everything and named.domains and "todo" in named.domains and not named.entity_ids:
            named = replace(named, domains=named.domains - {"todo"})  # "Apaga todo": no to-do list
        lights = replace(self, kinds=("light",), every=True)
        if not (named.areas or named.floors):
            levels = self.levels and floors_by_level(self.text, entities, here, self.levels)
            if self.place_lights and (levels or self.everything):  # "Apaga todo": every light
                return lights._named_whole(named, entities, here)
            return self._by_plural_name(named, entities)
        in_place = self._by_name_in_place(named, entities)
        return lights._named_whole(named, entities, here) if in_place is named and self.place_lights else in_place

    def _by_compound_name(self, named: Named, entities: tuple[HomeEntity, ...]) -> Named | None:
        """A kind said in one word with more ("die Nachttischlampen", "die Deckenlampe im
        Schlafzimmer"): the devices of the kind (in the place said) named by that word, all
        of them if it is a plural; None where no name has it (the 0.5B was given every lamp
        of the home, or of the room)."""
        places = named.areas or named.floors
        for word in _WORD.findall(self.text):
            if not any(word.startswith(first) for first in self.before_kinds):
                continue
            said = {word} | _singulars(word)
            alike = [
                e
                for e in entities
                if any(KINDS[k](e) for k in self.kinds)
                and (not places or e.area in named.areas or e.floor in named.floors)
                and any(said & set(_WORD.findall(n.casefold())) for n in (e.name, *e.aliases))
            ]
            if alike:
                plural = len(alike) > 1 and word not in {w for e in alike for w in _WORD.findall(e.name.casefold())}
                return named.only((e.entity_id for e in alike), each=self.every or plural)
        return None

    def _by_plural_name(self, named: Named, entities: tuple[HomeEntity, ...]) -> Named:
        """A word said in the plural that is in the names of several devices of one domain,
        and nothing else named: all of them ("enciende las mesitas" for Mesita izquierda and
        Mesita derecha, "éteins toutes les prises"; the 0.5B switched one)."""
        for word in _WORD.findall(self.text):
            ones = _singulars(word)
            alike = [e for e in entities if any(ones & set(_WORD.findall(n.casefold())) for n in (e.name, *e.aliases))]
            if len(alike) > 1 and len({e.domain for e in alike}) == 1:
                return named.only(e.entity_id for e in alike)
        return named

    def _by_name_in_place(self, named: Named, entities: tuple[HomeEntity, ...]) -> Named:
        """Of the devices in the places `named` says, those named by the most words of
        their names besides the places' (words of four letters or more: no article); all
        of them where none is."""
        in_place = [e for e in entities if e.area in named.areas or e.floor in named.floors]
        text = self.text
        for place in {p for e in in_place for p in (e.area, *e.area_aliases, e.floor, *e.floor_aliases) if p}:
            text = re.sub(rf"(?<!\w){re.escape(place.casefold())}(?!\w)", " ", text)
        said = {_singular(w) for w in _WORD.findall(text) if len(w) >= _NAME_WORD}
        overlap = {
            e.entity_id: len(said & {_singular(w) for n in (e.name, *e.aliases) for w in _WORD.findall(n.casefold())})
            for e in in_place
        }
        best = max(overlap.values(), default=0)
        meant = frozenset(e for e, n in overlap.items() if best and n == best)
        return replace(named, entity_ids=meant, areas=frozenset(), floors=frozenset()) if meant else named

    def _said_before_a_kind(self, area: str) -> bool:
        """Whether `area` (a name of one) is the first part of a word that ends with a
        kind: "Küche" of "Küchenlicht", "Schlafzimmer" of "Schlafzimmervorhänge" (with
        up to two letters that join the parts: "n", "s", "en", "es")."""
        said = area.casefold().replace(" ", "")
        return any(said in {first, first[:-1], first[:-2]} for first in self.before_kinds)


# Words for lights, fans, what plays and heating, which HA's sentences spell inside each
# intent's own rules (its kinds of cover come from its `cover_classes` list).
_KIND_WORDS: dict[str, dict[str, str]] = {
    "de": {
        **dict.fromkeys(("licht", "lichter", "leuchte", "leuchten", "beleuchtung"), "light"),
        **dict.fromkeys(("lampe", "lampen"), "lamp"),
        **dict.fromkeys(("ventilator", "ventilatoren", "lüfter"), "fan"),
        **dict.fromkeys(("musik", "lied", "song"), "music"),
        **dict.fromkeys(("fernseher", "fernsehen"), "tv"),
        **dict.fromkeys(("lautsprecher",), "speaker"),
        **dict.fromkeys(("lautstärke",), "volume"),
        **dict.fromkeys(("heizung", "heizungen"), "heating"),
    },
    "fr": {
        **dict.fromkeys(("lumière", "lumières", "éclairage", "éclairages", "ampoule", "ampoules"), "light"),
        **dict.fromkeys(("lampe", "lampes"), "lamp"),
        **dict.fromkeys(("ventilateur", "ventilateurs", "ventilo", "ventilos"), "fan"),
        **dict.fromkeys(("musique", "chanson"), "music"),
        **dict.fromkeys(("télé", "télévision"), "tv"),
        **dict.fromkeys(("enceinte", "enceintes", "haut-parleur"), "speaker"),
        **dict.fromkeys(("volume",), "volume"),
        **dict.fromkeys(("chauffage",), "heating"),
    },
    "es": {
        **dict.fromkeys(("luz", "luces", "iluminación", "bombilla", "bombillas", "foco", "focos"), "light"),
        **dict.fromkeys(("lámpara", "lámparas"), "lamp"),
        **dict.fromkeys(("ventilador", "ventiladores"), "fan"),
        **dict.fromkeys(("música", "canción"), "music"),
        **dict.fromkeys(("tele", "televisión", "televisor"), "tv"),
        **dict.fromkeys(("altavoz", "altavoces"), "speaker"),
        **dict.fromkeys(("volumen",), "volume"),
        **dict.fromkeys(("calefacción",), "heating"),
    },
}
# Words that ask for every device of a kind.
_EVERY_WORDS: dict[str, re.Pattern[str]] = {
    "de": re.compile(r"\b(?:alle[nrs]?|sämtliche[nrs]?|ganze[nrs]?|gesamte[nrs]?|komplett|überall|beide[n]?)\b"),
    "fr": re.compile(r"\b(?:tous|toutes|partout|les deux|entièrement|complètement)\b"),
    "es": re.compile(r"\b(?:todas|todos|toda|ambas|ambos|completamente)\b"),
}
# Words for everything, which name no kind ("Éteins tout", "Apaga todo", "Mach alles aus").
_EVERYTHING_WORDS: dict[str, re.Pattern[str]] = {
    "de": re.compile(r"\balles\b"),
    "fr": re.compile(r"\btout\b(?! de suite| à l'heure)"),
    "es": re.compile(r"\btodo\b"),
}
# Words that leave some out of a request for all ("sauf", "menos", "außer"), with what
# they leave out, to a comma or the end.
_ALL_BUT: dict[str, re.Pattern[str]] = {
    "de": re.compile(r"\b(?:außer|ausser|bis auf|abgesehen von)\s+(.+?)(?=[,;.!?]|$)"),
    "fr": re.compile(r"\b(?:sauf|à part|excepté|hormis)\s+(.+?)(?=[,;.!?]|$)"),
    "es": re.compile(r"\b(?:menos|excepto|salvo|aparte de|quitando)\s+(.+?)(?=[,;.!?]|$)"),
}
# Floors by where they are, by language.
_LEVEL_WORDS: dict[str, LevelWords] = {
    "de": LevelWords(
        ground=re.compile(r"\berdgeschoss\b"),
        basement=re.compile(r"\bkeller\b"),
        down=re.compile(r"\bunten\b"),
        up=re.compile(r"\boben\b"),
    ),
    "fr": LevelWords(
        ground=re.compile(r"\brez[- ]de[- ]chaussée\b"),
        basement=re.compile(r"\bsous[- ]sol\b"),
        down=re.compile(r"\b(?:en|du|d'en) bas\b"),
        up=re.compile(r"\b(?:en|du|d'en) haut\b|\bà l'étage\b"),
    ),
    "es": LevelWords(
        ground=re.compile(r"\bplanta baja\b"),
        basement=re.compile(r"\bsótano\b"),
        down=re.compile(r"\babajo\b"),
        up=re.compile(r"\barriba\b"),
    ),
}
# Words that ask about outdoors ("Wie kalt ist es draußen?"), and words of the names of
# devices that tell it ("Außentemperatur", "Température extérieure").
_OUTSIDE_WORDS: dict[str, re.Pattern[str]] = {
    "en": re.compile(r"\b(?:outside|outdoors?|out there)\b"),
    "de": re.compile(r"\b(?:draußen|draussen|außen|aussen|im freien)\b"),
    "fr": re.compile(r"\b(?:dehors|extérieur)\b"),
    "es": re.compile(r"\b(?:fuera|afuera|exterior|al aire libre|en la calle)\b"),
}
_OUTDOOR_NAMES = re.compile(r"außen|aussen|draußen|outdoor|outside|ext[ée]rieur|exterior|dehors|afuera", re.I)


def outdoors(utterance: str, language: str, entities: tuple[HomeEntity, ...]) -> frozenset[str]:
    """What tells of outdoors where a request asks of it in `language`: the weather, else
    the sensors named for outdoors; none where it does not ask of outdoors (or the words
    for it are not known here). The 0.5B read the states of the satellite's area."""
    words = _OUTSIDE_WORDS.get(base_language(language))
    if words is None or not words.search(utterance.casefold()):
        return frozenset()
    weather = frozenset(e.entity_id for e in entities if e.domain == "weather")
    return weather or frozenset(
        e.entity_id
        for e in entities
        if e.domain == "sensor" and (_OUTDOOR_NAMES.search(e.name) or _OUTDOOR_NAMES.search(e.area or ""))
    )


# HA's cover device classes that BotPsy's kinds call otherwise.
_KIND_OF_CLASS = {"garage": "garage door"}


# Per language: the intents HA loaded, and the first words of their sentences.
_FIRST_WORDS: dict[str, tuple[Intents, FirstWords]] = {}


def named_by_slots(slots: dict[str, str], entities: tuple[HomeEntity, ...], intent: str | None = None) -> Named | None:
    """What a request names, from the slots HA's intent matching filled: a device by
    name, an area, a floor, a domain or device class (every one of those in the place, as
    HA's intents act); None if they name none of those."""
    name = slots.get("name", "").casefold()
    entity_ids = frozenset(
        e.entity_id for e in entities if name and name in (n.casefold() for n in (e.name, *e.aliases))
    )
    areas = frozenset(
        a for a in {e.area for e in entities if e.area} if a.casefold() == slots.get("area", "").casefold()
    )
    floors = frozenset(
        f for f in {e.floor for e in entities if e.floor} if f.casefold() == slots.get("floor", "").casefold()
    )
    # A word for several classes is each of them (French "stores": blinds and shades).
    classes = [_KIND_OF_CLASS.get(c, c) for c in slots.get("device_class", "").split(",") if c]
    said = tuple(c for c in classes if c in KINDS) if classes else tuple(d for d in [slots.get("domain")] if d in KINDS)
    kinds: tuple[str, ...] = said or _INTENT_KINDS.get(intent or "", ())
    domain = slots.get("domain")
    domains = frozenset({domain}) if domain and not kinds else None
    every = not entity_ids and bool(kinds or domains)
    if not (entity_ids or areas or floors or kinds or domains):
        return None
    return Named(
        entity_ids,
        areas,
        floors,
        kinds,
        domains=domains,
        every=every,
        anywhere=every and not (areas or floors),
    )


def with_covers_named_so(named: Named, cover_words: Sequence[str], entities: tuple[HomeEntity, ...]) -> Named:
    """`named`, with the covers in its places whose names have the word said for their
    kind: "las persianas del salón" where the salon's shutters are named Persiana (HA's
    Spanish "persiana" is a blind; the 0.5B found nothing, or opened the one blind)."""
    said = {_singular(w) for words in cover_words for w in _WORD.findall(words.casefold())}
    if not said:
        return named
    fitting = {e.entity_id for e in entities if named.fits(e)}
    alike = {
        e.entity_id
        for e in entities
        if e.domain == "cover"
        and (not (named.areas or named.floors) or e.area in named.areas or e.floor in named.floors)
        and said & {_singular(w) for w in _WORD.findall(e.name.casefold())}
    }
    if not alike - fitting:
        return named
    return named.only(fitting | alike)


def read_in_language(
    utterance: str, named: Named, entities: tuple[HomeEntity, ...], recognized: Recognized | None, language: str = ""
) -> tuple[Named, bool]:
    """What a request in a language BotPsy's word rules do not read names, and whether
    it asks: HA's reading where its intents recognised the request, else the names said
    (`named`) and whether it asks as `FirstWords.asks` reads it; without HA's sentences
    for the language, a question mark. What its verb asks is left to the model where it
    joins two requests in `language` ("allume X et éteins Y")."""
    # The level said belongs to the whole only where it joins no other request.
    alone = len(joined_parts(utterance, language)) == 1
    named = replace(
        named,
        levels=says_value(utterance, language),
        share=said_share(utterance, language) if alone else None,
        degrees=said_degrees(utterance) if alone else None,
    )
    if recognized is None:
        return named, utterance.rstrip().endswith("?")
    by_slots = named_by_slots(recognized.slots, entities, recognized.intent)
    if by_slots and set(by_slots.kinds) & _COVER_KINDS and (cover := recognized.texts.get("device_class")):
        # "Baja las persianas del salón" read as its blinds, where they are shutters.
        by_slots = with_covers_named_so(by_slots, (cover,), entities)
    named = replace(by_slots, levels=named.levels, share=named.share, degrees=named.degrees) if by_slots else named
    joining = JOINING.get(base_language(language))
    if joining and len(named.entity_ids) > 1 and re.search(rf"(?<!\w)(?:{joining})(?!\w)", utterance, re.I):
        # Two requests in one, each with its own verb: a call for each device named.
        return replace(named, several=True, services=()), recognized.question
    said = named.share is not None or named.degrees is not None
    services = VALUE_SERVICES if said else asked_services(utterance, recognized, language)
    return replace(named, services=services) if services else named, recognized.question


# A number, and one said with its unit: a share in percent ("auf 30 Prozent", "al 10 %",
# "à 20 %"), or degrees ("à 19 degrés", "auf 21 Grad", "21°").
_NUMBERS = re.compile(r"\d+(?:[.,]\d+)?")
_PERCENT = re.compile(
    r"(\d+(?:[.,]\d+)?)\s*(?:%|prozent|pour ?cent|por ?ciento|per ?cento|por ?cento|percent)(?!\w)", re.I
)
_DEGREES = re.compile(r"(\d+(?:[.,]\d+)?)\s*(?:°|grad|degrés?|grados?|gradi|degrees?)(?!\w)", re.I)
# Words that say a value or a change of one, by language (besides a number or a "%"):
# halves and quarters, more and less, comparatives, numbers in words.
_VALUE_WORDS: dict[str, re.Pattern[str]] = {
    "en": re.compile(
        r"\b(?:half\w*|quarters?|thirds?|more|less|bright\w*|dim\w*|dark\w*|light(?:er|en)|warm\w*|cool\w*|cold\w*"
        r"|hot\w*|heat\w*|loud\w*|quiet\w*|soft\w*|fast\w*|slow\w*|high\w*|low\w*|up|down|raise|max\w*|min\w*"
        r"|full\w*|level|percent|degrees?|medium|mid|bit|little|notch|step|volume|speed|brightness|position"
        r"|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|forty|fifty|sixty|seventy|eighty"
        r"|ninety|hundred)\b"
    ),
    "de": re.compile(
        r"\b(?:halb\w*|hälfte|viertel|drittel|mehr|weniger|heller|dunkler|wärmer|kälter|kühler|lauter|leiser|höher"
        r"|tiefer|niedriger|schneller|langsamer|stärker|schwächer|maximal|maximum|minimal|minimum|voll\w*|stufe"
        r"|hoch|runter|herunter|rauf|dimm\w*"
        r"|grad|prozent|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|zwanzig|dreißig|fünfzig|hundert)\b"
    ),
    "fr": re.compile(
        r"\b(?:moitié|demi\w*|quart|tiers|plus|moins|davantage|max\w*|min\w*|fond|degrés?|pour ?cent"
        r"|mont\w*|baiss\w*|augment\w*|diminu\w*|rédui\w*|tamis\w*"
        r"|deux|trois|quatre|cinq|six|sept|huit|neuf|dix|vingt|trente|quarante|cinquante|cent)\b"
    ),
    "es": re.compile(
        r"\b(?:mitad|medio|media|cuarto|tercio|más|menos|máximo|mínimo|tope|grados?|por ?ciento"
        r"|sub\w*|baj\w*|aument\w*|reduc\w*|disminu\w*|aten[uú]\w*"
        r"|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez|veinte|treinta|cuarenta|cincuenta|cien)\b"
    ),
}
# Words that say half of the whole, by language ("halb zu", "à moitié", "a la mitad").
_HALF_WORDS: dict[str, re.Pattern[str]] = {
    "de": re.compile(r"\b(?:halb|halbe[nmrs]?|zur hälfte)\b"),
    "fr": re.compile(r"\b(?:à moitié|à mi-hauteur|à demi|mi-clos|mi-ouverts?)\b"),
    "es": re.compile(r"\b(?:a la mitad|a medias|hasta la mitad|a media|medio (?:abiert|cerrad)\w*)\b"),
}


def said_share(text: str, language: str) -> float | None:
    """The share of the whole a request says a level is: the one number it says in percent
    ("al 10 %": 0.1), or half in words ("halb zu": 0.5)."""
    numbers = _NUMBERS.findall(text)
    if len(numbers) == 1 and (percent := _PERCENT.search(text)) is not None:
        value = float(percent.group(1).replace(",", "."))
        return value / 100 if 0 <= value <= 100 else None
    half = _HALF_WORDS.get(base_language(language))
    return 0.5 if half is not None and not numbers and half.search(text.casefold()) else None


def said_degrees(text: str) -> float | None:
    """The temperature a request says, where it says one number, in degrees."""
    degrees = _DEGREES.search(text)
    if degrees is None or len(_NUMBERS.findall(text)) != 1:
        return None
    return float(degrees.group(1).replace(",", "."))


def says_value(text: str, language: str) -> bool:
    """Whether `text` says a value or a change of one; True where the language's words for
    them are not known here (the model decides)."""
    words = _VALUE_WORDS.get(base_language(language))
    if counted := _COUNTED.get(base_language(language)):
        text = counted.sub(" ", text)
    folded = _without_floors(text.casefold(), language)
    return words is None or bool(_NUMBERS.search(text) or "%" in text or words.search(folded))


def _without_floors(folded: str, language: str) -> str:
    """A request's words (casefolded) less the floors said by where they are: "baja" of
    "la planta baja" lowers nothing (the 0.5B was asked to close the covers it opened)."""
    levels = _LEVEL_WORDS.get(base_language(language))
    return levels.without(folded) if levels is not None else folded


# How many devices, not a value: "the other two", "all three", "those two lamps", "les
# deux chevets" (the 0.5B set both at 25 %), "las dos lámparas", "alle drei Lampen".
_NOT_A_UNIT = r"(?!\s*(?:%|percent|pour ?cent|por ?ciento|prozent|degrees?|degrés?|grados?|grad|°|notch|step))"
_COUNTED: dict[str, re.Pattern[str]] = {
    "en": re.compile(
        rf"\b(?:the|all|those|these|other|both)\s+(?:two|three|four|five|six|seven|eight|nine|ten)\b{_NOT_A_UNIT}",
        re.IGNORECASE,
    ),
    "fr": re.compile(rf"\b(?:les|ces|tous les|toutes les)\s+(?:deux|trois|quatre|cinq|six)\b{_NOT_A_UNIT}", re.I),
    "es": re.compile(rf"\b(?:los|las|esos|esas|estos|estas)\s+(?:dos|tres|cuatro|cinco|seis)\b{_NOT_A_UNIT}", re.I),
    "de": re.compile(rf"\b(?:die|alle|diese|den)\s+(?:zwei|drei|vier|fünf|sechs)\b{_NOT_A_UNIT}", re.I),
}


# Words for an action that HA's sentences of the language do not start with, asked first
# of a device that has it, whatever else the verb may mean: raising or lowering a cover
# ("remonte les volets": the 0.5B closed them), a pause said as a noun ("Pon en pausa el
# altavoz": it played; "Mach mal Pause mit der Musik": it muted), and a lock "closed with
# the key".
_PAUSE = frozenset({"media_pause"})
_ASKED_FIRST: dict[str, tuple[tuple[re.Pattern[str], frozenset[str]], ...]] = {
    "de": (
        (re.compile(r"\b(?:hoch|rauf|hochfahren|hochziehen)\b"), frozenset({"open_cover"})),
        (re.compile(r"\b(?:runter|herunter|runterfahren|runterlassen|herunterlassen)\b"), frozenset({"close_cover"})),
        (re.compile(r"\b(?:pause|pausier\w*)\b"), _PAUSE),
    ),
    "fr": (
        (re.compile(r"\b(?:re)?mont(?:e|es|ez|er)\b"), frozenset({"open_cover"})),
        (re.compile(r"\b(?:re)?descend(?:s|ez|re)?\b"), frozenset({"close_cover"})),
        (re.compile(r"\bpause\b"), _PAUSE),
        # "Ferme la porte à clé" is locking it (the 0.5B asked to unlock it).
        (re.compile(r"\bà clé\b"), frozenset({"lock"})),
    ),
    "es": (
        (re.compile(r"\bsub(?:e|a|an|ir)\b"), frozenset({"open_cover"})),
        (re.compile(r"\bbaj(?:a|e|en|ar)\b"), frozenset({"close_cover"})),
        (re.compile(r"\bpausa\w*\b"), _PAUSE),
    ),
}


def asked_services(text: str, reading: Recognized, language: str = "") -> tuple[frozenset[str], ...]:
    """The services a request (or a part of one) asks for: those of HA's reading, or
    unrecognised, a service that sets the value it says ("baisse le plafonnier à 20 %"
    is a brightness, not off), else those its verb starts; first, the one action its
    words say that HA's sentences do not start with (`_ASKED_FIRST`)."""
    if reading.intent is None and (_PERCENT.search(text) or _DEGREES.search(text)):
        return VALUE_SERVICES
    folded = _without_floors(text.casefold(), language)
    first = [s for p, s in _ASKED_FIRST.get(base_language(language), ()) if p.search(folded)]
    if reading.intent is None and len(first) == 1:
        return (first[0], *reading.services)
    return reading.services


def named_parts(
    heard: Sequence[tuple[str, Recognized | None]],
    entities: tuple[HomeEntity, ...],
    here: str | None,
    language: str,
    whole: tuple[frozenset[str], ...] = (),
) -> tuple[Named, ...]:
    """What each part of a request joining several names ("éteins le plafonnier et allume
    le lampadaire"): HA's reading of it, else the names and places it says; with the
    services its verb asks for (a part without a verb of its own: the part before's; a
    part whose verb says less than the whole request's, `whole`'s: "Mach die Rollläden
    und Vorhänge zu" is closing both). None where a part names nothing BotPsy can tell
    (then the model reads the whole)."""
    named: list[Named] = []
    services: tuple[frozenset[str], ...] = ()
    for text, reading in heard:
        part = named_by_slots(reading.slots, entities, reading.intent) if reading and reading.intent else None
        part = part or named_in(text, entities, here=here, whole=False)
        if reading is not None and reading.said is not None:
            part = reading.said.named(part, entities, here)
        if not (part.entity_ids or part.kinds or part.areas or part.floors or part.partly):
            return ()
        share, degrees = said_share(text, language), said_degrees(text)
        # A part that says no verb ("ferme les volets et les rideaux") takes the one before's
        # (its first word, an article, starts sentences of every kind: the 0.5B opened them).
        verbless = bool(named) and reading is not None and reading.intent is None
        verbless = verbless and says_no_verb(text, base_language(language))
        services = (asked_services(text, reading, language) if reading and not verbless else ()) or services
        if whole and reading is not None and reading.intent is None and services and services[0] > whole[0]:
            services = whole
        services = VALUE_SERVICES if share is not None or degrees is not None else services
        named.append(
            replace(
                part,
                services=services,
                several=False,
                parts=(),
                levels=says_value(text, language),
                share=share,
                degrees=degrees,
            )
        )
    return tuple(named)


def joined_parts(utterance: str, language: str) -> list[str]:
    """The requests joined in `utterance` by its language's joining words ("X and then
    Y", "X, Y"); one part where nothing joins, or the language has no such words here."""
    joining = JOINING.get(base_language(language))
    if not joining:
        return [utterance]
    if both := _BOTH.get(base_language(language)):
        utterance = both[0].sub(both[1], utterance)
    parts = re.split(rf"\s*[,;]\s*(?:(?<!\w)(?:{joining})(?!\w)\s*)*|\s+(?:(?:{joining})(?!\w)\s*)+", utterance)
    parts = [p.strip() for p in parts if p and p.strip(" .!?")]
    # A lead-in word before a comma ("Finalement, referme-les à moitié") is no request of
    # its own; another word may be ("Bouilloire, lampe de chevet et ventilateur").
    if len(parts) > 1 and parts[0].casefold() in _LEAD_INS.get(base_language(language), ()):
        parts[:2] = [f"{parts[0]} {parts[1]}"]
    # What a request leaves out is no request of its own ("…, außer der Stehlampe").
    if but := _ALL_BUT.get(base_language(language)):
        for number in range(len(parts) - 1, 0, -1):
            if but.match(parts[number].casefold()):
                parts[number - 1 : number + 1] = [f"{parts[number - 1]}, {parts[number]}"]
    return parts


# "Tanto X como Y", "sowohl X als auch Y", "à la fois X et Y": X and Y.
_BOTH: dict[str, tuple[re.Pattern[str], str]] = {
    "es": (re.compile(r"\btanto\s+(.+?)\s+como\s+", re.I), r"\1 y "),
    "de": (re.compile(r"\bsowohl\s+(.+?)\s+als auch\s+", re.I), r"\1 und "),
    "fr": (re.compile(r"\bà la fois\s+(.+?)\s+et\s+", re.I), r"\1 et "),
}
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")
_NAME = "{name}"  # a sentence may start with a slot (a device's or an area's name)


@dataclass(frozen=True, slots=True)
class FirstWords:
    """The words HA's sentences of a language start with: those of its intents for an
    action, of its questions, and the words it skips ("tu peux", "bitte")."""

    actions: frozenset[str]
    questions: frozenset[str]
    skipped: tuple[str, ...]  # longest first
    by_intent: dict[str, frozenset[str]]  # the first words of each action intent
    # Each action sentence's first and last words, by intent ("{name}" for a name;
    # "*schalten" may end a longer word): "Küche Deckenlampe aus" is a "{name} … aus".
    sentences: dict[str, tuple[tuple[frozenset[str], frozenset[str]], ...]] = field(default_factory=dict)
    # The words for kinds of device, longest first ("portes de garage" before "portes").
    kind_words: tuple[tuple[str, str], ...] = ()
    # Whether the language may say its verb last, after a place said first ("Im Flur
    # bitte das Licht ausschalten"): German and Dutch.
    verb_last: bool = False
    language: str = ""  # the base language ("fr")
    # The first words of HA's sentences for the lights of a place said alone, a verb and
    # the place ("(allume|éclaire) {area}", "apaga {area}"; see `Said.place_lights`).
    place_lights: frozenset[str] = frozenset()

    def said(self, utterance: str) -> Said:
        """What the request's words say of kinds and places (see `Said`)."""
        text, excepted = utterance.casefold(), ""
        if (but := _ALL_BUT.get(self.language)) and (clause := but.search(text)):
            text, excepted = f"{text[: clause.start()]} {text[clause.end() :]}".strip(), clause[1]
        rest, kinds, before, covers = text, list[str](), list[str](), list[str]()
        plural = False
        for words, kind in self.kind_words:
            if words not in rest:
                continue
            phrase = re.compile(rf"(?<!\w){re.escape(words)}(?!\w)")
            if phrase.search(rest):
                rest = phrase.sub(" ", rest)
                kinds.append(kind)
                covers += [words] if kind in _COVER_KINDS else []
                plural = plural or _plural_of_one(words, self.kind_words)
            elif self.verb_last and len(words) >= _SHORTEST_KIND and (ending := _ending_with(words).search(rest)):
                before.append(ending.group(1))
                rest = rest.replace(ending.group(0), " ")
                kinds.append(kind)
        every = _EVERY_WORDS.get(self.language)
        said = tuple(dict.fromkeys(kinds))
        levels = _LEVEL_WORDS.get(self.language)
        lights = not said and _starts_as(self._first(utterance), self.place_lights)
        everything = _EVERYTHING_WORDS.get(self.language)
        return Said(
            text,
            said,
            bool(every and every.search(text)),
            levels,
            tuple(before),
            tuple(covers),
            excepted,
            plural,
            place_lights=lights,
            everything=bool(everything and everything.search(text)),
        )

    def _past_skipped(self, utterance: str) -> tuple[str, bool]:
        """The request's words past the skipped ones (and a pronoun elided before its verb:
        "m'allumes"), and whether any was skipped."""
        text = " ".join(_WORD.findall(utterance.casefold()))
        skipped, skipping = False, True
        while skipping:
            skipping = False
            for skip in self.skipped:
                if text.startswith(skip + " "):
                    text, skipping, skipped = text[len(skip) + 1 :], True, True
        return _ELIDED.sub("", text), skipped

    def _first(self, utterance: str) -> str:
        """The request's first word past the skipped ones (see `_as_verb`)."""
        return self._as_verb(self._past_skipped(utterance)[0].split(" ", 1)[0])

    def _as_verb(self, first: str) -> str:
        """A request's first word, as a verb where it carries a pronoun ("ábrelas",
        "referme-les": "abre", "ferme")."""
        if _starts_as(first, self.actions | self.questions):
            return first
        return next((verb for verb in _verbs_in(first, self.language) if _starts_as(verb, self.actions)), first)

    def asks(self, utterance: str) -> bool:
        """Whether a request HA did not recognise is a question: it asks to be told
        ("Dime si …", "Sag mir, ob …"), or it ends with a question mark and does not start
        (past the skipped words) as an action's sentences do, nor (where the verb may come
        last) end as one after a way of asking ("Kannst du das Licht anmachen?")."""
        rest, skipped = self._past_skipped(utterance)
        if (asking := _ASKING.get(self.language)) and asking.match(rest):
            return True
        if not utterance.rstrip().endswith("?"):
            return False
        first = self._as_verb(rest.split(" ", 1)[0])
        if _starts_as(first, self.actions) and not _starts_as(first, self.questions):
            return False
        return not (skipped and self.verb_last and self._ends_as_action(rest.rsplit(" ", 1)[-1]))

    def _ends_as_action(self, last: str) -> bool:
        """Whether `last` is a whole verb that action sentences end with ("ausschalten")."""
        return len(last) >= _SHORTEST_VERB and any(
            _end_match(last, ends) >= _WHOLE_WORD for pairs in self.sentences.values() for _starts, ends in pairs
        )

    def likely(self, utterance: str) -> frozenset[str]:
        """The action intents whose sentences start with the request's first word (a
        verb: "éteins", "apaga"), narrowed by those that end with its last word (the
        particle of a German verb: "mach … aus"), or those alone where the first word
        starts none; none if it asks."""
        first = self._first(utterance)
        if self.asks(utterance) or not first:
            return frozenset()
        starting = frozenset(i for i, words in self.by_intent.items() if _starts_as(first, words))
        said = _WORD.findall(utterance.casefold())
        last = said[-1] if said else ""
        # A first word no sentence starts with is taken for a name.
        named = not _starts_as(first, self.actions | self.questions)
        # Of the sentences that start so, those that end the most like it ("ausmachen" is
        # the end of "(aus|ab)machen", not of any word that ends in "en"); of their intents,
        # those with at least half as many such sentences as the most ("mach … zu" closes
        # in 11 sentences and locks in one).
        ending: dict[str, list[int]] = {}
        for intent, sentences in self.sentences.items():
            for starts, ends in sentences:
                if _starts_as(first, starts) or (named and _NAME in starts):
                    ending.setdefault(intent, []).append(_end_match(last, ends))
        best = max((length for lengths in ending.values() for length in lengths), default=0)
        if not best and self.verb_last and len(last) >= _SHORTEST_VERB:
            # No sentence that starts so ends so: a place said first ("Im Flur bitte das
            # Licht ausschalten", where HA's broadcast starts "im") is no verb; a whole verb
            # said last, as sentences end, says the intent. Not in English, whose sentences
            # end with a name or a place.
            ending = {i: [_end_match(last, ends) for _starts, ends in pairs] for i, pairs in self.sentences.items()}
            best = max((length for lengths in ending.values() for length in lengths), default=0)
            best = best if best >= _WHOLE_WORD else 0
        counts = {intent: lengths.count(best) for intent, lengths in ending.items()} if best else {}
        most = max(counts.values(), default=0)
        both = frozenset(intent for intent, count in counts.items() if count and count * 2 >= most)
        return both or starting


# Words a request may say before its verb that HA's sentences do not skip: pronouns
# ("¿Me enciendes la luz?", "Tu me fermes les volets ?") and ways of asking ("Pourriez-vous
# …", "Mi accendi …?"). Past them, a request that starts as an action's sentences is one,
# with a question mark or not.
_BEFORE_VERB = {
    "es": ("me", "nos", "te", "le", "les"),
    "fr": (
        "tu", "vous", "me", "nous", "te", "pourrais-tu", "pourriez-vous", "pouvez-vous", "tu pourrais",
        "vous pouvez", "vous pourriez", "veux-tu", "voulez-vous", "tu veux", "vous voulez",
    ),
    "it": ("mi", "ci", "ti", "puoi", "potresti", "può", "potrebbe"),
    "pt": ("me", "nos", "pode", "podes", "podia", "poderia"),
}  # fmt: skip
# Words said before a request's verb that tell nothing of it ("Mejor ábrelas otra vez",
# "Ach, mach sie halb auf"): skipped as HA's skip words are.
_LEAD_INS = {
    "es": ("mejor", "bueno", "vale", "ahora", "entonces", "pues", "oye", "venga", "al final", "mejor aún"),
    "fr": ("finalement", "plutôt", "bon", "alors", "enfin", "maintenant", "ok", "d'accord", "euh", "en fait"),
    "de": ("ach", "also", "okay", "ok", "na", "ähm", "nun", "lieber"),
    "it": ("allora", "bene", "ok", "ora", "adesso", "anzi", "dai", "meglio"),
    "pt": ("então", "bem", "ok", "agora", "melhor"),
}  # fmt: skip
# A pronoun said after a verb, in one word with it: "-les" (French), "las" of "ábrelas"
# (Spanish, which writes the verb's stress then: "abre"), "la" of "spegnila".
_ENCLITIC = {
    "fr": re.compile(r"(?:-(?:les?|la|moi|toi|nous|vous|lui|leur|en|y))+$"),
    "es": re.compile(r"(?:las|los|la|lo|les|le|me|nos)$"),
    "it": re.compile(r"(?:le|li|la|lo|mi|ci|ne)$"),
    "pt": re.compile(r"-(?:as?|os?|me|nos|lhe)$"),
}
# Said again ("rallume", "referme", "rouvre"): the verb of the thing done again.
_AGAIN_PREFIX = {"fr": re.compile(r"^r(?:e|é)?(?=[^\W\d_]{4})")}
_STRESS = str.maketrans("áéíóú", "aeiou")


def _verbs_in(word: str, language: str) -> list[str]:
    """What `word` may be as a verb: without a pronoun after it ("ábrelas": "abre"), or
    without the prefix of doing it again ("referme-les": "ferme")."""
    found = []
    if (enclitic := _ENCLITIC.get(language)) and (bare := enclitic.sub("", word)) != word and len(bare) >= 2:
        found.append(bare.translate(_STRESS) if language == "es" else bare)
    if again := _AGAIN_PREFIX.get(language):
        found += [again.sub("", verb, count=1) for verb in [word, *found] if again.match(verb)]
    return found


# How a request asks to be told, past the skipped words, question mark or not: "dis-moi",
# "¿Me dices …?"; a verb of looking, with "whether" ("Regarde si les volets sont fermés").
_ASKING = {
    "fr": re.compile(
        r"(?:dis|dites)(?:-| )(?:moi|nous)\b|(?:dire|sais|savez|sais-tu|savez-vous)\b"
        r"|(?:regarde|regardez|vérifie|vérifiez)\b.*\b(?:si|s'ils?)\b"
    ),
    "es": re.compile(
        r"(?:dime|dinos|d[ií]game|d[ií]ganos|decir|decirme|decirnos|dices|sabes|sabe)\b"
        r"|(?:mira|mire|comprueba|compruebe|revisa|revise)\b.*\bsi\b"
    ),
    "de": re.compile(
        r"(?:sag|sage|sagt|verrat|verrate) (?:mir|uns)\b|(?:sagen|weisst|wisst|wissen sie)\b"
        r"|(?:schau|schaue|guck|gucke|sieh|prüf|prüfe|nachschauen|nachsehen|prüfen)\b.*\bob\b"
    ),
    "it": re.compile(r"(?:dimmi|dicci|dire|sai|sapete)\b|(?:controlla|guarda|verifica)\b.*\bse\b"),
    "pt": re.compile(r"(?:diz-me|diga-me|dizer|sabes|sabe)\b|(?:vê|veja|verifica|verifique)\b.*\bse\b"),
}
# A pronoun elided before a verb, in one word with it ("m'allumes", "t'éteins").
_ELIDED = re.compile(r"^[mt]['\u2019]")

# What `_end_match` adds for a whole word (any part of one scores its length alone).
_WHOLE_WORD = 100
# The shortest word for a kind that ends a word of a place ("licht" of "Küchenlicht").
_SHORTEST_KIND = 4
# The shortest verb said last that says the intent alone ("öffnen"): not a particle ("ab",
# "aus", "auf"), nor a word such as "nicht" that many sentences end with.
_SHORTEST_VERB = 6
# The languages whose sentences may end with their verb (see `FirstWords.verb_last`).
_VERB_LAST = frozenset({"de", "nl"})


def _ending_with(words: str) -> re.Pattern[str]:
    """A word of three letters or more before `words`, in one word ("küchen" + "licht")."""
    return re.compile(rf"(?<!\w)(\w{{3,}}){re.escape(words)}(?!\w)")


def _end_match(word: str, ends: frozenset[str]) -> int:
    """How closely `word` ends as one of `ends`: a whole word of them (glued or not) beats
    any part; else
    the length of the longest that starts with "*" (the end of a word HA's sentences spell
    in parts: "aus[schalten]" ends with "*schalten") that it is or ends with; 0: none."""
    if word in ends or f"*{word}" in ends:
        return len(word) + _WHOLE_WORD
    return max(
        (len(e) - 1 for e in ends if e.startswith("*") and (word == e[1:] or (len(e) > 3 and word.endswith(e[1:])))),
        default=0,
    )


def _starts_as(word: str, starts: frozenset[str]) -> bool:
    """Whether `word` is one of `starts`, or begins with one ending in "*" (a word that
    HA's sentences go on spelling in alternatives: "apag(a|ar)" is "apag*"); of those,
    only stems of three letters or more ("qu*" may be any word); a word of five letters or
    more may also lack the last one or two letters of one ("pausier" for "pausiere*":
    the imperative without its "e"), or have one or two more ("enciendes" for "enciende")."""
    return word in starts or any(
        (s.endswith("*") and len(s) > 3 and (word.startswith(s[:-1]) or _clipped(word, s[:-1])))
        or (len(s) >= 5 and not s.endswith("*") and _clipped(s, word))
        for s in starts
    )


def _clipped(word: str, stem: str) -> bool:
    """Whether `word` is `stem` without its last one or two letters (five letters at least)."""
    return len(word) >= 5 and stem.startswith(word) and len(stem) - len(word) <= 2


def first_words(intents: Intents) -> FirstWords:
    """The first words of HA's sentences, by kind of intent (see `FirstWords`)."""
    rules = intents.expansion_rules
    actions: set[str] = set()
    questions: set[str] = set()
    by_intent: dict[str, set[str]] = {}
    sentences: dict[str, list[tuple[frozenset[str], frozenset[str]]]] = {}
    place_lights: set[str] = set()
    cover_verbs: set[str] = set()  # "ouvre", "ferme": HA's French also says them of lights
    for name, intent in intents.intents.items():
        if name in NOTHING_INTENTS:
            continue
        for data in intent.data:
            # An on/off intent's sentences for locks alone are an intent of their own here.
            domains = (data.requires_context or {}).get("domain") or (data.slots or {}).get("domain")
            locks = name in _ON_OFF_INTENTS.values() and domains in ("lock", ["lock"])
            key = f"{name}{_LOCKS}" if locks else name
            words = questions if name in QUESTION_INTENTS else by_intent.setdefault(key, set())
            for sentence in data.sentences:
                starts = _edge(sentence.expression, {**rules, **data.expansion_rules}, frozenset())[0]
                words |= starts
                if name in _ON_OFF_INTENTS.values() and domains == "cover":
                    cover_verbs |= starts
                elif (
                    name in _ON_OFF_INTENTS.values()
                    and domains == "light"
                    and _verb_and_place(sentence.expression, {**rules, **data.expansion_rules})
                ):
                    place_lights |= starts
                if name not in QUESTION_INTENTS:
                    ends = _edge(sentence.expression, {**rules, **data.expansion_rules}, frozenset(), last=True)[0]
                    sentences.setdefault(key, []).append((frozenset(starts), frozenset(ends)))
            if name not in QUESTION_INTENTS:
                actions |= words
    language = base_language(intents.language)
    said_first = {*intents.skip_words, *_BEFORE_VERB.get(language, ()), *_LEAD_INS.get(language, ())}
    skipped = sorted({" ".join(_WORD.findall(w.casefold())) for w in said_first}, key=len, reverse=True)
    intents_words = {i: frozenset(words) for i, words in by_intent.items()}
    kind_words = _kind_words(intents)
    kinds = {w for words, _kind in kind_words for w in words.split()}
    by_sentence = {i: tuple(pairs) for i, pairs in sentences.items()}
    skipping = tuple(w for w in skipped if w)
    return FirstWords(
        frozenset(actions),
        frozenset(questions),
        skipping,
        intents_words,
        by_sentence,
        kind_words,
        verb_last=language in _VERB_LAST,
        language=language,
        # Not a verb of covers too ("ferme le salon"), nor a word for lights ("lumière
        # {area}" says its kind), nor a word of two letters ("et", of "et teins").
        place_lights=frozenset(
            w for w in place_lights - cover_verbs - questions if len(w.rstrip("*")) > 2 and w.rstrip("*") not in kinds
        ),
    )


def _verb_and_place(expression: Expression, rules: dict[str, Sentence]) -> bool:
    """Whether a sentence says a verb and an area or a floor, and nothing else but words
    it may leave out ("(<allume>|<eclaire>) [<le>]{area}")."""
    said = [item for item in getattr(expression, "items", ()) if not _edge(item, rules, frozenset())[1]]
    return (
        len(said) == 2  # the verb and the place
        and not isinstance(said[0], ListReference)
        and isinstance(said[1], ListReference)
        and said[1].list_name in ("area", "floor")
    )


# Per language: the intents HA loaded, and their words for states (`state_words`).
_STATE_WORDS: dict[str, tuple[Intents, dict[str, dict[str, str]]]] = {}


async def async_state_words(hass: HomeAssistant, language: str, intents: Intents) -> dict[str, dict[str, str]]:
    """`state_words` of the intents HA loaded for `language`, worked out once per load."""
    known = _STATE_WORDS.get(language)
    if known is None or known[0] is not intents:
        known = _STATE_WORDS[language] = (intents, await hass.async_add_executor_job(state_words, intents))
    return known[1]


def state_words(intents: Intents) -> dict[str, dict[str, str]]:
    """The words of the language of `intents` for the states a question may ask a device
    of, by its domain: HA's own lists for its yes-or-no questions ("abierta" of a window
    sensor is "on", "allumée" of a light "on"), as its HassGetState sentences use them."""
    lists: dict[str, set[str]] = {}
    for data in intents.intents["HassGetState"].data if "HassGetState" in intents.intents else ():
        domains = (data.requires_context or {}).get("domain") or (data.slots or {}).get("domain") or ()
        rules = {**intents.expansion_rules, **(data.expansion_rules or {})}
        used = {name for sentence in data.sentences for name in sentence.list_names(rules) if name.endswith("_states")}
        for domain in [domains] if isinstance(domains, str) else domains:
            lists.setdefault(str(domain), set()).update(used)
    found: dict[str, dict[str, str]] = {}
    for domain, names in lists.items():
        for name in sorted(names):
            slot_list = intents.slot_lists.get(name)
            for value in slot_list.values if isinstance(slot_list, TextSlotList) else ():
                out = value.value_out[0] if isinstance(value.value_out, list) else value.value_out
                for text in sample_expression(value.text_in):
                    found.setdefault(domain, {}).setdefault(" ".join(text.casefold().split()), str(out))
    return found


def _kind_words(intents: Intents) -> tuple[tuple[str, str], ...]:
    """The words for kinds of device in the language of `intents`: those of its cover
    classes (HA's `cover_classes` list), and BotPsy's for lights and fans; longest first."""
    words = dict(_KIND_WORDS.get(base_language(intents.language), {}))
    classes = intents.slot_lists.get("cover_classes")
    for value in classes.values if isinstance(classes, TextSlotList) else ():
        out = value.value_out[0] if isinstance(value.value_out, list) else value.value_out
        kind = _KIND_OF_CLASS.get(str(out), str(out))
        if kind in KINDS:
            for text in sample_expression(value.text_in):
                words.setdefault(" ".join(text.casefold().split()), kind)
    return tuple(sorted(words.items(), key=lambda item: len(item[0]), reverse=True))


def _edge(
    expression: Expression, rules: dict[str, Sentence], seen: frozenset[str], *, last: bool = False
) -> tuple[set[str], bool]:
    """The words `expression` can start with (or end with, if `last`), and whether it can
    be empty."""
    if isinstance(expression, TextChunk):
        return _chunk_end(expression) if last else _chunk_start(expression)
    if isinstance(expression, ListReference):
        return {_NAME}, False
    if isinstance(expression, RuleReference):
        rule = rules.get(expression.rule_name)
        if rule is None or expression.rule_name in seen:
            return set(), True
        return _edge(rule.expression, rules, seen | {expression.rule_name}, last=last)
    if isinstance(expression, Alternative | Permutation):
        found = [_edge(item, rules, seen, last=last) for item in expression.items]
        alternatives: set[str] = set().union(*(w for w, _empty in found))
        empty = isinstance(expression, Alternative) and (expression.is_optional or any(e for _w, e in found))
        return alternatives, empty or not found
    return _sequence_edge(expression, rules, seen, last=last)


def _sequence_edge(
    expression: Expression, rules: dict[str, Sentence], seen: frozenset[str], *, last: bool
) -> tuple[set[str], bool]:
    """A sequence starts with its first item's words, and the next item's where that can
    be empty (ends, from its last item); it is empty if all its items can be."""
    items = list(getattr(expression, "items", ()))
    words: set[str] = set()
    for index in range(len(items) - 1, -1, -1) if last else range(len(items)):
        said, empty = _edge(items[index], rules, seen, last=last)
        if last and index > 0 and said and all(w.startswith("*") for w in said):
            # "(ein|an)schalten": the word is glued to what comes before it.
            before, optional = _edge(items[index - 1], rules, seen, last=True)
            glued = {f"*{b.lstrip('*')}{w[1:]}" for b in before if b != _NAME for w in said}
            said = glued | (said if optional or not glued else set())
        words |= said
        if not empty:
            return words, False
    return words, True


def _chunk_start(chunk: TextChunk) -> tuple[set[str], bool]:
    """The word a piece of text starts with ("word*" where it goes on in what follows the
    chunk), and whether it is empty."""
    text = chunk.text.casefold().lstrip()
    said: list[str] = _WORD.findall(text)
    if not said:
        return set(), True
    # A word cut short by the chunk's end goes on in what follows it.
    whole = (len(text) > len(said[0]) and not text[len(said[0])].isalnum()) or len(said) > 1
    return ({said[0] if whole else said[0] + "*"}, False)


def _chunk_end(chunk: TextChunk) -> tuple[set[str], bool]:
    """The word a piece of text ends with ("*word" where a chunk of one word is glued to
    what comes before it: "schalten" of "aus[schalten]"), and whether it is empty."""
    text = chunk.text.casefold()
    said: list[str] = _WORD.findall(text)
    if not said:
        return set(), True
    glued = len(said) == 1 and not text[:1].isspace()
    return ({f"*{said[-1]}" if glued else said[-1]}, False)
