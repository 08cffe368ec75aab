"""What a request names, and which devices fit it: never an action on a device of
another kind or in another area than the one named."""

from __future__ import annotations

import re

import pytest

from botpsy_runtime.formats import ToolCall
from custom_components.botpsy.core.home import HomeEntity
from custom_components.botpsy.core.requested import (
    KINDS,
    NAMES_NOTHING,
    SaidLevels,
    _mentions,
    by_levels,
    by_options,
    by_verb,
    muted_as_said,
    named_in,
    on_for,
    said_fraction,
)
from custom_components.botpsy.core.shortlist import restrict
from custom_components.botpsy.core.tools import OPTION_PARAMS, Param, Tool, compile_tools
from scripts.testing.sample_home import generated_home, sample_home

HOME = (
    HomeEntity("fan.ceiling", "Ceiling Fan", area="Living Room"),
    HomeEntity("light.kitchen_cabinets", "Kitchen cabinets", area="Kitchen"),
    HomeEntity("light.garage", "Garage Light", area="Garage"),
    HomeEntity("lock.back_door", "Back Door", area="Entrance"),
    HomeEntity("cover.bedroom", "Bedroom Curtain", area="Bedroom", device_class="curtain"),
    HomeEntity("cover.garage_door", "Big door", aliases=("roller",), device_class="garage"),
    HomeEntity("switch.lamp", "Reading lamp plug", area="Office"),
    HomeEntity("climate.office", "Office Thermostat", area="Office"),
    HomeEntity("media_player.tv", "TV", area="Living Room"),
)


def fitting(request: str) -> list[str]:
    named = named_in(request, HOME)
    return [e.entity_id for e in HOME if named.fits(e)]


@pytest.mark.parametrize(
    ("request_", "fit"),
    [
        ("turn on the kitchen fan", []),  # the home's fan is in the living room
        ("open the kitchen windows", []),
        ("close the blinds in the bedroom", []),  # a curtain is not a blind
        ("set the bedroom temp to 20 degrees", []),
        ("close the garage door", ["cover.garage_door"]),  # of its kind, though in no area
        ("turn on the living room fan", ["fan.ceiling"]),
        ("open the roller", ["cover.garage_door"]),  # by alias
        ("turn off the lamps in the office", ["switch.lamp"]),
        ("set the thermostat to 21", ["climate.office"]),
        ("pause the TV", ["media_player.tv"]),
    ],
)
def test_only_devices_that_fit_the_request(request_: str, fit: list[str]) -> None:
    assert fitting(request_) == fit


def test_without_a_request_every_device_fits() -> None:
    assert all(NAMES_NOTHING.fits(e) for e in HOME)


def test_what_was_asked_for_is_said() -> None:
    assert named_in("turn on the kitchen fan", HOME).describe() == "fan in the Kitchen"
    assert named_in("open the windows", HOME).describe() == "window"


def test_a_request_that_names_nothing_acts_on_what_its_words_point_at() -> None:
    assert fitting("unpause") == ["media_player.tv"]
    assert fitting("it is too dark") == ["light.kitchen_cabinets", "light.garage"]
    assert fitting("Good night") == fitting("start the dishwasher") == []
    # A follow-up is about what the conversation acted on.
    named = named_in("turn it off again", HOME, recent=["fan.ceiling"])
    assert [e.entity_id for e in HOME if named.fits(e)] == ["fan.ceiling"]
    # "Them" after two devices: both, every one of them.
    both = named_in("turn them both off again", HOME, recent=["fan.ceiling", "media_player.tv"])
    assert both.all_that_fit and [e.entity_id for e in HOME if both.fits(e)] == ["fan.ceiling", "media_player.tv"]
    # ... and with a word of their kind ("dim both of them"): each of them of that kind.
    lights = named_in("dim both of them to 20 percent", HOME, recent=["light.kitchen_cabinets", "light.garage"])
    assert lights.all_that_fit and lights.entity_ids == {"light.kitchen_cabinets", "light.garage"}
    assert not named_in("dim it to 20 percent", HOME, recent=["light.garage"]).all_that_fit
    # "Switch both off": no switch, the two lights (the 0.5B switched two switches off).
    switched = named_in("switch both off again", HOME, recent=["light.kitchen_cabinets", "light.garage"])
    assert switched.entity_ids == {"light.kitchen_cabinets", "light.garage"} and not switched.domains
    # "That light" after one light: that one, not a question which light (nor every light).
    that = named_in("put that light on again", HOME, recent=["fan.ceiling", "light.garage"])
    assert that.entity_ids == {"light.garage"} and not that.all_that_fit
    assert named_in("put that light on again", HOME, here="Kitchen", recent=["light.garage"]).entity_ids == {
        "light.garage"
    }
    # "This light", heard by a satellite, may be the one in its room: not read as the one before.
    assert named_in("dim this light", HOME, recent=["light.garage"]).entity_ids == {"light.garage"}
    assert named_in("dim this light", HOME, here="Kitchen", recent=["light.garage"]).entity_ids != {"light.garage"}
    assert named_in("switch those lights off", HOME, recent=["light.kitchen_cabinets", "light.garage"]).all_that_fit
    assert named_in("put the light on again", HOME, recent=["light.garage"]).kinds == ("light",)
    # "Switch it on" names no switch; "everything" somewhere the rules cannot read is not nothing.
    assert named_in("switch it on", HOME).nothing
    everything = named_in("switch off everything downstairs", HOME)
    assert not everything.nothing and all(everything.fits(e) for e in HOME)


def test_next_of_a_time_is_no_track() -> None:
    """ "The next few days" asks of a forecast; "the next song" of what plays."""
    assert named_in("what's the forecast for the next few days?", HOME).domains == {"weather"}
    assert named_in("what's next on the calendar?", HOME).domains == {"calendar"}
    assert named_in("what's on tomorrow?", HOME).domains == {"calendar"}
    assert named_in("will I need a coat tomorrow?", HOME).domains == {"weather"}
    assert named_in("skip to the next one", HOME).domains == {"media_player"}


def test_here_is_the_area_of_the_device_that_heard_it() -> None:
    named = named_in("what is the temperature in here?", HOME, here="Office")
    assert [e.entity_id for e in HOME if named.fits(e)] == ["climate.office"]


def test_there_is_the_area_of_the_devices_the_conversation_was_about() -> None:
    named = named_in("how warm is it in there?", HOME, recent=["switch.lamp"])
    assert named.areas == {"Office"} and [e.entity_id for e in HOME if named.fits(e)] == ["climate.office"]
    # Devices of several areas say no one place.
    named = named_in("how warm is it in there?", HOME, recent=["switch.lamp", "light.garage"])
    assert named.areas == frozenset()
    # Where the asker is going is no place of the request.
    assert named_in("put it on, I'm heading out there", HOME, recent=["switch.lamp"]).areas == frozenset()


def test_how_warm_it_is_asks_for_the_temperature() -> None:
    heater = HomeEntity("sensor.office_heater_irradiance", "Office heater irradiance", area="Office")
    office = (*HOME, heater, HomeEntity("light.office", "Office Lamp", area="Office"))
    for request in ("how hot is it in the office?", "how warm is the office", "How cold is it in the office"):
        assert [e.entity_id for e in office if named_in(request, office).fits(e)] == ["climate.office"]
    # "warm" of a light names no temperature.
    assert named_in("make the office lamp warm white", office).entity_ids == {"light.office"}


def test_a_title_to_play_names_nothing_but_what_follows_it() -> None:
    office = (*HOME, HomeEntity("light.office", "Office Lamp", area="Office"))
    assert [e.entity_id for e in office if named_in("play The Office", office).fits(e)] == ["media_player.tv"]
    assert named_in("play The Office on the TV", office).entity_ids == {"media_player.tv"}
    assert named_in("play Yesterday in the kitchen", office).describe() == "media player in the Kitchen"


def test_names_are_matched_singular_or_plural() -> None:
    home = (*HOME, HomeEntity("light.kitchen_lights", "Kitchen Lights"), HomeEntity("light.bed", "Bed Light"))
    # The name's words are its own: not the Kitchen area, nor every light.
    named = named_in("turn off the kitchen light", home)
    assert [e.entity_id for e in home if named.fits(e)] == ["light.kitchen_lights"]
    named = named_in("turn off the kitchen light and the bed light", home)
    assert [e.entity_id for e in home if named.fits(e)] == ["light.kitchen_lights", "light.bed"]
    # A kind said with a name that does not hold it is that device's kind, not every light.
    ceiling = (*home, HomeEntity("light.kitchen_ceiling", "Kitchen Ceiling"))
    named = named_in("turn off the kitchen ceiling light", ceiling)
    assert [e.entity_id for e in ceiling if named.fits(e)] == ["light.kitchen_ceiling"]


def test_a_named_device_in_another_area_than_the_one_named_does_not_fit() -> None:
    named = named_in("play the news on the TV in the kitchen", HOME)
    assert [e.entity_id for e in HOME if named.fits(e)] == []
    assert named.describe() == "media player in the Kitchen"


def test_a_place_said_inside_a_longer_one_said_is_not_named() -> None:
    """The lights "in the kids bedroom" are not the Bedroom's too; both said, both."""
    home = (
        HomeEntity("light.ceiling", "Ceiling", area="Bedroom"),
        HomeEntity("light.lamp", "Lamp", area="Kids bedroom"),
        HomeEntity("light.plafonnier", "Plafonnier", area="Chambre"),
        HomeEntity("light.veilleuse", "Veilleuse", area="Chambre des enfants"),
    )
    for request_, fit in (
        ("turn off the lights in the kids bedroom", ["light.lamp"]),
        ("turn off the kids bedroom lights", ["light.lamp"]),
        ("turn off the lights in the bedroom and the kids bedroom", ["light.ceiling", "light.lamp"]),
        ("éteins la lumière de la chambre des enfants", ["light.veilleuse"]),
        ("éteins la lumière de la chambre", ["light.plafonnier"]),
    ):
        named = named_in(request_, home)
        assert [e.entity_id for e in home if named.fits(e)] == fit, request_


CURTAINS = (
    *HOME,
    HomeEntity("cover.left", "Curtain Left", area="Living Room", device_class="curtain"),
    HomeEntity("cover.right", "Curtain Right", area="Living Room", device_class="curtain"),
    HomeEntity("climate.living", "Living Room Thermostat", area="Living Room"),
)


def test_a_kind_without_a_place_is_the_one_where_the_request_was_heard() -> None:
    """As HA's intents prefer the satellite's area: if it has one of that kind."""
    named = named_in("open the curtains", CURTAINS, here="Living Room")
    assert [e.entity_id for e in CURTAINS if named.fits(e)] == ["cover.left", "cover.right"]
    assert named.every
    # None of that kind there: the kind anywhere.
    named = named_in("close the garage door", CURTAINS, here="Living Room")
    assert [e.entity_id for e in CURTAINS if named.fits(e)] == ["cover.garage_door"]
    assert not named.every


@pytest.mark.parametrize(
    ("request_", "here", "meant"),
    [
        # A kind in a place means all of that kind there, as HA's intents read it.
        ("turn off the light in the living room", None, True),
        ("living room curtains closed", None, True),
        ("open the curtains", "Living Room", True),  # here
        ("turn off the lighting in this room", "Living Room", True),  # HA's <here> and <light>
        # Every one of a kind in the home, when "all" or "every" is said.
        ("turn off all the lights", None, True),
        ("every curtain closed", None, True),
        # One device named, or one of a kind without a place: not all of them.
        ("open the left curtain", None, False),
        ("set the thermostat to 21", None, False),
        ("set the thermostat in the living room to 21", None, False),  # one thermostat
        # The plural of a kind with no place: every one in the home, as HA's intents act.
        ("turn off the lights", None, True),
    ],
)
def test_which_requests_mean_every_device_that_fits(request_: str, here: str | None, meant: bool) -> None:
    assert named_in(request_, CURTAINS, here=here).all_that_fit is meant


def test_one_device_of_a_kind_among_several_is_asked_for_not_guessed() -> None:
    assert [e.entity_id for e in named_in("set the thermostat to 21", CURTAINS).one_of_several(CURTAINS)] == [
        "climate.office",
        "climate.living",
    ]
    # Not when one is named, its place is, it is heard there, or every one is meant.
    for request, here in (
        ("set the office thermostat to 21", None),
        ("set the thermostat in the office to 21", None),
        ("set the thermostat to 21", "Office"),
        ("set all thermostats to 21", None),
        ("skip this song", None),
    ):
        assert named_in(request, CURTAINS, here=here).one_of_several(CURTAINS) == [], request


def test_a_word_of_several_names_in_several_rooms_is_asked_about() -> None:
    """ "The ceiling light" with a Kitchen Ceiling and a Bedroom Ceiling: which one, not a
    guess; the words that tell one apart choose it ("the master bedroom light")."""
    home = (
        HomeEntity("light.kitchen_ceiling", "Kitchen Ceiling", area="Kitchen"),
        HomeEntity("light.bedroom_ceiling", "Bedroom Ceiling", area="Bedroom"),
        HomeEntity("light.master", "Master Bedroom Light"),
        HomeEntity("light.guest", "Guest Bedroom Light"),
    )
    asked = named_in("switch off the ceiling light", home).one_of_several(home)
    assert [e.entity_id for e in asked] == ["light.kitchen_ceiling", "light.bedroom_ceiling"]
    assert named_in("turn on the light in the master bedroom", home).one_of_several(home) == []
    # Devices without a place cannot be told apart by one: the model reads the rest.
    assert named_in("turn on the bedroom light", home[2:]).one_of_several(home[2:]) == []
    assert named_in("switch off both ceiling lights", home).one_of_several(home) == []


def test_which_list_is_asked_unless_one_is_the_shopping_list() -> None:
    """ "Add bananas to my list": HA's sentences put it on the shopping list; with no
    shopping list among several, which one is asked."""
    chores, garden = HomeEntity("todo.chores", "Chores"), HomeEntity("todo.garden", "Garden Jobs")
    asked = named_in("Add bananas to my list", (chores, garden)).one_of_several((chores, garden))
    assert asked == [chores, garden]
    assert named_in("Add bananas to my list", (chores, garden)).describe() == "list"
    home = (HomeEntity("todo.shopping", "Shopping List"), chores)
    assert named_in("put apples on the list", home).one_of_several(home) == []
    # A list for groceries is no shopping list of HA's: which one is asked.
    groceries = HomeEntity("todo.grocery_shop", "Groceries")
    assert named_in("put apples on the list", (groceries, chores)).one_of_several((groceries, chores)) == [
        groceries,
        chores,
    ]
    assert named_in("add weeding to the garden jobs", (chores, garden)).one_of_several((chores, garden)) == []


def test_a_gate_is_a_gate_not_any_lock() -> None:
    """ "Open the gate" in a home with one gate and two door locks is not a question."""
    home = (
        HomeEntity("cover.driveway_gate", "Driveway Gate", device_class="gate"),
        HomeEntity("lock.front_door", "Front Door"),
        HomeEntity("lock.back_door", "Back Door"),
        HomeEntity("lock.garden_gate", "Garden Gate Lock"),
    )
    gates = [e.entity_id for e in named_in("open the gate", home).one_of_several(home)]
    assert gates == ["cover.driveway_gate", "lock.garden_gate"]
    assert named_in("open the gate", home[:3]).one_of_several(home[:3]) == []
    doors = [e.entity_id for e in named_in("unlock the door", home).one_of_several(home)]
    # A door may be any of them; those called doors first.
    assert doors == ["lock.front_door", "lock.back_door", "cover.driveway_gate", "lock.garden_gate"]


@pytest.mark.parametrize(
    "phrase",
    ["Kitchen Lights", "bus", "Mr. Coffee's", "AC/DC speakers", "tv (main)", "garage door", "Lamps 2", "  ", "Café"],
)
def test_a_name_is_found_as_its_pattern_finds_it(phrase: str) -> None:
    """Names are ruled out by their words before a pattern is searched: never one that the
    pattern (the words, singular or plural) would find."""

    def pattern(words: str) -> str:
        return r"\s+".join(re.escape(w[:-1] if w.endswith("s") and len(w) > 3 else w) + "s?" for w in words.split())

    texts = [
        "turn off the kitchen light",
        "turn off the kitchen lights now",
        "the kitchenlight",
        "put the bu on",
        "turn on mr. coffee's machine",
        "mr. coffee'",
        "ac/dc speaker off",
        "the tv (main) please",
        "open the garage  doors",
        "lamp 2 and lamps 2",
        "café",
        "",
    ]
    for text in texts:
        expected = bool(phrase.split()) and re.search(rf"\b{pattern(phrase.lower())}\b", text) is not None
        assert _mentions(text, phrase) is expected, text


def test_names_are_found_in_a_home_bigger_than_the_pattern_cache() -> None:
    """A thousand names (more than `re` keeps compiled): the one said is found, and only it."""
    home = generated_home(1000).entities
    named = named_in("turn off the kitchen ceiling light and the attic fan", home)
    assert named.entity_ids == {"light.kitchen_ceiling_light", "fan.attic_fan"}  # not "Attic fan 2"
    assert [e.entity_id for e in home if named.fits(e)] == ["light.kitchen_ceiling_light", "fan.attic_fan"]


def test_cleaning_is_for_a_vacuum() -> None:
    """The 0.5B answered "clean the first floor" by setting the thermostat and opening curtains."""
    home = (
        HomeEntity("vacuum.rover", "Rover", area="Hall", floor="First floor"),
        HomeEntity("climate.hall", "Thermostat", area="Hall", floor="First floor"),
        HomeEntity("cover.hall", "Curtain", area="Hall", floor="First floor", device_class="curtain"),
        HomeEntity("light.kitchen", "Ceiling", area="Kitchen", floor="First floor"),
    )
    for request in ("clean the first floor", "start cleaning", "mop the hall"):
        assert [e.entity_id for e in home if named_in(request, home).fits(e)] == ["vacuum.rover"], request
    assert named_in("clean the kitchen", home).describe() == "vacuum in the Kitchen"


def test_what_goes_on_a_list_names_no_device() -> None:
    """ "Add clean the kitchen to my to-do list" was answered "I found no vacuum"."""
    home = (
        HomeEntity("todo.tasks", "Personal tasks"),
        HomeEntity("vacuum.rover", "Rover", area="Hall"),
        HomeEntity("light.kitchen", "Ceiling", area="Kitchen"),
    )
    for request in (
        "Add clean the kitchen to my todo list",
        "put light bulbs on the shopping list",
        "add mop the hall onto my to-do list",
        "put clean the oven on the chores",
        "add clean the oven to it",  # the list just read
    ):
        assert [e.entity_id for e in home if named_in(request, home).fits(e)] == ["todo.tasks"], request
    # Only what goes on a list: "add the ceiling to the scene" still names the ceiling light.
    assert named_in("add the ceiling to the scene", home).entity_ids == {"light.kitchen"}
    assert [e.entity_id for e in home if named_in("clean the kitchen", home).fits(e)] == []


def entities(*ids: str) -> list[HomeEntity]:
    return [e for e in HOME if e.entity_id in ids]


@pytest.mark.parametrize(
    ("request_", "acted", "left"),
    [
        # Two devices by name: the one not acted on is left.
        ("turn on the ceiling fan and the garage light", ["fan.ceiling"], ["light.garage"]),
        ("switch off the TV, then the garage light", ["light.garage"], ["media_player.tv"]),
        # A device and a kind in a place: the kind there is left, and only it.
        ("turn on the garage light and close the curtain in the bedroom", ["light.garage"], ["cover.bedroom"]),
        ("close the curtain in the bedroom and turn on the garage light", ["cover.bedroom"], ["light.garage"]),
        # A kind acted on elsewhere than the place asked is not done.
        ("pause the TV and turn on the lamps in the office", ["media_player.tv"], ["switch.lamp"]),
    ],
)
def test_the_rest_of_a_request_for_several_things(request_: str, acted: list[str], left: list[str]) -> None:
    rest = named_in(request_, HOME).rest(entities(*acted), HOME)
    assert rest is not None
    assert [e.entity_id for e in HOME if rest.fits(e) and e.entity_id not in acted] == left


@pytest.mark.parametrize(
    ("request_", "acted"),
    [
        ("turn on the ceiling fan", ["fan.ceiling"]),  # one thing asked
        ("turn on the ceiling fan and the garage light", ["fan.ceiling", "light.garage"]),  # both done
        ("turn off the lights in the garage and the kitchen", ["light.garage", "light.kitchen_cabinets"]),
        ("turn on the TV and play some jazz", ["media_player.tv"]),  # the same device twice
    ],
)
def test_nothing_is_left_of_a_request_done_whole(request_: str, acted: list[str]) -> None:
    assert named_in(request_, HOME).rest(entities(*acted), HOME) is None


def test_a_device_named_by_part_of_a_longer_name_is_not_named() -> None:
    home = (*HOME, HomeEntity("media_player.kitchen", "Kitchen", area="Kitchen"))
    named = named_in("turn off the kitchen cabinets", home)
    assert named.entity_ids == {"light.kitchen_cabinets"}
    assert named_in("pause the kitchen", home).entity_ids == {"media_player.kitchen"}


PLACES = (
    HomeEntity("light.fire_pit", "Outdoor Fire Pit", area="Garden"),
    HomeEntity("light.porch", "Smart Light", area="Front Porch"),
    HomeEntity("light.hall", "Smart Light", area="Hall"),
    HomeEntity("vacuum.dreame", "Dreame Upstairs"),
    HomeEntity("media_player.echo", "Smart Speaker", area="Hall", device_class="speaker"),
    HomeEntity("media_player.tv", "Smart Tv", area="Hall", device_class="tv"),
    HomeEntity("media_player.den", "Den", area="Den"),
    HomeEntity("climate.office", "Office", area="Office"),
    HomeEntity("sensor.office_temperature", "Temperature", area="Office", device_class="temperature"),
)


@pytest.mark.parametrize(
    ("request_", "fit"),
    [
        # A device by words of its name: it fits, beside the devices of the kind said.
        ("start the dreame", ["vacuum.dreame"]),
        ("turn off the fire pit", ["light.fire_pit"]),
        # A place by words of its name: its devices fit too; the model tells which.
        ("turn on the porch light", ["light.fire_pit", "light.porch", "light.hall"]),
        # A speaker is no TV, a TV no speaker; a player that says neither may be either.
        ("pause the tv", ["media_player.tv", "media_player.den"]),
        ("pause the speaker", ["media_player.echo", "media_player.den"]),
        # What is said of what plays, or of a temperature, points at those devices.
        ("make it quieter", ["media_player.echo", "media_player.tv", "media_player.den"]),
        ("make it 72 F", ["climate.office"]),
    ],
)
def test_devices_named_by_part_or_by_what_they_do(request_: str, fit: list[str]) -> None:
    named = named_in(request_, PLACES)
    assert [e.entity_id for e in PLACES if named.fits(e)] == fit
    assert not named.nothing


def test_a_request_that_names_by_part_is_not_asked_which() -> None:
    """ "The porch light" where there are two lights: the model is asked, not the user."""
    assert named_in("turn on the porch light", PLACES).one_of_several(PLACES) == []
    assert len(named_in("turn on the light", PLACES).one_of_several(PLACES)) == 3


def test_words_a_request_is_said_with_name_nothing_by_part() -> None:
    home = (*PLACES, HomeEntity("light.back", "Turn Light", area="Back Bedroom"))
    assert named_in("turn it up a bit, please", home).partly == frozenset()
    assert named_in("turn off the lights in the whole house", PLACES).anywhere
    assert named_in("start the dishwasher", PLACES).nothing  # no such device, no word of one


def test_one_called_by_the_kind_said_is_not_asked_which() -> None:
    """ "Pause the TV" with a Projector and a Smart TV: the model is asked, with the TV."""
    home = (
        HomeEntity("media_player.projector", "Projector", area="Den"),
        HomeEntity("media_player.tv", "Smart TV", area="Hall"),
        HomeEntity("switch.plug", "Smart Plug"),
        HomeEntity("valve.garden", "Garden Valve"),
    )
    assert named_in("pause the tv", home).one_of_several(home) == []
    two = (*home, HomeEntity("media_player.den", "Den TV", area="Den"))
    asked = [e.entity_id for e in named_in("pause the tv", two).one_of_several(two)]
    assert asked == ["media_player.tv", "media_player.den", "media_player.projector"]  # those called so first
    assert [e.entity_id for e in named_in("turn on the sprinkler", home).one_of_several(home)] == []
    assert [e.entity_id for e in home if named_in("turn on the sprinkler", home).fits(e)] == ["valve.garden"]


SAME_NAME = (
    HomeEntity("light.master", "Bedroom Light", area="Master Bedroom"),
    HomeEntity("light.guest", "Bedroom Light", area="Guest Bedroom"),
    HomeEntity("media_player.roof", "Smart Speaker", area="Rooftop Terrace"),
    HomeEntity("media_player.lounge", "Smart Speaker", area="Living Room"),
)


@pytest.mark.parametrize(
    ("request_", "here", "fit", "asked"),
    [
        # A name several devices have, told apart by the place said with it...
        ("turn on the master bedroom light", None, ["light.master"], 0),
        ("pause the smart speaker on the terrace", None, ["media_player.roof"], 0),
        # ... or by where the request was heard; else asked which.
        ("turn on the bedroom light", "Guest Bedroom", ["light.guest"], 0),
        ("turn on the bedroom light", None, ["light.master", "light.guest"], 2),
        # "Both" (or all) are every one of that name.
        ("turn on both bedroom lights", None, ["light.master", "light.guest"], 0),
    ],
)
def test_devices_of_one_name(request_: str, here: str | None, fit: list[str], asked: int) -> None:
    named = named_in(request_, SAME_NAME, here=here)
    assert [e.entity_id for e in SAME_NAME if named.fits(e)] == fit
    assert len(named.one_of_several(SAME_NAME)) == asked
    assert named.all_that_fit == request_.startswith("turn on both")


def test_a_relative_request_after_an_action_is_about_what_was_acted_on() -> None:
    home = (HomeEntity("climate.down", "Downstairs", area="Hall"), HomeEntity("climate.up", "Upstairs", area="Landing"))
    assert named_in("make it one degree warmer", home, recent=["climate.down"]).entity_ids == {"climate.down"}
    assert [e.entity_id for e in home if named_in("make it warmer", home).fits(e)] == ["climate.down", "climate.up"]


VERB_HOME = (
    HomeEntity("media_player.speaker", "Speaker", area="Den"),
    HomeEntity("valve.water", "Water Valve", area="Garden"),
    HomeEntity("climate.den", "Den Thermostat", area="Den"),
    HomeEntity("cover.den_blind", "Den Blind", area="Den"),
)
VERB_TOOLS = (
    Tool("cover", "", "open_cover", targets={"cover.den_blind": ()}),
    Tool("cover", "", "close_cover", targets={"cover.den_blind": ()}),
    Tool("cover", "", "set_cover_position", targets={"cover.den_blind": ()}),
    Tool("media_player", "", "turn_off", targets={"media_player.speaker": ()}),
    Tool("media_player", "", "volume_mute", targets={"media_player.speaker": ()}),
    Tool("media_player", "", "media_pause", targets={"media_player.speaker": ()}),
    Tool("media_player", "", "media_next_track", targets={"media_player.speaker": ()}),
    Tool("media_player", "", "media_previous_track", targets={"media_player.speaker": ()}),
    Tool("valve", "", "open_valve", targets={"valve.water": ()}),
    Tool("valve", "", "set_valve_position", targets={"valve.water": ()}),
    Tool("climate", "", "turn_off", targets={"climate.den": ()}),
    Tool("climate", "", "set_temperature", targets={"climate.den": ()}),
    Tool("get_state", "", targets={"valve.water": ()}, read_only=True),
)
SPEAKER = {t.key for t in VERB_TOOLS if t.name == "media_player"}


@pytest.mark.parametrize(
    ("request_", "kept"),
    [
        # The verb's own service: not a mute, not a position.
        ("deactivate the speaker", {"media_player.turn_off"}),
        ("turn off the music on the speaker", {"media_player.media_pause"}),
        ("open the water valve", {"valve.open_valve", "get_state"}),
        # A value said, or no verb of the kind: the model chooses among them all.
        ("open the water valve to 20 %", {"valve.open_valve", "valve.set_valve_position", "get_state"}),
        ("lower the den thermostat", {"climate.turn_off", "climate.set_temperature"}),
        # Of a cover, "raise" and "lower" open and close it (the 0.5B set it where it was).
        ("roll down the den blind", {"cover.close_cover"}),
        ("I'd like the den blind lowered", {"cover.close_cover"}),
        ("pull the den blind down", {"cover.close_cover"}),
        ("raise the den blind", {"cover.open_cover"}),
        ("lower the den blind halfway", {"cover.open_cover", "cover.close_cover", "cover.set_cover_position"}),
        ("draw back the den blind", {"cover.open_cover"}),
        ("pull back the den blind", {"cover.open_cover"}),
        ("pull the den blind back", {"cover.open_cover"}),
        ("draw the den blind", {"cover.close_cover"}),
        ("draw the den blind again", {"cover.close_cover"}),
        ("draw the den blind open", {"cover.open_cover"}),
        ("put the den blind out", {"cover.open_cover"}),
        ("retract the den blind", {"cover.close_cover"}),
        ("bring the den blind in", {"cover.close_cover"}),
        # "Hold the music", "kill the music": paused (or stopped), not played.
        ("hold the music on the speaker", {"media_player.media_pause"}),
        ("put the speaker on hold", {"media_player.media_pause"}),
        ("kill the music on the speaker", {"media_player.media_pause"}),
        ("hold on deactivate the speaker", {"media_player.turn_off"}),
        # The track, not the player: "skip" is the next one (the 1.5B went back one).
        ("skip this song on the speaker", {"media_player.media_next_track"}),
        ("the next track on the speaker please", {"media_player.media_next_track"}),
        ("go back one song on the speaker", {"media_player.media_previous_track"}),
        ("play the previous song on the speaker", {"media_player.media_previous_track"}),
        # A value said with no verb of ours is set (the 0.5B switched the thermostat off).
        ("turn the den thermostat down to 18", {"climate.set_temperature"}),
        ("turn the speaker up to 40 percent", SPEAKER),
        ("turn on the speaker", SPEAKER),
        # Each part of a request for several things by its own verb.
        ("turn off the speaker and open the water valve", {"media_player.turn_off", "valve.open_valve", "get_state"}),
    ],
)
def test_the_verb_picks_the_service(request_: str, kept: set[str]) -> None:
    named = named_in(request_, VERB_HOME)
    fitting = [e.entity_id for e in VERB_HOME if named.fits(e)]
    services = {e.entity_id: named.services_for(e) for e in VERB_HOME}
    assert {t.key for t in by_verb(restrict(VERB_TOOLS, fitting), services.__getitem__)} == kept


def test_stopping_what_cannot_pause_switches_it_off() -> None:
    """ "Para el ventilador" (HA's Spanish starts pausing with "para"): a fan, a light or a
    switch goes off (the 0.5B switched the fan on); a player still pauses, a cover is not
    closed."""
    pause = (frozenset({"media_pause"}),)
    tools = [
        Tool("fan", "", service, targets={"fan.desk": ()}) for service in ("turn_on", "turn_off", "set_percentage")
    ]
    assert {t.key for t in by_verb(tools, lambda e: on_for(pause, "fan", "on"))} == {"fan.turn_off"}
    assert on_for(pause, "media_player", "playing") == pause
    assert on_for(pause, "cover", "open") == pause


@pytest.mark.parametrize(
    ("request_", "offered"),
    [
        # One of the device's own options said: the call that sets it, to it (the 0.5B set
        # the fan's speed to 0 for "auto mode").
        ("put the bedroom fan in auto mode", {("fan.set_preset_mode", ("auto",))}),
        ("switch the TV to Netflix", {("media_player.select_source", ("Netflix",))}),
        (
            "set the living room thermostat to heat",
            {("climate.set_hvac_mode", ("heat",))},
        ),
        # Switched off, a device chooses no option ("sleep" is no preset here): unchanged.
        (
            "turn off the bedroom fan, I'm going to sleep",
            {("fan.set_percentage", ()), ("fan.set_preset_mode", ("auto", "sleep"))},
        ),
        # A temperature said is set; the option alone does not decide ("heat ... to 22").
        ("heat the living room thermostat to 22", {("climate.set_temperature", ())}),
    ],
)
def test_an_option_said_picks_the_call_that_sets_it(request_: str, offered: set[tuple[str, tuple[str, ...]]]) -> None:
    home = sample_home()
    named = named_in(request_, home.entities)
    fitting = [e.entity_id for e in home.entities if named.fits(e) and e.domain != "sensor"]
    entity = {e.entity_id: e for e in home.entities}
    verbs = by_verb(restrict(compile_tools(home), fitting), lambda e: named.services_for(entity[e]))
    levels = by_levels(verbs, lambda e: named.levels_for(entity[e]))
    kept = {
        (t.key, next((p.options for p in params if p.name in OPTION_PARAMS), ()))
        for t in by_options(levels, lambda e: named.option_words_for(entity[e]))
        if not t.read_only
        for params in t.targets.values()
    }
    assert kept == offered


def test_a_greeting_names_no_device_by_part() -> None:
    home = (HomeEntity("light.bedside", "Bedside Lamp", aliases=("night light",)),)
    assert named_in("Good night!", home).nothing
    assert named_in("good night, switch off the night light", home).entity_ids == {"light.bedside"}


def test_the_lights_without_a_place_are_all_of_them() -> None:
    named = named_in("turn off the lights", PLACES)
    assert named.anywhere and named.all_that_fit


def test_a_part_of_a_request_is_read_without_parts_of_its_own() -> None:
    """The satellite's area says "and" ("Kitchen and Dining"): a part names it whole."""
    home = (
        HomeEntity("light.k", "Pendant", area="Kitchen and Dining"),
        HomeEntity("fan.k", "Fan", area="Kitchen and Dining"),
    )
    named = named_in("turn on the light here and switch off the fan", home, here="Kitchen and Dining")
    assert named.several and named.parts


STOREYS = (
    HomeEntity("light.cellar", "Cellar Bulb", area="Storage", floor="Lower Level", floor_level=-1),
    HomeEntity("light.hall", "Hall Light", area="Hall", floor="Ground", floor_level=0),
    HomeEntity("light.kitchen", "Pendant", area="Kitchen", area_aliases=("Cookhouse",), floor="Ground", floor_level=0),
    HomeEntity("light.landing", "Landing Light", area="Landing", floor="First", floor_level=1),
    HomeEntity("light.bedroom", "Ceiling", area="Bedroom", floor="First", floor_level=1),
    HomeEntity("light.attic", "Attic Light", area="Loft", floor="Second", floor_level=2),
    HomeEntity("light.downstairs_wc", "Mirror", area="Downstairs Loo", floor="Ground", floor_level=0),
)


@pytest.mark.parametrize(
    ("request_", "here", "fit"),
    [
        # Without knowing where it was heard, downstairs is the ground floor.
        ("turn off the lights downstairs", None, {"light.hall", "light.kitchen", "light.downstairs_wc"}),
        # Heard on the first floor: the floor below it; heard on the ground floor: the one above.
        ("switch off all the lights downstairs", "Bedroom", {"light.hall", "light.kitchen", "light.downstairs_wc"}),
        ("turn off the lights upstairs", "Kitchen", {"light.landing", "light.bedroom"}),
        ("turn off the lights upstairs", "Landing", {"light.attic"}),
        ("lights on in the basement", None, {"light.cellar"}),
        ("turn on the lights on the ground floor", "Loft", {"light.hall", "light.kitchen", "light.downstairs_wc"}),
        # An area whose name says downstairs is that area, not the floor.
        ("turn on the light in the downstairs loo", None, {"light.downstairs_wc"}),
        # An area by its alias.
        ("turn off the light in the cookhouse", None, {"light.kitchen"}),
    ],
)
def test_a_floor_said_by_where_it_is(request_: str, here: str | None, fit: set[str]) -> None:
    """HA's sentences have no "downstairs": BotPsy read it as every light in the home."""
    named = named_in(request_, STOREYS, here=here)
    assert {e.entity_id for e in STOREYS if named.fits(e)} == fit
    assert named.all_that_fit


def test_a_floor_level_from_its_name_where_ha_has_none() -> None:
    home = (
        HomeEntity("light.a", "A", area="Lounge", floor="Ground Floor"),
        HomeEntity("light.b", "B", area="Study", floor="Top"),
        HomeEntity("light.c", "C", area="Den", floor="Upper Floor"),
    )
    named = named_in("turn off the lights downstairs", home)
    assert named.floors == {"Ground Floor"}
    assert named_in("turn off the lights upstairs", home).floors == {"Upper Floor"}
    # No floor has a level, nor a name that says one: the words name no floor.
    assert not named_in("lights off upstairs", home[:2]).floors


def test_a_floor_level_from_its_name_in_the_homes_language() -> None:
    """A German home's "Erdgeschoss" is its ground floor whatever language is spoken (the
    0.5B switched off the lights upstairs too for "Unten alle Lampen aus")."""
    home = (
        HomeEntity("light.a", "A", area="Küche", floor="Erdgeschoss"),
        HomeEntity("light.b", "B", area="Bad", floor="Obergeschoss"),
        HomeEntity("light.c", "C", area="Vorrat", floor="Keller"),
    )
    assert named_in("turn off the lights downstairs", home).floors == {"Erdgeschoss"}
    assert named_in("turn off the lights upstairs", home).floors == {"Obergeschoss"}
    assert named_in("turn off the lights in the basement", home).floors == {"Keller"}


def test_a_player_named_a_speaker_in_the_homes_language_is_no_tv() -> None:
    """ "Allume la télé" in a home whose one player is "Enceinte du salon": no TV there
    (the 0.5B switched the speaker on)."""
    speaker = HomeEntity("media_player.enceinte", "Enceinte du salon", area="Salon")
    tv = HomeEntity("media_player.fernseher", "Fernseher Wohnzimmer", area="Wohnzimmer")
    assert not KINDS["tv"](speaker) and KINDS["speaker"](speaker)
    assert KINDS["tv"](tv) and not KINDS["speaker"](tv)


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("Bring it down to a quarter", 0.25),
        ("Open the blinds halfway", 0.5),
        ("three quarters open", 0.75),
        ("set the volume to a third", 0.33),
        ("The desk lamp to full", 1.0),
        ("fan on max please", 1.0),
        ("full brightness in the kitchen", 1.0),
        ("open the blinds all the way up", 1.0),
        ("run the dishwasher on full load", None),
        # A number says it; a time or a part of several is no share of a level.
        ("Dim it to 30 percent", None),
        ("Turn off half the lights", None),
        ("Switch it off in half an hour", None),
        ("at a quarter past six", None),
    ],
)
def test_a_share_said_in_words(text: str, share: float | None) -> None:
    assert said_fraction(text) == share


def test_a_mute_call_has_the_value_its_verb_says() -> None:
    muted = ToolCall("media_player", {"entity_id": "media_player.tv", "action": "volume_mute", "is_volume_muted": True})
    assert muted_as_said(muted, "Oops, unmute it").arguments["is_volume_muted"] is False
    assert muted_as_said(muted, "mute the tv").arguments["is_volume_muted"] is True
    # Both verbs, or none: as the model wrote it.
    assert muted_as_said(muted, "unmute the tv and mute the radio") == muted
    play = ToolCall("media_player", {"entity_id": "media_player.tv", "action": "media_play"})
    assert muted_as_said(play, "unmute and play") == play


def test_a_cover_said_with_which_way_alone() -> None:
    """ "Bedroom curtain down please": closed (the 0.5B opened the blinds for "down")."""
    assert named_in("bedroom curtain down please", HOME).services == (frozenset({"close_cover"}),)
    assert named_in("the bedroom curtain up", HOME).services == (frozenset({"open_cover"}),)
    assert named_in("turn off the bedroom curtain", HOME).services != (frozenset({"close_cover"}),)


def test_my_list_is_the_shopping_list() -> None:
    """As HA's sentences read "my list" (the 0.5B put the bananas on the chores)."""
    lists = (HomeEntity("todo.shopping", "Shopping List"), HomeEntity("todo.chores", "Chores"))
    named = named_in("Add bananas to my list", lists)
    assert [e.entity_id for e in lists if named.fits(e)] == ["todo.shopping"]
    named = named_in("add bananas to the chores list", lists)
    assert [e.entity_id for e in lists if named.fits(e)] == ["todo.chores"]
    # Without a shopping list, "my list" may be any: asked which.
    others = (HomeEntity("todo.garden", "Garden Jobs"), HomeEntity("todo.chores", "Chores"))
    assert len(named_in("Add bananas to my list", others).one_of_several(others)) == 2


@pytest.mark.parametrize(
    ("entity_id", "share", "offered"),
    [
        # A dimmable light: turned on at all of its brightness, never off.
        ("light.desk", 1.0, {("light.turn_on", (("brightness_pct", 100),))}),
        # An on/off light has no level: "full" is switching it on, as it goes.
        ("light.hallway", 1.0, {("light.turn_on", ())}),
        # Any other share of a level it has not: nothing it can do.
        ("light.hallway", 0.5, set()),
    ],
)
def test_full_of_a_device_is_all_of_its_level(
    entity_id: str, share: float, offered: set[tuple[str, tuple[tuple[str, float | None], ...]]]
) -> None:
    levels = by_levels(restrict(compile_tools(sample_home()), [entity_id]), lambda _e: SaidLevels(share=share))
    kept = {
        (t.key, tuple((p.name, p.minimum) for p in params if p.required))
        for t in levels
        if not t.read_only
        for params in t.targets.values()
    }
    assert kept == offered


ROBOTS = (
    HomeEntity("lawn_mower.mowbot", "Mowbot", area="Garden"),
    HomeEntity("vacuum.robi", "Robi", area="Hall"),
    HomeEntity("light.dock", "Dock Light", area="Garden"),
)


@pytest.mark.parametrize(
    ("request_", "services"),
    [
        # Sent out to work, or back to its base (the 0.5B docked a mower sent out).
        ("send the mowbot out", (frozenset({"start", "start_mowing"}),)),
        ("mow the lawn", (frozenset({"start", "start_mowing"}),)),
        ("start cleaning", (frozenset({"start", "start_mowing"}),)),
        ("send the mower back to its dock", (frozenset({"return_to_base", "dock"}),)),
        ("dock the mowbot", (frozenset({"return_to_base", "dock"}),)),
        ("send Robi home", (frozenset({"return_to_base", "dock"}),)),
        ("return the vacuum to its base", (frozenset({"return_to_base", "dock"}),)),
        # "Dock" of a name is no verb.
        ("turn on the dock light", named_in("turn on the hall light", ROBOTS).services),
    ],
)
def test_a_robot_sent_out_or_back(request_: str, services: tuple[frozenset[str], ...]) -> None:
    assert named_in(request_, ROBOTS).services == services


def test_a_then_at_the_end_joins_nothing() -> None:
    """ "Put the card on the chores then": one request (in that case), whose verb adds to the list."""
    lists = (HomeEntity("todo.chores", "Chores"), HomeEntity("todo.shopping", "Shopping List"))
    named = named_in("Put find the insurance card on the chores then", lists)
    assert not named.several and named.entity_ids == {"todo.chores"}
    assert named.services == (frozenset({"add_item"}),)
    assert named_in("add eggs to the shopping list then the chores", lists).several


@pytest.mark.parametrize(
    ("request_", "adds"),
    [
        # "Put ... on" a list, or a list the request names: an item for it.
        ("put milk on the shopping list", True),
        ("put butter on there as well", True),
        ("put batteries onto my to-do list", True),
        ("put find the insurance card on the chores", True),
        ("add bread to the chores", True),
        # ... "put" a device "on": switched on, not written on a list (it was, every time).
        ("put the kettle on", False),
        ("put the ceiling fan on for me", False),
        ("put the lights on in the kitchen", False),
        ("put the heating on it's freezing", False),
    ],
)
def test_put_on_is_a_list_item_only_where_a_list_is_said(request_: str, adds: bool) -> None:
    home = (*HOME, HomeEntity("todo.chores", "Chores"))
    assert (named_in(request_, home).services == (frozenset({"add_item"}),)) == adds


@pytest.mark.parametrize(
    "request_",
    [
        "switch the ceiling fan on too",
        "turn the ceiling fan on as well",
        "put the ceiling fan on for me",
        "turn the lights on in the kitchen please",
    ],
)
def test_on_at_the_end_with_what_may_follow_it_is_switching_on(request_: str) -> None:
    assert frozenset({"turn_on"}) in named_in(request_, HOME).services


def test_on_said_with_a_delay_is_not_now() -> None:
    """ "Turn the heating on in an hour" is not a request to switch it on now."""
    assert named_in("turn the office thermostat on in an hour", HOME).services == ()
    assert named_in("turn the office thermostat on in the office", HOME).services != ()


def test_a_mower_is_a_kind() -> None:
    """ "Send the mower back to its dock": the Mowbot, not the vacuum (as the 0.5B chose)."""
    robots = ROBOTS[:2]
    named = named_in("send the mower back to its dock", robots)
    assert [e.entity_id for e in robots if named.fits(e)] == ["lawn_mower.mowbot"]


def test_a_humidity_said_is_the_one_set() -> None:
    """ "The humidifier to 60 percent" sets its humidity to 60, not merely on (as the 0.5B did)."""
    humidity = Param("humidity", "number", required=True, minimum=30, maximum=70)
    tools = (
        Tool("humidifier", "", "turn_on", targets={"humidifier.nursery": ()}),
        Tool("humidifier", "", "set_humidity", targets={"humidifier.nursery": (humidity,)}),
    )
    levels = by_levels(tools, lambda _e: SaidLevels(share=0.6))
    assert [(t.service, [(p.name, p.minimum, p.maximum) for p in t.targets["humidifier.nursery"]]) for t in levels] == [
        ("set_humidity", [("humidity", 60.0, 60.0)])
    ]
    # No value said: the humidifier is switched on, not set.
    assert [t.service for t in by_levels(tools, lambda _e: SaidLevels(levels=False))] == ["turn_on"]
