"""The inspector page (`GET /inspect`) in a real browser: Debian's Chromium, headless, driven by
Selenium through the system's ChromeDriver (nothing is downloaded). The page runs a traced
generation against the real server; what it renders is checked against the trace the API
returns for the same request, and screenshots are kept in test-artifacts/inspector/.
"""

import json
import os
import pathlib
import shutil
import tempfile

import pytest

from conftest import API_KEY, ROOT

ARTIFACTS = ROOT / "test-artifacts" / "inspector"
PROMPT = "A person as JSON, with a name and an age."
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 16},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def browser():
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_path):
        message = "the inspector test needs Debian's chromium and chromium-driver"
        if os.environ.get("CONSTRAIN_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="constrain-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1440,1000", f"--user-data-dir={profile}",
    ]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def api_trace(client):
    """The trace of the request the page sends, from the API itself (greedy: the same tokens)."""
    completion = client.chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": PROMPT}],
        temperature=0,
        max_tokens=48,
        seed=1,
        response_format={"type": "json_schema", "json_schema": {"name": "inspect", "schema": SCHEMA}},
        extra_body={"trace": True},
    )
    choice = completion.choices[0]
    return choice.model_extra["trace"], choice.finish_reason, choice.message.content


def shown(text: str) -> str:
    """A token's text as the page writes it (newlines and tabs made visible)."""
    return text.replace("\n", "\u23ce\n").replace("\t", "\u21e5")


def fill(driver, element_id: str, value: str):
    element = driver.find_element("id", element_id)
    element.clear()
    element.send_keys(value)


def wait_for_status(driver, expected: str):
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 180).until(
        lambda d: d.find_element("id", "status").text not in ("", "generating\u2026")
    )
    status = driver.find_element("id", "status").text
    assert status.startswith(expected), status


def check_rendering(driver, trace):
    tokens = driver.find_elements("css selector", "#tokens .tok")
    assert len(tokens) == len(trace)
    for element, step in zip(tokens, trace):
        assert element.get_attribute("textContent") == shown(step["text"])
        assert step["origin"] in element.get_attribute("class").split()
    drawn = [s for s in trace if s["removed_mass"] is not None]
    bars = driver.find_elements("css selector", "#chart rect.bar")
    assert len(bars) == len(drawn)
    for bar, step in zip(bars, drawn):
        assert float(bar.get_attribute("height")) == pytest.approx(max(1.0, 100 * step["removed_mass"]), abs=1e-6)
    assert len(driver.find_elements("css selector", "#chart rect.forced")) == len(trace) - len(drawn)
    return tokens


def check_candidates(driver, step):
    """The details view of a chosen token: its three candidate tables, as in the trace."""
    details = driver.find_element("id", "details")
    tables = details.find_elements("css selector", "table")
    assert len(tables) == 3, details.text
    for table, key in zip(tables, ["before_mask", "after_mask", "after_funnel"]):
        rows = table.find_elements("css selector", "tbody tr")
        assert len(rows) == len(step[key])
        for row, candidate in zip(rows, step[key]):
            cells = row.find_elements("css selector", "td")
            assert cells[0].text == json.dumps(candidate["text"], ensure_ascii=False)
            assert cells[1].text == f"{100 * candidate['prob']:.1f}%"
    facts = details.find_element("id", "details-facts").text
    assert f"{step['allowed']} tokens allowed" in facts
    assert f"{100 * step['removed_mass']:.1f}% of the model's probability removed" in facts


def test_the_page_renders_a_traced_generation(server, client, browser):
    trace, finish, content = api_trace(client)
    assert trace and finish == "stop"
    assert "".join(s["text"] for s in trace).startswith(content)

    browser.get(server.base + "/inspect")
    assert browser.title == "constrain inspector"
    fill(browser, "prompt", PROMPT)
    fill(browser, "constraint", json.dumps(SCHEMA))
    fill(browser, "temperature", "0")
    fill(browser, "max-tokens", "48")
    fill(browser, "seed", "1")
    fill(browser, "api-key", API_KEY)
    browser.find_element("id", "generate").click()
    wait_for_status(browser, "done")
    browser.save_screenshot(str(ARTIFACTS / "generation.png"))

    tokens = check_rendering(browser, trace)
    assert browser.find_element("id", "stop-reason").text == finish
    assert browser.find_element("id", "token-count").text == str(len(trace))

    # The drawn token the mask changed most, chosen with the mouse, then the next drawn one
    # with the keyboard.
    drawn = [i for i, s in enumerate(trace) if s["removed_mass"] is not None]
    most = max(drawn, key=lambda i: trace[i]["removed_mass"])
    tokens[most].click()
    check_candidates(browser, trace[most])
    assert tokens[most].get_attribute("aria-pressed") == "true"
    selected = browser.find_elements("css selector", "#chart rect.bar.selected")
    assert [b.get_attribute("data-step") for b in selected] == [str(most)]
    browser.save_screenshot(str(ARTIFACTS / "candidates.png"))

    from selenium.webdriver.common.keys import Keys

    other = next(i for i in drawn if i != most)
    browser.execute_script("arguments[0].focus()", tokens[other])
    tokens[other].send_keys(Keys.ENTER)
    check_candidates(browser, trace[other])


def test_the_page_opens_a_trace_file(server, client, browser, tmp_path):
    trace, _, _ = api_trace(client)
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(step) + "\n" for step in trace))
    browser.get(server.base + "/inspect")
    browser.find_element("id", "trace-file").send_keys(str(path))
    wait_for_status(browser, "opened trace.jsonl")
    check_rendering(browser, trace)
    assert browser.find_element("id", "stop-reason").text == "(trace file)"
    browser.save_screenshot(str(ARTIFACTS / "trace-file.png"))


def test_errors_are_shown_not_swallowed(server, browser):
    browser.get(server.base + "/inspect")
    fill(browser, "api-key", API_KEY)
    fill(browser, "constraint", '{"type": "object", "properties": {"a": {"type": "strnig"}}}')
    browser.find_element("id", "generate").click()
    wait_for_status(browser, "400")
    assert "/properties/a" in browser.find_element("id", "status").text
    fill(browser, "constraint", "{not json")
    browser.find_element("id", "generate").click()
    assert "not JSON" in browser.find_element("id", "status").text
    browser.save_screenshot(str(ARTIFACTS / "error.png"))
