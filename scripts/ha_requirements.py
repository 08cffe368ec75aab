"""Print the pip requirements of the HA components BotPsy's tests and dev instance load.

pytest-homeassistant-custom-component installs HA core but not the requirements of HA's own
components; HA installs those at run time. Reading them from the installed HA's manifests
keeps them in step with the pinned HA version.
"""

from __future__ import annotations

import json
from pathlib import Path
import sys

from homeassistant import components

INTEGRATION = Path(__file__).parent.parent / "custom_components" / "botpsy" / "manifest.json"
# What scripts/develop's configuration loads besides BotPsy.
DEVELOP = (
    "frontend",
    "config",
    "history",
    "logbook",
    "onboarding",
    "demo",
    "assist_pipeline",
    "ai_task",
    "diagnostics",
)


def manifest(domain: str) -> dict[str, object]:
    path = Path(components.__path__[0]) / domain / "manifest.json"
    result: dict[str, object] = json.loads(path.read_text())
    return result


def requirements(roots: list[str]) -> list[str]:
    seen: set[str] = set()
    found: dict[str, None] = {}
    todo = list(roots)
    while todo:
        domain = todo.pop()
        if domain in seen:
            continue
        seen.add(domain)
        data = manifest(domain)
        for req in data.get("requirements", []):  # type: ignore[attr-defined]
            found[req] = None
        todo.extend(data.get("dependencies", []))  # type: ignore[arg-type]
        todo.extend(data.get("after_dependencies", []))  # type: ignore[arg-type]
    return sorted(found)


def main() -> None:
    ours = json.loads(INTEGRATION.read_text())
    roots = [*ours.get("dependencies", []), *ours.get("after_dependencies", []), *DEVELOP]
    print("\n".join(requirements(roots + sys.argv[1:])))


if __name__ == "__main__":
    main()
