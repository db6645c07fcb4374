"""How fast the configurator page answers a click, measured in a real browser.

Starts `confsolve serve` in-process on a free loopback port (with its start-up warm-up), opens the
page in Debian's Chromium through Playwright, and clicks through realistic sessions: set the
required facts (the machine), then the model's facts, then options; now and then a value the page
greys out (a conflict), followed by applying the first repair, as a person would. Every click is
timed by the page itself, from the click to the new state drawn (`window.confsolveTimings`), and by
the driver (click to the page's state counter moving). Prints p50/p90 per click, split by kind.

    python benchmarks/page.py [--pack sglang] [--clicks 50] [--seed 1] [--think-ms 1000]
        [--dwell-ms 0] [--no-warm-up] [--json PATH]

Needs the test extra (`pip install -e '.[test]'`) and /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from browser import Page, chromium, missing_browser, served  # noqa: E402
from timing import percentile  # noqa: E402

TARGET_MS = 150.0


def _fields(p: Page) -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = p.page.evaluate("S.pack.fields")
    return doc


def _choices(p: Page) -> dict[str, Any]:
    doc: dict[str, Any] = p.page.evaluate("S.good ? S.good.choices : {}")
    return doc


def _click(p: Page, field: dict[str, Any], value: str, dwell_ms: float) -> float:
    """Choose `value`; the time from the click to its state drawn (ms, by the driver). With
    `dwell_ms`, the pointer rests on the value that long first, as a person's does before a
    click (the page asks for that state meanwhile); a drop-down list gets no such head start."""
    select = f'select[data-field="{field["name"]}"]'
    if p.page.locator(select).count():
        before, t0 = p.seq(), time.perf_counter()
        p.page.select_option(select, value)
    else:
        selector = f'button[data-field="{field["name"]}"][data-value="{value}"]'
        if not p.page.locator(selector).count():  # folded behind "+N excluded"
            p.page.click(f'button[data-unfold="{field["name"]}"]')
        if dwell_ms:
            p.page.hover(selector)
            p.page.wait_for_timeout(dwell_ms)
        before, t0 = p.seq(), time.perf_counter()
        p.page.click(selector)
    p.wait_after(before, timeout=120_000)
    return (time.perf_counter() - t0) * 1000


def _session_order(fields: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """What a person sets, in order: the required facts, the model's facts, then options."""
    required = [f for f in fields if f["section"] == "inputs" and f["required"]]
    model = [f for f in fields if f["section"] == "inputs" and not f["required"]]
    options = [f for f in fields if f["section"] == "options"]
    rng.shuffle(model)
    rng.shuffle(options)
    return required + model[:2] + options[:6]


def run(
    pack: str,
    clicks: int,
    seed: int,
    warm_up: bool,
    conflict_rate: float,
    think_ms: float,
    dwell_ms: float = 0.0,
) -> dict[str, Any]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    with served(pack, warm_up=warm_up) as server, chromium() as browser:
        if warm_up and server.warm_thread is not None:
            started = time.perf_counter()
            server.warm_thread.join(timeout=600)
            print(
                f"warm-up: {server.warmed} first states in {time.perf_counter() - started:.1f} s "
                "(a person opens the page after the server has started)"
            )
        page = Page(browser.new_page(viewport={"width": 1280, "height": 800}))
        sessions = 0
        while len(rows) < clicks:
            sessions += 1
            page.open(server.url)
            for field in _session_order(_fields(page), rng):
                if len(rows) >= clicks:
                    break
                # A person reads the new state before the next click (the page loads the
                # reasons for the greyed values meanwhile).
                page.page.wait_for_timeout(think_ms)
                entry = _choices(page).get(field["name"], {})
                possible = entry.get("possible", field["domain"])
                excluded = list(entry.get("excluded", {}))
                kind = "set"
                if not possible and not excluded:
                    continue
                if excluded and (not possible or rng.random() < conflict_rate):
                    value, kind = rng.choice(excluded), "greyed"
                else:
                    value = rng.choice(possible)
                    if page.page.evaluate(f"S.set[{json.dumps(field['name'])}]") == value:
                        continue
                wall = _click(page, field, value, dwell_ms)
                timing = page.page.evaluate("window.confsolveTimings.at(-1)")
                rows.append(
                    {
                        "parts": page.page.evaluate("S.state.parts_ms"),
                        "set": page.page.evaluate("S.set"),
                        "kind": kind,
                        "field": field["name"],
                        "value": value,
                        "page_ms": timing["ms"],
                        "server_ms": timing["server"],
                        "server_cpu_ms": timing["serverCpu"],
                        "helper_cpu_ms": timing["helperCpu"],
                        "fetch_ms": timing["fetch"],
                        "render_ms": timing["render"],
                        "driver_ms": wall,
                        "status": timing["status"],
                    }
                )
                if timing["status"] == "conflict" and len(rows) < clicks:
                    repair = page.page.locator("#conflict [data-repair]")
                    if repair.count():
                        page.page.wait_for_timeout(think_ms)
                        if dwell_ms:
                            repair.first.hover()
                            page.page.wait_for_timeout(dwell_ms)
                        t0 = time.perf_counter()
                        before = page.seq()
                        repair.first.click()
                        page.wait_after(before, timeout=120_000)
                        wall = (time.perf_counter() - t0) * 1000
                        timing = page.page.evaluate("window.confsolveTimings.at(-1)")
                        rows.append(
                            {
                                "parts": page.page.evaluate("S.state.parts_ms"),
                                "set": page.page.evaluate("S.set"),
                                "kind": "repair",
                                "field": "",
                                "value": "",
                                "page_ms": timing["ms"],
                                "server_ms": timing["server"],
                                "server_cpu_ms": timing["serverCpu"],
                                "helper_cpu_ms": timing["helperCpu"],
                                "fetch_ms": timing["fetch"],
                                "render_ms": timing["render"],
                                "driver_ms": wall,
                                "status": timing["status"],
                            }
                        )
        stats = server.configurator.cache_stats
    return {"pack": pack, "clicks": rows, "sessions": sessions, "cache": stats}


def _line(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:<28} (none)"
    return (
        f"{name:<28} n={len(values):>3}  p50 {percentile(values, 50):8.1f} ms  "
        f"p90 {percentile(values, 90):8.1f} ms  max {max(values):8.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", default="sglang")
    parser.add_argument("--clicks", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--conflict-rate",
        type=float,
        default=0.15,
        help="how often a click picks a greyed value (then the first repair is applied)",
    )
    parser.add_argument(
        "--think-ms",
        type=float,
        default=1000.0,
        help="the pause before each click, as a person reads the page (default 1000)",
    )
    parser.add_argument(
        "--dwell-ms",
        type=float,
        default=0.0,
        help="how long the pointer rests on a value before clicking it (default 0: the click "
        "comes with no head start; a person's pointer rests on a value a few hundred ms)",
    )
    parser.add_argument("--no-warm-up", action="store_true")
    parser.add_argument("--json", metavar="PATH", help="also write every click to this file")
    args = parser.parse_args(argv)
    why = missing_browser()
    if why is not None:
        print(f"benchmarks/page.py: {why}", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    result = run(
        args.pack,
        args.clicks,
        args.seed,
        not args.no_warm_up,
        args.conflict_rate,
        args.think_ms,
        args.dwell_ms,
    )
    result["load"] = {"before": load_before, "after": os.getloadavg()}
    rows = result["clicks"]
    print(
        f"{args.pack}: {len(rows)} clicks in {result['sessions']} sessions, seed {args.seed}, "
        f"pause {args.think_ms:.0f} ms before each, pointer resting {args.dwell_ms:.0f} ms; "
        f"answer cache {result['cache']}; load average "
        f"{load_before[0]:.1f} before, {result['load']['after'][0]:.1f} after (2 cores: above ~1, "
        "wall times count other processes' turns; the server's CPU time does not)"
    )
    print(_line("every click (page)", [r["page_ms"] for r in rows]))
    print(_line("every click (driver)", [r["driver_ms"] for r in rows]))
    print(_line("every click (server)", [r["server_ms"] for r in rows]))
    print(_line("every click (server CPU)", [r["server_cpu_ms"] for r in rows]))
    print(_line("  helper process CPU", [r["helper_cpu_ms"] for r in rows]))
    print(_line("  both processes CPU", [r["server_cpu_ms"] + r["helper_cpu_ms"] for r in rows]))
    print(_line("  page - server (wall)", [r["page_ms"] - r["server_ms"] for r in rows]))
    print(_line("    HTTP and JSON", [r["fetch_ms"] - r["server_ms"] for r in rows]))
    print(_line("    drawing the state", [r["render_ms"] for r in rows]))
    print(_line("    to the next frame", [r["page_ms"] - r["fetch_ms"] - r["render_ms"] for r in rows]))
    for kind in ("set", "greyed", "repair"):
        print(_line(f"  {kind} (page)", [r["page_ms"] for r in rows if r["kind"] == kind]))
    p90 = percentile([r["page_ms"] for r in rows], 90) if rows else float("nan")
    verdict = "within" if p90 <= TARGET_MS else "OVER"
    print(f"p90 per click {p90:.1f} ms: {verdict} the {TARGET_MS:.0f} ms target")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
