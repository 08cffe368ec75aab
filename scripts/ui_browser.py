"""The frontend in a real browser, against a running dev instance (see scripts/uitest).

Headless Chromium (Debian's package; Playwright drives it and downloads no browser of its
own): log in; add models through the config flow on both engines (a local file, with the
form's errors for a missing and a truncated file; a download from a local stand-in for
the Hugging Face hub, with its progress; a model server, with the error for one that
cannot be reached); an agent added and reconfigured; diagnostics; the Assist dialog
answering a typed request (the light really changes); and the model's sensors. A screenshot of each step lands in
the output folder; any step that fails stops the run with its screenshot.
"""

from __future__ import annotations

import argparse
import hashlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import json
from pathlib import Path
import re
import shutil
import sys
import threading
import time
import urllib.request

from playwright.sync_api import Page, sync_playwright

USER, PASSWORD = "dev", "botpsy-dev"
KITCHEN_LIGHT = "light.kitchen_lights"


def light_state(base: str, token: str) -> str:
    request = urllib.request.Request(f"{base}/api/states/{KITCHEN_LIGHT}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.load(response)["state"])


def step(page: Page, out: Path, name: str) -> None:
    page.wait_for_timeout(1500)  # animations settle
    page.screenshot(path=str(out / f"{name}.png"))
    print(f"[ui] {name}: {out / f'{name}.png'}", flush=True)


def serve_hub(port: int, model: Path, seconds: float) -> ThreadingHTTPServer:
    """A local stand-in for the Hugging Face hub: org/repo/model.gguf is `model`, sent in
    20 slices over `seconds`, so the config flow's progress can be seen."""
    payload = model.read_bytes()

    class Hub(BaseHTTPRequestHandler):
        def _headers(self) -> bool:
            if self.path != "/org/repo/resolve/main/model.gguf":
                self.send_error(404)
                return False
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("X-Linked-Size", str(len(payload)))
            self.send_header("X-Linked-Etag", hashlib.sha256(payload).hexdigest())
            self.end_headers()
            return True

        def do_HEAD(self) -> None:
            self._headers()

        def do_GET(self) -> None:
            if self._headers():
                step = len(payload) // 20 + 1
                for start in range(0, len(payload), step):
                    self.wfile.write(payload[start : start + step])
                    self.wfile.flush()
                    time.sleep(seconds / 20)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_adding(page: Page, base: str, engine: str) -> None:
    """Settings → Devices & services → Add integration → BotPsy → where the model runs."""
    page.goto(f"{base}/config/integrations/dashboard")
    page.get_by_role("button", name="Add integration").click()
    page.locator("dialog-add-integration input, ha-domain-integrations input, search-input input").first.fill("BotPsy")
    # In the brand list (a dialog of the flow before may still be closing, heading and all).
    page.locator("dialog-add-integration").get_by_text("BotPsy", exact=True).first.click()
    page.get_by_text(engine).click()


def submit_until(page: Page, value: str, expect: str) -> None:
    """Fill the form's first text field, submit, and wait for `expect` (an error or the next step)."""
    page.locator("dialog-data-entry-flow input:not([type=number])").first.fill(value)
    page.get_by_role("button", name="Submit").click()
    page.get_by_text(expect, exact=False).first.wait_for()


def add_local_file(page: Page, base: str, out: Path, model: Path, truncated: Path) -> None:
    """On this hub, from a file: a path with no file and a truncated file show their
    translated errors; a real GGUF creates the entry."""
    start_adding(page, base, "On this hub (llama.cpp)")
    page.get_by_text("Model file (GGUF)").first.wait_for()  # the form is drawn
    submit_until(page, "/config/botpsy/models/missing.gguf", "No file at that path.")
    step(page, out, "01b-config-flow-error")
    submit_until(page, str(truncated), "That file is not a usable GGUF model")
    step(page, out, "01c-config-flow-truncated")
    submit_until(page, str(model), "Name and assign")  # the entry exists; its devices are named here
    step(page, out, "01d-config-flow-created")
    page.get_by_role("button", name="Skip and finish").click()


def add_download(page: Page, base: str, out: Path) -> None:
    """On this hub, downloaded: the path left empty, a repository and file given; the
    progress shows while the file arrives, then the entry is created."""
    start_adding(page, base, "On this hub (llama.cpp)")
    page.get_by_text("Model file (GGUF)").first.wait_for()
    fields = page.locator("dialog-data-entry-flow input:not([type=number])")
    fields.nth(1).fill("org/repo")
    fields.nth(2).fill("model.gguf")
    page.get_by_role("button", name="Submit").click()
    page.get_by_text("Downloading model.gguf").wait_for()
    step(page, out, "01e-download-progress")
    page.get_by_text("Name and assign").wait_for()
    step(page, out, "01f-download-created")
    page.get_by_role("button", name="Skip and finish").click()


def add_model_server(page: Page, base: str, out: Path, server: str) -> None:
    """On a model server: one that cannot be reached shows the translated error; llama-server
    on loopback creates the entry."""
    start_adding(page, base, "On a model server")
    page.get_by_text("Server URL").first.wait_for()
    submit_until(page, "http://127.0.0.1:9", "Cannot reach the server.")
    step(page, out, "01g-server-unreachable")
    submit_until(page, server, "Name and assign")
    step(page, out, "01h-server-created")
    page.get_by_role("button", name="Skip and finish").click()


def log_in(page: Page, base: str, out: Path) -> str:
    """Log in as the dev user; returns the session's own token, for checking the light through the REST API."""
    page.goto(f"{base}/")
    page.fill("input[name=username]", USER)
    page.fill("input[name=password]", PASSWORD)
    step(page, out, "01-login")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/auth/" not in url)
    page.wait_for_function("() => document.querySelector('home-assistant')?.hass?.auth")
    token: str = page.evaluate("() => document.querySelector('home-assistant').hass.auth.data.access_token")
    return token


def add_agent(page: Page, base: str, out: Path) -> None:
    """Another agent on the same model: the subentry flow, then its reconfiguration."""
    page.goto(f"{base}/config/integrations/integration/botpsy")
    page.get_by_text("qwen2.5-coder", exact=False).first.wait_for()
    step(page, out, "02-integration")
    page.get_by_text("Add conversation agent").first.click()
    # Which model entry: in the picker dialog (the page behind it names the entry too).
    page.locator("dialog-pick-config-entry").get_by_text("tiny.gguf", exact=True).click()
    page.get_by_role("button", name="Submit").click()
    page.get_by_role("button", name=re.compile("^(Finish|Skip and finish)$")).first.click()
    step(page, out, "02b-agent-added")
    page.get_by_role("button", name=re.compile("reconfigure|configure", re.I)).first.click()
    page.get_by_role("button", name="Submit").click()
    page.get_by_text(re.compile("Reconfiguration was successful|saved")).first.wait_for()
    step(page, out, "02c-agent-reconfigured")
    page.get_by_role("button", name="Close", exact=True).last.click()


def download_diagnostics(page: Page, out: Path) -> bool:
    """Diagnostics, as a user downloads them for a bug report; whether they describe the engine."""
    # The first menu on the page that offers it (the entry's).
    item = page.get_by_text("Download diagnostics").first
    for menu in page.get_by_role("button", name="Menu").all():
        menu.click()
        page.wait_for_timeout(500)
        if item.is_visible():
            break
        page.keyboard.press("Escape")
    with page.expect_download() as download:
        item.click()
    diagnostics = out / "diagnostics.json"
    download.value.save_as(diagnostics)
    if "engine" not in json.loads(diagnostics.read_text())["data"]:
        return False
    print(f"[ui] diagnostics: {diagnostics}", flush=True)
    return True


def assist_turns_off_light(page: Page, base: str, out: Path, token: str) -> bool:
    """A request typed in the Assist dialog; whether the light really went off (read from HA, not the reply)."""
    before = light_state(base, token)
    page.goto(f"{base}/lovelace/0")
    page.wait_for_timeout(3000)
    page.keyboard.press("a")  # HA's shortcut for the Assist dialog
    box = page.locator("ha-assist-dialog input, ha-assist-chat input").first
    box.fill("Turn off the kitchen light")
    box.press("Enter")
    page.get_by_text("Kitchen Lights:", exact=False).last.wait_for(timeout=120_000)
    step(page, out, "03-assist")
    after = light_state(base, token)
    print(f"[ui] {KITCHEN_LIGHT}: {before} -> {after}", flush=True)
    if after != "off":
        return False
    page.keyboard.press("Escape")
    return True


def show_sensors(page: Page, base: str, out: Path) -> None:
    """The model's sensors in the entity list, found as a user searches for them."""
    page.goto(f"{base}/config/entities")
    page.locator("search-input-outlined input, search-input input, ha-input-search input").first.fill("request")
    page.get_by_text("Last request latency", exact=False).first.wait_for()
    step(page, out, "04-sensors")


def run_steps(page: Page, args: argparse.Namespace, truncated: Path) -> bool:
    """Every step in order, as a user goes through them; False when a check failed (its step's screenshot shows it)."""
    token = log_in(page, args.base, args.out)
    add_local_file(page, args.base, args.out, args.model, truncated)
    add_download(page, args.base, args.out)
    add_model_server(page, args.base, args.out, args.server)
    add_agent(page, args.base, args.out)
    if not download_diagnostics(page, args.out):
        return False
    if not assist_turns_off_light(page, args.base, args.out, token):
        return False
    show_sensors(page, args.base, args.out)
    return True


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True, help="a GGUF to add through the config flow")
    parser.add_argument("--hub-port", type=int, required=True, help="where HA's HF_ENDPOINT points")
    parser.add_argument("--server", required=True, help="an OpenAI-compatible server's URL")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    truncated = args.model.with_name("truncated.gguf")
    truncated.write_bytes(args.model.read_bytes()[: args.model.stat().st_size // 2])
    hub = serve_hub(args.hub_port, args.model, seconds=8)
    started = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.set_default_timeout(60_000)
        # This instance's port is set in YAML, which HA asks to confirm once, over any page.
        page.add_locator_handler(
            page.get_by_text("Confirm new HTTP server configuration"),
            lambda: page.get_by_role("button", name="Confirm").click(),
        )
        try:
            if not run_steps(page, args, truncated):
                return 1
        except Exception:
            page.screenshot(path=str(args.out / "failed.png"))
            raise
        finally:
            browser.close()
            hub.shutdown()
    print(f"[ui] browser run passed in {time.monotonic() - started:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
