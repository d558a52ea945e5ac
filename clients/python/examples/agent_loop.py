"""A toy agent turn loop: recall before answering, write what was learned after.

Run against a server (``./scripts/serve.sh``):

    python clients/python/examples/agent_loop.py --address 127.0.0.1:50051

(or with RECALLD_ADDR set, without --address).

The "agent" here is deliberately dumb (no LLM): it prints the context block it
would put into its prompt, and extracts "I like X" / "我喜欢X" statements as
preferences keyed by topic, so a later change of mind supersedes the old one.
"""

from __future__ import annotations

import argparse
import asyncio
import re

from recalld.v1 import memory_pb2
from recalld_client import RecalldClient

TURNS = [
    "Hi, I'm Alice. I like latte.",
    "What should I order at the cafe?",
    "Actually I like americano now.",
    "我喜欢爬山。",
    "What should I order at the cafe?",
]
LIKE = re.compile(r"(?:I like|我喜欢)\s*([^.。!！]+)", re.IGNORECASE)


async def main() -> None:
    """Runs the scripted turns against a server."""
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--address", default=None, help="host:port (default: RECALLD_ADDR, else 127.0.0.1:50051)"
    )
    parser.add_argument("--user", default="alice-demo")
    args = parser.parse_args()
    async with RecalldClient(args.address, tenant="examples") as client:
        for turn in TURNS:
            recalled = await client.recall(args.user, turn, top_k=3, token_budget=300)
            print(f"\nuser> {turn}\n--- context for the prompt ---\n{recalled.context}")
            for match in LIKE.finditer(turn):
                thing = match.group(1).strip()
                topic = (
                    "drink"
                    if re.search(r"latte|americano|coffee|tea|咖啡|茶", thing)
                    else ("hobby")
                )
                result = await client.write(
                    args.user,
                    [
                        memory_pb2.Memory(
                            content=f"The user likes {thing}",
                            type=memory_pb2.MEMORY_TYPE_PREFERENCE,
                            topic_key=f"preference.{topic}",
                            source="chat",
                        )
                    ],
                )
                outcome = result.results[0].outcome
                print(f"(remembered: {thing!r}, outcome {outcome})")


if __name__ == "__main__":
    asyncio.run(main())
