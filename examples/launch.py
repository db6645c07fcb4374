"""A launcher in fifty lines: its own flags plus the pack's, facts from the model and environment,
then the SGLang command line to run — or the explanation of why no configuration exists.

    python examples/launch.py --model-path /models/Llama-3.1-8B --platform cuda --gpu-arch sm90 \
        --attention-backend fa3 --tp-size 8
"""

from __future__ import annotations

import argparse
import shlex
import sys

from solver import InvalidInput, Pack, Unsatisfiable, load_pack
from solver.inputs.pins import facts_from_environ
from solver.launcher import add_arguments, explain_conflict, resolve_namespace, to_argv
from solver.render.text import notices


def main(argv: list[str] | None = None, pack: Pack | None = None) -> int:
    pack = pack or load_pack("sglang")
    parser = argparse.ArgumentParser(description="Launch SGLang with a checked configuration.")
    parser.add_argument("--model-path", required=True, help="a model directory or hub id")
    parser.add_argument("--port", type=int, default=30000)
    add_arguments(parser, pack)  # --attention-backend, --tp-size, ... and facts (--gpu-arch)
    args = parser.parse_args(argv)
    try:
        facts = dict(facts_from_environ(pack))  # SGLANG_* variables the pack knows
        model_facts = [name for name in ("architecture",) if name in pack.fields]
        if model_facts and getattr(args, "architecture", None) is None:  # else the user said it
            # A local checkpoint or a hub id already in the Hugging Face cache: its config.json
            # gives the model facts (an unreadable one is an error, never a guess).
            from solver.inputs.modelconfig import facts_from_model_config

            facts.update(facts_from_model_config(pack, args.model_path, flag="--model-path"))
        # The model's architecture is never assumed: without it, no answer can be trusted.
        resolution = resolve_namespace(args, pack, facts, require=model_facts)
    except Unsatisfiable as exc:  # the minimal conflict, and repairs as this launcher's command line
        typed = sys.argv[1:] if argv is None else argv
        print(explain_conflict(exc, pack, typed, prog="examples/launch.py"), file=sys.stderr)
        return exc.exit_code
    except InvalidInput as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code
    # What qualifies the answer goes to stderr, so the command on stdout stays runnable: facts
    # nobody gave (the answer holds only if they are so), warnings, adjusted flags.
    for line in notices(pack, resolution):
        print(line, file=sys.stderr)
    server = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        args.model_path,
        "--port",
        str(args.port),
        *to_argv(resolution, pack),
    ]
    print(shlex.join(server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
