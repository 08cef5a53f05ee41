"""The install selector in a real browser (headless Chromium): every combination shows the
command `matrix docs` prints, or why there is none; no request leaves the page's origin; the
keyboard alone can drive it; it fits a phone.  Screenshots go to .relforge/test-artifacts/site/
and, with RELFORGE_UPDATE_DOCS=1 (`make screenshot`), the selector's to
docs/site-selector.png (the README shows it)."""

from __future__ import annotations

import itertools
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from relforge.matrix.docs import render_docs, with_download_url
from relforge.matrix.load import load_matrix
from relforge.site import SiteRequest, build_site
from tests.conftest import EXAMPLE, PYTORCH
from tests.integration.browser import (
    ARTIFACTS,
    READ_ANSWER,
    REPO,
    SWEEP,
    choices,
    chromium,
    console_errors,
    open_page,
    pick,
    requested_urls,
    screenshot,
)
from tests.site_oracle import docs_rows, expected_command

pytestmark = pytest.mark.slow

EXAMPLE_URL = "https://downloads.example.org/hello-native"
NUMPY_ABI = EXAMPLE.parent / "numpy-abi.yaml"


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver


def _site(tmp_path: Path, matrix: Path, releases: list[str], url: str | None) -> Path:
    out = tmp_path / "site"
    build_site(
        SiteRequest(matrix=load_matrix(str(matrix)), out=out, releases=releases, download_url=url)
    )
    return out


def _click_through(
    driver: WebDriver, matrix: Path, release: str, url: str | None, *, in_page: bool = False
) -> tuple[int, int]:
    """Visit every combination of one release; returns (commands, unavailable) seen.  Each
    control is clicked through WebDriver as a user would, or with `in_page` from a script in
    the page (browser.SWEEP: the same events, one round trip for a sweep of hundreds)."""
    loaded = load_matrix(str(matrix))
    if url is not None:
        loaded = with_download_url(loaded, url)
    rows = docs_rows(render_docs(loaded, [release]), loaded.project.title, release)
    pick(driver, "release", release)
    groups: list[str] = driver.execute_script(
        "return Array.from(document.querySelectorAll('#selector fieldset.axis'))"
        ".map(f => f.querySelector('input').name)"
    )
    assert groups[:4] == ["channel", "platform", "installer", "accelerator"]  # then the axes
    shown = unavailable = 0
    combinations = list(itertools.product(*(choices(driver, g) for g in groups)))
    answers: Iterator[dict[str, Any]] = iter(
        driver.execute_script(SWEEP, groups, combinations) if in_page else ()
    )
    before: tuple[str, ...] = ()
    for values in combinations:
        if in_page:
            answer = next(answers)
        else:
            # click only the groups whose value changes (mostly the last): the answer read
            # below shows every group still holding its value
            for n, (group, value) in enumerate(zip(groups, values, strict=True)):
                if not before or before[n] != value:
                    pick(driver, group, value)
            before = values
            answer = driver.execute_script(READ_ANSWER)
        checked = answer["checked"]
        assert {g: checked[g][0] for g in groups} == dict(zip(groups, values, strict=True))
        want = expected_command(
            rows,
            checked["accelerator"][1],
            checked["platform"][0],
            checked["channel"][0],
            checked["installer"][0],
            ", ".join(f"{g} {checked[g][0]}" for g in groups[4:]),
        )
        if want is None:
            assert answer["command"] is None and not answer["commandVisible"], answer
            assert answer["unavailable"].startswith("Not available: "), answer
            assert len(answer["unavailable"]) > len("Not available: ") + 5
            unavailable += 1
        else:
            assert answer["command"] == want, (values, answer)
            assert answer["commandVisible"] and answer["unavailable"] is None
            shown += 1
    return shown, unavailable


def _same_origin_only(driver: WebDriver, origin: str) -> list[str]:
    urls = requested_urls(driver)
    assert urls, "the performance log recorded no request at all"
    foreign = [u for u in urls if not u.startswith((origin + "/", "data:"))]
    assert foreign == []
    return urls


def _served_example(
    browser: WebDriver, tmp_path: Path, static_server: Callable[[Path], str]
) -> str:
    """The example's site served over HTTP, the browser's logs emptied; returns its origin."""
    origin = static_server(_site(tmp_path, EXAMPLE, [], EXAMPLE_URL))
    requested_urls(browser)  # drop what earlier tests left in the logs
    console_errors(browser)
    return origin


def test_every_example_combination_over_http(
    browser: WebDriver, tmp_path: Path, static_server: Callable[[Path], str]
) -> None:
    origin = _served_example(browser, tmp_path, static_server)
    open_page(browser, f"{origin}/index.html")
    assert browser.title == "Install hello-native"
    assert _click_through(browser, EXAMPLE, "1.0", EXAMPLE_URL) == (12, 0)
    pick(browser, "channel", "release")
    pick(browser, "installer", "pip")
    pick(browser, "accelerator", "cpu")
    assert browser.find_element("id", "command").text == "pip3 install hello-native"
    screenshot(browser, "example-index.png")
    open_page(browser, f"{origin}/compatibility.html")
    assert "hello-native 1.0 · Linux x86_64" in browser.page_source
    screenshot(browser, "example-compatibility.png")
    open_page(browser, f"{origin}/published_versions.json")
    urls = _same_origin_only(browser, origin)
    assert f"{origin}/index.html" in urls and f"{origin}/compatibility.html" in urls


def test_every_numpy_abi_combination_with_its_axis_over_http(
    browser: WebDriver, tmp_path: Path, static_server: Callable[[Path], str]
) -> None:
    site = _site(tmp_path, NUMPY_ABI, [], EXAMPLE_URL)
    origin = static_server(site)
    open_page(browser, f"{origin}/index.html")
    assert _click_through(browser, NUMPY_ABI, "1.0", EXAMPLE_URL) == (12, 0)
    pick(browser, "channel", "release")
    pick(browser, "installer", "pip")
    pick(browser, "numpy", "1.26")  # PyPI holds the numpy 2.x wheel: 1.26 is the index's
    assert browser.find_element("id", "command").text == (
        f"pip3 install numpy-abi --index-url {EXAMPLE_URL}/whl/cpu"
    )
    assert "built for numpy>=1.26,<2" in browser.find_element("id", "details").text
    pick(browser, "numpy", "2.x")
    assert browser.find_element("id", "command").text == "pip3 install numpy-abi"


def test_every_pytorch_29_combination_over_http(
    browser: WebDriver, tmp_path: Path, static_server: Callable[[Path], str]
) -> None:
    site = _site(tmp_path, PYTORCH, ["2.9"], None)
    origin = static_server(site)
    requested_urls(browser)
    open_page(browser, f"{origin}/index.html")
    shown, unavailable = _click_through(browser, PYTORCH, "2.9", None, in_page=True)
    assert (shown, unavailable) == (114, 138)  # 252 combinations
    # the last one visited: Windows arm64 × XPU is not built, and the page says why
    assert browser.find_element("id", "unavailable").text == (
        "Not available: XPU is not built for windows-arm64 in 2.9"
    )
    pick(browser, "platform", "linux-aarch64")
    pick(browser, "accelerator", "cu130")
    assert "experimental" in browser.find_element("id", "details").text
    pick(browser, "platform", "windows-arm64")
    pick(browser, "accelerator", "cpu")
    details = browser.find_element("id", "details").text
    assert "experimental" not in details
    assert "Python 3.11, 3.12, 3.13" in details
    assert "Python 3.14 is not built: Windows arm64 wheels are built for Python 3.11–3.13 only" in (
        details
    )
    screenshot(browser, "pytorch-2.9-index-windows-arm64.png")
    # the README's picture: the PyPI default of Linux x86_64, with its native archive
    for group, value in (
        ("channel", "release"),
        ("platform", "linux-x86_64"),
        ("installer", "pip"),
        ("accelerator", "cu128"),
    ):
        pick(browser, group, value)
    assert browser.find_element("id", "command").text == "pip3 install torch"
    assert "libtorch/cu128/" in browser.find_element("id", "archives").text
    shot = screenshot(browser, "pytorch-2.9-index.png")
    if os.environ.get("RELFORGE_UPDATE_DOCS") == "1":  # `make screenshot`; never a dirty tree
        (REPO / "docs").mkdir(exist_ok=True)
        shutil.copyfile(shot, REPO / "docs" / "site-selector.png")
    open_page(browser, f"{origin}/compatibility.html")
    assert "What changed from 2.8 to 2.9" in browser.page_source
    screenshot(browser, "pytorch-2.9-compatibility.png")
    _same_origin_only(browser, origin)


def test_works_from_file_urls_with_no_request_beyond_its_files(
    browser: WebDriver, tmp_path: Path
) -> None:
    site = _site(tmp_path, PYTORCH, ["2.8", "2.9"], None)
    requested_urls(browser)
    open_page(browser, (site / "index.html").as_uri())
    assert browser.find_element("id", "command").text == (
        "pip3 install torch --index-url https://download.pytorch.org/whl/cpu"
    )
    pick(browser, "release", "2.8")
    pick(browser, "accelerator", "cu129")
    assert browser.find_element("id", "command").text == (
        "pip3 install torch --index-url https://download.pytorch.org/whl/cu129"
    )
    browser.find_element("link text", "Compatibility").click()
    assert browser.current_url == (site / "compatibility.html").as_uri()
    urls = requested_urls(browser)
    assert urls and all(u.startswith(site.as_uri() + "/") for u in urls), urls


def test_keyboard_alone_drives_the_selector(
    browser: WebDriver, tmp_path: Path, static_server: Callable[[Path], str]
) -> None:
    site = _site(tmp_path, EXAMPLE, [], EXAMPLE_URL)
    open_page(browser, f"{static_server(site)}/index.html")
    body = browser.find_element("tag name", "body")
    body.click()

    def active() -> tuple[str, str]:
        name, value = browser.execute_script(
            "const e = document.activeElement; return [e.name || e.id, e.value || '']"
        )
        return str(name), str(value)

    def tab_to(name: str) -> None:
        for _ in range(20):
            browser.switch_to.active_element.send_keys(Keys.TAB)
            if active()[0] == name:
                return
        raise AssertionError(f"Tab never reached {name}")

    # one Tab stop per group (the checked radio); arrows move within it and select
    tab_to("release")
    tab_to("channel")
    assert active() == ("channel", "release")
    browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
    assert active() == ("channel", "test")
    browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
    assert active() == ("channel", "nightly")
    tab_to("platform")
    tab_to("installer")
    browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
    tab_to("accelerator")
    browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    assert active() == ("accelerator", "cu130")
    tab_to("command")  # the command itself is focusable, to select and copy it
    assert browser.find_element("id", "command").text == (
        f"uv pip install --prerelease allow hello-native --default-index "
        f"{EXAMPLE_URL}/whl/nightly/cu130"
    )
    browser.switch_to.active_element.send_keys(Keys.SHIFT, Keys.TAB)
    assert active() == ("accelerator", "cu130")
    # the focused control is visibly marked
    outline = browser.execute_script(
        "return getComputedStyle(document.activeElement.nextElementSibling).outlineStyle"
    )
    assert outline == "solid"


@pytest.mark.parametrize("page", ["index.html", "compatibility.html"])
def test_readable_at_phone_width(
    browser: WebDriver, tmp_path: Path, static_server: Callable[[Path], str], page: str
) -> None:
    site = _site(tmp_path, PYTORCH, ["2.9"], None)
    url = f"{static_server(site)}/{page}"
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 375, "height": 812, "deviceScaleFactor": 2, "mobile": True},
    )
    try:
        open_page(browser, url)
        if page == "index.html":
            pick(browser, "channel", "nightly")
            pick(browser, "platform", "windows-x86_64")
            pick(browser, "installer", "uv")
            pick(browser, "accelerator", "cu130")
        sizes = browser.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth,"
            " parseFloat(getComputedStyle(document.body).fontSize)]"
        )
        assert sizes[1] == 375
        assert sizes[0] <= sizes[1], f"horizontal overflow at 375px: {sizes}"
        assert sizes[2] >= 16
        command = browser.find_elements("id", "command")
        if command:
            box = command[0].rect
            assert box["x"] >= 0 and box["x"] + box["width"] <= 375
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / f"phone-{page.replace('.html', '')}.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_the_pages_load_without_a_console_error(
    browser: WebDriver, tmp_path: Path, static_server: Callable[[Path], str]
) -> None:
    # A page without an icon makes the browser ask for /favicon.ico: a 404 in the console
    # on every load, which hides the errors that matter.
    origin = _served_example(browser, tmp_path, static_server)
    for page in ("index.html", "compatibility.html"):
        open_page(browser, f"{origin}/{page}")
        # the browser asks for /favicon.ico after the load event: give it time to fail
        time.sleep(1.0)
        assert console_errors(browser) == [], page
        icon = browser.execute_script(
            "const l = document.querySelector('link[rel=icon]'); return l && l.href"
        )
        # drawn from a data: URL: no request for it leaves the page
        assert isinstance(icon, str) and icon.startswith("data:image/svg+xml,"), page
    urls = requested_urls(browser)
    assert not [u for u in urls if u.endswith("favicon.ico")], urls
