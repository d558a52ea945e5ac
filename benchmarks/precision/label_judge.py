"""A relevance judge that answers from the labels: the ceiling of `--llm-rerank`.

An OpenAI-compatible chat-completions server on loopback (standard library
only). Given the server's judge prompt, it finds the question among the
labelled queries and keeps the listed memories labelled relevant, in the order
the server listed them; for a question with no answer it keeps none. Through the
real HTTP path and the real server, this measures what the rerank stage can
reach with a judge that is never wrong: a question is answered exactly when its
memory was among the candidates the judge reads. A real model lands below it.

    python -m benchmarks.precision.evaluate --split test --judge labels
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterable
from typing import Any

LISTED = re.compile(r'^\d+\. (".*")$', re.MULTILINE)
QUESTION = re.compile(r'^Question: (".*")$', re.MULTILINE)
DAY = re.compile(r"^\[\d{4}-\d\d-\d\d\] ")


class LabelJudge:
    """Serves `POST /v1/chat/completions` from the labels until `stop()`.

    Args:
        relevant: For each labelled question text, the contents of its relevant
            memories (empty for a question with no answer).
    """

    def __init__(self, relevant: dict[str, set[str]]) -> None:
        self._relevant = relevant
        self.unknown_questions = 0
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The API root to give the server (`.../v1`)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, prompt: str) -> list[int]:
        """The numbers of the listed memories labelled relevant to the prompt's question."""
        match = QUESTION.search(prompt)
        question = json.loads(match.group(1)) if match else ""
        if question not in self._relevant:
            self.unknown_questions += 1
            return []
        wanted = self._relevant[question]
        listed = [DAY.sub("", json.loads(quoted)) for quoted in LISTED.findall(prompt)]
        return [number for number, text in enumerate(listed) if _cut_match(text, wanted)]

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        judge = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                prompt = body["messages"][-1]["content"]
                content = json.dumps({"relevant": judge.answer(prompt)})
                payload = json.dumps(
                    {
                        "id": "chatcmpl-labels",
                        "object": "chat.completion",
                        "model": body.get("model", ""),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


def _cut_match(text: str, contents: Iterable[str]) -> bool:
    """The judge reads memories cut at a length: a listed text matches its full content."""
    return any(content.startswith(text) for content in contents)
