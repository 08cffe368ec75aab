"""Prepare the running dev instance through HA's own APIs, as a user would in the UI.

Idempotent: onboarding (owner `dev`, password `botpsy-dev`), a BotPsy entry on the
embedded engine (the model BOTPSY_MODEL names, a short name of scripts/models.py or a path;
else the BotPsy GGUF if present under config/botpsy/models or downloadable; else the
Qwen2.5-Coder-0.5B instruct stand-in), an Assist pipeline that uses the BotPsy agent, and
one typed request to show the agent answering. The model is chosen when the entry is added.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
import sys
import time
from typing import Any

import aiohttp

# scripts/smoke runs another instance beside this one: its port and configuration folder.
BASE = f"http://127.0.0.1:{os.environ.get('BOTPSY_DEV_PORT', '8123')}"
CLIENT_ID = f"{BASE}/"
USER, PASSWORD = "dev", "botpsy-dev"
REPO = Path(__file__).resolve().parent.parent
CONFIG = Path(os.environ.get("BOTPSY_DEV_CONFIG") or REPO / "config")
BOTPSY_FILE = "BotPsy-0.8B-Q4_K_M.gguf"


def say(message: str) -> None:
    print(f"[dev] {message}", flush=True)


async def wait_for_ha(session: aiohttp.ClientSession) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            async with session.get(f"{BASE}/api/onboarding") as response:
                if response.status in (200, 401, 404):
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(1)
    raise SystemExit("Home Assistant did not start within 10 minutes")


async def wait_until_running(session: aiohttp.ClientSession, headers: dict[str, str]) -> None:
    """Integrations (assist_pipeline among them) are set up once HA says RUNNING."""
    for _ in range(600):
        async with session.get(f"{BASE}/api/config", headers=headers) as response:
            if response.status == 200 and (await response.json()).get("state") == "RUNNING":
                return
        await asyncio.sleep(1)
    raise SystemExit("Home Assistant did not finish starting")


async def token(session: aiohttp.ClientSession) -> str:
    """Onboard on the first run (creating the owner), else log in; returns an access token."""
    async with session.get(f"{BASE}/api/onboarding") as response:
        steps = await response.json() if response.status == 200 else []
    pending = {s["step"] for s in steps if not s["done"]}
    if "user" in pending:
        body = {"client_id": CLIENT_ID, "name": "Dev", "username": USER, "password": PASSWORD, "language": "en"}
        async with session.post(f"{BASE}/api/onboarding/users", json=body) as response:
            code = (await response.json())["auth_code"]
        access = await exchange(session, code)
        headers = {"Authorization": f"Bearer {access}"}
        for step, payload in (
            ("core_config", {}),
            ("analytics", {}),
            ("integration", {"client_id": CLIENT_ID, "redirect_uri": CLIENT_ID}),
        ):
            if step in pending:
                async with session.post(f"{BASE}/api/onboarding/{step}", json=payload, headers=headers) as response:
                    response.raise_for_status()
        # Onboarding adds a met.no weather entry; the demo home has its own weather and
        # the dev machine may have no internet.
        async with session.get(f"{BASE}/api/config/config_entries/entry?domain=met", headers=headers) as response:
            for entry in await response.json():
                await session.delete(f"{BASE}/api/config/config_entries/entry/{entry['entry_id']}", headers=headers)
        say(f"onboarding done: log in as {USER} / {PASSWORD}")
        return access
    return await login(session)


async def exchange(session: aiohttp.ClientSession, code: str) -> str:
    data = {"grant_type": "authorization_code", "code": code, "client_id": CLIENT_ID}
    async with session.post(f"{BASE}/auth/token", data=data) as response:
        response.raise_for_status()
        return str((await response.json())["access_token"])


async def login(session: aiohttp.ClientSession) -> str:
    """The login flow the frontend uses."""
    body = {"client_id": CLIENT_ID, "handler": ["homeassistant", None], "redirect_uri": CLIENT_ID}
    async with session.post(f"{BASE}/auth/login_flow", json=body) as response:
        flow = await response.json()
    body = {"client_id": CLIENT_ID, "username": USER, "password": PASSWORD}
    async with session.post(f"{BASE}/auth/login_flow/{flow['flow_id']}", json=body) as response:
        result = await response.json()
    if result.get("type") != "create_entry":
        raise SystemExit(f"Cannot log in as {USER}: {result}")
    return await exchange(session, result["result"])


async def flow_step(
    session: aiohttp.ClientSession, headers: dict[str, str], flow_id: str, data: dict[str, Any]
) -> dict[str, Any]:
    async with session.post(f"{BASE}/api/config/config_entries/flow/{flow_id}", json=data, headers=headers) as response:
        result: dict[str, Any] = await response.json()
    return result


async def dev_model(spec: str | None) -> str:
    """The GGUF `spec` names (None: the default instruct stand-in), assembled on first use."""
    # Local: run as a file, the repo is importable only once main() has put it on sys.path.
    from scripts.models import DEFAULT_MODEL, ModelError, resolve  # noqa: PLC0415

    say(f"model: {spec or DEFAULT_MODEL}")
    try:
        return str(await asyncio.to_thread(resolve, spec))
    except ModelError as err:
        raise SystemExit(f"model unavailable: {err}") from err


async def entries(session: aiohttp.ClientSession, headers: dict[str, str]) -> list[dict[str, Any]]:
    async with session.get(f"{BASE}/api/config/config_entries/entry?domain=botpsy", headers=headers) as response:
        result: list[dict[str, Any]] = await response.json()
    return result


async def botpsy_downloadable(session: aiohttp.ClientSession) -> bool:
    # Local: run as a file, the repo is importable only once main() has put it on sys.path.
    from botpsy_runtime.download import DownloadError, async_resolve, hf_url  # noqa: PLC0415
    from custom_components.botpsy.const import DEFAULT_HF_FILE, DEFAULT_HF_REPO  # noqa: PLC0415

    try:
        await async_resolve(session, hf_url(DEFAULT_HF_REPO, DEFAULT_HF_FILE))
    except DownloadError as err:
        say(f"BotPsy model not downloadable here ({err}); using the instruct stand-in")
        return False
    return True


async def add_botpsy(session: aiohttp.ClientSession, headers: dict[str, str]) -> None:
    if present := await entries(session, headers):
        say(f"BotPsy entry present ({present[0]['title']}); delete it to add one on another model")
        return
    async with session.post(
        f"{BASE}/api/config/config_entries/flow", json={"handler": "botpsy"}, headers=headers
    ) as response:
        flow = await response.json()
    await flow_step(session, headers, flow["flow_id"], {"next_step_id": "embedded"})
    chosen = os.environ.get("BOTPSY_MODEL")
    local = CONFIG / "botpsy" / "models" / BOTPSY_FILE
    if chosen:
        result = await flow_step(session, headers, flow["flow_id"], {"model_path": await dev_model(chosen)})
    elif local.is_file():
        result = await flow_step(session, headers, flow["flow_id"], {"model_path": str(local)})
    elif await botpsy_downloadable(session):
        say(f"downloading {BOTPSY_FILE}")
        result = await flow_step(session, headers, flow["flow_id"], {})
        while result.get("type") == "progress":
            await asyncio.sleep(2)
            async with session.get(
                f"{BASE}/api/config/config_entries/flow/{flow['flow_id']}", headers=headers
            ) as response:
                result = await response.json() if response.status == 200 else {"type": "finished"}
        if not await entries(session, headers):
            raise SystemExit(f"Downloading the BotPsy model failed: {result}")
        result = {"type": "create_entry", "title": BOTPSY_FILE}
    else:
        result = await flow_step(session, headers, flow["flow_id"], {"model_path": await dev_model(None)})
    if result.get("type") != "create_entry":
        raise SystemExit(f"Adding BotPsy failed: {json.dumps(result)}")
    say(f"BotPsy entry added: {result['title']}")


async def use_botpsy_in_assist(session: aiohttp.ClientSession, access: str) -> None:
    async with session.ws_connect(f"{BASE}/api/websocket") as ws:
        await ws.receive_json()
        await ws.send_json({"type": "auth", "access_token": access})
        await ws.receive_json()

        async def call(message_id: int, **payload: Any) -> Any:
            await ws.send_json({"id": message_id, **payload})
            while (reply := await ws.receive_json())["id"] != message_id:
                pass
            if not reply["success"]:
                raise SystemExit(f"{payload['type']} failed: {reply}")
            return reply["result"]

        pipelines = await call(1, type="assist_pipeline/pipeline/list")
        ours = next((p for p in pipelines["pipelines"] if p["conversation_engine"] == "conversation.botpsy"), None)
        if ours is None:
            ours = await call(
                2,
                type="assist_pipeline/pipeline/create",
                name="BotPsy",
                language="en",
                conversation_engine="conversation.botpsy",
                conversation_language="en",
                stt_engine=None,
                stt_language=None,
                tts_engine=None,
                tts_language=None,
                tts_voice=None,
                wake_word_entity=None,
                wake_word_id=None,
            )
        await call(3, type="assist_pipeline/pipeline/set_preferred", pipeline_id=ours["id"])
    say("Assist uses the BotPsy agent (pipeline 'BotPsy')")


KITCHEN_LIGHT = "light.kitchen_lights"


async def light_state(session: aiohttp.ClientSession, headers: dict[str, str]) -> str:
    """The demo kitchen light's state: the typed request should turn it off."""
    async with session.get(f"{BASE}/api/states/{KITCHEN_LIGHT}", headers=headers) as response:
        state: dict[str, Any] = await response.json()
    return str(state.get("state"))


async def main() -> None:
    sys.path.insert(0, str(REPO))  # custom_components and scripts, imported where needed
    async with aiohttp.ClientSession() as session:
        await wait_for_ha(session)
        access = await token(session)
        headers = {"Authorization": f"Bearer {access}"}
        await wait_until_running(session, headers)
        await add_botpsy(session, headers)
        await use_botpsy_in_assist(session, access)
        if os.environ.get("BOTPSY_DEV_NO_REQUEST"):  # scripts/uitest asks in the browser
            return
        before = await light_state(session, headers)
        body = {"text": "Turn off the kitchen light", "agent_id": "conversation.botpsy", "language": "en"}
        started = time.monotonic()
        async with session.post(f"{BASE}/api/conversation/process", json=body, headers=headers) as response:
            reply = await response.json()
        speech = reply["response"].get("speech", {}).get("plain", {}).get("speech", "")
        say(f"typed request answered in {time.monotonic() - started:.1f}s: {speech[:200]!r}")
        say(f"{KITCHEN_LIGHT}: {before} -> {await light_state(session, headers)}")
        say(f"open {BASE} and log in as {USER} / {PASSWORD}; Ctrl+C stops Home Assistant")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
