"""What the server tells the model about its memory: the instructions and a prompt.

`INSTRUCTIONS` go to the client when it connects; the `use_memory` prompt says
when to recall and when to remember.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

INSTRUCTIONS = """\
Long-term memory about the user you are helping, kept by recalld.
- Before answering anything that may depend on the user's preferences, history,
  people, plans or earlier decisions, call `recall` with a short query.
- When you learn something durable about the user (a fact, a preference, a
  decision, an event, a task), call `remember` with one self-contained sentence.
  Do not store what you can recompute, secrets or one-off chatter.
- To correct a memory, `update` it with the etag you read; to drop one, `forget` it.
- In a conversation kept as a session, `append_messages` adds the turns and
  `get_context` returns the window, summary, memories and profile in one budget.
"""

USE_MEMORY_PROMPT = """\
You have a long-term memory of this user (the recalld tools).

Recall first: at the start of a task, and whenever the answer could depend on who
the user is or what happened before, call `recall` with a few words describing
what you need ("coffee preference", "daughter's school", "deploy decision").
Use what comes back; say so when a memory looks outdated.

Remember what lasts: when the user tells you a preference, a fact about their
life or work, a decision, an upcoming event or a task, call `remember` with one
clear sentence in the third person ("The user prefers oat milk."), the right
type, and when it happened if known. One memory per fact. Never store passwords,
keys or other secrets, and nothing the user asked you to forget.

Correct rather than duplicate: if a memory is wrong, `update` it (pass its etag);
if the user asks you to forget something, `forget` it.
"""


def register_use_memory_prompt(server: MCPServer) -> None:
    """Registers the `use_memory` prompt."""

    @server.prompt(
        name="use_memory",
        title="Use memory",
        description="When to recall and when to remember",
    )
    def use_memory() -> str:
        return USE_MEMORY_PROMPT
