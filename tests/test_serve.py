"""`confsolve serve`'s JSON API and HTTP manners, without a browser: the page's states (choices
with their scope, resolution, conflict and repairs that keep the choice just made, the launch
command), input checks that answer 400 with a message, and one test per shipped pack."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import constraints
from solver import load_pack
from solver.render.schema import output_schema
from solver.serve.api import Configurator, halves
from solver.serve.requests import BadRequest, parse_request
from solver.serve.server import ConfiguratorServer, make_server

FIXTURES = Path(__file__).parent / "fixtures" / "models"
WALK = {
    "platform": "cuda",
    "gpu_arch": "sm90",
    "architecture": "DeepseekV3ForCausalLM",
    "checkpoint_quant": "fp8",
    "tp_size": "8",
}


# Every document the API answers is one of `confsolve schema`'s kinds, like every --json output.
VALIDATOR = jsonschema.Draft202012Validator(output_schema())


def _valid(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    VALIDATOR.validate(doc)
    jsonschema.validate(doc, output_schema(kind))
    return doc


@pytest.fixture(scope="module")
def sglang() -> Configurator:
    return Configurator(load_pack("sglang"))


def _state(api: Configurator, values: dict[str, Any], keep: list[str] | None = None) -> dict[str, Any]:
    return _valid(api.answer("state", {"set": values, "keep": keep or []}), "state")


def test_walk_through_on_hopper_then_blackwell(sglang: Configurator) -> None:
    hopper = _state(sglang, WALK)
    assert hopper["verdict"] == "resolved"
    res = hopper["resolution"]
    assert res["values"]["attention_backend"] == "fa3"
    assert res["provenance"]["attention_backend"]["kind"] == "preference"
    assert res["provenance"]["tp_size"]["kind"] == "user"
    assert res["provenance"]["platform"]["kind"] == "fact"
    # ep_size > tp_size is refused because of the user's tp_size, not the machine.
    assert hopper["choices"]["ep_size"]["excluded"]["16"] == "choices"
    assert "--tp-size" in hopper["command"]["minimal"]
    blackwell = _state(sglang, {**WALK, "gpu_arch": "sm120"})
    assert blackwell["resolution"]["values"]["attention_backend"] == "triton"
    # FA3 is impossible on SM120 for an MLA model whatever the user chooses.
    assert blackwell["choices"]["attention_backend"]["excluded"]["fa3"] == "facts"
    assert "fa3" not in blackwell["choices"]["attention_backend"]["possible"]


def test_reasons_name_the_rule_and_the_pins(sglang: Configurator) -> None:
    doc = _valid(
        sglang.answer("reasons", {"set": {**WALK, "gpu_arch": "sm120"}, "field": "attention_backend"}),
        "reasons",
    )
    fa3 = doc["reasons"]["attention_backend"]["fa3"]
    assert fa3["scope"] == "facts"
    assert "fa3-needs-sm8x-or-sm90" in [r["id"] for r in fa3["rules"]]
    assert all(p["source"] != "user" for p in fa3["pins"])
    ep = sglang.answer("reasons", {"set": WALK, "field": "ep_size"})["reasons"]["ep_size"]["16"]
    assert ep["scope"] == "choices"
    assert {"field": "tp_size", "value": "8", "source": "user"} in ep["pins"]


def test_repairs_keep_the_choice_just_made_when_they_can(sglang: Configurator) -> None:
    request = {**WALK, "ep_size": "16"}
    free = _state(sglang, request)
    assert free["verdict"] == "conflict"
    assert any("ep_size" in r["unset"] or "ep_size" in r["set"] for r in free["repairs"])
    kept = _state(sglang, request, keep=["ep_size"])
    assert kept["kept"] is True and kept["repairs"]
    for repair in kept["repairs"]:
        assert "ep_size" not in repair["unset"] and "ep_size" not in repair["set"]
        assert repair["values"]["ep_size"] == 16 and not repair["undoes"]


def test_a_choice_no_repair_can_keep_is_reported_as_undone(sglang: Configurator) -> None:
    doc = _state(
        sglang, {**WALK, "gpu_arch": "sm120", "attention_backend": "fa3"}, keep=["attention_backend"]
    )
    assert doc["verdict"] == "conflict"
    assert doc["kept"] is False
    assert {p["field"] for p in doc["conflict"]["pins"]} >= {"attention_backend", "gpu_arch"}
    assert doc["repairs"] and all(r["undoes"] == ["attention_backend"] for r in doc["repairs"])
    assert "fa3-needs-sm8x-or-sm90" in [r["id"] for r in doc["conflict"]["rules"]]


def test_the_description_lists_each_value_with_its_other_names(sglang: Configurator) -> None:
    """A GPU is picked by name: the pack's aliases (name -> value) are shown by value."""
    fields = {f["name"]: f for f in sglang.description()["fields"]}
    gpu = fields["gpu_arch"]
    assert {"H100", "H200"} <= set(gpu["aliases"]["sm90"])
    assert "A100" in gpu["aliases"]["sm80"] and "H100" not in gpu["aliases"]["sm80"]
    named = {name for names in gpu["aliases"].values() for name in names}
    assert named == set(sglang.pack.fields["gpu_arch"].aliases)
    assert set(gpu["aliases"]) <= set(gpu["domain"])
    assert fields["tp_size"]["aliases"] == {}


def test_answers_are_cached_by_canonical_request(sglang: Configurator) -> None:
    first = _state(sglang, {"gpu_arch": "sm90", "platform": "cuda"})
    hits = sglang.cache_stats["hits"]
    again = _state(sglang, {"platform": "CUDA".lower(), "gpu_arch": "sm90"})
    assert sglang.cache_stats["hits"] > hits
    assert again["resolution"] == first["resolution"]


def test_pasted_model_config_gives_facts(sglang: Configurator) -> None:
    config = json.loads((FIXTURES / "deepseek-v3-fp8" / "config.json").read_text())
    doc = _valid(sglang.answer("model-config", {"config": config}), "facts")
    assert doc["facts"]["architecture"] == "DeepseekV3ForCausalLM"
    assert doc["facts"]["checkpoint_quant"] == "fp8"
    with pytest.raises(BadRequest, match=r"architectures|config"):
        sglang.answer("model-config", {"config": {"architectures": 7}})


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"set": {"atention_backend": "fa3"}}, ["atention_backend", "attention_backend"]),
        ({"set": {"attention_backend": "fa33"}}, ["fa33", "fa3"]),
        ({"set": {"tp_size": 1.5}}, ["tp_size", "float"]),
        ({"set": []}, ["'set'"]),
        ({"sets": {}}, ["'sets'", "'set'"]),
        ({"set": {}, "keep": "tp_size"}, ["'keep'"]),
        ({"set": {}, "keep": ["tp_sise"]}, ["tp_sise", "tp_size"]),
    ],
)
def test_bad_requests_name_what_is_wrong(
    sglang: Configurator, body: dict[str, Any], words: list[str]
) -> None:
    with pytest.raises(BadRequest) as caught:
        sglang.answer("state", body)
    for word in words:
        assert word in caught.value.message


def test_parse_request_orders_pins_as_the_pack_does() -> None:
    pack = load_pack("sglang")
    one = parse_request(pack, {"set": {"tp_size": 8, "platform": "cuda"}}, ("set",))
    two = parse_request(pack, {"set": {"platform": "cuda", "tp_size": "8"}}, ("set",))
    assert one == two and [n for n, _ in one.values] == ["platform", "tp_size"]


# --- over HTTP ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ConfiguratorServer]:
    srv = make_server(load_pack("sglang"), "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _http(
    srv: ConfiguratorServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes, str]:
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(str(host), int(port), timeout=60)
    if headers is None and method == "POST":  # as the page sends its requests
        headers = {"Content-Type": "application/json"}
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read(), response.getheader("Content-Type") or ""
    finally:
        conn.close()


def test_the_page_and_its_files_are_served(server: ConfiguratorServer) -> None:
    status, body, kind = _http(server, "GET", "/")
    assert status == 200 and kind.startswith("text/html") and b"/static/app.js" in body
    for name in ("app.js", "app.css"):
        assert _http(server, "GET", f"/static/{name}")[0] == 200
    # The page needs nothing from the network.
    for name in ("index.html", "app.js", "app.css"):
        text = _http(server, "GET", f"/static/{name}")[1].decode()
        assert "http://" not in text and "https://" not in text
    assert _http(server, "GET", "/static/../api.py")[0] == 404
    assert _http(server, "GET", "/static/%2e%2e%2fapi.py")[0] == 404


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{not json", 400),
        (b"[1, 2]", 400),
        (b"\xff\xfe", 400),
        (b"[" * 100_000, 400),
        (b'{"set": {"platform": "cudaa"}}', 400),
    ],
)
def test_bad_bodies_answer_400_without_a_traceback(
    server: ConfiguratorServer, body: bytes, status: int
) -> None:
    got, raw, kind = _http(server, "POST", "/api/state", body, {"Content-Type": "application/json"})
    assert got == status and kind.startswith("application/json")
    doc = _valid(json.loads(raw), "error")
    assert doc["status"] == "error" and doc["error"]["message"]
    assert "Traceback" not in raw.decode("utf-8", "replace")


def _raw(srv: ConfiguratorServer, data: bytes) -> bytes:
    """What the server answers to bytes sent as they are (a request http.client will not send)."""
    host, port = srv.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=60) as conn:
        conn.sendall(data)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize(
    "request_line",
    [b"GET /static/" + b"a" * 5000 + b" HTTP/1.1", b"GET /static/a\x00b HTTP/1.1"],
)
def test_a_static_name_the_file_system_refuses_is_not_found(
    server: ConfiguratorServer, request_line: bytes
) -> None:
    # a name too long or with a NUL byte raised in the handler: no answer, a traceback on stderr
    answer = _raw(server, request_line + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 404") and b'"NotFound"' in answer


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_json_by_its_type_is_refused(server: ConfiguratorServer, kind: str | None) -> None:
    # (answered 200 before: a form another site posts reached the solver)
    headers = {} if kind is None else {"Content-Type": kind}
    status, raw, _ = _http(server, "POST", "/api/state", b'{"set": {"tp_size": 2}}', headers)
    assert status == 415 and _valid(json.loads(raw), "error")["error"]["type"] == "UnsupportedMediaType"


def test_other_methods_and_bad_request_lines_answer_json_not_5xx_html(server: ConfiguratorServer) -> None:
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS"):  # were 501 with http.server's HTML page
        status, raw, kind = _http(server, method, "/api/state", b"{}")
        assert status == 405 and kind.startswith("application/json"), (method, status)
        assert _valid(json.loads(raw), "error")["error"]["type"] == "MethodNotAllowed"
    for line in (b"BREW /pot HTTP/1.1", b"GET / HTTP/9.9", b"garbage"):
        answer = _raw(server, line + b"\r\nHost: x\r\n\r\n")
        assert b'"status":"error"' in answer and b"<html" not in answer.lower(), line


def test_sizes_and_routes_are_bounded(server: ConfiguratorServer) -> None:
    too_big = _http(server, "POST", "/api/state", b"", {"Content-Length": str(1 << 30)})
    nowhere = _http(server, "POST", "/api/nothing", b"{}")
    assert too_big[0] == 413 and nowhere[0] == 404
    assert _http(server, "GET", "/api/state")[0] == 404
    for _, raw, _ in (too_big, nowhere):
        assert _valid(json.loads(raw), "error")["error"]["type"] in ("RequestEntityTooLarge", "NotFound")


def test_every_api_answer_over_http_is_a_schema_document(server: ConfiguratorServer) -> None:
    status, raw, _ = _http(server, "GET", "/api/pack")
    assert status == 200 and _valid(json.loads(raw), "configurator")["pack"]["name"] == "sglang"
    for body, kind in (
        ({"set": WALK}, "state"),
        ({"set": {**WALK, "ep_size": "16"}, "keep": ["ep_size"]}, "state"),
        ({"set": {"platform": "cuda"}}, "state"),
        ({"set": {**WALK, "gpu_arch": "sm120"}, "field": "attention_backend"}, "reasons"),
    ):
        route = "reasons" if kind == "reasons" else "state"
        status, raw, _ = _http(server, "POST", f"/api/{route}", json.dumps(body).encode())
        assert status == 200
        _valid(json.loads(raw), kind)


def test_a_prefetch_fills_the_cache_and_answers_no_content(server: ConfiguratorServer) -> None:
    body = {"set": {**WALK, "ep_size": "1"}, "keep": ["ep_size"]}
    api = server.configurator
    request = parse_request(api.pack, body, ("set", "keep"))
    key = ("state", request.values, request.keep)
    assert not api._answers.known(key)
    status, raw, _ = _http(server, "POST", "/api/prefetch", json.dumps(body).encode())
    assert status == 204 and raw == b""
    assert api._answers.known(key)
    hits = api.cache_stats["hits"]
    status, raw, _ = _http(server, "POST", "/api/state", json.dumps(body).encode())
    assert status == 200 and api.cache_stats["hits"] > hits
    bad = _http(server, "POST", "/api/prefetch", json.dumps({"set": {"tp_size": "seven"}}).encode())
    assert bad[0] == 400 and _valid(json.loads(bad[1]), "error")


def test_a_document_of_the_wrong_shape_is_refused_by_the_schema() -> None:
    with pytest.raises(jsonschema.ValidationError):  # a resolved state without its resolution
        VALIDATOR.validate({"schema": 1, "status": "state", "verdict": "resolved", "set": {}})
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate({"schema": 1, "status": "state", "verdict": "maybe", "set": {}})


def test_the_server_binds_to_loopback_by_default() -> None:
    import inspect

    assert inspect.signature(make_server).parameters["host"].default == "127.0.0.1"
    from solver.cli.commands import build_parser

    args = build_parser("serve").parse_args(["serve"])
    assert args.host == "127.0.0.1" and args.port == 8000


def test_serve_refuses_a_bad_port() -> None:
    from solver.cli.commands import main

    assert main(["serve", "--port", "70000", "--no-warm-up"]) == 2


# --- every shipped pack ------------------------------------------------------------------------


@pytest.mark.parametrize("name", constraints.shipped_packs())
def test_every_shipped_pack_is_described_and_answers(name: str) -> None:
    pack = load_pack(name)
    api = Configurator(pack)
    doc = _valid(api.description(), "configurator")
    assert [f["name"] for f in doc["fields"]] and len(doc["fields"]) == len(pack.fields)
    for field in doc["fields"]:
        assert field["domain"] and field["section"] in ("inputs", "traits", "options", "environment")
        for rid in field["rules"]:
            assert rid in doc["rules"]
        for other in field["neighbours"]:
            assert other in pack.fields
    json.dumps(doc)
    required = {f.name: f.domain[0] for f in pack.fields.values() if f.required}
    state = _state(api, {})
    assert state["verdict"] in ("resolved", "conflict", "incomplete")
    if state["verdict"] != "conflict":
        for fname, entry in state["choices"].items():
            assert set(entry["possible"]).isdisjoint(entry["excluded"])
            assert len(entry["possible"]) + len(entry["excluded"]) == len(pack.fields[fname].domain)
    _state(api, {k: str(v) for k, v in required.items()})


@pytest.fixture(scope="module")
def vllm() -> Iterator[Configurator]:
    api = Configurator(load_pack("vllm"))
    yield api
    api.close()


H100 = {"platform": "cuda", "gpu_arch": "sm90"}


def test_an_option_is_greyed_for_the_facts_resolve_assumes(vllm: Configurator) -> None:
    """No model given: resolve assumes `head_size=128` and refuses FLASHMLA (possible for an MLA
    model). The state greys it with scope `assumed`, its reason names the assumed fact, and a
    fact's own values are not narrowed by what is assumed without it (Mixtral, a MoE model,
    though `is_moe=false` is assumed); given the model, FLASHMLA is possible."""
    state = _state(vllm, H100)
    backends = state["choices"]["attention_backend"]
    assert backends["excluded"]["FLASHMLA"] == "assumed"
    assert backends["excluded"]["CUTLASS_MLA"] == "facts"  # Blackwell's, whatever the model
    assert {"field": "head_size", "value": 128} in [
        {k: a[k] for k in ("field", "value")} for a in state["resolution"]["assumed"]
    ]
    assert "MixtralForCausalLM" in state["choices"]["architecture"]["possible"]
    reason = _valid(vllm.answer("reasons", {"set": H100, "field": "attention_backend"}), "reasons")
    flashmla = reason["reasons"]["attention_backend"]["FLASHMLA"]
    assert flashmla["scope"] == "assumed"
    assert {"field": "head_size", "value": "128", "source": "assumed"} in flashmla["pins"]
    model = _state(vllm, {**H100, "architecture": "DeepseekV3ForCausalLM"})
    assert "FLASHMLA" in model["choices"]["attention_backend"]["possible"]


def test_picking_a_value_an_assumed_fact_refuses_shows_resolve_s_conflict(vllm: Configurator) -> None:
    """The pins alone hold together (for an MLA model), so a minimal conflict among them was
    empty: the page showed "these cannot all hold" over nothing. It is resolve's: the assumed
    fact in it, and its lead paragraph."""
    doc = _state(vllm, {**H100, "attention_backend": "FLASHMLA"}, keep=["attention_backend"])
    assert doc["verdict"] == "conflict"
    assert {"field": "head_size", "value": 128, "source": "assumed"} in doc["conflict"]["pins"]
    assert doc["conflict"]["rules"] and "head_size was not given" in doc["lead"]
    assert doc["repairs"] and doc["kept"] is False


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("vllm", H100),
        ("vllm", {**H100, "tensor_parallel_size": "2"}),
        ("sglang", {"platform": "cuda", "gpu_arch": "sm90"}),
        ("sglang", {"platform": "hip", "gpu_arch": "gfx942", "kv_cache_dtype": "fp8_e4m3"}),
    ],
)
def test_every_option_value_offered_resolves_and_reasons_have_the_state_s_scopes(
    name: str, values: dict[str, str], request: pytest.FixtureRequest
) -> None:
    """No option value the page offers is one resolve refuses for a fact it assumes (set with
    the state's pins, as a click sets it; a value that needs another flag typed too, an
    unsearched resource, may still fail for that flag's default); each greyed value's reason
    has the scope it is drawn with."""
    from solver.errors import Unsatisfiable
    from solver.inputs.pins import collect_pins
    from solver.reasoning.resolution import resolve_pins

    api: Configurator = request.getfixturevalue(name) if name == "vllm" else request.getfixturevalue("sglang")
    state = _state(api, values)
    assert state["verdict"] == "resolved"
    reasons = api.answer("reasons", {"set": values})["reasons"]
    refused = []
    for field, entry in state["choices"].items():
        for value, scope in entry["excluded"].items():
            assert reasons[field][value]["scope"] == scope, (field, value)
        if api.pack.fields[field].kind != "option":
            continue
        for value in entry["possible"]:
            pins = collect_pins(api.pack, {**values, field: value})
            try:
                resolve_pins(api.pack, pins, reasons=False)
            except Unsatisfiable as exc:
                failed = (exc.launcher_default or {}).get("field")
                if failed is not None and api.pack.fields[failed].kind == "fact":
                    refused.append((field, value, failed))
    assert refused == []


def test_reasons_from_the_worker_process_equal_those_computed_here(sglang: Configurator) -> None:
    from solver.serve.reasons import excluded_reasons
    from solver.serve.requests import parse_request as parse

    values = parse(sglang.pack, {"set": {**WALK, "gpu_arch": "sm120"}}, ("set",)).values
    served = sglang.answer("reasons", {"set": {**WALK, "gpu_arch": "sm120"}})["reasons"]
    assumed = sglang._assumed_of(values)
    assert assumed  # (the GPU count, the kernels installed, ...: the third scope is computed)
    assert served == excluded_reasons(sglang.pack, values, assumed)
    assert sglang._reason_worker.process._pool is not None  # answered by the worker process


def test_choices_split_with_the_helper_process_equal_those_listed_here() -> None:
    """Half of each state's choices come from the helper process once it is ready, and so do a
    conflict's repairs (found there without the minimal conflict as a hint, beside it here): the
    answer is the one this process computes alone, field for field and repair for repair."""
    import time

    pack = load_pack("sglang")
    far, near = halves(pack)
    assert set(far) | set(near) == set(pack.fields) and not set(far) & set(near) and far and near
    alone, split = Configurator(pack), Configurator(pack)
    split.start_helper()
    try:
        deadline = time.monotonic() + 120
        while not split._helper.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        assert split._helper.ready
        for values in (
            {"platform": "cuda"},
            WALK,
            {**WALK, "gpu_arch": "sm120", "tp_size": "12"},
            {"platform": "hip", "gpu_arch": "gfx942", "kv_cache_dtype": "fp8_e4m3"},
        ):
            want, got = _state(alone, values), _state(split, values)
            assert got["verdict"] == want["verdict"]
            assert got["choices"] == want["choices"], values
        assert split._helper._pool is not None  # the helper took part
        for values, keep in (
            ({**WALK, "ep_size": "16"}, ["ep_size"]),
            ({**WALK, "ep_size": "16"}, []),
            ({**WALK, "gpu_arch": "sm120", "attention_backend": "fa3"}, ["attention_backend"]),
            ({**WALK, "platform": "hip"}, ["platform"]),
            ({**WALK, "dtype": "float"}, ["dtype"]),
            ({**WALK, "num_gpus": "4"}, ["num_gpus"]),
            ({**WALK, "checkpoint_quant": "modelslim"}, ["checkpoint_quant"]),
        ):
            want, got = _state(alone, values, keep), _state(split, values, keep)
            assert want["verdict"] == "conflict" and got.get("helper_cpu_ms", 0) > 0, values
            for part in ("conflict", "message", "repairs", "kept"):
                assert got[part] == want[part], (values, part)
    finally:
        split.close()
        alone.close()


def test_serve_stops_on_sigterm_with_its_worker_processes() -> None:
    import signal
    import subprocess
    import sys
    import time

    def children_of(pid: int) -> list[str]:
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(stat.parent.name)
            except (OSError, IndexError, ValueError):
                continue
        return found

    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "confsolve"), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None and "configurator is at" in proc.stdout.readline()
        children: list[str] = []
        deadline = time.monotonic() + 60
        while len(children) < 2 and time.monotonic() < deadline:  # the helper and its tracker
            children = children_of(proc.pid)
            time.sleep(0.1)
        assert children
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in children):
            time.sleep(0.1)
        assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_deadline_that_ends_the_server_names_serving() -> None:
    """`serve --deadline` ends the server with exit 4; the message named "loading the pack" (the
    phase before any) while the page had been served for seconds."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "confsolve"),
            "serve",
            "--port",
            "0",
            "--no-warm-up",
            "--deadline",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 4 and "configurator is at" in done.stdout
    assert "ran out during serving the page" in done.stderr


def test_a_missing_browser_fails_when_ci_requires_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import browser

    monkeypatch.setattr(browser, "chromium_path", lambda: None)
    monkeypatch.setenv("CONFSOLVE_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="required"):
        browser.browser_or_skip()
    monkeypatch.delenv("CONFSOLVE_REQUIRE_BROWSER")
    with pytest.raises(pytest.skip.Exception, match="chromium"):
        browser.browser_or_skip()


def test_only_the_server_freezes_the_heap_the_library_leaves_it_alone() -> None:
    # `gc.freeze` keeps every object alive now out of the collector's sight for good: a server
    # that owns its process may, a launcher calling the library must not have it done to it.
    import gc

    from solver import prepare_choices
    from solver.serve.api import prepare

    pack = load_pack("vllm")
    gc.unfreeze()
    try:
        assert prepare_choices(pack) > 0
        assert gc.get_freeze_count() == 0
        assert prepare(pack) > 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
