"""The configurator page in a real browser (Debian's Chromium through Playwright): README's
walk-through clicked through, greying and reasons, a conflict and a repair applied, the command
copied, a permalink reloaded, keyboard use, and every shipped pack drawn. Screenshots go to
tests/output/serve/ (not committed). Skips without a browser unless CONFSOLVE_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import Page, browser_or_skip, chromium, served

import constraints


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    browser_or_skip()
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def sglang_url() -> Iterator[str]:
    with served("sglang") as server:
        yield server.url


def _page(browser: Any, width: int = 1280, height: int = 800) -> Page:
    context = browser.new_context(viewport={"width": width, "height": height})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    return Page(context.new_page())


def test_walk_through(browser: Any, sglang_url: str) -> None:
    """README: DeepSeek-V3 FP8 on 8×H100, then on an RTX PRO 6000, then FA3 asked for there."""
    p = _page(browser)
    p.open(sglang_url)
    assert "choose" in p.page.locator("#status-pill").inner_text()
    p.shot("01-empty")
    p.click_value("platform", "cuda")
    # The GPU by its name: the pack's labels and aliases say which architecture an H100 is.
    before = p.seq()
    p.page.fill('input[data-lookup="gpu_arch"]', "H100")
    p.page.press('input[data-lookup="gpu_arch"]', "Enter")
    p.wait_after(before)
    assert p.chip("gpu_arch", "sm90").get_attribute("aria-pressed") == "true"
    p.select_value("architecture", "DeepseekV3ForCausalLM")
    p.click_value("checkpoint_quant", "fp8")
    p.click_value("tp_size", "8")
    assert p.page.locator("#status-pill").inner_text().startswith("✓")
    assert "fa3" in p.now("attention_backend") and "preference" in p.now("attention_backend")
    assert "user" in p.now("tp_size") and "fact" in p.now("gpu_arch")
    # ep_size above tp_size is refused because of the user's tp_size, not the machine.
    assert "x-choices" in (p.chip("ep_size", "16").get_attribute("class") or "")
    p.shot("02-hopper")

    p.click_value("gpu_arch", "sm120")
    assert "triton" in p.now("attention_backend")
    # What changed is highlighted, with the value it had before.
    assert p.page.locator("#row-attention_backend.changed").count() == 1
    assert "was fa3" in p.now("attention_backend")
    p.page.click('button[data-unfold="attention_backend"]')
    fa3 = p.chip("attention_backend", "fa3")
    assert "x-facts" in (fa3.get_attribute("class") or "")
    p.wait_for_reasons()
    assert "fa3-needs-sm8x-or-sm90" in (fa3.get_attribute("title") or "")
    fa3.hover()
    info = p.page.locator("#info")
    assert "impossible on this hardware or model" in info.inner_text().lower()
    assert "fa3-needs-sm8x-or-sm90" in info.inner_text()
    p.shot("03-blackwell-greyed")

    p.click_value("attention_backend", "fa3")
    conflict = p.page.locator("#conflict")
    assert conflict.is_visible()
    text = conflict.inner_text()
    assert "fa3-needs-sm8x-or-sm90" in text and "--attention-backend fa3" in text
    assert "No repair keeps" in text  # FA3 cannot work here: every repair changes it, and says so
    p.shot("04-conflict")
    repairs = p.page.locator("#conflict [data-repair]")
    assert repairs.count() >= 2
    choice = next(
        i
        for i in range(repairs.count())
        if "use --attention-backend" in (repairs.nth(i).get_attribute("aria-label") or "")
    )
    label = repairs.nth(choice).get_attribute("aria-label") or ""
    picked = label.rsplit(" ", 1)[-1]
    before = p.seq()
    repairs.nth(choice).click()
    p.wait_after(before)
    assert p.page.locator("#status-pill").inner_text().startswith("✓")
    assert picked in p.now("attention_backend") and "user" in p.now("attention_backend")
    assert not p.page.locator("#conflict").is_visible()

    p.page.click("#tab-minimal")
    minimal = p.page.locator("#command-text").inner_text()
    assert f"--attention-backend {picked}" in minimal and "--tp-size 8" in minimal
    p.page.click("#tab-full")
    assert "MODEL_PATH" in p.page.locator("#command-text").inner_text()
    p.page.fill("#model-path", "/models/DeepSeek V3")
    assert "'/models/DeepSeek V3'" in p.page.locator("#command-text").inner_text()
    p.page.click("#copy-command")
    copied = p.page.evaluate("window.confsolveCopied")
    assert copied == p.page.locator("#command-text").inner_text()
    assert f"--attention-backend {picked}" in copied and "--quantization fp8" in copied
    assert p.page.evaluate("navigator.clipboard.readText()") == copied
    p.shot("05-repaired")

    # The permalink: a fresh page at this URL shows the same state and command.
    url = p.page.url
    assert "gpu_arch=sm120" in url and f"attention_backend={picked}" in url and "_model=" in url
    again = _page(browser)
    again.open(url)
    assert again.chip("gpu_arch", "sm120").get_attribute("aria-pressed") == "true"
    assert again.page.locator("#command-text").inner_text() == copied
    assert not p.errors and not again.errors, p.errors + again.errors


def test_a_repair_keeps_the_choice_just_made(browser: Any, sglang_url: str) -> None:
    p = _page(browser)
    p.open(
        sglang_url + "?platform=cuda&gpu_arch=sm90&architecture=DeepseekV3ForCausalLM"
        "&checkpoint_quant=fp8&tp_size=8"
    )
    p.click_value("ep_size", "16")
    text = p.page.locator("#conflict").inner_text()
    assert "No repair keeps" not in text
    labels = [
        p.page.locator("#conflict [data-repair]").nth(i).get_attribute("aria-label") or ""
        for i in range(p.page.locator("#conflict [data-repair]").count())
    ]
    assert labels and all("--ep-size" not in label for label in labels), labels
    assert all("tp-size" in label for label in labels)


def test_resting_on_a_value_computes_its_state_before_the_click(browser: Any) -> None:
    import time

    from solver.serve.requests import parse_request

    with served("sglang") as server:
        api = server.configurator
        p = _page(browser)
        p.open(server.url + "?platform=cuda&gpu_arch=sm90")
        body = {"set": {"platform": "cuda", "gpu_arch": "sm90", "tp_size": "4"}, "keep": ["tp_size"]}
        request = parse_request(api.pack, body, ("set", "keep"))
        key = ("state", request.values, request.keep)
        assert not api._answers.known(key)
        p.page.hover('button[data-field="tp_size"][data-value="4"]')
        deadline = time.monotonic() + 60
        while not api._answers.known(key) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert api._answers.known(key), "hovering the value did not prefetch its state"
        hits = api.cache_stats["hits"]
        p.click_value("tp_size", "4")
        assert api.cache_stats["hits"] > hits
        assert "user" in p.now("tp_size") and not p.errors, p.errors


def test_the_page_greys_what_resolve_refuses_for_an_assumed_fact(browser: Any) -> None:
    """vLLM on an H100 with no model given: FLASHMLA works for an MLA model, but resolve assumes
    `head_size=128` and refuses it. The page offered it (greyed by `valid_choices`, which takes
    every value of the facts not given); it is now greyed as excluded for an assumed fact, named
    in its reason, with the Assumed list; picking it shows the conflict resolve gives, and once
    the model is given it is possible."""
    with served("vllm") as server:
        p = _page(browser)
        p.open(server.url + "?platform=cuda&gpu_arch=sm90")
        assert p.page.locator("#status-pill").inner_text().startswith("✓")
        flashmla = p.page.locator('select[data-field="attention_backend"] option[value="FLASHMLA"]')
        assert "x-assumed" in (flashmla.get_attribute("class") or "")
        assert "FLASH_ATTN" in p.page.evaluate("S.good.choices.attention_backend.possible")
        notes = p.page.locator("#notes").inner_text()
        assert "Assumed" in notes and "head_size=128" in notes
        assert (
            "greyed (dotted) only for these assumed facts" in p.page.locator("#assumed-greyed").inner_text()
        )
        p.wait_for_reasons()
        p.page.locator('[data-info="attention_backend"]').first.click()
        info = p.page.locator("#info").inner_text()
        assert "excluded for the facts assumed" in info.lower()
        line = p.page.locator('#info [data-reason="FLASHMLA"]').inner_text()
        assert "head_size=128 (assumed)" in line, line
        p.shot("08-vllm-assumed")
        # What resolve does with it: the conflict names the assumed head size.
        p.select_value("attention_backend", "FLASHMLA")
        assert p.page.locator("#conflict").is_visible()
        conflict = p.page.locator("#conflict").inner_text()
        assert "head_size=128" in conflict
        assert "head_size was not given" in p.page.locator("#conflict-lead").inner_text()
        assert "unless the assumed fact above differs" in p.page.locator("#conflict .lost").inner_text()
        p.select_value("attention_backend", "")
        p.click_value("architecture", "DeepseekV3ForCausalLM")
        assert "FLASHMLA" in p.page.evaluate("S.good.choices.attention_backend.possible")
        assert not p.errors, p.errors


def test_keyboard_and_narrow_window(browser: Any, sglang_url: str) -> None:
    p = _page(browser, width=600, height=900)
    p.open(sglang_url + "?platform=cuda")
    chip = p.chip("gpu_arch", "sm90")
    chip.focus()
    before = p.seq()
    p.page.keyboard.press("Enter")
    p.wait_after(before)
    assert p.chip("gpu_arch", "sm90").get_attribute("aria-pressed") == "true"
    # Focus stays on the value chosen, so the keyboard user keeps their place.
    assert p.page.evaluate("document.activeElement.dataset.value") == "sm90"
    before = p.seq()
    p.page.keyboard.press("Alt+z")
    p.wait_after(before)
    assert p.chip("gpu_arch", "sm90").get_attribute("aria-pressed") == "false"
    p.page.locator('[data-info="gpu_arch"]').first.click()
    assert "Rules that mention it" in p.page.locator("#info").inner_text()
    width = p.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 600, f"the page scrolls sideways on a narrow window ({width} px)"
    p.shot("06-narrow")


def test_a_pasted_config_json_sets_the_model_facts(browser: Any, sglang_url: str) -> None:
    config = (Path(__file__).parent / "fixtures" / "models" / "deepseek-v3-fp8" / "config.json").read_text()
    p = _page(browser)
    p.open(sglang_url + "?platform=cuda&gpu_arch=sm90")
    p.page.click("#paste summary")
    p.page.fill("#config-json", config)
    before = p.seq()
    p.page.click("#read-config")
    p.wait_after(before)
    assert "architecture=DeepseekV3ForCausalLM" in p.page.url and "checkpoint_quant=fp8" in p.page.url
    assert p.page.locator('select[data-field="architecture"]').input_value() == "DeepseekV3ForCausalLM"
    p.page.fill("#config-json", "{not json")
    p.page.click("#read-config")
    assert "not JSON" in p.page.locator("#error-banner").inner_text()


def test_a_pasted_config_json_shows_what_was_read_otherwise_than_written(browser: Any) -> None:
    """vLLM reads a ModelOpt kv_cache_scheme it does not know as no scheme; the page says so under
    the paste (the answer's `notes`), and a config read without notes clears them. Before: the
    facts were set and the notes dropped."""
    import json

    models = Path(__file__).parent / "fixtures" / "models"
    llama = json.loads((models / "llama-3.1-8b-instruct" / "config.json").read_text())
    modelopt = {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]}
    unread = llama | {"quantization_config": modelopt | {"kv_cache_scheme": "INT8"}}
    p = _page(browser)
    with served("vllm") as server:
        p.open(server.url + "?platform=cuda&gpu_arch=sm90")
        p.page.click("#paste summary")
        notes = p.page.locator("#config-notes")
        assert not notes.is_visible()
        p.page.fill("#config-json", json.dumps(unread))
        before = p.seq()
        p.page.click("#read-config")
        p.wait_after(before)
        assert "checkpoint_kv_cache_quant=none" in p.page.url
        assert notes.is_visible()
        text = notes.inner_text()
        assert 'quantization_config.kv_cache_scheme is "INT8"' in text
        assert "read as checkpoint_kv_cache_quant=none" in text and "the pasted config.json" in text
        p.shot("paste-notes")
        read = llama | {"quantization_config": modelopt | {"kv_cache_scheme": "FP8"}}
        p.page.fill("#config-json", json.dumps(read))
        before = p.seq()
        p.page.click("#read-config")
        p.wait_after(before)
        assert "checkpoint_kv_cache_quant=fp8" in p.page.url and not notes.is_visible()


def test_an_integer_outside_the_listed_values(browser: Any, sglang_url: str) -> None:
    """An open integer field (the pack's `open` range) takes a typed value beyond its list."""
    p = _page(browser)
    p.open(sglang_url + "?platform=cuda&gpu_arch=sm90&architecture=LlamaForCausalLM")
    boxes = p.page.locator("input[data-other]")
    assert boxes.count() > 0
    field = boxes.first.get_attribute("data-other") or ""
    before = p.seq()
    boxes.first.fill("3")
    boxes.first.press("Enter")
    p.wait_after(before)
    assert f"{field}=3" in p.page.url
    status = p.page.locator("#status-pill").inner_text()
    if status.startswith("✓"):
        # the first open field may be an option (set by the user) or a fact (given)
        assert "3" in p.now(field) and ("user" in p.now(field) or "fact" in p.now(field))
    else:  # the pack may refuse 3 here: then it says why, as for any other value
        assert p.page.locator("#conflict").is_visible()


@pytest.mark.parametrize("name", constraints.shipped_packs())
def test_every_shipped_pack_draws(browser: Any, name: str) -> None:
    with served(name) as server:
        p = _page(browser)
        p.open(server.url)
        assert p.page.locator(".row").count() > 0
        title = p.page.locator("#pack-name").inner_text()
        assert title.startswith(name)
        first = p.page.locator(".row button[data-field]:not([data-value=''])").first
        field = first.get_attribute("data-field")
        value = first.get_attribute("data-value")
        before = p.seq()
        first.click()
        p.wait_after(before)
        assert f"{field}={value}" in p.page.url
        assert not p.errors, p.errors
        p.shot(f"07-pack-{name}")
