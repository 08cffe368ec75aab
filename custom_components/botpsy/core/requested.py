"""What a request names (devices, areas, floors, kinds of device), and which devices fit it.

A small model asked for a device the home lacks acts on some other device: "turn on the
kitchen fan" switches the living room's fan, "open the kitchen windows" a kitchen light.
A device may be the target of an action only if it fits what the request names: named
itself (by name or alias), or in the named area or floor and of the named kind. The
grammar admits only fitting targets, and a request whose area and kind no device fits is
answered so, without the model (English kind words; names and areas in any language).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
import re

from botpsy_runtime.formats import ToolCall

from .home import HomeEntity
from .policy import is_social
from .shortlist import DOMAIN_WORDS
from .tools import ACTION, OPTION_PARAMS, Param, Tool, own_options


def _cover(*classes: str) -> Callable[[HomeEntity], bool]:
    """A cover of one of `classes`, or of no class (which could be any)."""
    return lambda e: e.domain == "cover" and e.device_class in (*classes, None)


def _domains(*domains: str) -> Callable[[HomeEntity], bool]:
    return lambda e: e.domain in domains


def _sensor(device_class: str) -> Callable[[HomeEntity], bool]:
    return lambda e: e.domain == "sensor" and e.device_class == device_class


def _player(excluded_class: str, excluded_words: str) -> Callable[[HomeEntity], bool]:
    """A media player, unless its class or its name says it is the other kind (a speaker
    is no TV; a TV is no speaker); a player that says neither could be either."""
    pattern = re.compile(rf"\b(?:{excluded_words})\b", re.I)
    return lambda e: e.domain == "media_player" and e.device_class != excluded_class and not pattern.search(e.name)


# Words of a name that say which kind of player it is, in the home's language.
_SPEAKER_WORDS = (
    "speakers?|echo|sonos|homepod|soundbar|radio|lautsprecher|enceintes?|haut-parleurs?|altavoz|altavoces"
    "|bocinas?|altoparlanti|altoparlante|cassa"
)
_TV_WORDS = "tv|television|fernseher|télé|télévision|tele|televisión|televisor|televisore"


# Nouns that name a kind of device, and the devices of that kind.
KINDS: dict[str, Callable[[HomeEntity], bool]] = {
    "light": lambda e: e.domain == "light" or (e.domain == "switch" and bool(re.search(r"light|lamp", e.name, re.I))),
    "lamp": lambda e: e.domain == "light" or (e.domain == "switch" and bool(re.search(r"light|lamp", e.name, re.I))),
    "fan": _domains("fan"),
    "blind": _cover("blind", "shade"),
    "shade": _cover("blind", "shade"),
    "curtain": _cover("curtain"),
    "shutter": _cover("shutter"),
    "awning": _cover("awning"),
    "window": _cover("window"),
    "garage door": _cover("garage"),
    # A gate is a cover, or a lock of one ("Garden Gate Lock"), not any lock.
    "gate": lambda e: _cover("gate")(e) or (e.domain == "lock" and "gate" in e.name.lower()),
    "door": lambda e: _cover("door", "garage", "gate")(e) or e.domain == "lock",
    "lock": _domains("lock"),
    # A water heater heats, but is no thermostat.
    "thermostat": _domains("climate"),
    "temperature": lambda e: e.domain in ("climate", "water_heater") or _sensor("temperature")(e),
    "heating": _domains("climate", "water_heater"),
    "humidity": lambda e: e.domain == "humidifier" or _sensor("humidity")(e),
    "tv": _player("speaker", _SPEAKER_WORDS),
    "television": _player("speaker", _SPEAKER_WORDS),
    "speaker": _player("tv", _TV_WORDS),
    "music": _domains("media_player"),
    "song": _domains("media_player"),
    "volume": _domains("media_player"),
    "play": _domains("media_player"),
    "track": _domains("media_player"),
    "album": _domains("media_player"),
    "playlist": _domains("media_player"),
    "vacuum": _domains("vacuum"),
    # What a vacuum does names it, as in HA's own sentences ("clean the first floor").
    "clean": _domains("vacuum"),
    "cleaning": _domains("vacuum"),
    "mop": _domains("vacuum"),
    "mower": _domains("lawn_mower"),
    "lawn mower": _domains("lawn_mower"),
    "humidifier": _domains("humidifier"),
    "valve": _domains("valve"),
    # A sprinkler is a valve, or a switch its name says waters ("Smart Plug" does not).
    "sprinkler": lambda e: e.domain == "valve"
    or (e.domain == "switch" and bool(re.search(r"sprinkler|irrigation|water", e.name, re.I))),
    "alarm": _domains("alarm_control_panel"),
}
_SYNONYMS = {
    "temp": "temperature", "bulb": "light", "drape": "curtain", "telly": "tv", "hoover": "vacuum",
    "lighting": "light",  # as HA's own <light> rule: light, lights, lighting, lamp, lamps
}  # fmt: skip
# "Here", as HA's own <here> rule says it: the area of the device that heard the request.
_HERE = re.compile(r"\b(?:(?:in )?here|(?:in )?(?:this|the|my|our) (?:room|area|space))\b")
# "My list", "the list": HA's shopping list, in HA's sentences.
_MY_LIST = re.compile(r"\b(?:my|the|our) list\b")
# "How humid is it in there?" after switching the vanity light: the area of the devices
# the conversation was about (not "put it on, I'm heading out there").
_THERE = re.compile(r"\bin there(?=\W*$)")
# How a kind is said in a reply when it is not a noun of its own.
_SAID = {
    "play": "media player",
    "music": "media player",
    "volume": "media player",
    "temperature": "thermostat",
    "clean": "vacuum",
    "cleaning": "vacuum",
    "mop": "vacuum",
}


# Kinds said of what plays, not of a device: the player meant is the one playing.
_MEDIA_WORDS = frozenset({"music", "song", "volume", "play", "track", "album", "playlist"})
# Kinds a place switches all of, as HA's intents do for "the light in the kitchen".
_PLACE_KINDS = frozenset(
    {"light", "lamp", "fan", "blind", "shade", "curtain", "shutter", "awning", "window", "garage door", "valve"}
)
# Words that ask for every device of a kind, besides a plural.
_EVERY = re.compile(r"\b(?:all|every|each|both|everywhere|entire|whole)\b")
_EVERYTHING = re.compile(r"\b(?:everything|all)\b")
_THEM = re.compile(r"\b(?:them|they|those|these|both)\b")
# Words that join two requests in one ("the kettle and the hall light", "X, then Y").
_SEVERAL = re.compile(r"\b(?:and|then|also|plus|as well as)\b|[,&;]")
_LEADING_JOIN = re.compile(r"^\W*(?:and|then|also|plus)\b")
# ... nor does one at its end ("put the card on the chores then": in that case).
_TRAILING_JOIN = re.compile(r"[\s,]+(?:then|also)\W*$")
# "Switch" as a verb ("switch it on", "switch them off"), not a device.
_SWITCH_VERB = re.compile(r"\bswitch(?:ed|ing)?\s+(?:(?:it|them|that|those|these|both|everything|all)\b|on\b|off\b)")
# "The next few days", "next Tuesday", "what's next on the calendar": a time, not a track.
_NEXT_TIME = re.compile(
    r"\bnext\b(?=\s+(?:(?:few|couple(?:\s+of)?|two|three|\d+)\s+)?"
    r"(?:days?|weeks?|weekend|months?|hours?|morning|afternoon|evening|night|\w+day|events?|appointments?|meetings?|on)\b)"
)

_TITLE = re.compile(r"^\s*play\b.*?(?=\s+(?:on|in)\s|$)")
# What is put on a list names no device either: "add clean the kitchen to my to-do list",
# "put clean the oven on the chores", "add clean the oven to it" (after reading the list).
_LIST_ITEM = re.compile(
    r"\b(add|put)\b.*?(?=\s+(?:to|on|onto)\s+(?:(?:[\w-]+\s+){0,3}"
    r"(?:list|chores|groceries|shopping|to-?dos?|jobs|tasks|errands)\b|(?:it|that|this|there)\W*$))"
)
# "How warm is it?" asks for the temperature (as HA's own sentences for it do); "warm"
# alone need not ("a warm white light").
_TEMPERATURE_QUESTION = re.compile(r"\bhow (?:hot|warm|cold|cool|chilly)\b")


def _stem(word: str) -> str:
    """A word without its plural "s": "lights" is "light" too, and "light" is "lights"."""
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


@lru_cache(maxsize=8192)
def _stems(phrase: str) -> tuple[str, ...]:
    """The stems of `phrase`'s words: the literal text `_phrase(phrase)` matches."""
    return tuple(_stem(w) for w in phrase.lower().split())


@lru_cache(maxsize=4096)
def _phrase(phrase: str) -> re.Pattern[str]:
    """`phrase` as words of a text, singular or plural (compiled once: this runs for
    every name of a big home, more than `re`'s own cache holds)."""
    return re.compile(r"\b" + r"\s+".join(re.escape(s) + "s?" for s in _stems(phrase)) + r"\b")


def _mentions(text: str, phrase: str) -> bool:
    """Whether `text` names `phrase` as words (singular or plural).

    A text without each of the phrase's stems cannot match: that plain test rules out
    almost every name of a home before its pattern is searched.
    """
    stems = _stems(phrase)
    return bool(stems) and all(s in text for s in stems) and _phrase(phrase).search(text) is not None


@dataclass(frozen=True, slots=True)
class Named:
    """What a request names."""

    entity_ids: frozenset[str]
    areas: frozenset[str]
    floors: frozenset[str]
    kinds: tuple[str, ...]
    # A request that names none of these acts only on the devices of the domains its words
    # point at ("unpause": media players), or on what the conversation acted on; None: any.
    domains: frozenset[str] | None = None
    # Every device of its kinds is meant ("the curtains", "all lights"), not one of them.
    every: bool = False
    # ... in the whole home: "all", "every" or "each" said of a kind, with no place.
    anywhere: bool = False
    # Its words join several requests ("X and Y", "X, then Y"): one call may not be all.
    several: bool = False
    # Devices it may mean by words of their names or of their area's ("start the Dreame"
    # for "Dreame Upstairs", "the porch light" for a light in the Front Porch), when it
    # names no device or place whole: they fit too, and no rule answers before the model.
    partly: frozenset[str] = frozenset()
    # ... of them, those it names by the most words ("the master bedroom light": the Master
    # Bedroom Light, not the Guest Bedroom Light).
    closest: frozenset[str] = frozenset()
    # The services its verb asks for, the likeliest first (`VERBS`): "turn off the
    # speaker" is its turn_off, not a mute; "open the valve" is open_valve, not a position.
    services: tuple[frozenset[str], ...] = ()
    # ... and, of a request for several things, each part's ("turn the lamp on and the
    # ceiling light off"): what it names, with the services its own verb asks for.
    parts: tuple[Named, ...] = ()
    # Whether it may set a level: False where its words say no value at all ("Stehlampe
    # an", "mets le ventilateur en marche"), where the 0.5B added a brightness of 12 % or
    # a fan speed of 30 % of its own.
    levels: bool = True
    # A level said as a share of the whole ("halb zu", "à moitié": 0.5), which every level
    # it sets then is: the 0.5B closed the curtains, or opened them all the way.
    share: float | None = None
    # ... or as a temperature ("auf 22 Grad"): the 0.5B set 22 for "a 20 grados".
    degrees: float | None = None
    # Its words, less the names of the devices it names: where it says one of a device's
    # own options ("the fan in auto mode", "the TV to Netflix"; see `by_options`).
    words: str = ""

    def only(self, entity_ids: Iterable[str], *, each: bool = True) -> Named:
        """These devices and nothing else (no place, kind, domain or partial name), with a
        call spread over each of them if `each` ("las mesitas", "sauf les spots")."""
        return replace(
            self,
            entity_ids=frozenset(entity_ids),
            areas=frozenset(),
            floors=frozenset(),
            kinds=(),
            domains=None,
            every=each,
            anywhere=each,
            partly=frozenset(),
            closest=frozenset(),
        )

    def all_but(self, fitting: Iterable[str], out: Collection[str], *, of_their_kind: bool) -> Named | None:
        """Each device of `fitting` (what the request names without its "but" clause) but
        those left `out` ("all the lights except the reading light"); of the domains left
        out only where the request names no kind (`of_their_kind`: "everything but the night
        light"). None where nothing is left out; nothing named where what is left out is all
        there is: never it instead (the 0.5B switched off the one left out)."""
        if not out:
            return None
        domains = {o.partition(".")[0] for o in out}
        rest = {i for i in fitting if i not in out and (not of_their_kind or i.partition(".")[0] in domains)}
        return self.only(rest) if rest else NAMES_NOTHING

    def services_for(self, entity: HomeEntity) -> tuple[frozenset[str], ...]:
        """The services asked of `entity`: by the part of the request that names it, if any."""
        return next((part.services for part in self.parts if part.fits(entity)), self.services)

    def option_words_for(self, entity: HomeEntity) -> str:
        """The words that may say one of `entity`'s options (those of the part of the
        request that names it, if any): none where they say a level ("heat the bedroom to
        22" is a temperature) or switch it off ("off to sleep" chooses no "sleep" preset)."""
        part = next((part for part in self.parts if part.fits(entity)), self)
        if part.share is not None or part.degrees is not None or part.services in SWITCHED_OFF:
            return ""
        return part.words

    def levels_for(self, entity: HomeEntity | None) -> SaidLevels:
        """Whether a level may be set on `entity`, and the share of the whole or the
        temperature it is if said: as the part of the request that names it says."""
        part = next((part for part in self.parts if entity is not None and part.fits(entity)), self)
        return SaidLevels(part.levels, part.share, part.degrees)

    def fits(self, entity: HomeEntity) -> bool:
        """Whether `entity` can be what the request means."""
        in_place = (
            not (self.areas or self.floors)
            or entity.area in self.areas
            or entity.floor in self.floors
            or any(_mentions(entity.name.lower(), a.lower()) for a in self.areas)
        )
        if entity.entity_id in self.entity_ids:
            return in_place  # "the TV in the kitchen" is not the living room's TV
        if entity.entity_id in self.partly:
            return True
        if self.areas or self.floors or self.kinds:
            if self.kinds:
                return in_place and any(KINDS[k](entity) for k in self.kinds)
            return in_place and (self.domains is None or entity.domain in self.domains)
        if self.domains is None:
            return not self.entity_ids  # only the devices named, if any are
        return entity.domain in self.domains

    @property
    def all_that_fit(self) -> bool:
        """Whether a call is meant for every device that fits, as HA's intents read it: a
        kind in an area or on a floor ("the light in the kitchen": all of them there), the
        devices of a place said in the plural, or every one of a kind in the home ("all the
        lights"); never when a device is named by itself."""
        of_kind = bool(self.kinds) and not self.entity_ids
        # Said in the singular of a place, only the kinds HA's own area sentences switch
        # all of ("the light in the kitchen"); "the TV in the living room" is one.
        of_place = of_kind and all(k in _PLACE_KINDS for k in self.kinds)
        # "Both", "all the ceiling lights": every device of the name said.
        of_name = self.anywhere and len(self.entity_ids) > 1 and not self.kinds
        return ((self.every or of_place) and bool(self.areas or self.floors)) or (self.anywhere and of_kind) or of_name

    def rest(self, acted: Collection[HomeEntity], actionable: Iterable[HomeEntity]) -> Named | None:
        """What a request for several things names that the calls so far (on `acted`) left
        out ("and the hallway light", after the coffee machine), if an `actionable` device
        fits it; None when the request asked for one thing or nothing is left.

        A small model writes one call where the words ask for two: the next round is
        asked for the rest, and may act on nothing else.
        """
        if not self.several:
            return None
        done = {e.entity_id for e in acted}
        entity_ids = self.entity_ids - done
        kinds = tuple(
            k for k in self.kinds if not any(replace(self, entity_ids=frozenset(), kinds=(k,)).fits(e) for e in acted)
        )
        if not (entity_ids or kinds):
            return None
        # Devices named by themselves are meant alone: their area is not asked for.
        areas, floors = (self.areas, self.floors) if kinds else (frozenset[str](), frozenset[str]())
        rest = replace(self, entity_ids=entity_ids, kinds=kinds, areas=areas, floors=floors)
        return rest if any(e.entity_id not in done and rest.fits(e) for e in actionable) else None

    @property
    def nothing(self) -> bool:
        """Whether the request names nothing and its words point at no kind of device."""
        return self.domains == frozenset() and not (self.entity_ids or self.partly)

    def one_of_several(self, entities: Iterable[HomeEntity]) -> list[HomeEntity]:
        """The devices a request for one device of a kind, anywhere ("set the thermostat
        to 21"), could mean, if it could mean more than one; as HA's intents, it is
        then asked which, not guessed. Empty when the request is not of that sort."""
        if self.entity_ids and not (self.every or self.areas or self.floors or self.kinds or self.several):
            # One name that several devices have ("the ceiling light", in five rooms).
            same = [e for e in entities if e.entity_id in self.entity_ids]
            # Told apart by their areas (devices of one name in one area: the action tells).
            apart = len({e.name.lower() for e in same}) == 1 and len({e.area for e in same}) == len(same)
            return same if len(same) > 1 and apart else []
        if self.domains == frozenset({"todo"}) and not (self.entity_ids or self.every or self.several):
            # "Add bananas to my list", with a chores list and a garden list. As HA's
            # sentences read it, "the list" is the shopping list where there is one.
            lists = [e for e in entities if e.domain == "todo"]
            return lists if len(lists) > 1 and _the_shopping_list(lists) is None else []
        if self.partly and not (self.every or self.entity_ids or self.areas or self.floors or self.several):
            # A word of several devices' names, in as many areas ("the ceiling light": the
            # Kitchen Ceiling and the Bedroom Ceiling); of a kind if one is said.
            partly = [e for e in entities if e.entity_id in self.closest]
            of_kind = [e for e in partly if any(KINDS[k](e) for k in self.kinds)] if self.kinds else partly
            apart = len({e.area for e in of_kind}) == len(of_kind) and None not in {e.area for e in of_kind}
            return of_kind if len(of_kind) > 1 and apart else []
        if self.every or self.entity_ids or self.areas or self.floors or self.partly or not self.kinds:
            return []
        if any(k in _MEDIA_WORDS for k in self.kinds):  # "skip this song": the one playing
            return []
        fitting = [e for e in entities if self.fits(e)]
        # One of them called by the kind said ("the TV": Smart TV, not the Projector): the
        # model is given them all, and the name to go by.
        called = [e for e in fitting if any(_mentions(e.name.lower(), k) for k in self.kinds)]
        # Those the kind said calls so first ("which lamp: Bedside Lamp, Desk Lamp, …, Hallway Light").
        return sorted(fitting, key=lambda e: e not in called) if len(fitting) > 1 and len(called) != 1 else []

    def describe(self, entities: Iterable[HomeEntity] = ()) -> str:
        """What was asked for, for a reply that nothing fits ("fan in the Kitchen"), or
        that asks which one (the name several of `entities` have)."""
        names = {e.name for e in entities if e.entity_id in self.entity_ids}
        kind = _SAID.get(self.kinds[0], self.kinds[0]) if self.kinds else next(iter(names), "device")
        kind = "list" if self.domains == frozenset({"todo"}) and not names else kind
        places = sorted(self.areas | self.floors)
        return f"{kind} in the {' or '.join(places)}" if places else kind


# What a verb asks of a device: groups of services, the first group a device has is meant.
# A robot sent out to work, or back to its base.
_SENT_OUT = (frozenset({"start", "start_mowing"}),)
_OFF = (
    frozenset({"turn_off"}),
    frozenset({"close_cover", "close_valve"}),
    frozenset({"media_stop", "media_pause"}),
    frozenset({"stop", "return_to_base", "dock", "pause"}),
)
_ON = (
    frozenset({"turn_on"}),
    frozenset({"open_cover", "open_valve"}),
    frozenset({"media_play"}),
    _SENT_OUT[0],
)
_SENT_BACK = (frozenset({"return_to_base", "dock"}),)
VERBS: tuple[tuple[re.Pattern[str], tuple[frozenset[str], ...]], ...] = (
    (re.compile(r"\b(?:off|deactivate|disable|kill)\b"), _OFF),
    # "Turn on the X", "turn the X on", "X on": not the "on" of a place ("on the terrace").
    (
        re.compile(
            r"\b(?:turn|switch|power|put|get|bring)\s+on\b"
            r"|\b(?:turn|switch|power|put|get|bring)\b(?:\s+[\w']+){1,5}\s+on"
            # ... with what may follow: "switch the fan on too", "put the heating on for me",
            # "turn the lights on in the hall".
            r"(?:\s+in\s+(?!(?:an?|half|a few|\d+|one|two|three|five|ten|fifteen|twenty|thirty)\b)"
            r"(?:the\s+|my\s+|our\s+)?[\w']+(?:\s+[\w']+)?)?"
            r"(?:\s+(?:please|too|also|then|again|now|as well|for me))*\s*[.!?]*$"
            r"|^\W*[\w']+(?: [\w']+)? on\W*$|\b(?:activate|enable)\b"
        ),
        _ON,
    ),
    (re.compile(r"\bopen\b"), (frozenset({"open_cover", "open_valve"}), frozenset({"turn_on"}))),
    (re.compile(r"\b(?:close|shut)\b"), (frozenset({"close_cover", "close_valve"}), frozenset({"turn_off"}))),
    # "Raise" and "lower" of a cover open and close it ("roll down the shutters": the 0.5B
    # set them where they were); of a volume or a temperature they say more or less, which
    # a device with no such service is left to (`by_verb`).
    # ... so do curtains drawn or pulled back, parted, and an awning put out or taken in
    # ("draw back the curtains", "put the awning out": the 0.5B closed them); curtains
    # drawn are closed.
    (
        re.compile(
            r"\b(?:raised?|lift|(?:roll|pull|bring)(?:ed)? up|(?:draw|pull)(?:n|ed)?\s+(?:[\w']+\s+){0,3}?back"
            r"|part|extend|(?:put|roll) out|(?:put|roll) (?:the )?[\w' ]{2,30}? out)\b"
        ),
        (frozenset({"open_cover"}),),
    ),
    (
        re.compile(
            r"\b(?:lower(?:ed)?|drop|(?:roll|pull|let|bring)(?:ed)? down|retract|(?:roll|bring|take) in"
            # "Draw the curtains" (not drawn back or open: the model's).
            r"|draw(?:n|s)?\b(?!\s+(?:[\w']+\s+){0,3}?(?:back|apart|open))"
            r"|(?:roll|bring|take) (?:the )?[\w' ]{2,30}? in\W*$)"
        ),
        (frozenset({"close_cover"}),),
    ),
    # "Hold the music", "put the speaker on hold": paused, not played (the 0.5B played it).
    # (Not "hold on, switch off the lights": a wait, said before a verb of its own.)
    (re.compile(r"\b(?:pause|hold)\b(?! on\b)"), (frozenset({"media_pause"}),)),
    # "Mow the lawn", "send the mower out", "send the vacuum home", "dock the mowbot" (the
    # 0.5B docked a mower sent out, and read its area's state for "back to its dock").
    (re.compile(r"\b(?:mow|send\s+(?:[\w']+\s+){0,3}?out)\b|\bstart (?:mowing|cleaning|vacuuming)\b"), _SENT_OUT),
    (
        re.compile(
            r"^\W*dock\b|\bdock (?:the|it|them)\b|\bsend\s+(?:[\w']+\s+){0,3}?(?:back|home)\b"
            r"|\breturn\s+(?:[\w']+\s+){0,3}?to\s+(?:its\s+|the\s+)?(?:dock|base|charger)\b"
        ),
        _SENT_BACK,
    ),
    # "Skip this song", "the next track", "back one song": the track, not the player (the
    # 1.5B went back a song for "skip").
    (re.compile(r"\b(?:skip(?! back)|next (?:song|track|episode|chapter))\b"), (frozenset({"media_next_track"}),)),
    (
        re.compile(
            r"\b(?:skip back|(?:previous|prior|last) (?:song|track|episode|chapter)|back (?:a|one) (?:song|track))\b"
        ),
        (frozenset({"media_previous_track"}),),
    ),
    # "Lounge blinds down please", "the shutters up": a cover said with which way alone (the
    # 0.5B opened the blinds for "down").
    (re.compile(r"^\W*(?:[\w']+ ){1,4}down(?: please)?\W*$"), (frozenset({"close_cover"}),)),
    (re.compile(r"^\W*(?:[\w']+ ){1,4}up(?: please)?\W*$"), (frozenset({"open_cover"}),)),
)
# What is said of what plays is stopped, not the player switched off ("turn off the music").
_MEDIA_OFF = (frozenset({"media_pause", "media_stop"}), frozenset({"turn_off"}))
# A value said ("to 30 %", "halfway") is a position or a level, which any verb may set.
_VALUE = re.compile(r"\d|%|\b(?:percent|half|halfway|bit|little|more|less)\b")
# ... and said with no verb of ours ("turn the heating up to 21", "turn it down to 40 %"):
# a service that sets a value (the 0.5B set the heating's mode, or switched the fan off).
_SET_TO = re.compile(r"\b(?:to|at)\s+(?:\d|a quarter\b|half\b)")
_NOT_A_LEVEL = re.compile(r"\b(?:channel|track|song|episode|minutes?|hours?|seconds?)\b")
# The services that set a value: a level, a temperature, a position, a volume, a speed.
VALUE_SERVICES = (
    frozenset(
        {
            "turn_on",
            "set_temperature",
            "set_cover_position",
            "set_valve_position",
            "volume_set",
            "set_percentage",
            "set_humidity",
        }
    ),
)


# The arguments that set a level: a call that must have one is not offered where no value
# is said, and one that may have one is offered without it.
LEVEL_PARAMS = frozenset(
    {
        "brightness",
        "brightness_pct",
        "brightness_step_pct",
        "percentage",
        "position",
        "volume_level",
        "temperature",
        "humidity",
    }
)


# ... and those a share of the whole sets (in percent, or from 0 to 1 for a volume).
_SHARE_PARAMS = {"brightness_pct": 100, "position": 100, "percentage": 100, "volume_level": 1, "humidity": 100}
# What brings a device all the way, with no level said.
_ALL_THE_WAY = frozenset({"turn_on", "open_cover", "open_valve"})
# A share of the whole said in words (no number): "down to a quarter", "three quarters
# open", "halfway". Not a time ("a quarter past", "in a quarter of an hour") nor a part of
# several ("half the lights", "half an hour").
_FRACTIONS = (
    (re.compile(r"\bthree[ -]quarters?\b(?! (?:of|past|to)\b)"), 0.75),
    (re.compile(r"\b(?:a|one) quarter\b(?! (?:of|past|to)\b)"), 0.25),
    (re.compile(r"\btwo[ -]thirds\b(?! of\b)"), 0.67),
    (re.compile(r"\b(?:a|one) third\b(?! of\b)"), 0.33),
    (re.compile(r"\bhalf(?:[ -]?way)?\b(?! (?:of|the|an?|past|to)\b)"), 0.5),
    # "The armchair lamp to full", "fan on max", "full brightness", "all the way up".
    (re.compile(r"\b(?:to|at|on) (?:the )?(?:full|max(?:imum)?)\b(?! (?:of|load|cycle|wash|mode|programm?e?)\b)"
                r"|\b(?:full|max(?:imum)?) (?:brightness|volume|speed|power|blast)\b|\ball the way up\b"), 1.0),
)  # fmt: skip


def said_fraction(text: str) -> float | None:
    """The share of the whole an English request says in words ("to a quarter": 0.25), if
    it says no number (a 0.5B set 80 % for "bring it down to a quarter")."""
    lowered = text.lower()
    if re.search(r"\d", lowered):
        return None
    return next((value for pattern, value in _FRACTIONS if pattern.search(lowered)), None)


@dataclass(frozen=True, slots=True)
class SaidLevels:
    """What a request says of the level of one device: whether it says one at all, and
    the share of the whole or the temperature it is, where it says that."""

    levels: bool = True
    share: float | None = None
    degrees: float | None = None


def by_levels(tools: Iterable[Tool], levels_for: Callable[[str], SaidLevels]) -> tuple[Tool, ...]:
    """`tools` with no level to set on the targets `levels_for` says may not have one, and
    where it says the level, only calls that set it, to that value alone."""
    result = []
    for tool in tools:
        if tool.read_only or not tool.targets:
            result.append(tool)
            continue
        targets = {}
        for entity_id, params in tool.targets.items():
            said = levels_for(entity_id)
            if said.share is not None or said.degrees is not None:
                fixed = _fixed(params, said)
                # "Full" of what has no such level ("the hall light on full", "the blinds
                # all the way up"): switching it on (opening it), as it goes.
                if fixed or (said.share == 1 and tool.service in _ALL_THE_WAY):
                    targets[entity_id] = fixed or params
            elif said.levels:
                targets[entity_id] = params
            elif not any(p.required and p.name in LEVEL_PARAMS for p in params):
                targets[entity_id] = tuple(p for p in params if p.name not in LEVEL_PARAMS)
        if targets:
            result.append(replace(tool, targets=targets))
    return tuple(result)


def _fixed(params: tuple[Param, ...], said: SaidLevels) -> tuple[Param, ...]:
    """`params` with the level said fixed and required (the first that takes a share, or
    the temperature), the other levels left out; none where no level of them takes it."""
    values: dict[str, float] = {}
    if said.share is not None:
        values = {name: round(said.share * whole, 2) for name, whole in _SHARE_PARAMS.items()}
    elif said.degrees is not None:
        values = {"temperature": said.degrees}
    level = next((p for p in params if p.name in values), None)
    if level is None:
        return ()
    value = values[level.name]
    rest = (p for p in params if p.name not in LEVEL_PARAMS)
    return (replace(level, required=True, minimum=value, maximum=value, group=None), *rest)


# What a request that switches a device off asks ("turn off the fan, I'm off to sleep"
# chooses no "sleep" preset).
SWITCHED_OFF = (_OFF, _MEDIA_OFF)
# Options that are no choice of their own: a verb says them ("turn off": turn_off).
_NOT_OPTIONS = frozenset({"on", "off", "none", "unknown"})


def by_options(tools: Iterable[Tool], words_for: Callable[[str], str]) -> tuple[Tool, ...]:
    """`tools` with each target whose words (`words_for`) say one of its own options (a
    preset mode, a source, an HVAC mode: "put the fan in auto mode", "the TV to Netflix")
    kept only in the calls that set it, to it; unchanged where they say none of them, or
    several. The 0.5B set the fan's speed to 0 for "auto mode"."""
    tools = tuple(tools)
    acting = [tool for tool in tools if not tool.read_only]
    said: dict[str, set[str]] = {}
    for tool in acting:
        for entity_id, params in tool.targets.items():
            if words := words_for(entity_id):
                options = (o for p in params if p.name in OPTION_PARAMS for o in p.options if _says_option(words, o))
                said.setdefault(entity_id, set()).update(options)
    chosen = {entity_id: options.pop() for entity_id, options in said.items() if len(options) == 1}
    if not chosen:
        return tools
    result = []
    for tool in tools:
        if tool.read_only or not tool.targets:
            result.append(tool)
            continue
        targets = {}
        for entity_id, params in tool.targets.items():
            if (option := chosen.get(entity_id)) is None:
                targets[entity_id] = params
            elif setting := next((p for p in params if p.name in OPTION_PARAMS and option in p.options), None):
                fixed = replace(setting, options=(option,), required=True)
                targets[entity_id] = tuple(fixed if p is setting else p for p in params)
        if targets:
            result.append(replace(tool, targets=targets))
    return tuple(result)


def level_words(text: str, entities: Iterable[HomeEntity]) -> str:
    """`text` less the names of `entities` and the options they offer, which say no level
    ("put the heat pump on cool" is its mode alone: the 0.5B also set a temperature, as
    "heat" and "cool" say one elsewhere)."""
    said = text.lower()
    phrases = {_as_said(p) for e in entities for p in (e.name, *e.aliases, *own_options(e))}
    for phrase in sorted(phrases, key=len, reverse=True):
        if len(phrase) > 2 and phrase not in _NOT_OPTIONS and _mentions(said, phrase):
            said = _phrase(phrase).sub(" ", said)
    return said


def _as_said(option: str) -> str:
    """An option (or a name) as words are said: "heat_cool" is "heat cool"."""
    return option.lower().replace("_", " ")


def _says_option(words: str, option: str) -> bool:
    said = _as_said(option)
    if said in _NOT_OPTIONS or len(said) < 3:
        return False
    return re.search(rf"(?<!\w){re.escape(said)}(?!\w)", words) is not None


# What is said of an item on a list: it goes on, or is done ("tick that off"). "Put" is a
# list's verb where what it goes on is a list ("put milk on the shopping list", "... on
# there"), or a list the request names ("put the card on the chores"): "put the kettle on",
# "put the lights on in the hall" are not (they were taken for a list's item).
_ADD = re.compile(r"\badd\b.+\b(?:to|on|onto)\b(?! hold\b)")
_PUT_ON_A_LIST = re.compile(r"\bput\b.+\b(?:on|onto)\s+(?:there\b|it\b(?!')|(?:[\w'-]+\s+){0,3}?(?:list|to-?dos?)\b)")
_PUT_ON = re.compile(r"\bput\b.+\b(?:on|onto)\b(?! hold\b)")
_DONE = re.compile(r"\b(?:tick|check|cross|mark)\b|\btake (?:it|that|them) off\b")
LIST_ADD = (frozenset({"add_item"}),)
LIST_DONE = (frozenset({"update_item"}),)


# "Unmute it": HA's one mute service takes either value, and a small model wrote "muted"
# for it; the verb says which.
_MUTE = re.compile(r"\b(un)?mute\b", re.IGNORECASE)


def muted_as_said(call: ToolCall, text: str) -> ToolCall:
    """A mute call with the value the one mute verb of `text` says ("unmute": not muted)."""
    said = {bool(un) for un in _MUTE.findall(text)}
    if call.arguments.get(ACTION) != "volume_mute" or len(said) != 1:
        return call
    return ToolCall(call.name, {**call.arguments, "is_volume_muted": not said.pop()})


def _services(text: str, *, names_a_list: bool = False) -> tuple[frozenset[str], ...]:
    """The services the one verb of `text` asks for; none where it says a value, two
    verbs or none. `names_a_list`: the request names a to-do list."""
    if _DONE.search(text):
        return LIST_DONE
    if _ADD.search(text) or _PUT_ON_A_LIST.search(text) or (names_a_list and _PUT_ON.search(text)):
        return LIST_ADD
    said = list(dict.fromkeys(services for pattern, services in VERBS if pattern.search(text)))
    if not said and _SET_TO.search(text) and not _NOT_A_LEVEL.search(text):
        return VALUE_SERVICES
    if len(said) != 1 or _VALUE.search(text):
        return ()
    if said[0] is _OFF and any(_mentions(text, word) for word in _MEDIA_WORDS):
        return _MEDIA_OFF
    return said[0]


def on_for(services: tuple[frozenset[str], ...], domain: str, state: str | None) -> tuple[frozenset[str], ...]:
    """The services asked of a device in `state`: "put the radio on" with the radio paused
    plays it (it is on already; HA's turn_on left it paused, and the reply said "on")."""
    if services == _ON and domain == "media_player" and state == "paused":
        return (frozenset({"media_play"}), *services)
    # "Para el ventilador", "halte den Ventilator an": stopping what cannot pause switches
    # it off (the 0.5B switched the fan on).
    if _PAUSE in services and domain in _STOPPED_BY_OFF:
        return (*services, _OFF[0])
    return services


_PAUSE = frozenset({"media_pause"})
# What stops by switching off (a cover stops where it is; a player pauses).
_STOPPED_BY_OFF = frozenset({"fan", "light", "switch", "humidifier", "climate", "water_heater", "input_boolean"})


def by_verb(tools: Iterable[Tool], services_of: Callable[[str], Sequence[frozenset[str]]]) -> tuple[Tool, ...]:
    """`tools` with each target kept only for the services its verb asks of it: of the
    groups `services_of` the target, the first that the target has (all if it has none)."""
    tools = tuple(tools)
    offered: dict[str, set[str]] = {}
    for tool in tools:
        if not tool.read_only:
            for entity_id in tool.targets:
                offered.setdefault(entity_id, set()).add(tool.service)
    allowed = {e: next((g & s for g in services_of(e) if g & s), s) for e, s in offered.items()}
    result = []
    for tool in tools:
        if tool.read_only or not tool.targets:
            result.append(tool)
        elif targets := {e: p for e, p in tool.targets.items() if tool.service in allowed[e]}:
            result.append(replace(tool, targets=targets))
    return tuple(result)


# Words of a request that name no device: how it is asked, not what of.
_FILLER = frozenset(
    _stem(w)
    for w in (  # noqa: SIM905 (a word list, read as one)
        "the a an and then also please can could would will you i me my our your it its this that these those "
        "turn switch set make start stop open close on off up down in at of for to by with from into all every "
        "each both some now want like need just again there here is are be get put let keep leave give "
        "lock unlock dim brighten raise lower pause resume mute unmute activate deactivate enable disable run "
        "smart device devices thing go back last previous next ahead more less bit little percent degree degrees "
        "room area house home"
    ).split()
)
_WORDS = re.compile(r"[^\W\d_]{3,}")
# A word shared by more names than this names none of them by itself.
_FEW = 3
# A temperature said as a number: "21°", "72 F".
_DEGREES = re.compile(r"\d\s*(?:°|[fc]\b)")


def _parts(request: str, entities: tuple[HomeEntity, ...], here: str | None) -> tuple[Named, ...]:
    """What each part of a request for several things names, where its verb asks for
    services ("turn the floor lamp on", "and the kitchen ceiling off")."""
    parts = (named_in(part, entities, here=here, whole=False) for part in _SEVERAL.split(request) if part.strip())
    return tuple(part for part in parts if part.services and (part.entity_ids or part.kinds or part.partly))


def _said_words(text: str) -> set[str]:
    """The stems of the words of `text` that may name a device or a place: not those that
    say how or of what kind a request is ("the garage door" names a kind, not the Garage)."""
    for kind in KINDS:
        text = _phrase(kind).sub(" ", text)
    return {_stem(w) for w in _WORDS.findall(text)} - _FILLER


def named_by_every_word(text: str, entities: Iterable[HomeEntity]) -> frozenset[str]:
    """The devices whose name (or an alias) has every word of `text` that may name one, kinds
    included ("the kitchen one": Kitchen Lights; "the lamp": the Lounge Lamp, not every light);
    none where it says no such word."""
    said = {_stem(w) for w in _WORDS.findall(text.lower())} - _FILLER - {"one", "not"}
    if not said:
        return frozenset()
    return frozenset(e.entity_id for e in entities if any(said <= set(_stems(n)) for n in (e.name, *e.aliases)))


def _closest(text: str, entities: tuple[HomeEntity, ...], partly: frozenset[str]) -> frozenset[str]:
    """Of the devices `partly` named, those whose name and area have the most of its words."""
    said = _said_words(text)
    overlap = {
        e.entity_id: len(said & {s for n in (e.name, *e.aliases, e.area or "") for s in _stems(n)})
        for e in entities
        if e.entity_id in partly
    }
    best = max(overlap.values(), default=0)
    return frozenset(e for e, n in overlap.items() if n == best)


def _named_by_part(text: str, entities: tuple[HomeEntity, ...]) -> frozenset[str]:
    """The devices whose names (or whose area's name) have a word of `text` that few
    names share, besides the words that say how or of what kind a request is."""
    said = _said_words(text)
    if not said:
        return frozenset()
    having: dict[str, set[str]] = {}
    for entity in entities:
        for name in (entity.name, *entity.aliases):
            for stem in set(_stems(name)) & said:
                having.setdefault(stem, set()).add(entity.entity_id)
    places: dict[str, set[str]] = {}
    for entity in entities:
        for stem in set(_stems(entity.area or "")) & said:
            places.setdefault(stem, set()).add(entity.area or "")
    found = {e for ids in having.values() if len(ids) <= _FEW for e in ids}
    found |= {e.entity_id for e in entities for areas in places.values() if len(areas) <= _FEW and e.area in areas}
    return frozenset(found)


def _by_area_said(text: str, same_name: list[HomeEntity], here: str | None) -> set[str]:
    """Of devices of one name in several areas, those whose area the request says with it
    ("the master bedroom light": the Bedroom Light in the Master Bedroom, not the one in
    the Bedroom), else the one where it was heard (as HA's intents prefer); all of them
    if neither tells."""
    areas = {e.area for e in same_name if e.area and _mentions(text, e.area.lower())}
    # The longest place said: "master bedroom" is not also the Bedroom.
    areas = {a for a in areas if not any(a != b and _mentions(b.lower(), a.lower()) for b in areas)}
    if not areas:  # a place by a word of its name: "the speaker on the terrace" (Rooftop Terrace)
        words = _said_words(text) - {s for e in same_name for s in _stems(e.name)}
        overlap = {e.area: len(words & set(_stems(e.area))) for e in same_name if e.area}
        best = max(overlap.values(), default=0)
        areas = {a for a, n in overlap.items() if best and n == best}
    if not areas and here and any(e.area == here for e in same_name):
        areas = {here}
    return {e.entity_id for e in same_name if not areas or e.area in areas}


def _said_of(text: str, places: Mapping[str, tuple[str, ...]]) -> frozenset[str]:
    """The places (areas or floors) `text` names by their name or one of their aliases;
    a name said only inside a longer one said is not ("the kids bedroom" is no Bedroom):
    the longest are read first, and their words are gone for the rest."""
    said: set[str] = set()
    names = sorted(((n.lower(), p) for p, aliases in places.items() for n in (p, *aliases)), key=lambda n: -len(n[0]))
    for name, place in names:
        if _mentions(text, name):
            said.add(place)
            text = _phrase(name).sub(" ", text)
    return frozenset(said)


def _without(text: str, places: Mapping[str, tuple[str, ...]]) -> str:
    """`text` without the names and aliases of `places` ("the downstairs bathroom" is an area)."""
    for place, aliases in places.items():
        for name in (place, *aliases):
            text = _phrase(name.lower()).sub(" ", text)
    return text


@dataclass(frozen=True, slots=True)
class LevelWords:
    """How a language says floors by where they are (HA's own sentences have no such words)."""

    ground: re.Pattern[str]  # level 0
    basement: re.Pattern[str]  # the lowest below it
    down: re.Pattern[str]  # the floor below the one the request was heard on
    up: re.Pattern[str]  # ... above it

    def said(self, text: str) -> bool:
        """Whether `text` says a floor this way."""
        return any(p.search(text) for p in (self.ground, self.basement, self.down, self.up))

    def without(self, text: str) -> str:
        """`text` without the floors it says this way: "planta baja" says no lowering."""
        for pattern in (self.ground, self.basement, self.down, self.up):
            text = pattern.sub(" ", text)
        return text


ENGLISH_LEVELS = LevelWords(
    ground=re.compile(r"\b(?:ground|main|entry) (?:floor|level)\b"),
    basement=re.compile(r"\b(?:basement|cellar)\b"),
    down=re.compile(r"\b(?:downstairs|down stairs)\b"),
    up=re.compile(r"\b(?:upstairs|up stairs)\b"),
)
# A floor's level from its name, where HA has none: "Ground Floor" is 0, "Basement" -1.
# The names are the home's, whatever language the request is in: "Erdgeschoss", "Étage".
_LEVEL_NAMES = (
    (
        re.compile(
            r"\b(?:ground|main|downstairs|entry|erdgeschoss|parterre|rez[- ]de[- ]chaussée|planta baja"
            r"|piano terra|pianterreno|begane grond)\b"
        ),
        0,
    ),
    (re.compile(r"\b(?:basement|cellar|lower level|keller|untergeschoss|sous[- ]sol|sótano|seminterrato)\b"), -1),
    (
        re.compile(r"\b(?:upstairs|upper|obergeschoss|étage|planta alta|primera planta|primo piano|bovenverdieping)\b"),
        1,
    ),
)


def _level(entity: HomeEntity) -> int | None:
    """The level of `entity`'s floor: HA's, else what its name says, if anything."""
    if entity.floor_level is not None or not entity.floor:
        return entity.floor_level
    names = " ".join((entity.floor, *entity.floor_aliases)).lower()
    return next((level for pattern, level in _LEVEL_NAMES if pattern.search(names)), None)


def floors_by_level(
    text: str, entities: tuple[HomeEntity, ...], here: str | None, words: LevelWords = ENGLISH_LEVELS
) -> frozenset[str]:
    """The floors `text` names by where they are: "downstairs" is the floor below the one
    the request was heard on (the ground floor if that is not known), "upstairs" the floor
    above it, "the ground floor" level 0, "the basement" the lowest below it."""
    if not words.said(text):
        return frozenset()
    levels: dict[int, set[str]] = {}
    for entity in entities:
        if entity.floor and (level := _level(entity)) is not None:
            levels.setdefault(level, set()).add(entity.floor)
    if not levels:
        return frozenset()
    here_level = next((_level(e) for e in entities if here and e.area == here and e.floor), None)
    wanted: int | None = None
    if words.ground.search(text):
        wanted = 0
    elif words.basement.search(text):
        wanted = min((level for level in levels if level < 0), default=None)
    elif words.down.search(text):
        below = [level for level in levels if here_level is not None and level < here_level]
        wanted = max(below) if below else (0 if here_level is None else None)
    elif words.up.search(text):
        above = [level for level in levels if level > (0 if here_level is None else here_level)]
        wanted = min(above, default=None)
    return frozenset(levels.get(wanted, ())) if wanted is not None else frozenset()


def _normalized(request: str, here: str | None, there: str | None = None) -> str:
    """`request` lowercased, "here" and "there" as the areas, synonyms as kinds, no titles
    or list items (they name nothing)."""
    text = request.lower()
    if here:
        text = _HERE.sub(f"in the {here.lower()}", text)
    if there:
        text = _THERE.sub(f"in the {there.lower()}", text)
    # "Play The Office on the TV": a title names no area, kind or device; what follows it
    # does. Nor does an item for a list.
    text = _TITLE.sub("play", text)
    text = _LIST_ITEM.sub(r"\1", text)
    text = _TEMPERATURE_QUESTION.sub("how is the temperature", text)
    for word, kind in _SYNONYMS.items():
        text = re.sub(rf"\b{word}s?\b", kind, text)
    return text


# "That light", "those blinds", "the same lamp": a kind said of what was just about ("this
# light" too, unless a satellite heard it: then it may be the one in its room).
_DEMONSTRATIVE = r"\b(?:that|those|the same)\s+"
_DEMONSTRATIVE_NEAR = r"\b(?:that|this|those|these|the same)\s+"


def _shown(
    text: str, kinds: list[str], entities: tuple[HomeEntity, ...], recent: tuple[str, ...], here: str | None
) -> frozenset[str]:
    """The `recent` devices of a kind that `text` points at with a demonstrative ("that
    light"); none if it points at none."""
    pointing = _DEMONSTRATIVE if here else _DEMONSTRATIVE_NEAR
    said = [k for k in kinds if re.search(rf"{pointing}{re.escape(k)}(?:e?s)?\b", text)]
    return frozenset(e.entity_id for e in entities if e.entity_id in recent for k in said if KINDS[k](e))


def _each_of(entity_ids: frozenset[str], services: tuple[frozenset[str], ...], text: str) -> Named:
    """What names exactly `entity_ids`, each of them meant."""
    several = len(entity_ids) > 1
    empty: frozenset[str] = frozenset()
    return Named(entity_ids, empty, empty, (), empty, every=several, anywhere=several, services=services, words=text)


def named_in(
    request: str,
    entities: Iterable[HomeEntity],
    here: str | None = None,
    recent: Iterable[str] = (),
    *,
    whole: bool = True,
) -> Named:
    """The devices, areas, floors and kinds `request` names; "here" is the area `here`
    (the area of the device that heard it). A request that names none of them ("turn it
    off", "unpause", "good night") is about the `recent` devices of the conversation, or
    the domains its words point at, if any. A part of a request (`whole` False) is read
    without its own parts."""
    entities, recent = tuple(entities), tuple(recent)
    there = {e.area for e in entities if e.entity_id in recent and e.area}
    text = _normalized(request, here, next(iter(there)) if len(there) == 1 else None)
    # The words of a device's name ("Kitchen Lights") name that device, not an area, a
    # kind or a device named by part of them ("Kitchen", a speaker): "turn off the kitchen
    # lights" is about the lights alone. The longest names are found first.
    by_name: dict[str, set[str]] = {}
    for entity in entities:
        for name in (entity.name, *entity.aliases):
            by_name.setdefault(name.lower(), set()).add(entity.entity_id)
    found: set[str] = set()
    said = text
    for name in sorted((n for n in by_name if _mentions(text, n)), key=len, reverse=True):
        if _mentions(text, name):  # not inside a longer name found before
            found |= _by_area_said(said, [e for e in entities if e.entity_id in by_name[name]], here)
            text = _phrase(name).sub(" ", text)
    named = frozenset(found)
    area_names = {e.area: e.area_aliases for e in entities if e.area}
    areas = _said_of(text, area_names)
    floors = _said_of(text, {e.floor: e.floor_aliases for e in entities if e.floor}) or floors_by_level(
        _without(text, {a: area_names[a] for a in areas}), entities, here
    )
    # The longest kind first ("garage door" before "door").
    kinds: list[str] = []
    for kind in sorted(KINDS, key=len, reverse=True):
        if _mentions(text, kind) and not any(kind in k for k in kinds):
            kinds.append(kind)
    # An area named only inside a kind ("garage door", with a Garage area) is not asked for,
    # nor a kind that a named device is ("the Kitchen Ceiling light" is that light alone).
    areas = frozenset(a for a in areas if not any(a.lower() in k for k in kinds))
    if not (areas or floors):
        kinds = [k for k in kinds if not any(KINDS[k](e) for e in entities if e.entity_id in named)]
    services = _services(request.lower(), names_a_list=any(e.startswith("todo.") for e in named))
    # "Put that light on again", "close those blinds": the devices of that kind the
    # conversation was about, not every one of the kind (nor a question which), wherever heard.
    shown = frozenset() if named or areas or floors else _shown(text, kinds, entities, recent, here)
    # A kind said without a place means the ones where the request was heard, if there
    # are any there (as HA's intents prefer the satellite's area).
    kind_here = (
        not shown
        and here
        and kinds
        and not (named or areas or floors)
        and any(e.area == here and KINDS[k](e) for e in entities for k in kinds)
    )
    areas = frozenset({here}) if kind_here and here else areas
    partly = frozenset() if named or areas or floors or is_social(request) else _named_by_part(text, entities)
    if named or areas or floors or kinds:
        if shown:
            return _each_of(shown, services, text)
        said_all = bool(_EVERY.search(text))
        plural = any(re.search(rf"\b{re.escape(k)}s\b", text) for k in kinds)
        # "And the towel heater" joins this request to the one before, not two in one.
        several = bool(_SEVERAL.search(_TRAILING_JOIN.sub("", _LEADING_JOIN.sub("", text))))
        return Named(
            named,
            areas,
            floors,
            tuple(kinds),
            every=said_all or plural,
            # "All the lights", or "the lights" with no place (as HA's intents read it).
            anywhere=(said_all or plural) and not (areas or floors),
            several=several,
            partly=partly,
            closest=_closest(text, entities, partly),
            services=() if several else services,
            parts=_parts(request, entities, here) if several and whole else (),
            words=text,
        )
    # "Switch it on" says no switch.
    unswitched = _NEXT_TIME.sub(" ", _SWITCH_VERB.sub(" ", text))
    domains = frozenset(d for d, said in DOMAIN_WORDS.items() if any(_mentions(unswitched, w) for w in said))
    if _DEGREES.search(text):  # "make it 72 F"
        domains |= {"climate"}
    # "Switch off everything downstairs": every device, wherever the words put them; the
    # model reads the place (not a request that names nothing).
    any_domain = not domains and bool(_EVERYTHING.search(text))
    # "Turn them both off": every one of the devices the conversation was about, not one.
    them = len(set(recent)) > 1 and bool(_THEM.search(text))
    # "Make it a degree warmer" after setting one thermostat: that one, not every one
    # ("dim both of them": each of them).
    if of_domains := frozenset(e for e in recent if e.partition(".")[0] in domains):
        every = them and len(of_domains) > 1
        return Named(
            of_domains,
            frozenset(),
            frozenset(),
            (),
            frozenset(),
            every=every,
            anywhere=every,
            services=services,
            words=text,
        )
    of = None if any_domain else domains
    closest = _closest(text, entities, partly)
    if of == frozenset({"todo"}) and not recent and (shopping := _my_list(text, entities)):
        recent, of = tuple(shopping), None
    return Named(
        frozenset(recent),
        frozenset(),
        frozenset(),
        (),
        of,
        every=them,
        anywhere=them,
        partly=partly,
        closest=closest,
        services=services,
        words=text,
    )


def _my_list(text: str, entities: Iterable[HomeEntity]) -> frozenset[str]:
    """ "Add bananas to my list", of several lists: the one shopping list, as HA's sentences
    read "my list" (the 0.5B put the bananas on the chores); none where none or several."""
    shopping = _the_shopping_list(entities) if _MY_LIST.search(text) else None
    return frozenset({shopping.entity_id}) if shopping else frozenset()


def _the_shopping_list(entities: Iterable[HomeEntity]) -> HomeEntity | None:
    """The one to-do list of `entities` named a shopping list, which HA's sentences call
    "the list" and "my list" (not "Groceries" beside "Chores": which one is asked); None
    where there is none, or several."""
    shopping = [e for e in entities if e.domain == "todo" and "shopping" in e.name.lower()]
    return shopping[0] if len(shopping) == 1 else None


# A request that names nothing: every device fits.
NAMES_NOTHING = Named(frozenset(), frozenset(), frozenset(), ())
