"""Replies built from results: what changed, and what was read for a question."""

from __future__ import annotations

from datetime import date

from custom_components.botpsy.core.reply import describe, describe_states


def test_a_question_is_answered_with_what_was_read() -> None:
    thermostat = {"entity_id": "climate.living", "name": "Thermostat", "state": "heat", "current_temperature": 68.0}
    sensor = {"entity_id": "sensor.out", "name": "Outside", "state": "3.5", "unit_of_measurement": "°C"}
    area = {"name": "get_area_state", "entities": [sensor, {"entity_id": "light.x", "state": "on", "brightness": 128}]}
    assert describe_states([{"name": "get_state", "state": thermostat}, area]) == (
        "Thermostat is heat, current temperature 68.0. Outside is 3.5 °C. light.x is on, brightness 50 %."
    )
    assert describe_states([{"name": "find_entities", "entities": [{"entity_id": "light.x"}]}]) == ""


def test_the_same_failure_is_said_once() -> None:
    failed = {"name": "light", "arguments": {"entity_id": "light.x"}, "error": "no"}
    assert describe([failed, failed]) == "I did not change light.x: no."


def test_a_device_is_said_by_its_name_and_no_change_is_not_done() -> None:
    """Never an entity id for a device that exists, never "Done" when nothing changed."""
    failed = {"name": "light", "arguments": {"entity_id": "light.x"}, "target_name": "Porch Lamp", "error": "no"}
    assert describe([failed]) == "I did not change Porch Lamp: no."
    same = {"name": "light", "arguments": {"entity_id": "light.x"}, "target_name": "Porch Lamp", "executed": True}
    assert describe([{**same, "unchanged_state": "off"}]) == "Porch Lamp was already off: nothing changed."
    assert describe([same]) == "Porch Lamp: nothing changed."


def test_a_device_switched_on_is_said_with_what_the_call_set() -> None:
    """A fan put in auto mode turns on: its mode is said (the call set it), not every
    attribute that came with the new state (its direction)."""
    call = {"name": "fan", "arguments": {"entity_id": "fan.patio", "action": "set_preset_mode", "preset_mode": "auto"}}
    new = {"preset_mode": (None, "auto"), "percentage": (None, 100), "direction": (None, "forward")}
    change = {"entity_id": "fan.patio", "name": "Patio fan", "old_state": "off", "new_state": "on", "attributes": new}
    assert describe([{**call, "changes": [change]}]) == "Patio fan: off → on, preset mode auto, speed 100."


def test_an_intents_failure_says_why_without_call_syntax() -> None:
    failed = {"name": "intent__HassTurnOff", "error": "MatchFailedError", "error_text": "No device named Garage"}
    assert describe([failed]) == "I did not change anything: No device named Garage."
    done = {"name": "intent__HassTurnOn", "arguments": {"entity_id": "Porch Light"}, "changes": [], "intent": True}
    assert describe([done]) == "Done: Porch Light."


def test_a_malformed_call_is_said_without_its_syntax_or_length() -> None:
    """What a model wrote inside a broken call is not read out to the user."""
    reply = describe(
        [
            {
                "arguments": {"entity_id": "media_player.tv<escape\n<start_function_call>call:fan{entity_id:"},
                "error": "unknown entity 'media_player.tv<escape\\n<start_function_call>call:fan{' \u202e" + "x" * 5000,
            },
            {"arguments": {"entity_id": "l\u0456ght.k\u0456tchen"}, "error": "no such entity"},
            {
                "arguments": {"entity_id": "media_player.tv"},
                "error": 'unknown entity media_player.liv{"name": "cover", "arguments": {"x": {"x": 1}}}',
            },
        ]
    )
    assert "<" not in reply and "start_function_call" not in reply and "\u202e" not in reply
    assert '"arguments"' not in reply and "I did not change media_player.tv: unknown entity media_player.liv…" in reply
    assert "I did not change a device I could not make out: unknown entity" in reply
    assert len(reply) < 400
    assert "I did not change l\u0456ght.k\u0456tchen: no such entity." in reply  # another script is still said


def test_a_question_about_a_list_a_forecast_or_a_calendar_is_answered_with_what_it_holds() -> None:
    items = {
        "entity_id": "todo.shopping",
        "name": "Shopping",
        "state": "2",
        "items": [{"summary": "Eggs"}, {"summary": "Tea"}],
    }
    assert describe_states([{"state": items}]) == "Shopping, 2 items: Eggs, Tea."
    assert describe_states([{"state": {**items, "items": []}}]) == "Shopping has nothing on it."
    events = [
        {"summary": "Dentist", "start": "2026-12-03T09:00:00+01:00", "end": "2026-12-03T09:45:00+01:00"},
        {"summary": "Birthday", "start": "2026-12-05"},
    ]
    family = {"entity_id": "calendar.family", "name": "Family", "state": "off", "events": events}
    assert (
        describe_states([{"state": family}])
        == "Family: Dentist on Thu 03 Dec at 09:00 until 09:45; Birthday on Sat 05 Dec."
    )
    forecast = [{"datetime": "2026-12-03T12:00:00+00:00", "condition": "rainy", "temperature": 9, "templow": 4,
                 "precipitation_probability": 80}]  # fmt: skip
    home = {"entity_id": "weather.home", "name": "Home", "state": "cloudy", "temperature": 11, "forecast": forecast}
    assert describe_states([{"state": home}]) == (
        "Home is cloudy, temperature 11. Forecast: Thu 03 Dec rainy, 9 (low 4), 80 % chance of precipitation."
    )
    # A day asked of ("and on Monday?") is said, wherever it is in the forecast; one it does
    # not have is not made up.
    week = [{"datetime": f"2026-12-{day:02}T12:00:00+00:00", "condition": "sunny"} for day in range(3, 10)]
    assert describe_states([{"state": {**home, "forecast": week}}], days=frozenset({date(2026, 12, 7)})) == (
        "Home is cloudy, temperature 11. Forecast: Mon 07 Dec sunny."
    )
    assert "Thu 03 Dec sunny; Fri 04 Dec sunny; Sat 05 Dec sunny." in describe_states(
        [{"state": {**home, "forecast": week}}]
    )
    # Without a forecast, a weather entity's temperature is what it is, not a target.
    assert describe_states([{"state": {**home, "forecast": None}}]) == "Home is cloudy, temperature 11."
    # The humidity and the wind now, where the weather entity tells them ("and the humidity?").
    windy = {**home, "forecast": [], "humidity": 70, "wind_speed": 12, "wind_speed_unit": "km/h"}
    assert describe_states([{"state": windy}]) == "Home is cloudy, temperature 11, humidity 70 %, wind 12 km/h."
