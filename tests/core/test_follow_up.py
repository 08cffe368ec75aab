"""Follow-ups done without the model: relative changes, and the turn before again."""

from __future__ import annotations

from typing import Any

import pytest

from botpsy_runtime.formats import ToolCall
from custom_components.botpsy.core.follow_up import (
    Relative,
    added_item,
    again_calls,
    asks_its_own_action,
    corrected_calls,
    further,
    is_again,
    is_done_with,
    item_meant,
    items_meant,
    meant,
    option_corrected,
    relative_call,
    relative_change,
    said_by_name,
    says_an_action,
    says_no_verb,
)
from custom_components.botpsy.core.home import HomeEntity


@pytest.mark.parametrize(
    ("text", "change"),
    [
        ("A bit brighter", Relative("brightness", True)),
        ("make them a little dimmer", Relative("brightness", False)),
        ("make it one degree warmer", Relative("temperature", True, 1)),
        ("2 degrees cooler please", Relative("temperature", False, 2)),
        ("louder", Relative("volume", True)),
        ("turn it down", Relative(None, False)),
        ("turn up the music", Relative(None, True)),
        ("a bit faster", Relative("speed", True)),
        ("open them a bit more", Relative("position", True)),
        ("brighter by 10 percent", Relative("brightness", True, 10)),
        # A verb that moves a level, and the level.
        ("raise the temperature", Relative("temperature", True)),
        ("lower the living room volume a bit", Relative("volume", False)),
        ("reduce the fan speed", Relative("speed", False)),
        ("turn the heating down 2 degrees", Relative("temperature", False, 2)),
        ("bump up the volume", Relative("volume", True)),
        # A bare number after the way or the level, as HA's sentences read it.
        ("our TV volume down 28", Relative("volume", False, 28)),
        ("turn up ground floor volume 15", Relative("volume", True, 15)),
        ("down volume on the surround sound", Relative("volume", False)),
        ("turn the volume up 5 on the speaker", Relative("volume", True, 5)),
        ("turn down 2 lamps in the hall", Relative(None, False)),  # a count, not an amount
        # A verb of a device with a small amount; a way alone.
        ("dim it a little more", Relative("brightness", False)),
        ("lower the kitchen blinds a bit", Relative(None, False)),
        ("close it a little", Relative("position", False)),
        ("knock it down a notch", Relative(None, False)),
        ("increase it", Relative(None, True)),
        ("up a bit", Relative(None, True)),
        ("crank the living room speaker up", Relative(None, True)),
        ("not so bright", Relative("brightness", False)),
        ("not so loud please", Relative("volume", False)),
        ("a little less bright", Relative("brightness", False)),
        ("a couple more degrees", Relative("temperature", True, 2)),
        # A comparative of no level: whatever level the device has.
        ("Bit higher", Relative(None, True)),
        ("a tad lower please", Relative(None, False)),
        ("set the heating higher", Relative(None, True)),
        # What is wrong with it now: the other way.
        ("that's too bright", Relative("brightness", False)),
        ("hmm, it's a bit too cold", Relative("temperature", True)),
        ("too loud", Relative("volume", False)),
        ("the reading light is too bright", Relative("brightness", False)),
        # ... said without "too".
        ("it's cold in the hallway", Relative("temperature", True)),
        ("brr, the lounge is freezing", Relative("temperature", True)),
        ("it's so hot in the hallway", Relative("temperature", False)),
        ("phew, I'm roasting", Relative("temperature", False)),
        ("I can't hear the music in the kitchen", Relative("volume", True)),
        ("I can't see a thing in the study", Relative("brightness", True)),
        ("the cold tap is dripping", None),
        ("too bright, switch it off", None),  # asked otherwise
        ("it's too cold, put it back", None),
        # Not relative: a value said outright, or nothing that moves.
        ("set it to 40 percent", None),
        ("turn it off", None),
        ("dim the kitchen to 30 %", None),
        ("lower the blinds", None),  # all the way: not a step
        ("lower them", None),
        ("lower floor lights off", None),  # a place
        ("raise the temperature to 22", None),
        ("open the window", None),
        ("dim the lights", None),
        ("turn the heat up and turn the music down", None),  # two ways
        ("is it warmer outside?", Relative("temperature", True)),  # a question: the caller asks first
    ],
)
def test_relative_changes(text: str, change: Relative | None) -> None:
    assert relative_change(text) == change


@pytest.mark.parametrize(
    ("text", "language", "change"),
    [
        ("Mach es noch ein Grad wärmer", "de", Relative("temperature", True, 1)),
        ("Etwas heller bitte", "de", Relative("brightness", True)),
        ("Mach die Musik leiser", "de", Relative("volume", False)),
        ("Un peu plus fort", "fr", Relative("volume", True)),
        ("Mets-le 2 degrés plus chaud", "fr", Relative("temperature", True, 2)),
        ("Más bajo, por favor", "es", Relative("volume", False)),
        ("Un poco más de luz", "es", Relative("brightness", True)),
        # A value said outright, or nothing that moves.
        ("Stell die Heizung auf 22 Grad", "de", None),
        ("Éteins la lampe", "fr", None),
        ("Más alto", "it", None),  # no words known for the language: the model reads it
        # How a place feels: the way to change it; asked, nothing.
        ("Im Flur ist es stockdunkel", "de", Relative("light", True)),
        ("Mir ist so heiß", "de", Relative("temperature", False)),
        ("Ist es kalt im Wohnzimmer", "de", None),
        ("Mach es dunkel im Flur", "de", None),  # an action, not a feeling
        ("On étouffe dans le bureau", "fr", Relative("air", False)),
        ("J'ai froid dans le salon", "fr", Relative("temperature", True)),
        ("Est-ce qu'il fait froid dans le salon", "fr", None),
        ("Hace mucho calor en el dormitorio", "es", Relative("temperature", False)),
        ("¿Está oscuro en el pasillo?", "es", None),
    ],
)
def test_relative_changes_in_other_languages(text: str, language: str, change: Relative | None) -> None:
    assert relative_change(text, language) == change


def entity(entity_id: str) -> HomeEntity:
    return HomeEntity(entity_id, entity_id.split(".")[1].replace("_", " ").title())


def arguments(call: ToolCall | None) -> dict[str, Any] | None:
    """The call's arguments but the device."""
    return None if call is None else {k: v for k, v in call.arguments.items() if k != "entity_id"}


def test_a_step_from_where_each_device_is() -> None:
    lamp = entity("light.floor_lamp")
    half = {"brightness": 128}
    assert arguments(relative_call(Relative("brightness", True), lamp, "on", half)) == {
        "action": "turn_on",
        "brightness_pct": 70,
    }
    assert arguments(relative_call(Relative(None, False, 30), lamp, "on", half)) == {
        "action": "turn_on",
        "brightness_pct": 20,
    }
    # Never off by dimming, never beyond full; nothing to dim on a light that is off.
    assert arguments(relative_call(Relative("brightness", False, 90), lamp, "on", half)) == {
        "action": "turn_on",
        "brightness_pct": 1,
    }
    assert relative_call(Relative("brightness", False), lamp, "off", {}) is None
    # A light that is only on or off, off and too dark: on.
    onoff = {"supported_color_modes": ["onoff"]}
    assert arguments(relative_call(Relative("brightness", True), lamp, "off", onoff)) == {"action": "turn_on"}
    assert relative_call(Relative("brightness", True), lamp, "on", onoff) is None  # no level to move
    thermostat = entity("climate.hall")
    state = {"temperature": 21.5, "min_temp": 7, "max_temp": 22}
    assert arguments(relative_call(Relative("temperature", True), thermostat, "heat", state)) == {
        "action": "set_temperature",
        "temperature": 22,
    }
    assert arguments(relative_call(Relative("temperature", False, 2), thermostat, "heat", state)) == {
        "action": "set_temperature",
        "temperature": 19.5,
    }
    # A range (heat and cool) is the model's to read.
    assert relative_call(Relative("temperature", True), thermostat, "heat_cool", {"temperature": None}) is None
    speaker = entity("media_player.kitchen")
    assert arguments(relative_call(Relative(None, True), speaker, "playing", {"volume_level": 0.35})) == {
        "action": "volume_set",
        "volume_level": 0.45,
    }
    fan = entity("fan.desk")
    speed = {"percentage": 40, "percentage_step": 33.3}
    assert arguments(relative_call(Relative("speed", True), fan, "on", speed)) == {
        "action": "set_percentage",
        "percentage": 73,
    }
    # A fan of a hundred speeds moves by a step that is felt.
    assert arguments(relative_call(Relative("speed", True), fan, "on", {"percentage": 40, "percentage_step": 1})) == {
        "action": "set_percentage",
        "percentage": 50,
    }
    # What the device does not have is not moved.
    assert relative_call(Relative("volume", True), lamp, "on", half) is None


@pytest.mark.parametrize(
    ("text", "again"),
    [
        ("And the towel heater, please", True),
        ("Same for the hallway", True),
        ("The living room blinds too", True),
        ("Now the bathroom", True),
        ("and in the bedroom as well", True),
        ("What about the office?", True),
        # A verb or a value of its own: a request of its own.
        ("And turn off the fan", False),
        ("Now set it to 20 degrees", False),
        ("now pull it back down", False),
        ("and draw them too", False),
        ("Is the kitchen light on too?", False),
        ("Turn on the kitchen light", False),
        ("The kitchen light", False),
        ("And the bed light?", False),  # may ask about it: the model reads it
    ],
)
def test_the_turn_before_again(text: str, again: bool) -> None:
    assert is_again(text) == again


@pytest.mark.parametrize(
    ("text", "language", "again"),
    [
        ("Et la lumière de l'entrée aussi", "fr", True),
        ("La lampe du salon aussi", "fr", True),
        ("Et allume la cuisine", "fr", False),
        ("Allume-la aussi", "fr", False),
        ("Et le sèche-serviettes aussi", "fr", True),  # a hyphen in a name is no pronoun
        ("Puis la lumière de l'entrée", "fr", True),
        ("Et la lampe du salon ?", "fr", False),
        ("Et le salon à 30 %", "fr", False),
        ("Y la luz del pasillo también", "es", True),
        ("Y apaga la tele", "es", False),
        ("Und die Stehlampe auch", "de", True),
        ("Und mach die Stehlampe aus", "de", False),
        ("Und die Stehlampe aus", "de", False),
        ("Und die Rollläden im Wohnzimmer auch", "de", True),
        ("Und die Stehlampe auch", "it", False),
    ],
)
def test_the_turn_before_again_in_other_languages(text: str, language: str, again: bool) -> None:
    assert is_again(text, language) == again


@pytest.mark.parametrize(
    ("text", "language", "verbless"),
    [
        ("les rideaux", "fr", True),
        ("las cortinas", "es", True),
        ("die Rollläden", "de", True),
        ("die Deckenlampe im Schlafzimmer aus", "de", False),  # German may say its verb last
        ("die Stehlampe ausschalten", "de", False),
        ("éteins le plafonnier", "fr", False),
    ],
)
def test_a_part_says_no_verb_of_its_own(text: str, language: str, verbless: bool) -> None:
    assert says_no_verb(text, language) == verbless


def test_again_on_other_devices() -> None:
    before = [ToolCall("light", {"entity_id": "light.kitchen", "action": "turn_off"})]
    heater, blinds = entity("switch.towel_heater"), entity("cover.blinds")
    offered = {"switch.towel_heater": frozenset({"turn_on", "turn_off"}), "cover.blinds": frozenset({"close_cover"})}
    assert again_calls(before, [heater, blinds], offered) == [
        ToolCall("switch", {"entity_id": "switch.towel_heater", "action": "turn_off"}),
        ToolCall("cover", {"entity_id": "cover.blinds", "action": "close_cover"}),
    ]
    # Data goes with the service on the same domain, nowhere else.
    dim = [ToolCall("light", {"entity_id": "light.kitchen", "action": "turn_on", "brightness_pct": 30})]
    lamp = entity("light.desk")
    assert again_calls(dim, [lamp], {"light.desk": frozenset({"turn_on"})}) == [
        ToolCall("light", {"entity_id": "light.desk", "action": "turn_on", "brightness_pct": 30})
    ]
    assert again_calls(dim, [heater], offered) is None
    # A turn that did two things is not repeated by guess.
    both = [*before, ToolCall("light", {"entity_id": "light.desk", "action": "turn_on"})]
    assert again_calls(both, [lamp], {"light.desk": frozenset({"turn_on"})}) is None


def test_a_level_said_again() -> None:
    before = [ToolCall("climate", {"entity_id": "climate.hall", "action": "set_temperature", "temperature": 23})]
    for correction in ("Oops, 21 I meant", "Not 23, 21", "sorry, I meant 21 degrees"):
        assert corrected_calls(before, "Set the thermostat to 23", correction) == [
            ToolCall("climate", {"entity_id": "climate.hall", "action": "set_temperature", "temperature": 21})
        ]
    # No number, two, or one of another unit: not a level said again.
    for correction in ("Sorry, I meant the office", "I meant 21 or 22", "no, 40 percent"):
        assert corrected_calls(before, "Set the thermostat to 23", correction) is None
    # A step is no level the turn before said ("two degrees warmer", then "I meant 3").
    assert corrected_calls(before, "two degrees warmer", "I meant 3") is None
    # A volume is set from 0 to 1 and said in percent.
    loud = [ToolCall("media_player", {"entity_id": "media_player.tv", "action": "volume_set", "volume_level": 0.5})]
    assert corrected_calls(loud, "Put the TV volume at 50 percent", "No, I said 15") == [
        ToolCall("media_player", {"entity_id": "media_player.tv", "action": "volume_set", "volume_level": 0.15})
    ]
    dimmed = [ToolCall("light", {"entity_id": "light.desk", "action": "turn_on", "brightness_pct": 70})]
    assert corrected_calls(dimmed, "Set the desk lamp to 70 percent", "Oops, make that 40") == [
        ToolCall("light", {"entity_id": "light.desk", "action": "turn_on", "brightness_pct": 40})
    ]


def test_what_a_correction_meant() -> None:
    assert meant("No, not the fan, the sofa lamp") == "No, the sofa lamp"
    assert meant("Not the mirror, the towel heater") == "the towel heater"
    assert meant("Sorry, I meant the kitchen ceiling") == "I meant the kitchen ceiling"
    assert meant("Not the kitchen. The bedroom.") == "The bedroom"
    assert meant("Not the kitchen light - the bedroom light") == "the bedroom light"
    assert meant("That's the kitchen, I wanted the bedroom") == "I wanted the bedroom"


def test_a_correction_may_ask_its_own_action() -> None:
    assert asks_its_own_action("No wait, I meant open the living room blinds")
    assert not asks_its_own_action("Actually, make it the nook blind")
    assert not asks_its_own_action("No, not the fan, the sofa lamp")


@pytest.mark.parametrize(
    ("text", "done"),
    [
        ("I've watered the ferns, you can tick that off", True),
        ("Great, take it off, I bought some this morning", True),
        ("cross the milk off", True),
        ("mark it as done", True),
        ("I've already got the lemons", True),
        ("the ferns are done", True),
        ("Good, I picked some up on the way home", True),
        ("Scratch the oat milk", True),
        ("ok, remove the rye bread and the lemons", True),
        ("we're done with the recycling", True),
        ("Got the spinach already", True),
        ("already bought the milk", True),
        ("I already have the spinach", True),
        ("we have eggs already", True),
        ("I don't need the lemons any more", True),
        ("I have a question", False),
        ("got to go", True),  # said done, but of no item: item_meant finds none
        ("take the bins out", False),
        ("I've got a question", True),  # said done, but of no item: item_meant finds none
        ("turn off the kitchen light", False),
    ],
)
def test_an_item_said_done(text: str, done: bool) -> None:
    assert is_done_with(text) is done


@pytest.mark.parametrize(
    ("text", "item"),
    [
        ("Add weed the borders", "weed the borders"),
        ("and put compost on it too", "compost"),
        ("Add milk to the shopping list", None),  # a list of its own
        ("Put the kettle on", None),
        ("turn on the light", None),
    ],
)
def test_an_item_added_to_the_list_just_read(text: str, item: str | None) -> None:
    assert added_item(text) == item


def test_the_item_meant_is_the_one_its_words_say() -> None:
    chores = ["Water the ferns", "Take out recycling"]
    assert item_meant(chores, "I've watered the ferns, you can tick that off") == "Water the ferns"
    shopping = ["Oat milk", "Lemons", "Rye bread"]
    # "It": the item the question before named.
    assert item_meant(shopping, "take it off, I bought some", "Is rye bread on the shopping list?") == "Rye bread"
    assert item_meant(["Oat milk", "Soy milk"], "tick the milk off") is None  # either
    assert item_meant(shopping, "I've already got the lemons") == "Lemons"
    assert item_meant(chores, "the ferns are done") == "Water the ferns"
    assert item_meant(shopping, "I've got a question", "Is rye bread on the shopping list?") is None
    # Several said, each one item; two words of one item are one.
    assert items_meant(shopping, "Remove the rye bread and the lemons") == ["Rye bread", "Lemons"]
    assert items_meant(shopping, "scratch the oat milk") == ["Oat milk"]
    assert items_meant(["Salt and vinegar crisps", "Milk"], "tick off the salt and vinegar crisps") == [
        "Salt and vinegar crisps"
    ]
    # By their place as read, or all of them.
    assert items_meant(shopping, "mark the first one as done") == ["Oat milk"]
    assert items_meant(shopping, "tick off the last one") == ["Rye bread"]
    assert items_meant(shopping, "I got them all, tick them all off") == shopping
    assert items_meant(shopping, "tick off both") == []  # three were read
    assert items_meant(shopping, "the first and the last are done") == ["Oat milk", "Rye bread"]
    assert items_meant(shopping, "the fourth one is done") == []  # three were read
    assert items_meant(shopping, "got the first two") == ["Oat milk", "Lemons"]
    assert items_meant(shopping, "the last two are done") == ["Lemons", "Rye bread"]


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("And on Saturday?", False),  # a day, after reading the calendar
        ("what about on the patio?", False),
        ("turn it on?", True),
        ("switch it on", True),
        ("lights on in the hall", True),
        ("and set it to 20?", True),
    ],
)
def test_on_is_a_verb_unless_a_day_or_a_place_follows(text: str, action: bool) -> None:
    assert says_an_action(text) is action


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Switch it on then", "Switch the Window Shade on"),
        ("Ok, close that please", "close the Window Shade"),
        ("Is it open?", "Is the Window Shade open?"),
        ("Actually bring it back up", "raise the Window Shade"),
        ("Roll it down", "lower the Window Shade"),
        # Two devices pointed at, or none: not said by one name.
        ("Turn it on and set it to 50", None),
        ("Open the garage door", None),
    ],
)
def test_a_device_pointed_at_is_said_by_its_name(text: str, said: str | None) -> None:
    """HA's sentences read "switch it on then" once "it" is said by the device's name."""
    assert said_by_name(text, "Window Shade") == said


def test_a_bit_more_moves_the_level_the_turn_before_moved() -> None:
    opened = [{"entity_id": "cover.blinds", "attributes": {"current_position": [0, 50]}}]
    assert further("A bit more", opened) == Relative("position", up=True)
    assert further("a little less please", opened) == Relative("position", up=False)
    dimmed = [{"entity_id": "light.lamp", "attributes": {"brightness": [255, 128]}}]
    assert further("Even more", dimmed) == Relative("brightness", up=False)
    # Not that, or nothing moved one way: not a step further.
    assert further("more lights please", opened) is None
    assert further("A bit more", [{"entity_id": "light.lamp", "attributes": {"brightness": [None, 255]}}]) is None
    both = [*opened, *dimmed]
    assert further("A bit more", both) is None


def test_a_correction_may_say_another_option() -> None:
    """ "Sorry, I meant heat" after setting cool: the turn before's call with the option said."""
    cool = ToolCall("climate", {"entity_id": "climate.hp", "action": "set_hvac_mode", "hvac_mode": "cool"})
    modes = {"hvac_mode": ("off", "heat", "cool", "heat_cool")}
    assert option_corrected([cool], lambda _call: modes, "sorry, I meant heat") == [
        ToolCall("climate", {**cool.arguments, "hvac_mode": "heat"})
    ]
    assert option_corrected([cool], lambda _call: modes, "not cool, heat")[0].arguments["hvac_mode"] == "heat"  # type: ignore[index]
    assert option_corrected([cool], lambda _call: modes, "no, heat cool")[0].arguments["hvac_mode"] == "heat_cool"  # type: ignore[index]
    assert option_corrected([cool], lambda _call: modes, "no, the bedroom") is None  # no option said
    assert option_corrected([cool], lambda _call: modes, "heat or off?") is None  # two
