"""Headless Chromium for the site tests: Debian's `chromium` + `chromium-driver` (installed by
.ci/run) driven by selenium, with Chrome's performance log on so a test can list every request
a page made."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.command import Command
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.wait import WebDriverWait

REPO = Path(__file__).resolve().parents[2]
# Screenshots of every page a test opens land here (and stay after the run): a CI artifact.
ARTIFACTS = REPO / ".relforge" / "test-artifacts" / "site"


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError(
        f"none of {', '.join(names)} is installed: apt-get install -y chromium chromium-driver "
        "(.ci/run does this)"
    )


@contextmanager
def chromium(width: int = 1100, height: int = 1400) -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = _binary("chromium", "chromium-browser")
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",  # no update or safe-browsing pings in the log
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(_binary("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def requested_urls(driver: WebDriver) -> list[str]:
    """Every URL the pages asked for since the last call (CDP Network.requestWillBeSent)."""
    urls = []
    # What Chrome's get_log("performance") sends (that method is Chromium-only and untyped).
    entries: list[dict[str, Any]] = driver.execute(Command.GET_LOG, {"type": "performance"})[
        "value"
    ]
    for entry in entries:
        message: dict[str, Any] = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(str(message["params"]["request"]["url"]))
    return urls


def console_errors(driver: WebDriver) -> list[str]:
    """The console's errors since the last call (a failed request is one: a 404 favicon)."""
    entries: list[dict[str, Any]] = driver.execute(Command.GET_LOG, {"type": "browser"})["value"]
    return [str(e["message"]) for e in entries if e.get("level") == "SEVERE"]


def open_page(driver: WebDriver, url: str, timeout: float = 30.0) -> None:
    """Go to `url` and wait until its document has loaded: on a loaded machine chromedriver
    has answered a `get` while the new document was not there yet (its page source read as
    empty, though the server had sent the page)."""
    driver.get(url)
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script(
            "return document.readyState === 'complete' && document.documentElement !== null"
            " && document.documentElement.outerHTML.length > 100"
        )
    )


def screenshot(driver: WebDriver, name: str) -> Path:
    """A full-page PNG of the current page under ARTIFACTS."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    height = int(
        driver.execute_script("return Math.ceil(document.body.getBoundingClientRect().height)")
    )
    width = int(driver.execute_script("return window.innerWidth"))
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return path


# The selector's answer as a user sees it: the checked choice of each group (value and label),
# the command or the reason there is none.  A function body: READ_ANSWER runs it once,
# SWEEP after each combination it clicks.
_ANSWER = """
const command = document.getElementById("command");
const unavailable = document.getElementById("unavailable");
const checked = {};
for (const input of document.querySelectorAll("#selector input[type=radio]:checked")) {
  checked[input.name] = [input.value, input.parentNode.textContent.trim()];
}
return {
  command: command.hidden ? null : command.textContent,
  commandVisible: command.offsetParent !== null,
  unavailable: unavailable.hidden ? null : unavailable.textContent,
  checked: checked,
};
"""
READ_ANSWER = _ANSWER

# Every combination (arguments[1]: lists of values, in the order of the groups in arguments[0])
# clicked from inside the page — input.click() fires the click, input and change events a
# user's click does — and the answer read after each: one round trip for all of them instead of
# four per combination.
SWEEP = (
    "const answer = () => {" + _ANSWER + "};\n"
    """
const [groups, combinations] = arguments;
const answers = [];
let before = null;
for (const values of combinations) {
  groups.forEach((group, n) => {  // only the groups whose value changes, as _click_through
    if (before !== null && before[n] === values[n]) return;
    const input = document.querySelector(`input[name='${group}'][value='${values[n]}']`);
    if (!input.checked) input.click();
  });
  before = values;
  answers.push(answer());
}
return answers;
"""
)


def choices(driver: WebDriver, name: str) -> list[str]:
    values: list[str] = driver.execute_script(
        "return Array.from(document.querySelectorAll(`input[name='${arguments[0]}']`))"
        ".map(i => i.value)",
        name,
    )
    return values


def pick(driver: WebDriver, name: str, value: str) -> None:
    """Click the radio button (a real click on the visible control, as a user would)."""
    assert "'" not in name + value
    found = driver.find_elements("css selector", f"input[name='{name}'][value='{value}']")
    assert len(found) == 1, f"no choice {name}={value}"
    if not found[0].is_selected():
        found[0].click()
