"""A stand-in for `vllm serve MODEL --port P …`: serves the loopback OpenAI app there.

Usage: python -m tests.servers.fake_vllm serve MODEL --port P [ignored vllm flags]
"""

from __future__ import annotations

import argparse
import sys
import threading

from tests.servers.http import LoopbackServer, Reply, Request
from tests.servers.openai_server import OpenAIApp, react_responder


def main(argv: list[str]) -> None:
    """Parse the vllm-style arguments and serve until killed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--max-concurrent", type=int, default=None)
    parser.add_argument("--searches", type=int, default=1,
                        help="search turns before the finish turn")
    parser.add_argument("--exit-after-version", action="store_true",
                        help="stop serving once GET /version was asked: the last request "
                             "`lab serve` makes before it records the server (its tests)")
    args, _ = parser.parse_known_args(argv)
    app = OpenAIApp(model=args.model, delay_s=args.delay, max_concurrent=args.max_concurrent,
                    responder=react_responder(args.searches), record=False)
    if not args.exit_after_version:
        LoopbackServer(app, port=args.port).run_forever()
        return
    asked = threading.Event()

    async def watch(req: Request) -> Reply:
        if req.path == "/version":
            asked.set()
        return await app(req)

    server = LoopbackServer(watch, port=args.port).start()
    asked.wait(600)
    server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
