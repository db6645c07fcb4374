"""`confsolve serve`: the configurator page, a local web page over the Python API.

Layout: `requests` checks what the page sends; `api` answers it (cached by canonical request,
warmed in the background); `describe` and `command` turn a pack and a resolution into what the page
draws; `server` is the standard library's HTTP server; `static/` holds the page (plain HTML, CSS
and JavaScript, no network). Imports only downward (the solver's public modules); nothing here
names a launcher: the page draws whatever pack it is given.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from constraints import DEFAULT_PACK

__all__ = ["register"]


def register(sub: Any, add_inputs: Callable[..., None]) -> None:
    """Add `confsolve serve` to the command line (see `solver.cli.commands.COMMANDS`)."""
    p = sub.add_parser(
        "serve",
        help="the configurator page on a local web server",
        description="Serve the configurator page: pick the machine, the model and "
        "any option; impossible values are greyed with their reason, "
        "conflicts come with repairs, and the launch command is one "
        "click to copy. No --json: the page's JSON API (/api/pack, /api/state, "
        "/api/reasons, /api/model-config, /api/prefetch) is what it serves.",
    )
    p.add_argument(
        "--pack",
        default=DEFAULT_PACK,
        metavar="NAME_OR_PATH",
        help=f"a shipped pack name or a pack directory (default: {DEFAULT_PACK})",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1, this machine only)"
    )
    p.add_argument("--port", type=int, default=8000, help="the port (default: 8000; 0: any free one)")
    p.add_argument("--open", action="store_true", help="open the page in a web browser")
    p.add_argument(
        "--no-warm-up",
        action="store_true",
        help="do not compute the first states of a session in the background at start",
    )
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from solver import load_pack
    from solver.serve.server import make_server

    if not 0 <= args.port <= 65535:
        print(f"confsolve serve: --port {args.port} is not a port (0 to 65535)", file=sys.stderr)
        return 2
    try:  # as the socket spells a host name (a name it cannot was an internal error, exit 70)
        args.host.encode("idna")
    except UnicodeError:
        print(f"confsolve serve: --host {args.host!r} is not a host name or address", file=sys.stderr)
        return 2
    pack = load_pack(args.pack)
    try:
        server = make_server(pack, args.host, args.port, quiet=False)
    except OSError as exc:
        print(
            f"confsolve serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    if not args.no_warm_up:
        server.warm_up()
    print(
        f"confsolve serve: the {pack.name} {pack.version} configurator is at {server.url} (Ctrl-C stops it)",
        flush=True,
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            "confsolve serve: note: listening beyond this machine; anyone who can reach it can use the page",
            file=sys.stderr,
        )
    import contextlib
    import signal

    def _terminated(signum: int, frame: object) -> None:
        # As Ctrl-C: close the server, and with it its worker processes (idle, they would
        # outlive it), then exit 143 (128 + SIGTERM).
        raise SystemExit(143)

    with contextlib.suppress(ValueError):  # (only the main thread may; a caller's thread goes on)
        signal.signal(signal.SIGTERM, _terminated)
    if args.open:
        import webbrowser

        webbrowser.open(server.url)
    from solver import progress

    progress.phase("serving the page")  # (what a --deadline message names: no longer loading)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        return 130
    finally:
        server.server_close()
    return 0
