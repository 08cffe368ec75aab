"""What a follow-up asks that its words alone do not say, worked out from the turn before.

A small model reads "a bit brighter" as a brightness of 12 %, and "and the towel heater"
as switching it on and off again. Two kinds of follow-up are certain enough to be done
without it (English words):

- a **relative change** ("a bit brighter", "two degrees warmer", "louder", "turn it down",
  "slower", "raise the temperature", "lower the blinds a bit", "up a bit"; in German,
  French and Spanish their comparatives: "ein Grad wärmer", "plus fort", "más bajo"):
  each device's level moves by a step from where it is now (`relative_call`);
- the **same again** on something else ("and the towel heater", "same for the hallway",
  "the living room blinds too", "now the bathroom"), and what a correction meant ("no, not
  the fan, the sofa lamp"): the calls of the turn before, on what this one names
  (`again_calls`).

Everything else a follow-up says is left to the model, which reads the conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
import re
from typing import Any

from botpsy_runtime.formats import ToolCall

from .home import HomeEntity
from .tools import ACTION


@dataclass(frozen=True, slots=True)
class Relative:
    """A change said relative to where a device is: what moves (None: whatever the
    device's level is, "turn it up"), which way, and by how much if it is said."""

    quantity: str | None  # "brightness", "temperature", "volume", "speed", "position", "air", "light"
    up: bool
    amount: float | None = None


# How many: "two", "a couple of".
_COUNT = r"(?:\d+(?:[.,]\d+)?|one|two|three|four|five|ten|a couple(?: of)?|couple of|a few)"
# Comparatives and phrases that say what moves and which way.
_RELATIVE: tuple[tuple[re.Pattern[str], str | None, bool], ...] = (
    (re.compile(r"\b(?:brighter|lighter)\b|\bmore light\b|\bbrightness up\b"), "brightness", True),
    (re.compile(r"\b(?:dimmer|darker)\b|\bless (?:light|bright)\b|\bbrightness down\b|\bnot (?:so|as|that) bright\b"),
     "brightness", False),
    (re.compile(r"\b(?:warmer|hotter)\b|\b(?:heat|heating|temperature) up\b"), "temperature", True),
    (re.compile(r"\b(?:cooler|colder)\b|\bless (?:warm|hot)\b|\b(?:heat|heating|temperature) down\b"),
     "temperature", False),
    (re.compile(r"\blouder\b|\bvolume up\b"), "volume", True),
    (re.compile(r"\b(?:quieter|softer)\b|\bless loud\b|\bvolume down\b|\bnot (?:so|as|that) loud\b"), "volume", False),
    (re.compile(r"\bfaster\b|\bspeed (?:it |them )?up\b"), "speed", True),
    (re.compile(r"\bslower\b|\bslow (?:it |them )?down\b"), "speed", False),
    (re.compile(r"\b(?:open|raise) (?:it|them|\w+(?: \w+)?) (?:a (?:bit|little) )?(?:more|further|higher)\b"),
     "position", True),
    (re.compile(r"\b(?:close|lower) (?:it|them|\w+(?: \w+)?) (?:a (?:bit|little) )?(?:more|further)\b"),
     "position", False),
    # "Two more degrees", "a couple of degrees less".
    (re.compile(rf"\b{_COUNT} (?:more|extra) degrees?\b|\bdegrees? (?:more|higher|up)\b"), "temperature", True),
    (re.compile(r"\bdegrees? (?:less|lower|down)\b"), "temperature", False),
    # "Turn it up", "turn the music down": whatever the device's level is.
    (re.compile(r"\b(?:turn|crank|bring|put|bump|knock|nudge|push)"
                r" (?:it|them|that|this|the (?:\w+ ){0,2}\w+) (up|down)\b"
                r"|\b(?:turn|crank|bump|knock) (up|down) (?:the )?\w+"), None, True),
    # "Bit higher", "make it a little lower", "set the heating higher": a comparative of
    # no level, of whatever the device's level is ("lower the blinds" is a verb, "lower
    # floor lights off" a place).
    (re.compile(r"^\W*(?:(?:a )?(?:bit|little|touch|tad|notch|lot|smidge) )?(higher|lower)"
                r"(?: (?:still|again|please|now))*\W*$"
                r"|\b(?:a (?:bit|little|touch|tad|notch|lot)|slightly|much|somewhat) (higher|lower)\b"
                r"|\b(?:make|set|put|turn|go|take|bring|move) (?:it|them|that|this|the (?:\w+ ){0,2}\w+ )?"
                r" ?(higher|lower)\b"), None, True),
)  # fmt: skip
# "It's so", "the lounge is really", "I'm": how a place or the one asking feels.
_FEELS = (
    r"\b(?:it'?s|it is|i'?m|i am|feels?|getting|is|are)\s+(?:(?:so|really|very|a bit|a little|quite|rather"
    r"|pretty|absolutely)\s+)?"
)
# "That's too bright", "it's a bit too loud": the other way, where nothing else is asked
# ("too bright, switch it off" asks that).
_TOO: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"\btoo (?:dark|dim)\b"), "brightness", True),
    (re.compile(r"\btoo bright\b"), "brightness", False),
    (re.compile(r"\btoo (?:cold|cool|chilly)\b"), "temperature", True),
    (re.compile(r"\btoo (?:hot|warm)\b"), "temperature", False),
    (re.compile(r"\btoo (?:quiet|soft)\b"), "volume", True),
    (re.compile(r"\btoo loud\b"), "volume", False),
    (re.compile(r"\btoo slow\b"), "speed", True),
    (re.compile(r"\btoo fast\b"), "speed", False),
    # Said without "too": "it's cold in the hallway", "brr, the lounge is freezing", "I
    # can't hear the music" (the 0.5B set the heating's mode it had, or played what played).
    (re.compile(rf"{_FEELS}(?:cold|freezing|chilly|icy|frozen)\b"), "temperature", True),
    # ... and "it's so hot in the hallway", "I'm roasting": the other way ("stuffy": air
    # to move, which only a fan does; see `for_the_air`).
    (re.compile(rf"{_FEELS}(?:hot|boiling|roasting|sweltering|baking)\b"), "temperature", False),
    (re.compile(rf"{_FEELS}(?:stuffy|muggy|airless)\b"), "air", False),
    # "It's dark in the study", "the hallway is so gloomy": light there (the 0.5B set the
    # thermostat, closed the blinds, switched the lights off); see `_for_the_dark`.
    (re.compile(rf"{_FEELS}(?:dark|gloomy|dim|pitch[- ](?:black|dark))\b"), "light", True),
    (re.compile(r"\bcan(?:no|')?t (?:really )?hear\b"), "volume", True),
    (re.compile(r"\bcan(?:no|')?t (?:really )?see\b"), "brightness", True),
)
# "Raise the temperature", "lower the kitchen volume a bit", "reduce the fan speed": a verb
# that moves a level, and the level it names.
_LEVEL_NOUNS = {
    "brightness": "brightness",
    "temperature": "temperature",
    "heat": "temperature",
    "heating": "temperature",
    "volume": "volume",
    "sound": "volume",
    "speed": "speed",
}
_MOVED_LEVEL = re.compile(
    r"\b(?:(raise|increase|boost|up)|lower|decrease|reduce|drop|down)\s+(?:the\s+)?(?:[\w']+\s+){0,2}?"
    rf"({'|'.join(_LEVEL_NOUNS)})\b"
)
# "Dim it a little", "close the blinds a bit", "raise them slightly", "increase it": a verb
# said of a device with a small amount (or one that can only mean a change of a level).
_NUDGE_WORDS = {
    "dim": ("brightness", False),
    "brighten": ("brightness", True),
    "open": ("position", True),
    "close": ("position", False),
    "raise": (None, True),
    "lower": (None, False),
    "increase": (None, True),
    "boost": (None, True),
    "decrease": (None, False),
    "reduce": (None, False),
}
_SLIGHTLY = r"(?:a (?:bit|little|touch|tad|notch)|slightly|somewhat)"
_NUDGED = re.compile(
    rf"\b({'|'.join(_NUDGE_WORDS)}) (?:it|them|that|this|the (?:\w+ ){{0,3}}?\w+)(?: up| down)? {_SLIGHTLY}"
    r"|\b(increase|boost|decrease|reduce) (?:it|them|that|this)\b"
)
# "Up a bit", "a little down": a follow-up that says only which way.
_WAY_ONLY = re.compile(rf"^\W*(?:{_SLIGHTLY}\s+)?(up|down)(?:\s+{_SLIGHTLY})?(?:\s+please)?\W*$")

# A number said with the change: "by 10 percent", "two degrees warmer".
_NUMBERS = {
    "one": 1, "a": 1, "two": 2, "three": 3, "four": 4, "five": 5, "ten": 10, "half a": 0.5,
    "a couple of": 2, "a couple": 2, "couple of": 2,
}  # fmt: skip
_AMOUNT = re.compile(
    r"\b(\d+(?:[.,]\d+)?|one|two|three|four|five|ten|half a|a couple(?: of)?|couple of|a)\s*(?:more\s+|extra\s+)?"
    r"(?:°|degrees?|percent|%|points?)"
    r"|\bby (\d+(?:[.,]\d+)?|one|two|three|four|five|ten)\b"
    # "Volume down 20", "turn up the kitchen volume 15": a bare number after the way or
    # the level, as HA's sentences read it (points of a percentage, degrees).
    r"|\b(?:up|down|increase|decrease|volume)\s+(\d+(?:[.,]\d+)?)(?=\s*(?:$|[.,!?]|(?:on|in|for|please)\b))"
)
# What asks for a new value outright ("set it to 40 %"): not relative, whatever else it says.
_ABSOLUTE = re.compile(
    r"\bto \d|\bto (?:a |one )?(?:half|quarter|third|max|min|full)|\b(?:halfway|maximum|minimum|three quarters)\b"
)


# The same in other languages: comparatives and what raises or lowers a level (words,
# what moves, which way), each a whole phrase.
_OTHER_RELATIVE_WORDS: dict[str, tuple[tuple[str, str | None, bool], ...]] = {
    "de": (
        (r"heller", "brightness", True),
        (r"dunkler", "brightness", False),
        (r"wärmer", "temperature", True),
        (r"kälter|kühler", "temperature", False),
        (r"lauter", "volume", True),
        (r"leiser", "volume", False),
        (r"schneller", "speed", True),
        (r"langsamer", "speed", False),
    ),
    "fr": (
        (r"plus (?:clair|lumineux|de lumière)", "brightness", True),
        (r"plus sombre|moins (?:clair|lumineux|de lumière)", "brightness", False),
        (r"plus chaud|moins froid", "temperature", True),
        (r"plus (?:frais|froid)|moins chaud", "temperature", False),
        (r"plus fort|monte le son|augmente le (?:son|volume)", "volume", True),
        (r"moins fort|baisse le son|diminue le (?:son|volume)", "volume", False),
        (r"plus vite", "speed", True),
        (r"moins vite|plus lentement", "speed", False),
    ),
    "es": (
        (r"más (?:de )?(?:brillante|luz|clar[oa])", "brightness", True),
        (r"más oscur[oa]|menos luz", "brightness", False),
        (r"más (?:caliente|calor|cálid[oa])", "temperature", True),
        (r"más (?:fresc[oa]|frí[oa]|frío)|menos calor", "temperature", False),
        (r"más alto|más fuerte|sube el volumen|súbele", "volume", True),
        (r"más bajo|más suave|baja el volumen|bájale", "volume", False),
        (r"súbel[oa]s?", None, True),
        (r"bájal[oa]s?", None, False),
        (r"más rápido", "speed", True),
        (r"más lento", "speed", False),
    ),
}
_OTHER_RELATIVE = {
    language: tuple((re.compile(rf"\b(?:{words})\b"), quantity, up) for words, quantity, up in rows)
    for language, rows in _OTHER_RELATIVE_WORDS.items()
}
# How a place feels, said in other languages ("es ist dunkel im Flur", "il fait trop chaud
# dans le bureau", "hace frío en el salón"), as `_TOO`'s feelings in English; never where
# the words ask ("ist es dunkel im Flur?", "est-ce qu'il fait froid ?", "¿hace frío?").
_OTHER_FEELS_WORDS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "de": (
        (r"\b(?:es ist|ist es|ist's)\b.*\b(?:stock|zappen)?(?:dunkel|finster|duster)\b", "light", True),
        (r"\b(?:es ist|ist es|ist's|mir ist)\b.*\b(?:heiß|warm)\b", "temperature", False),
        (r"\b(?:es ist|ist es|ist's|mir ist)\b.*\b(?:eiskalt|kalt)\b", "temperature", True),
        (r"\b(?:es ist|ist es|ist's)\b.*\b(?:stickig|schwül)\b", "air", False),
    ),
    "fr": (
        (r"\bil fait (?:(?!plus|moins)\w+ )?(?:sombre|noir)\b", "light", True),
        (r"\b(?:il fait|j'ai) (?:(?!plus|moins)\w+ )?chaud\b", "temperature", False),
        (r"\b(?:il fait|j'ai) (?:(?!plus|moins)\w+ )?froid\b", "temperature", True),
        (r"\bon étouffe\b|\bétouffant\b", "air", False),
    ),
    "es": (
        (r"\bestá (?:(?!más|menos)\w+ )?oscur[oa]\b", "light", True),
        (r"\b(?:hace|tengo|qué) (?:(?!más|menos)\w+ )?calor\b", "temperature", False),
        (r"\b(?:hace|tengo|qué) (?:(?!más|menos)\w+ )?frío\b", "temperature", True),
        (r"\bambiente cargado\b|\bno se puede respirar\b", "air", False),
    ),
}
_OTHER_FEELS = {
    language: tuple((re.compile(words), quantity, up) for words, quantity, up in rows)
    for language, rows in _OTHER_FEELS_WORDS.items()
}
_OTHER_ASKS = re.compile(r"\?\W*$|^\W*(?:¿|ist es\b|ist's\b|est-ce\b|fait-il\b)")
# A value said outright ("auf 22 Grad", "à 20 %", "al 50"): not relative.
_OTHER_ABSOLUTE = re.compile(r"\b(?:auf|à|a|al)\s+\d")
_OTHER_AMOUNT = re.compile(r"(\d+(?:[.,]\d+)?)\s*(?:°|grad|prozent|%|degrés?|pour ?cent|grados?|por ?ciento)")
_ONE = re.compile(r"\b(?:ein|eine[nm]?|un|une|uno|una)\s+(?:grad|degré|grado)\b")


def relative_change(text: str, language: str = "en") -> Relative | None:
    """The relative change `text` asks for, if it asks for one (and no value outright)."""
    said = text.lower()
    if language != "en":
        change = _other_relative(said, _OTHER_RELATIVE.get(language, ()))
        if change is None and not _OTHER_ASKS.search(said):
            change = _other_relative(said, _OTHER_FEELS.get(language, ()))
        return change
    if _ABSOLUTE.search(said):
        return None
    found = []
    for pattern, quantity, up in _RELATIVE:
        for hit in pattern.finditer(said):
            direction = up if quantity is not None else next(g for g in hit.groups() if g) in ("up", "higher")
            found.append(Relative(quantity, direction))
    if match := _MOVED_LEVEL.search(said):
        found.append(Relative(_LEVEL_NOUNS[match[2]], match[1] is not None))
    if match := _NUDGED.search(said):
        found.append(Relative(*_NUDGE_WORDS[match[1] or match[2]]))
    if match := _WAY_ONLY.match(said):
        found.append(Relative(None, match[1] == "up"))
    asks_more = says_an_action(re.sub(r"\b(?:is|are)\b", " ", said)) or re.search(r"\b(?:back|again|before)\b", said)
    if not found and not asks_more:
        found = [Relative(quantity, up) for pattern, quantity, up in _TOO if pattern.search(said)]
    # Several readings of one change ("turn the heat up": the heat's, and whatever the
    # device's level is) are one; two ways, or two levels, are not.
    quantities = {f.quantity for f in found} - {None}
    if len({f.up for f in found}) != 1 or len(quantities) > 1:
        return None
    amount = None
    if match := _AMOUNT.search(said):
        word = next(g for g in match.groups() if g).replace(",", ".")
        amount = float(_NUMBERS.get(word, word)) if word in _NUMBERS or word[0].isdigit() else None
    return Relative(next(iter(quantities), None), found[0].up, amount)


def _other_relative(said: str, patterns: tuple[tuple[re.Pattern[str], str | None, bool], ...]) -> Relative | None:
    """`relative_change` in another language, by its own words."""
    if _OTHER_ABSOLUTE.search(said):
        return None
    found = [Relative(quantity, up) for pattern, quantity, up in patterns if pattern.search(said)]
    if len(found) != 1:
        return None
    amount = None
    if match := _OTHER_AMOUNT.search(said):
        amount = float(match.group(1).replace(",", "."))
    elif _ONE.search(said):
        amount = 1.0
    return replace(found[0], amount=amount)


# What moves on each domain, the attribute it is read from and the call that sets it.
_LEVELS: dict[str, tuple[str, str, str]] = {
    # domain: (quantity, the call's action, its argument)
    "light": ("brightness", "turn_on", "brightness_pct"),
    "climate": ("temperature", "set_temperature", "temperature"),
    "water_heater": ("temperature", "set_temperature", "temperature"),
    "media_player": ("volume", "volume_set", "volume_level"),
    "fan": ("speed", "set_percentage", "percentage"),
    "cover": ("position", "set_cover_position", "position"),
}


def for_the_air(change: Relative, entity: HomeEntity, state: str, attributes: Mapping[str, Any]) -> ToolCall | None:
    """What a fan does for a place felt too hot or stuffy (one that is off goes on, one
    that is on a step faster) or too cold (one that is on goes off); None if nothing."""
    if change.quantity not in ("temperature", "air") or entity.domain != "fan":
        return None
    cooler = not change.up
    if state == "off":
        return ToolCall("fan", {"entity_id": entity.entity_id, ACTION: "turn_on"}) if cooler else None
    if not cooler:
        return ToolCall("fan", {"entity_id": entity.entity_id, ACTION: "turn_off"})
    faster = relative_call(Relative("speed", up=True), entity, state, attributes)
    return faster if faster is not None and faster.arguments.get("percentage") != attributes.get("percentage") else None


def moves(domain: str) -> str | None:
    """What a relative change moves on a device of `domain`, if anything."""
    level = _LEVELS.get(domain)
    return level[0] if level else None


def moving(quantity: str | None) -> frozenset[str]:
    """The domains whose devices a change of `quantity` moves (none for a change that says
    no quantity: "turn it up" in the kitchen could be anything there)."""
    return frozenset(domain for domain, level in _LEVELS.items() if quantity is not None and level[0] == quantity)


def relative_call(change: Relative, entity: HomeEntity, state: str, attributes: Mapping[str, Any]) -> ToolCall | None:
    """The call that moves `entity` (now `state`, with `attributes`) by `change`: a step
    from where it is, within its range; None if the change is not about what the device
    has, or its level is not known."""
    level = _LEVELS.get(entity.domain)
    if level is None or change.quantity not in (None, level[0]):
        return None
    quantity, action, argument = level
    sign = 1 if change.up else -1
    value: float
    if quantity == "brightness":
        on_or_off = set(attributes.get("supported_color_modes") or ()) == {"onoff"}
        if (state == "off" and not change.up) or on_or_off:
            # Nothing to dim; a light that is only on or off has no level: "too dark" by
            # one that is off puts it on (the 0.5B switched it off).
            on = on_or_off and state == "off" and change.up
            return ToolCall(entity.domain, {"entity_id": entity.entity_id, ACTION: action}) if on else None
        percent = round(float(attributes.get("brightness") or 0) / 255 * 100) if state == "on" else 0
        value = min(100, max(1, percent + sign * (change.amount or 20)))
    elif quantity == "temperature":
        target = attributes.get("temperature")
        if not isinstance(target, int | float):
            return None  # a range (heat and cool) or no target: the model decides
        step = float(attributes.get("target_temp_step") or 1)
        value = target + sign * (change.amount or max(step, 1))
        low, high = attributes.get("min_temp"), attributes.get("max_temp")
        value = min(high, value) if isinstance(high, int | float) else value
        value = max(low, value) if isinstance(low, int | float) else value
    elif quantity == "volume":
        volume = attributes.get("volume_level")
        if not isinstance(volume, int | float):
            return None
        value = round(min(1.0, max(0.0, volume + sign * (change.amount or 10) / 100)), 2)
    else:
        key = "percentage" if quantity == "speed" else "current_position"
        level = attributes.get(key)
        if not isinstance(level, int | float):
            return None
        # A fan of a hundred speeds steps by 1 %, which nobody feels: a step is 10 % at least.
        step = max(float(attributes.get("percentage_step") or 10), 10) if quantity == "speed" else 20
        value = min(100, max(0, round(level + sign * (change.amount or step))))
    if isinstance(value, float) and value.is_integer() and quantity != "volume":
        value = int(value)
    return ToolCall(entity.domain, {"entity_id": entity.entity_id, ACTION: action, argument: value})


# "And the towel heater", "same for the hallway", "the blinds too", "now the bathroom",
# "what about the office?": the turn before, on something else.
_AGAIN = re.compile(
    r"^\W*(?:and|also|plus|now|then|same (?:for|with|in)|(?:and )?(?:what|how) about)\b"
    r"|\b(?:too|as well|also)\W*(?:please\W*)?$",
    re.IGNORECASE,
)
# Words that say an action of their own: such a request is not the turn before again.
_OWN_VERB = re.compile(
    r"\b(?:turn|switch|set|dim|brighten|make|play|pause|resume|stop|start|lock|unlock|open|close|shut|raise|lower"
    r"|increase|decrease|mute|unmute|skip|add|put|remove|clean|water|arm|disarm|activate|deactivate|run|trigger"
    r"|off|enable|disable|is|are|what's|how's"
    # ... and the verbs that open, close or pause ("now pull it back down" after rolling
    # the awning up: done again, it opened it again).
    r"|pull|roll|draw|drop|lift|extend|retract|bring|let|hold|kill|lowered|raised)\b|\d|%"
    # "On" as a verb's ("switch it on"), not a day's or a place's ("and on Saturday?").
    r"|\bon\b(?!\s+(?:\w+day|the|my|a)\b)",
    re.IGNORECASE,
)


def says_an_action(text: str) -> bool:
    """Whether `text` has a verb or a value of its own ("turn it off?" asks for an action)."""
    return bool(_OWN_VERB.search(text))


def is_again(text: str, language: str = "en") -> bool:
    """Whether `text` asks for the turn before again, on something else: it says so
    ("and …", "… too", "same for …") and has no verb or value of its own. "And the bed
    light?" may ask about it as well: that is the model's to read."""
    if language != "en":
        return _again_in(text, language)
    rest = re.sub(r"^\W*(?:and )?(?:what|how) about\b", "", text, flags=re.IGNORECASE)
    asked = rest == text and text.rstrip().endswith("?")
    return bool(_AGAIN.search(text)) and not _OWN_VERB.search(rest) and not asked


# Words that join two requests in one ("X and Y", "X, then Y"), by language.
JOINING = {
    "en": r"and|then|also",
    "de": r"und|sowie|dann|danach|anschließend",
    "fr": r"et|puis|ensuite",
    "es": r"y|e|luego|después",
    "it": r"e|ed|poi|quindi",
    "pt": r"e|depois|então",
    "nl": r"en|dan|daarna",
}
# "Et la lumière de l'entrée aussi", "Y la luz del pasillo también", "Und die Stehlampe
# auch": the turn before again, said in German, French or Spanish by what it is about
# alone (the 0.5B switched the light off after "switch on"): after a joining word
# (`JOINING`), or with a word that adds it; and the articles that start what is said
# without a verb (a request in these languages says its verb first, or in German also last).
_OTHER_AGAIN: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "de": (re.compile(r"\b(?:auch|ebenfalls)\W*$"), re.compile(r"^(?:der|die|das|den|dem)\b")),
    "fr": (
        re.compile(r"\b(?:aussi|également)\W*$"),
        re.compile(r"^(?:le|la|les|l['\u2019]|du|des|de la|de l['\u2019])"),
    ),
    "es": (re.compile(r"\b(?:también|igualmente)\W*$"), re.compile(r"^(?:el|la|los|las|lo|del)\b")),
}
# A pronoun joined to a French verb ("allume-la aussi"): an action of its own (a hyphen
# alone is not: "le sèche-serviettes", "le rez-de-chaussée").
_JOINED_PRONOUN = re.compile(r"\w-(?:le|la|les|lui|leur|moi|nous|vous|en|y)\b")


# German may say its verb last, after the article ("und die Deckenlampe aus"): a particle
# or a verb's end said last is a verb of its own.
_GERMAN_VERB_LAST = re.compile(
    r"\b(?:an|aus|auf|zu|ab|ein|hoch|runter|rauf|herunter|heller|dunkler|lauter|leiser|wärmer|kälter)\W*$"
    r"|(?:schalten|machen|öffnen|schließen|schliessen|dimmen|stellen|fahren|drehen|setzen|lassen)\W*$"
)


def says_no_verb(text: str, language: str) -> bool:
    """Whether `text`, in German, French or Spanish, starts with an article past the
    word that joins it, and (in German) ends with no verb: it has no verb of its own
    ("… et les rideaux", "und die Rollläden", not "und die Deckenlampe aus")."""
    found = _OTHER_AGAIN.get(language)
    if found is None:
        return False
    said = text.casefold().strip()
    if language == "de" and _GERMAN_VERB_LAST.search(said):
        return False
    return bool(found[1].search(_joined_after(said, language)))


def _joined_after(said: str, language: str) -> str:
    """`said` past the joining word it starts with, if any ("et les rideaux": "les rideaux")."""
    return re.sub(rf"^\W*(?:{JOINING[language]})\b", "", said).strip()


def _again_in(text: str, language: str) -> bool:
    """`is_again` in another language (see `_OTHER_AGAIN`): never a question, a value, or
    a pronoun joined to a verb ("allume-la aussi")."""
    found = _OTHER_AGAIN.get(language)
    said = text.casefold().strip()
    if found is None or said.endswith("?") or re.search(r"\d|%|,", said) or _JOINED_PRONOUN.search(said):
        return False
    joined = _joined_after(said, language) != said
    return bool((joined or found[0].search(said)) and says_no_verb(said, language))


# The services that do the same on another domain's devices (switching on or off, no data).
_SAME_SERVICE: tuple[frozenset[str], ...] = (
    frozenset({"turn_on", "open_cover", "open_valve"}),
    frozenset({"turn_off", "close_cover", "close_valve"}),
)


def again_calls(
    before: Sequence[ToolCall], targets: Iterable[HomeEntity], offered: Mapping[str, frozenset[str]]
) -> list[ToolCall] | None:
    """The calls of the turn before (`before`, which did one thing, on one or more devices)
    on each of `targets`; None where they did several things, or a target cannot get the
    same (`offered`: each target's services). The same service and data on a device of the
    same domain; switching on or off (opening, closing) on another."""
    done = {(c.name, str(c.arguments.get(ACTION)), _data(c)) for c in before}
    if len(done) != 1:
        return None
    domain, service, _key = next(iter(done))
    data = {k: v for k, v in before[0].arguments.items() if k not in ("entity_id", ACTION)}
    calls = []
    for target in targets:
        services = offered.get(target.entity_id, frozenset())
        if target.domain == domain and service in services:
            calls.append(ToolCall(domain, {"entity_id": target.entity_id, ACTION: service, **data}))
            continue
        same = next((group for group in _SAME_SERVICE if service in group), frozenset())
        other = sorted(same & services)
        if data or len(other) != 1:
            return None
        calls.append(ToolCall(target.domain, {"entity_id": target.entity_id, ACTION: other[0]}))
    return calls or None


# The levels a call sets as people say them ("21" degrees, "40" percent), and the units
# said with them.
_SAID_LEVELS = {
    "temperature": "degree",
    "brightness_pct": "percent",
    "percentage": "percent",
    "position": "percent",
    "volume_level": "percent",
}
# A volume is set from 0 to 1, and said in percent.
_SAID_SCALE = {"volume_level": 100}
_UNIT = {"%": "percent", "percent": "percent", "degree": "degree", "degrees": "degree", "°": "degree"}
_SAID_NUMBER = re.compile(r"(?<![\w.,])(not\s+)?(\d+(?:[.,]\d+)?)\s*(%|percent|degrees?|°)?", re.I)


def _numbers(text: str) -> list[tuple[float, str | None, bool]]:
    """The numbers `text` says: each with its unit ("percent", "degree"), and whether "not" precedes it."""
    return [
        (float(m.group(2).replace(",", ".")), _UNIT.get((m.group(3) or "").lower()), bool(m.group(1)))
        for m in _SAID_NUMBER.finditer(text)
    ]


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def corrected_calls(before: Sequence[ToolCall], asked_before: str, correction: str) -> list[ToolCall] | None:
    """ "Oops, 21 I meant", "not 25, 23" after "set the thermostat to 25" (`asked_before`):
    the turn before's calls with the one number the correction says instead of the one
    that turn said; None where it says none or several, or the turn before set no level
    it said (a step of "two degrees warmer" is no level)."""
    meant = [(value, unit) for value, unit, denied in _numbers(correction) if not denied]
    if len(meant) != 1 or len({(c.name, str(c.arguments.get(ACTION))) for c in before}) != 1:
        return None
    value, unit = meant[0]
    keys = {k for c in before for k in c.arguments if k in _SAID_LEVELS}
    if len(keys) != 1 or unit not in (None, _SAID_LEVELS[key := next(iter(keys))]):
        return None
    said = {number for number, _unit, _denied in _numbers(asked_before)}
    scale = _SAID_SCALE.get(key, 1)
    # A model's value may be written as text ("23"): as its number.
    if not all((n := _number(c.arguments.get(key))) is not None and round(n * scale, 2) in said for c in before):
        return None
    level = int(value) if value.is_integer() and scale == 1 else value / scale
    return [ToolCall(c.name, {**c.arguments, key: level}) for c in before]


def option_corrected(
    before: Sequence[ToolCall], options: Callable[[ToolCall], Mapping[str, Sequence[str]]], correction: str
) -> list[ToolCall] | None:
    """ "Sorry, I meant heat" after "put the heat pump on cool": the turn before's calls with
    the one option of theirs (`options`: a call's arguments that take one of a list) that the
    correction says instead of the one set ("not cool, heat" too); None where it says none,
    or several."""
    text = f" {_plain(correction)} "
    corrected, changed = [], False
    for call in before:
        arguments = dict(call.arguments)
        for key, values in options(call).items():
            if key not in arguments:
                continue
            said = {v for v in values if f" {_plain(v)} " in text}
            # The longest said ("heat cool", not "heat"), and not the one the correction denies.
            said = {v for v in said if not any(v != w and _plain(v) in _plain(w) for w in said)}
            if len(said) > 1:
                said.discard(str(arguments[key]))
            if len(said) > 1:
                return None
            if said and (value := said.pop()) != arguments[key]:
                arguments[key], changed = value, True
        corrected.append(ToolCall(call.name, arguments))
    return corrected if changed else None


def _plain(text: str) -> str:
    """Lower-case words alone: "heat_cool" is "heat cool"."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _data(call: ToolCall) -> str:
    """A call's data besides its target and action, comparable."""
    return repr(sorted((k, repr(v)) for k, v in call.arguments.items() if k not in ("entity_id", ACTION)))


# "No, not the fan, the sofa lamp": the part that names the wrong device.
_NOT_THAT = re.compile(
    r"\b(?:not (?:the |that |this |my )?|wrong )[\w' -]+?(?:\s*[,.;:]\s*|\s+[-\u2013\u2014]\s+|\s+but\s+|$)",
    re.IGNORECASE,
)
# "That's the kitchen, I wanted the bedroom": what comes before what it says was meant.
_BEFORE_MEANT = re.compile(r"^[^?]*?[,.;]\s*(?=i (?:meant|wanted) (?:the|my) )", re.IGNORECASE)


def meant(text: str) -> str:
    """What a correction names as meant: its words without the device it says was wrong."""
    return _NOT_THAT.sub("", _BEFORE_MEANT.sub("", text)).strip(" ,.")


# What a correction says before what was meant: "I meant", "make it", "change that to".
_MEANT_SAID = re.compile(r"\b(?:meant|mean|wanted|want|(?:make|change|switch) (?:it|that)(?: to)?)\b", re.IGNORECASE)


def asks_its_own_action(correction: str) -> bool:
    """Whether a correction asks an action of its own ("no wait, I meant open the blinds"),
    not only another device ("actually, make it the nook blind")."""
    return says_an_action(_MEANT_SAID.split(meant(correction))[-1])


# "Tick that off", "you can cross it off", "take it off", "mark it as done"; "I've already
# got the lemons", "the ferns are done", "scratch the oat milk": an item of the list just
# read is done.
_DONE_WITH = re.compile(
    r"\b(?:tick|check|cross|take|strike)\s+(?:\w+\s+){0,3}?off\b|\bmark\s+(?:\w+\s+){0,3}?(?:as\s+)?(?:done|complete)"
    r"|\b(?:i|we)(?:'ve|\s+have)?\s+(?:already\s+|just\s+)?"
    r"(?:got|bought|picked(?: some| it| them)? up|done|did|finished)\b"
    # ... said without who: "got the spinach already", "already bought the milk".
    r"|^\W*(?:(?:ok(?:ay)?|great|good|right|so|and)\W+)*(?:already\s+|just\s+)?(?:got|bought|picked up)\b"
    r"|\b(?:is|are|'s)\s+(?:already\s+|all\s+)?(?:done|finished|sorted|bought)\b|\b(?:done|finished) with\b"
    # "I already have the spinach", "we have eggs already", "I don't need the lemons any more".
    r"|\b(?:i|we)\s+already\s+have\b|\b(?:i|we)\s+have\s+(?:\w+\s+){1,4}?already\b"
    r"|\b(?:i|we)\s+(?:don't|do not|no longer)\s+need\b"
    # "Scratch the oat milk", "remove the lemons" (HA's shopping list sentences: ticked off).
    r"|^\W*(?:(?:ok(?:ay)?|great|good|right|then|and|now)\W+)*(?:scratch|scrap|remove|delete|strike)\b",
    re.IGNORECASE,
)
_ITEM_FILLER = frozenset(
    {"the", "that", "this", "it", "off", "you", "can", "have", "has", "some", "list", "and", "for", "please", "now"}
    | {"already", "just", "got", "bought", "picked", "done", "did", "finished", "sorted", "are", "with", "all"}
    | {"scratch", "scrap", "remove", "delete", "strike", "from"}
)


# "Add weed the borders", "put compost on it too": an item for the list just read, which
# the request does not name.
_ADDED = re.compile(
    r"^\W*(?:(?:and|also|then|ok(?:ay)?|oh|great|please)\W+)*(?:can you\s+|could you\s+)?(?:add|put)\s+(.+?)"
    r"(?:\s+(?:to|on(?:to)?)\s+(?:it|that|this|there|(?:that|this) list))?(?:\s+(?:too|as well|please))*\W*$",
    re.IGNORECASE,
)


def added_item(text: str) -> str | None:
    """The item `text` asks to add to the list just read, if it says no other list."""
    match = _ADDED.match(text)
    if match is None or re.search(r"\b(?:to|on|onto)\b", match.group(1), re.IGNORECASE):
        return None
    return match.group(1)


def is_done_with(text: str) -> bool:
    """Whether `text` says an item of a list is done ("I've watered the ferns, tick that off")."""
    return bool(_DONE_WITH.search(text))


def item_words(text: str) -> set[str]:
    """The words that tell an item apart, without case, fillers or word ends ("the lemon",
    "Lemons": {"lemon"})."""
    words = {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2} - _ITEM_FILLER
    return {re.sub(r"(?:ed|ing|es|s)$", "", w) or w for w in words}


_POINTS_AT_ITEM = re.compile(r"\b(?:it|that|this|them|those|some|one)\b", re.IGNORECASE)


def item_meant(items: Sequence[str], *texts: str) -> str | None:
    """The one item of `items` that the first of `texts` with words of an item says
    ("watered the ferns": "Water the ferns"); the texts after the first only where it
    points at an item ("take it off"); None where none or several fit as well."""
    considered = texts if texts and _POINTS_AT_ITEM.search(texts[0]) else texts[:1]
    for text in considered:
        said = item_words(text)
        overlap = {item: len(said & item_words(item)) for item in items}
        best = max(overlap.values(), default=0)
        fitting = [item for item, n in overlap.items() if best and n == best]
        if fitting:
            return fitting[0] if len(fitting) == 1 else None
    return None


def items_meant(items: Sequence[str], *texts: str) -> list[str]:
    """The items of `items` the first of `texts` says, each once: several where it names
    several ("the rye bread and the lemons", each of its parts one item), else the one
    `item_meant` finds, else those it says by their place as read ("the first one", "all of
    them"); [] where none."""
    parts = [p for p in re.split(r",\s*|\s+and\s+", texts[0]) if item_words(p)] if texts else []
    if len(parts) > 1:
        each = [item_meant(items, part) for part in parts]
        if None not in each and len(set(each)) == len(each):
            return [item for item in each if item is not None]
    if (one := item_meant(items, *texts)) is not None:
        return [one]
    # "Mark the first one done", "tick them all off": by their place in the list as read.
    said = texts[0].lower() if texts else ""
    if _ALL_ITEMS.search(said) or (len(items) == 2 and re.search(r"\bboth\b", said)):
        return list(items)
    if (first := _FIRST_FEW.search(said)) and (few := _FEW[first[2]]) <= len(items):
        return list(items[:few] if first[1] == "first" else items[-few:])
    places = [
        p if p >= 0 else len(items) + p for w in re.findall(r"[a-z]+", said) if (p := _ITEM_PLACES.get(w)) is not None
    ]
    if places and min(places) >= 0 and max(places) < len(items) and len(set(places)) == len(places):
        return [items[place] for place in places]
    return []


_ALL_ITEMS = re.compile(
    r"\b(?:all of them|them all|all (?:the |those |these )?(?:items|things|ones)|everything|the lot)\b"
)
_FEW = {"two": 2, "three": 3, "four": 4}
_FIRST_FEW = re.compile(r"\b(first|last) (two|three|four)\b")
_ITEM_PLACES = {"first": 0, "top": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1, "bottom": -1}


# "Switch it on then": the one word that points at a device, and the words around a
# request that HA's sentences do not take.
_POINTING = re.compile(r"\b(?:that one|this one|it|that|this)\b", re.IGNORECASE)
_LEADING = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|alright|all right|great|thanks|thank you|so|then|and|now|actually|yes|yeah|good)\b[\s,!.]*)+",
    re.IGNORECASE,
)
_TRAILING = re.compile(r"(?:[\s,]+(?:then|now|please|too|as well|for me|again))+\W*$", re.IGNORECASE)


def said_by_name(text: str, name: str) -> str | None:
    """`text` with the device it points at ("it", "that") said by its `name`, without the
    words around a request that HA's sentences do not take: "switch it on then" is "switch
    the Desk Lamp on". None if it points at nothing, or at more than once."""
    if len(_POINTING.findall(text)) != 1:
        return None
    words = _TRAILING.sub("", _LEADING.sub("", text)).strip()
    said = _POINTING.sub(lambda _m: f"the {name}", words, count=1)
    # "Bring it back up": HA's sentences say "raise" (and "lower"), for what can be raised.
    return _BROUGHT.sub(lambda m: f"{'raise' if m[2].lower() == 'up' else 'lower'} {m[1]}", said) or None


_BROUGHT = re.compile(r"^(?:bring|pull|roll|put|move)\s+(the .+?)\s+(?:back\s+)?(up|down)$", re.IGNORECASE)


# "A bit more", "even more", "a little less": the level the turn before moved, a step further
# the same way (or back).
_FURTHER = re.compile(
    r"^\W*(?:(?:just|even|maybe|ok|okay)[\s,]+)?(?:(?:a\s+)?(?:bit|little|touch|tad|notch)\s+)?(more|further|less)"
    r"(?:\s+(?:please|than that))?\W*$",
    re.IGNORECASE,
)
# The attributes a change of a level moves, and what moves.
_MOVED = {
    "brightness": "brightness",
    "current_position": "position",
    "volume_level": "volume",
    "percentage": "speed",
    "temperature": "temperature",
}


def further(text: str, changes: Iterable[Mapping[str, Any]]) -> Relative | None:
    """ "A bit more" after `changes` that moved a level one way: a step further that way
    ("less": back); None if `text` says something else, or no level, or several, moved."""
    said = _FURTHER.match(text)
    if said is None:
        return None
    moved = set()
    for change in changes:
        for key, values in (change.get("attributes") or {}).items():
            if key not in _MOVED or not isinstance(values, list | tuple) or len(values) != 2:
                continue
            old, new = values
            if isinstance(old, int | float) and isinstance(new, int | float) and old != new:
                moved.add((_MOVED[key], new > old))
    if len(moved) != 1:
        return None
    quantity, up = moved.pop()
    return Relative(quantity, up if said[1].lower() != "less" else not up)
