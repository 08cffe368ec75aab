"""What HACS and Home Assistant's hassfest check of a custom integration's files, checked
here on every test run: manifest and hacs.json keys, order and versions, translations,
services, icons and the quality scale."""

from __future__ import annotations

import json
from pathlib import Path
import tomllib
from typing import Any

from awesomeversion import AwesomeVersion
from homeassistant.const import __version__ as HA_VERSION
import yaml

from custom_components.botpsy.sensor import SENSORS
from custom_components.botpsy.services import SERVICE_PLAN, SERVICE_PROCESS

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "custom_components" / "botpsy"
# hassfest's rules of the Integration Quality Scale, Bronze to Platinum.
QUALITY_RULES = {
    "bronze": [
        "action-setup", "appropriate-polling", "brands", "common-modules", "config-flow-test-coverage",
        "config-flow", "dependency-transparency", "docs-actions", "docs-high-level-description",
        "docs-installation-instructions", "docs-removal-instructions", "entity-event-setup", "entity-unique-id",
        "has-entity-name", "runtime-data", "test-before-configure", "test-before-setup", "unique-config-entry",
    ],
    "silver": [
        "action-exceptions", "config-entry-unloading", "docs-configuration-parameters",
        "docs-installation-parameters", "entity-unavailable", "integration-owner", "log-when-unavailable",
        "parallel-updates", "reauthentication-flow", "test-coverage",
    ],
    "gold": [
        "devices", "diagnostics", "discovery-update-info", "discovery", "docs-data-update", "docs-examples",
        "docs-known-limitations", "docs-supported-devices", "docs-supported-functions", "docs-troubleshooting",
        "docs-use-cases", "dynamic-devices", "entity-category", "entity-device-class",
        "entity-disabled-by-default", "entity-translations", "exception-translations", "icon-translations",
        "reconfiguration-flow", "repair-issues", "stale-devices",
    ],
    "platinum": ["async-dependency", "inject-websession", "strict-typing"],
}  # fmt: skip
# The keys HACS accepts in hacs.json.
HACS_KEYS = {
    "name", "content_in_root", "zip_release", "filename", "hide_default_branch", "country", "homeassistant",
    "persistent_directory", "hacs", "render_readme",
}  # fmt: skip


def load(name: str) -> Any:
    path = INTEGRATION / name
    return yaml.safe_load(path.read_text()) if name.endswith(".yaml") else json.loads(path.read_text())


def test_manifest_has_hassfests_keys_in_its_order() -> None:
    manifest = load("manifest.json")
    keys = list(manifest)
    assert keys[:2] == ["domain", "name"] and keys[2:] == sorted(keys[2:])
    required = {"codeowners", "config_flow", "dependencies", "documentation", "integration_type", "iot_class"}
    assert required | {"issue_tracker", "requirements", "version"} <= set(keys)  # a custom integration's too
    assert manifest["domain"] == INTEGRATION.name
    assert AwesomeVersion(manifest["version"]).valid
    assert all("==" in requirement for requirement in manifest["requirements"])


def test_manifest_requires_the_runtime_at_its_version() -> None:
    """Home Assistant installs botpsy-runtime from PyPI by this pin: it is the version of
    runtime/ in this tree (a new runtime is released before the integration that needs it)."""
    project = tomllib.loads((ROOT / "runtime" / "pyproject.toml").read_text())["project"]
    assert f"{project['name']}=={project['version']}" in load("manifest.json")["requirements"]


def test_hacs_json_names_the_home_assistant_the_tests_run_on() -> None:
    hacs = json.loads((ROOT / "hacs.json").read_text())
    assert set(hacs) <= HACS_KEYS and hacs["name"]
    assert hacs["homeassistant"] == HA_VERSION


def test_translations_are_the_strings() -> None:
    assert load("translations/en.json") == load("strings.json")


def test_services_are_described_named_and_have_icons() -> None:
    services = load("services.yaml")
    strings = load("strings.json")["services"]
    icons = load("icons.json")["services"]
    assert set(services) == set(strings) == set(icons) == {SERVICE_PROCESS, SERVICE_PLAN}
    for service, spec in services.items():
        assert strings[service]["name"] and strings[service]["description"]
        assert set(spec["fields"]) == set(strings[service]["fields"]), service
        assert icons[service]["service"].startswith("mdi:")


def test_every_entity_translation_has_a_name_and_an_icon() -> None:
    keys = {description.translation_key for description in SENSORS}
    assert keys == set(load("strings.json")["entity"]["sensor"]) == set(load("icons.json")["entity"]["sensor"])
    for key in keys:
        assert load("strings.json")["entity"]["sensor"][key]["name"]
        assert load("icons.json")["entity"]["sensor"][key]["default"].startswith("mdi:")


def test_quality_scale_covers_every_rule_with_nothing_left_to_do() -> None:
    rules = load("quality_scale.yaml")["rules"]
    assert list(rules) == [rule for tier in QUALITY_RULES.values() for rule in tier]
    for rule, value in rules.items():
        status = value if isinstance(value, str) else value["status"]
        assert status in ("done", "exempt"), rule
        if status == "exempt":
            assert value["comment"].strip(), rule
