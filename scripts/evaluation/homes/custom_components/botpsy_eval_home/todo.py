"""To-do lists: add, update (rename, complete), remove and move items.

The state is the number of items still to do, as HA computes it. Items come from the
fixture's `todo_items` (strings, or mappings with `summary`/`status`); a list given only
a count as its state gets that many placeholder items.
"""

from __future__ import annotations

from collections.abc import Mapping
import itertools
from typing import Any

from homeassistant.components.todo.const import TodoItemStatus, TodoListEntityFeature
from homeassistant.components.todo.entity import TodoItem, TodoListEntity
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_int

_F = TodoListEntityFeature
_UIDS = itertools.count(1)


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalTodoList per fixture to-do list."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalTodoList(runtime, fixture) for fixture in runtime.modelled("todo")])


def todo_items(raw: Any) -> list[TodoItem]:
    """Fixture items (text or mappings) as HA's TodoItem."""
    items: list[TodoItem] = []
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, Mapping):
            status = str(entry.get("status") or TodoItemStatus.NEEDS_ACTION)
            completed = entry.get("complete") or entry.get("completed")
            items.append(
                TodoItem(
                    summary=str(entry.get("summary") or entry.get("name") or ""),
                    uid=str(entry.get("uid") or f"eval-{next(_UIDS)}"),
                    status=TodoItemStatus.COMPLETED if completed is True else TodoItemStatus(status),
                    description=entry.get("description"),
                )
            )
        elif entry is not None:
            items.append(TodoItem(summary=str(entry), uid=f"eval-{next(_UIDS)}", status=TodoItemStatus.NEEDS_ACTION))
    return items


class EvalTodoList(EvalEntity, TodoListEntity):
    """A to-do list kept in memory."""

    _eval_feature_class = TodoListEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        return int(_F.CREATE_TODO_ITEM | _F.UPDATE_TODO_ITEM | _F.DELETE_TODO_ITEM | _F.MOVE_TODO_ITEM)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_todo_items = []

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if "todo_items" in attributes or "items" in attributes:
            raw = attributes.pop("todo_items", None) or attributes.pop("items", None)
            attributes.pop("items", None)
            self._attr_todo_items = todo_items(raw)
        if state is None:
            return True
        if (count := as_int(state)) is None or count < 0:
            return False
        items = list(self._attr_todo_items or [])
        open_items = [item for item in items if item.status == TodoItemStatus.NEEDS_ACTION]
        if len(open_items) < count:
            items += [
                TodoItem(summary=f"Item {number}", uid=f"eval-{next(_UIDS)}", status=TodoItemStatus.NEEDS_ACTION)
                for number in range(len(open_items) + 1, count + 1)
            ]
        elif len(open_items) > count:
            drop = {id(item) for item in open_items[count:]}
            items = [item for item in items if id(item) not in drop]
        self._attr_todo_items = items
        return True

    def _items(self) -> list[TodoItem]:
        return list(self._attr_todo_items or [])

    async def async_create_todo_item(self, item: TodoItem) -> None:
        """Append an item."""
        item.uid = item.uid or f"eval-{next(_UIDS)}"
        item.status = item.status or TodoItemStatus.NEEDS_ACTION
        self._attr_todo_items = [*self._items(), item]
        self.eval_changed()

    async def async_update_todo_item(self, item: TodoItem) -> None:
        """Replace the item with the same uid (rename, complete...)."""
        self._attr_todo_items = [item if existing.uid == item.uid else existing for existing in self._items()]
        self.eval_changed()

    async def async_delete_todo_items(self, uids: list[str]) -> None:
        """Remove items."""
        self._attr_todo_items = [item for item in self._items() if item.uid not in set(uids)]
        self.eval_changed()

    async def async_move_todo_item(self, uid: str, previous_uid: str | None = None) -> None:
        """Move an item after another (or first)."""
        items = self._items()
        moving = next(item for item in items if item.uid == uid)
        items.remove(moving)
        index = 0 if previous_uid is None else next(i for i, item in enumerate(items) if item.uid == previous_uid) + 1
        items.insert(index, moving)
        self._attr_todo_items = items
        self.eval_changed()
