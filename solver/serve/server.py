"""The HTTP side of `confsolve serve`: the standard library's ThreadingHTTPServer, the static page
(package data, no network needed) and the JSON API of `solver.serve.api`.

Routes: `GET /` (the page), `GET /static/NAME`, `GET /api/pack`, `POST /api/state`,
`POST /api/reasons`, `POST /api/model-config`, and `POST /api/prefetch` (a state's request, to be
answered into the cache when the server is idle; no content back). Bad input answers 400 with a
message (a body that is not `application/json` 415, another method 405, a request line http.server
refuses its own 4xx/501, each as a JSON error document); a bug answers 500 with a one-line
message; none carries a traceback. Bodies are bounded (`requests.MAX_BODY_BYTES`), an idle or
short-bodied connection is closed after `_Handler.timeout`, and the server binds to loopback
unless told otherwise.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from solver.serve.api import Configurator
from solver.serve.requests import MAX_BODY_BYTES, BadRequest, error_document, parse_body

__all__ = ["ConfiguratorServer", "make_server"]

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


def _static(name: str) -> bytes | None:
    """A file of the page (package data), or None; names are plain file names only."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    entry = resources.files("solver.serve").joinpath("static", name)
    try:
        return entry.read_bytes()
    except (OSError, ValueError):  # missing, a directory, a name too long, a NUL byte in it
        return None


class ConfiguratorServer(ThreadingHTTPServer):
    """One pack's configurator; `warm_up()` fills the cache with the first states in a thread."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], configurator: Configurator, *, quiet: bool = True) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        # Before binding: a bind that fails closes the server (server_close), which needs them.
        self.configurator = configurator
        self.quiet = quiet
        self.stopping = threading.Event()
        self.warm_thread: threading.Thread | None = None
        self.warmed = 0
        super().__init__(address, _Handler)

    def warm_up(self, limit: int = 64) -> threading.Thread:
        def run() -> None:
            try:
                from solver.serve.api import prepare

                # What every later question on this pack reuses (known solutions), then the
                # states a session starts from.
                self.configurator.start_helper()
                prepare(self.configurator.pack)
                states = self.configurator.first_states(limit)
                self.warmed = self.configurator.warm(self.stopping, states)
            except Exception as exc:  # the warm-up only saves time; a failure must not stop serving
                if not self.stopping.is_set():  # (else Ctrl-C closed the server under it: say nothing)
                    print(f"confsolve serve: warm-up stopped: {type(exc).__name__}: {exc}", file=sys.stderr)

        thread = threading.Thread(target=run, name="confsolve-warm-up", daemon=True)
        thread.start()
        self.warm_thread = thread
        return thread

    def server_close(self) -> None:
        self.stopping.set()
        self.configurator.close()
        super().server_close()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"


class _Handler(BaseHTTPRequestHandler):
    server: ConfiguratorServer
    server_version = "confsolve-serve"
    protocol_version = "HTTP/1.1"
    # A connection that sends nothing (or less than its Content-Length) for this long is closed:
    # http.server logs the timeout and frees the thread, which would otherwise wait for ever.
    timeout = 120

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str, allow: str = "") -> None:
        self.send_response(status)
        if allow:  # (405: the methods that are answered)
            self.send_header("Allow", allow)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        try:
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            # The page went away (a reload, a closed tab) before its answer: nothing to tell it.
            self.close_connection = True

    def _json(self, status: int, doc: Any, allow: str = "") -> None:
        body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8", allow)

    def _error(self, status: int, message: str, issues: list[Any] | None = None, allow: str = "") -> None:
        kind = HTTPStatus(status).phrase.replace(" ", "")
        self._json(status, error_document(kind, message, issues or []), allow)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line, an unknown method, headers too
        long) as the API's error documents, not its HTML page."""
        self.close_connection = True
        self._error(code, message or HTTPStatus(code).phrase)

    def _not_allowed(self) -> None:
        message = f"{self.command} is not answered here: GET, HEAD and POST are"
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, message, allow="GET, HEAD, POST")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/api/pack":
            self._guarded(lambda: self._json(200, self.server.configurator.description()))
            return
        name = (
            "index.html"
            if path in ("/", "/index.html")
            else path.removeprefix("/static/")
            if path.startswith("/static/")
            else ""
        )
        body = _static(name)
        if body is None:
            self._error(HTTPStatus.NOT_FOUND, f"nothing at {path[:200]!r}")
            return
        suffix = name[name.rfind(".") :]
        self._send(200, body, _TYPES.get(suffix, "application/octet-stream"))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        route = path.removeprefix("/api/")
        if not path.startswith("/api/") or route not in ("state", "reasons", "model-config", "prefetch"):
            self._error(HTTPStatus.NOT_FOUND, f"no API call at {path[:200]!r}")
            return
        length_text = self.headers.get("Content-Length")
        try:
            length = int(length_text) if length_text is not None else -1
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._error(HTTPStatus.LENGTH_REQUIRED, "a request body needs a Content-Length")
            return
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the body is not read: the connection cannot go on
            self._error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the request body is {length} bytes; at most {MAX_BODY_BYTES} are read",
            )
            return
        kind = (self.headers.get("Content-Type") or "").partition(";")[0].strip().lower()
        if kind != "application/json":
            # (the page sends JSON; a form or text/plain post from another site is no request of its)
            self.close_connection = True
            self._error(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                f"a request body is JSON with Content-Type: application/json, not {kind or 'none given'!r}",
            )
            return
        raw = self.rfile.read(length)

        def answer() -> None:
            doc = parse_body(raw)
            if route == "prefetch":
                self.server.configurator.prefetch(doc)
                self._send(HTTPStatus.NO_CONTENT, b"", "text/plain")
                return
            self._json(200, self.server.configurator.answer(route, doc))

        self._guarded(answer)

    def _guarded(self, work: Any) -> None:
        try:
            work()
        except BadRequest as exc:
            self._json(HTTPStatus.BAD_REQUEST, exc.to_json())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug: say so, keep serving, show no traceback to the page
            print(
                f"confsolve serve: internal error on {self.path[:200]}: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            self._error(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                f"internal error ({type(exc).__name__}); see the server's output",
            )


def make_server(
    pack: Any, host: str = "127.0.0.1", port: int = 8000, *, quiet: bool = True
) -> ConfiguratorServer:
    """A server for `pack` bound to (host, port); port 0 picks a free one. Not yet serving."""
    return ConfiguratorServer((host, port), Configurator(pack), quiet=quiet)
