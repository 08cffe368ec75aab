"""The tools of one request: BotPsy's compiled ones and other APIs' (HA's Assist intents).

The prompt shows every tool (a stable prefix); the grammar allows only those that fit the
request: the shortlisted devices that fit what it names, and only reads for a question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
import probatio

from botpsy_runtime.formats import ToolCall

from .core.home import Home, HomeEntity
from .core.prompt import intent_examples
from .core.requested import Named, SaidLevels, by_levels, by_options, by_verb, on_for
from .core.shortlist import restrict
from .core.tools import ACTION, GET_STATE, Tool, function_schemas, home_vocabulary, schema_tool
from .home_snapshot import exposed_entities
from .llm_api import CompiledTool
from .targets import Target, UnresolvedError, async_intent_call_targets, own_call_targets, states_named


@dataclass(slots=True)
class Toolbox:
    """The tools of one request: BotPsy's compiled ones and any others (HA's Assist API)."""

    compiled: list[Tool] = field(default_factory=list)
    others: list[llm.Tool] = field(default_factory=list)
    home: Home = field(default_factory=lambda: Home((), ()))
    # The other tools' JSON schemas, converted once.
    others_parameters: list[dict[str, Any]] = field(default_factory=list)
    # Whether the grammar can write every other tool (else the output is left free).
    others_constrainable: bool = True
    # Domains with services of their own: the devices other APIs' writing tools can act on.
    actionable_domains: frozenset[str] = frozenset()
    # Example requests and calls for the other APIs' tools, on the home's devices.
    examples: list[str] = field(default_factory=list)
    # Where the request's calls run: who asks, from which device (for `async_targets`).
    hass: HomeAssistant | None = None
    llm_context: llm.LLMContext | None = None

    @classmethod
    def from_api(cls, hass: HomeAssistant, api: llm.APIInstance | None) -> Toolbox:
        """The tools of the request's LLM API: BotPsy's compiled ones, and the others (HA's intents) apart."""
        box = cls(hass=hass, llm_context=api.llm_context if api else None)
        for tool in api.tools if api else []:
            inner = tool.tool if isinstance(tool, llm.NamespacedTool) else tool
            if isinstance(inner, CompiledTool):
                box.compiled.extend(replace(compiled, name=tool.name) for compiled in inner.compiled)
                box.home = inner.home
            else:
                box.others.append(tool)
        if box.others:
            if not box.home.entities:  # for the shortlist and the names HA's intents take
                box.home = Home(exposed_entities(hass), ())
            serializer = api.custom_serializer if api else None
            box.others_parameters = [
                probatio.to_openapi(t.parameters, custom_serializer=serializer) for t in box.others
            ]
            box.actionable_domains = frozenset(hass.services.async_services())
            vocabulary = home_vocabulary(box.home.entities)
            box.examples = intent_examples(
                [(t.name, p) for t, p in zip(box.others, box.others_parameters, strict=True)], box.home
            )
            box.others_constrainable = all(
                schema_tool(t.name, p, vocabulary) is not None
                for t, p in zip(box.others, box.others_parameters, strict=True)
            )
        return box

    def for_request(
        self, entity_ids: Sequence[str], named: Named, *, read_only: bool = False, acting: bool = False
    ) -> list[Tool]:
        """Compiled tools restricted to the shortlisted entities that fit what the request
        names (tools without targets stay); only those that read if `read_only`, only
        those that act if `acting`.

        For the grammar: the prompt shows every tool (`schemas`), the grammar only these.
        """
        fitting = self.fitting(entity_ids, named)
        verbs = by_verb(restrict(self.compiled, fitting), self._services_of(named))
        by_words = by_levels(verbs, self._levels_of(named))
        tools = [
            *(
                t
                for t in by_options(by_words, self._option_words_of(named))
                if (t.read_only or not read_only) and not (acting and t.read_only)
            ),
            *(t for t in self.compiled if not t.targets and not acting),
        ]
        order = {t.key: i for i, t in enumerate(self.compiled)}
        return sorted(tools, key=lambda t: order[t.key])

    def fitting(self, entity_ids: Sequence[str], *named: Named) -> list[str]:
        """Those of `entity_ids` that any of `named` fits (the devices a call may target),
        and those this home does not know (found by a search)."""
        return [e for e in entity_ids if (entity := self.home.entity(e)) is None or any(n.fits(entity) for n in named)]

    def _services_of(self, named: Named) -> Callable[[str], tuple[frozenset[str], ...]]:
        """What the request's verbs ask of each target (by entity id)."""

        def services(entity_id: str) -> tuple[frozenset[str], ...]:
            entity = self.home.entity(entity_id)
            asked = named.services_for(entity) if entity is not None else named.services
            state = self.hass.states.get(entity_id) if self.hass is not None else None
            return on_for(asked, entity_id.partition(".")[0], state.state if state else None)

        return services

    def _levels_of(self, named: Named) -> Callable[[str], SaidLevels]:
        """What the request says of the level of each target (by entity id)."""

        def levels(entity_id: str) -> SaidLevels:
            return named.levels_for(self.home.entity(entity_id))

        return levels

    def _option_words_of(self, named: Named) -> Callable[[str], str]:
        """The words that may say each target's options (by entity id)."""

        def words(entity_id: str) -> str:
            entity = self.home.entity(entity_id)
            return named.option_words_for(entity) if entity is not None else ""

        return words

    def others_for_request(self, entity_ids: Sequence[str], named: Named, *, read_only: bool = False) -> list[Tool]:
        """The other APIs' tools (HA's intents) as the grammar writes them for this request:
        the names, areas, domains and device classes they take are only those of the
        shortlisted devices that fit what the request names; only those that read if
        `read_only`."""
        if not self.others_constrainable:
            return []
        fitting = [e for i in entity_ids if (e := self.home.entity(i)) is not None and named.fits(e)]
        # A tool that writes names only devices that can be acted on (a lock, not its sensor).
        reading = home_vocabulary(fitting)
        writing = home_vocabulary(e for e in fitting if e.domain in self.actionable_domains)
        return [
            written
            for tool, parameters in zip(self.others, self.others_parameters, strict=True)
            if tool.annotations.read_only or not read_only
            if (written := schema_tool(tool.name, parameters, reading if tool.annotations.read_only else writing))
            is not None
        ]

    def reader(self, entity_id: str) -> Tool | None:
        """The get_state tool that reads `entity_id`, if the home exposes it to one."""
        return next((t for t in self.compiled if t.read_only and entity_id in t.targets and GET_STATE in t.name), None)

    def writes(self, name: str) -> bool:
        """Whether the tool `name` may change the home (a compiled action, or another
        API's tool not marked read-only)."""
        other = next((t for t in self.others if t.name == name), None)
        return is_action(self.compiled, name) or (other is not None and not other.annotations.read_only)

    def unfit(self, call: ToolCall, named: Named) -> bool:
        """Whether `call` acts on a device that does not fit what the request names."""
        entity = self.home.entity(str(call.arguments.get("entity_id")))
        return is_action(self.compiled, call.name) and entity is not None and not named.fits(entity)

    def one_of_several(self, named: Named) -> list[HomeEntity]:
        """The devices BotPsy can act on that a request for one device of a kind could
        mean, if more than one (see `Named.one_of_several`)."""
        if not self.compiled:
            return []
        targets = self._action_targets()
        return named.one_of_several(e for e in self.home.entities if e.entity_id in targets)

    def spread(self, call: ToolCall, named: Named) -> list[ToolCall]:
        """`call`, and the same call on every other device that fits a request for every
        device of a kind in a place or in the home ("close the curtains in the bedroom",
        "turn off the light in the kitchen", "all the lamps off"): a small model writes
        the call once. Only devices whose action takes the same arguments. An HA
        intent that acts by a name some sensors share gets its domain (`with_domain`)."""
        call = self.with_domain(call)
        entity = self.home.entity(str(call.arguments.get("entity_id")))
        if not (named.all_that_fit and entity is not None and named.fits(entity)):
            return [call]
        action = call.arguments.get(ACTION)
        tool = next((t for t in self.compiled if t.name == call.name and t.service == action and not t.read_only), None)
        if tool is None or entity.entity_id not in tool.targets:
            return [call]
        wanted = set(call.arguments) - {"entity_id", ACTION}
        others = [
            e
            for e, params in tool.targets.items()
            if e != entity.entity_id
            and (other := self.home.entity(e)) is not None
            and named.fits(other)
            and wanted <= {p.name for p in params}
        ]
        return [call, *(ToolCall(call.name, {**call.arguments, "entity_id": e}) for e in others)]

    def with_domain(self, call: ToolCall) -> ToolCall:
        """An HA intent call that acts on a device by a name its sensors share ("Smart Lock":
        the lock and its lock sensor) with the domain of the one device it can act on: HA
        refuses the name alone ("Multiple entities share the name")."""
        index = next((i for i, t in enumerate(self.others) if t.name == call.name), None)
        name = call.arguments.get("name")
        if index is None or self.others[index].annotations.read_only or not isinstance(name, str) or not self.hass:
            return call
        if "domain" in call.arguments or "domain" not in (self.others_parameters[index].get("properties") or {}):
            return call
        area = call.arguments.get("area")
        assistant = self.llm_context.assistant if self.llm_context else None
        sharing = states_named(self.hass, name, area if isinstance(area, str) else None, assistant)
        domains = {s.domain for s in sharing if s.domain in self.actionable_domains}
        if len(sharing) < 2 or len(domains) != 1:
            return call
        return ToolCall(call.name, {**call.arguments, "domain": domains.pop()})

    async def async_targets(self, call: ToolCall) -> list[Target]:
        """The devices `call` will act on when it runs, each with its service: the one rule
        for which devices a call acts on (see `targets`); [] for a call that acts on none."""
        own = own_call_targets(call, self.compiled, self.home)
        if own is not None:
            return own
        if self.hass is None:
            raise UnresolvedError("no Home Assistant to check the call against")
        return await async_intent_call_targets(self.hass, call, self.others, self.llm_context)

    def _action_targets(self) -> set[str]:
        """The devices BotPsy's own actions can act on."""
        return {e for t in self.compiled if not t.read_only for e in t.targets}

    def actionable(self) -> list[HomeEntity]:
        """The devices a call can act on: targets of BotPsy's actions, or of the domains
        with services that other APIs' tools act on."""
        targets = self._action_targets()
        return [e for e in self.home.entities if e.entity_id in targets or e.domain in self.actionable_domains]

    def nothing_fits(self, named: Named) -> bool:
        """Whether the request names an area, floor or kind of device, and no device that
        BotPsy can act on fits it."""
        if not (named.areas or named.floors or named.kinds) or not self.compiled:
            return False
        targets = self._action_targets()
        return not any(named.fits(e) for e in self.home.entities if e.entity_id in targets)

    def schemas(self, tools: Sequence[Tool] | None = None) -> list[dict[str, Any]]:
        """Every tool (or only `tools` of the compiled ones), in a fixed order and naming no
        entity: the same for every request."""
        result = function_schemas(self.compiled if tools is None else tools)
        for tool, parameters in zip(self.others, self.others_parameters, strict=True):
            function = {"name": tool.name, "description": tool.description or "", "parameters": parameters}
            result.append({"type": "function", "function": function})
        return result


def is_action(tools: Sequence[Tool], name: str) -> bool:
    """A compiled device action (reported from its result, not by the model)."""
    return any(t.name == name and not t.read_only for t in tools)
