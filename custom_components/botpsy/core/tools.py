"""Compile the home into tools: one per (domain, service) the exposed entities support.

Each tool knows exactly the entities the service applies to, and each target carries
its own argument list: a non-dimmable light gets no brightness argument,
a thermostat's hvac modes and a player's sources come from that entity's attributes.
The model sees one function per domain (`light`), its services as the `action` argument:
a domain's services share their boilerplate, which keeps the prompt short in homes with
many kinds of devices. The output depends only on the home's structure (entities,
capabilities, services), never on states, and is sorted. The JSON schemas (what the
prompt shows) name no entities: the same for every request, they belong to the prompt's
cacheable prefix, while grammars and validation still allow only each target's own
arguments for each action.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .home import FieldSpec, Home, HomeEntity, ServiceSpec

# Domains whose entities BotPsy may act on, and services it never offers.
CONTROL_DOMAINS = frozenset(
    {
        "alarm_control_panel", "button", "climate", "cover", "fan", "humidifier", "input_boolean",
        "input_button", "input_number", "input_select", "lawn_mower", "light", "lock", "media_player",
        "number", "scene", "script", "select", "siren", "switch", "todo", "vacuum", "valve", "water_heater",
    }
)  # fmt: skip
SKIPPED_SERVICES = frozenset(
    {
        "reload", "toggle", "join", "unjoin", "play_media", "browse_media", "search_media", "clear_playlist",
        "shuffle_set", "repeat_set", "media_seek", "send_command", "get_items", "remove_completed_items",
        "remove_item", "get_forecasts", "set_datetime", "clean_area", "locate", "clean_spot",
        "set_value", "set_options", "select_first", "select_last", "select_next", "select_previous",
        "increment", "decrement", "set_aux_heat", "toggle_cover_tilt",
        # Every tool is in every prompt (a stable, cached prefix): rare or redundant ones cost
        # a small model attention and context. Deleting a scene is not for a voice request.
        "delete", "media_play_pause", "set_swing_horizontal_mode", "increase_speed", "decrease_speed",
        "select_sound_mode", "set_away_mode", "set_fan_speed", "open_cover_tilt", "close_cover_tilt",
        "stop_cover_tilt", "set_cover_tilt_position",
    }
)  # fmt: skip
# Fields a small model should not be offered (advanced or unstructured).
SKIPPED_FIELDS = frozenset({"transition", "flash", "profile", "entity_id", "code", "rename", "description"})
# Fields of which a service takes one at most (HA's vol.Exclusive groups, which service
# descriptions do not state): the grammar offers one slot for each group.
EXCLUSIVE_FIELDS = {
    "light": {
        **dict.fromkeys(("brightness", "brightness_pct", "brightness_step", "brightness_step_pct"), "brightness"),
        **dict.fromkeys(
            ("color_name", "hs_color", "xy_color", "rgb_color", "rgbw_color", "rgbww_color", "color_temp_kelvin",
             "kelvin", "color_temp", "white"),
            "color",
        ),
    },
}  # fmt: skip
# Services whose schema needs at least one of some fields (HA's cv.has_at_least_one_key,
# which service descriptions do not state), as alternatives: where an entity is offered
# the fields of one alternative only, they are required (a thermostat "set to 21" is
# never a call with its mode alone, which HA refuses).
AT_LEAST_ONE: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("climate", "set_temperature"): (("temperature",), ("target_temp_low", "target_temp_high")),
    ("water_heater", "set_temperature"): (("temperature",),),
}
# State selectors name an attribute; its possible values are in another attribute.
_OPTION_LISTS = {
    "effect": "effect_list", "source": "source_list", "sound_mode": "sound_mode_list",
    "preset_mode": "preset_modes", "fan_mode": "fan_modes", "swing_mode": "swing_modes",
    "swing_horizontal_mode": "swing_horizontal_modes", "mode": "available_modes", "operation_mode": "operation_list",
}  # fmt: skip
# The arguments that choose one of an entity's own options (see `requested.by_options`).
OPTION_PARAMS = frozenset({*_OPTION_LISTS, "hvac_mode", "option"})
# A state selector without an attribute offers the entity's own states.
_STATE_LISTS = {
    "climate": "hvac_modes", "select": "options", "input_select": "options", "water_heater": "operation_list",
}  # fmt: skip


def own_options(entity: HomeEntity) -> tuple[str, ...]:
    """The options `entity` offers to choose from (its HVAC modes, presets, sources, ...)."""
    lists = (*_OPTION_LISTS.values(), _STATE_LISTS.get(entity.domain, ""))
    return tuple(str(o) for name in lists if isinstance(got := entity.attributes.get(name), list | tuple) for o in got)


ParamType = Literal["integer", "number", "boolean", "string", "enum", "rgb"]


@dataclass(frozen=True, slots=True)
class Param:
    """An argument of a tool, for one target entity."""

    name: str
    type: ParamType
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    options: tuple[str, ...] = ()
    unit: str | None = None
    # Arguments of the same group exclude each other (EXCLUSIVE_FIELDS).
    group: str | None = None

    def json_schema(self) -> dict[str, Any]:
        """The argument as a JSON schema, for its function's parameters."""
        if self.type == "enum":
            return {"type": "string", "enum": list(self.options)}
        if self.type == "rgb":
            item = {"type": "integer", "minimum": 0, "maximum": 255}
            return {"type": "array", "items": item, "minItems": 3, "maxItems": 3}
        schema: dict[str, Any] = {"type": self.type}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.unit:
            schema["description"] = self.unit
        return schema


# The argument that picks a domain function's service.
ACTION = "action"


@dataclass(frozen=True, slots=True)
class Tool:
    """What the model may call: a function, with a fixed `action` if it runs a service."""

    name: str
    description: str
    # The service it runs (in its target's domain), also its `action` argument's value.
    service: str = ""
    # Target entity id -> its arguments (besides the target).
    targets: Mapping[str, tuple[Param, ...]] = field(default_factory=dict)
    # The arguments of a tool without targets (the search tool).
    arguments: tuple[Param, ...] = ()
    read_only: bool = False

    @property
    def key(self) -> str:
        """Unique among a home's tools: the function, and the action if there is one."""
        return f"{self.name}.{self.service}" if self.service else self.name

    def params(self) -> tuple[Param, ...]:
        """Arguments over all targets (enums merged), for the JSON schema."""
        return _merge_params(self.targets.values()) if self.targets else self.arguments


def _merge_params(param_lists: Iterable[tuple[Param, ...]]) -> tuple[Param, ...]:
    """One argument per name over several lists: options merged, required only where all
    that have it require it."""
    merged: dict[str, Param] = {}
    for params in param_lists:
        for param in params:
            known = merged.get(param.name)
            if known is None:
                merged[param.name] = param
            elif param.options:
                options = tuple(dict.fromkeys(known.options + param.options))
                required = known.required and param.required
                if options != known.options or required != known.required:
                    merged[param.name] = replace(known, options=options, required=required)
            elif known.required and not param.required:
                merged[param.name] = replace(known, required=False)
    return tuple(merged.values())


def function_schemas(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """OpenAI-style function schemas, one per function name (a domain's services merged
    into its `action` enum), in the tools' order."""
    functions: dict[str, list[Tool]] = {}
    for tool in tools:
        functions.setdefault(tool.name, []).append(tool)
    return [_function_schema(group) for group in functions.values()]


def _function_schema(group: Sequence[Tool]) -> dict[str, Any]:
    first = group[0]
    properties: dict[str, Any] = {}
    required = []
    if first.targets:
        # No enum of targets: the schema stays the same whichever devices a request
        # concerns (so the prompt's prefix can be cached); the instructions say the
        # request lists them, and the grammar and validation allow only those.
        properties["entity_id"] = {"type": "string"}
        required.append("entity_id")
    if first.service:
        properties[ACTION] = {"type": "string", "enum": [t.service for t in group]}
        required.append(ACTION)
    per_action = [t.params() for t in group]
    for param in _merge_params(per_action):
        properties[param.name] = param.json_schema()
        # Required by every action (a single action's own requirements are its grammar's).
        if param.required and all(any(p.name == param.name for p in params) for params in per_action):
            required.append(param.name)
    function: dict[str, Any] = {"name": first.name}
    if len(group) == 1 and first.description:  # a domain's several services: their names say it
        function["description"] = first.description
    function["parameters"] = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": function}


def _bound(value: Any) -> float | None:
    """Selector bounds come as floats (100.0); whole numbers read better as ints."""
    if value is None:
        return None
    return int(value) if float(value).is_integer() else float(value)


# Selectors whose argument is of one type, whatever their configuration.
_PLAIN_SELECTORS: dict[str, ParamType] = {"boolean": "boolean", "text": "string", "color_rgb": "rgb"}


def _param(spec: FieldSpec, entity: HomeEntity) -> Param | None:
    """The argument `spec` gives for `entity`, or None if it cannot be offered."""
    kind, config = next(iter(spec.selector.items()), ("", None))
    config = config or {}
    if kind == "number":
        step = config.get("step", 1)
        integral = isinstance(step, int) or float(step).is_integer()
        return Param(
            spec.name,
            "integer" if integral else "number",
            spec.required,
            _bound(config.get("min")),
            _bound(config.get("max")),
            unit=config.get("unit_of_measurement"),
        )
    if kind in _PLAIN_SELECTORS:
        return Param(spec.name, _PLAIN_SELECTORS[kind], spec.required)
    if kind == "color_temp":
        kelvin = config.get("unit") == "kelvin"
        low = entity.attributes.get("min_color_temp_kelvin", config.get("min")) if kelvin else config.get("min")
        high = entity.attributes.get("max_color_temp_kelvin", config.get("max")) if kelvin else config.get("max")
        return Param(spec.name, "integer", spec.required, _bound(low), _bound(high), unit="K" if kelvin else "mired")
    if kind == "select":
        options = tuple(o["value"] if isinstance(o, Mapping) else str(o) for o in config.get("options", ()))
        return Param(spec.name, "enum", spec.required, options=options) if options else None
    if kind == "state":
        return _state_param(spec, entity, config)
    return None


def _state_param(spec: FieldSpec, entity: HomeEntity, config: Mapping[str, Any]) -> Param | None:
    """One of the states (or attribute values) `entity` lists as its options: they are its own."""
    attribute = config.get("attribute")
    source = _OPTION_LISTS.get(attribute, f"{attribute}_list") if attribute else _STATE_LISTS.get(entity.domain)
    values = entity.attributes.get(source) if source else None
    if not values:
        return None
    return Param(spec.name, "enum", spec.required, options=tuple(str(v) for v in values))


def _required_alternative(
    params: list[Param], alternatives: tuple[tuple[str, ...], ...] | None
) -> tuple[Param, ...] | None:
    """`params`, those of the one alternative of `alternatives` they offer made required;
    None where they offer none whole (every call would be refused)."""
    if not alternatives:
        return tuple(params)
    names = {p.name for p in params}
    offered = [a for a in alternatives if names & set(a)]
    whole = [a for a in offered if set(a) <= names]
    if not whole:
        return None
    if len(offered) != 1:
        return tuple(params)
    return tuple(replace(p, required=True) if p.name in whole[0] else p for p in params)


# Selectors whose argument depends on the entity (its color temperatures, its options).
_PER_ENTITY = frozenset({"color_temp", "state"})


def _service_tool(service: ServiceSpec, entities: Sequence[HomeEntity]) -> Tool | None:
    """The tool of `service` on `entities` (those of the domains it targets)."""
    targets: dict[str, tuple[Param, ...]] = {}
    groups = EXCLUSIVE_FIELDS.get(service.domain, {})
    alternatives = AT_LEAST_ONE.get((service.domain, service.service))
    fields = [
        (spec, next(iter(spec.selector), "") in _PER_ENTITY)
        for spec in service.fields
        if spec.name not in SKIPPED_FIELDS
    ]
    # A field's argument that is the same for every entity, made once (a big home has
    # hundreds of lights).
    same: dict[str, Param | None] = {}
    for entity in entities:
        if not entity.has_any_features(service.target_features):
            continue
        params: list[Param] = []
        usable = True
        for spec, per_entity in fields:
            if not spec.applies_to(entity):
                continue
            if spec.name in same:
                param = same[spec.name]
            else:
                param = _param(spec, entity)
                if param is not None and (group := groups.get(spec.name)):
                    param = replace(param, group=group)
                if not per_entity:
                    same[spec.name] = param
            if param is None:
                usable = usable and not spec.required
                continue
            params.append(param)
        if usable and (offered := _required_alternative(params, alternatives)) is not None:
            targets[entity.entity_id] = offered
    if not targets:
        return None
    return Tool(
        name=service.domain,
        description=service.description.split("\n", 1)[0][:120],
        service=service.service,
        targets=targets,
    )


# "Play X on Y": one action that searches the player's media and plays the first find, as
# HA's HassMediaSearchAndPlay does (search_media and play_media are not offered alone).
SEARCH_AND_PLAY = "play_media"
MEDIA_QUERY = "media"
_SEARCHES_AND_PLAYS = 512 | 4194304  # MediaPlayerEntityFeature.PLAY_MEDIA | SEARCH_MEDIA


def _search_and_play_tool(home: Home, players: Sequence[HomeEntity]) -> Tool | None:
    if not {"search_media", "play_media"} <= {s.service for s in home.services if s.domain == "media_player"}:
        return None
    targets = {
        e.entity_id: (Param(MEDIA_QUERY, "string", required=True),)
        for e in players
        if e.supported_features & _SEARCHES_AND_PLAYS == _SEARCHES_AND_PLAYS
    }
    description = "Find and play a song, artist, album or show"
    return Tool("media_player", description, SEARCH_AND_PLAY, targets) if targets else None


def _of_domains(by_domain: Mapping[str, list[HomeEntity]], domains: Sequence[str]) -> list[HomeEntity]:
    """The entities of `domains`, in entity id order (each domain's list is in that order)."""
    lists = [by_domain[d] for d in dict.fromkeys(domains) if d in by_domain]
    if len(lists) == 1:
        return lists[0]
    return sorted((e for entities in lists for e in entities), key=lambda e: e.entity_id)


def compile_tools(home: Home) -> tuple[Tool, ...]:
    """Device-control tools for the exposed entities, plus the read-only state and search tools."""
    entities = sorted(home.entities, key=lambda e: e.entity_id)
    # A service is tried only on the entities of the domains it targets, not on all of them.
    by_domain: dict[str, list[HomeEntity]] = {}
    for entity in entities:
        by_domain.setdefault(entity.domain, []).append(entity)
    tools: list[Tool] = []
    for service in sorted(home.services, key=lambda s: (s.domain, s.service)):
        if service.domain not in CONTROL_DOMAINS or service.service in SKIPPED_SERVICES:
            continue
        candidates = _of_domains(by_domain, service.target_domains or (service.domain,))
        if (tool := _service_tool(service, candidates)) is not None:
            tools.append(tool)
    if (play := _search_and_play_tool(home, by_domain.get("media_player", []))) is not None:
        tools = sorted([*tools, play], key=lambda t: (t.name, t.service))
    if entities:
        tools.append(
            Tool(
                name=GET_STATE,
                description="Current state of an entity",
                targets={e.entity_id: () for e in entities},
                read_only=True,
            )
        )
        areas = sorted({e.area for e in entities if e.area})
        if areas:
            tools.append(
                Tool(
                    name=GET_AREA_STATE,
                    description="Current states of the devices in an area",
                    arguments=(Param("area", "enum", required=True, options=tuple(areas)),),
                    read_only=True,
                )
            )
        tools.append(
            Tool(
                name=FIND_ENTITIES,
                description="Find devices by name, area or kind when the one you need is not listed",
                arguments=(Param("query", "string", required=True),),
                read_only=True,
            )
        )
    return tuple(tools)


def home_vocabulary(entities: Iterable[HomeEntity]) -> dict[str, tuple[str, ...]]:
    """What the home's names are, by the argument that names them in other APIs' tools
    (HA's intent tools: `name`, `area`, `floor`, and `player_name`, ...), and which domains
    and device classes its devices have."""
    entities = tuple(entities)
    names = {n for e in entities for n in (e.name, *e.aliases)}
    return {
        "name": tuple(sorted(names)),
        "area": tuple(sorted({e.area for e in entities if e.area})),
        "floor": tuple(sorted({e.floor for e in entities if e.floor})),
        "domain": tuple(sorted({e.domain for e in entities})),
        "device_class": tuple(sorted({e.device_class for e in entities if e.device_class})),
    }


def _schema_param(
    key: str, schema: Mapping[str, Any], required: bool, vocabulary: Mapping[str, tuple[str, ...]]
) -> Param | None:
    """`schema` (JSON schema) as a Param, or None if it cannot be written under a grammar."""
    if "anyOf" in schema:  # the first alternative that can be written
        options = (_schema_param(key, s, required, vocabulary) for s in schema["anyOf"])
        return next((o for o in options if o is not None), None)
    kind = schema.get("type")
    if kind == "array":  # HA's domain and device_class lists: one value (HA wraps it)
        return _schema_param(key, schema.get("items") or {}, required, vocabulary)
    if schema.get("enum"):
        values = tuple(str(o) for o in schema["enum"])
        if key in vocabulary:  # a domain or device class: only those of the home's devices
            values = tuple(v for v in values if v in vocabulary[key])
        return _one_of(key, values, required)
    if kind == "string":
        return _name_param(key, required, vocabulary)
    if kind in ("integer", "number"):
        return Param(key, kind, required, _bound(schema.get("minimum")), _bound(schema.get("maximum")))
    return Param(key, "boolean", required) if kind == "boolean" else None


def _name_param(key: str, required: bool, vocabulary: Mapping[str, tuple[str, ...]]) -> Param | None:
    """A string argument: a device, area or floor is named by one of the home's names, never an invented one."""
    # A home without floors names none (an area's name written as a floor matches nothing).
    noun = key.rpartition("_")[2]
    if noun not in vocabulary:
        return Param(key, "string", required)
    return _one_of(key, vocabulary[noun], required)


def _one_of(key: str, values: tuple[str, ...], required: bool) -> Param | None:
    """One of `values`; where there are none, free text if the argument is required (else none)."""
    if not values:
        return None if not required else Param(key, "string", required)
    return Param(key, "enum", required, options=values)


def schema_tool(name: str, schema: Mapping[str, Any], vocabulary: Mapping[str, tuple[str, ...]]) -> Tool | None:
    """Another API's tool (HA's Assist intents) from its JSON schema, for the grammar: typed
    arguments, names from the home's `vocabulary`. None if a required argument cannot be
    written under a grammar (then the output is not constrained)."""
    required = set(schema.get("required") or ())
    params = []
    for key, spec in (schema.get("properties") or {}).items():
        param = _schema_param(key, spec, key in required, vocabulary)
        if param is None:
            if key in required:
                return None
            continue
        params.append(param)
    return Tool(name=name, description="", arguments=tuple(params))


GET_STATE = "get_state"
GET_AREA_STATE = "get_area_state"
FIND_ENTITIES = "find_entities"
