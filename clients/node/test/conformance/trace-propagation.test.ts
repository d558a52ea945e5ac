// Trace propagation against a live server: a Recall made inside an
// application span must show up in the server's spans under the same trace.
//
// Needs a server started without API keys with RECALLD_OTEL_TRACES_FILE=<path>
// (it appends one JSON object per finished span to that file), and both
// RECALLD_ADDR and RECALLD_OTEL_TRACES_FILE exported here, e.g.
//   RECALLD_OTEL_TRACES_FILE=/tmp/spans.jsonl recalld serve --host 127.0.0.1 --port 50051 --data-dir /tmp/d
//   RECALLD_ADDR=127.0.0.1:50051 RECALLD_OTEL_TRACES_FILE=/tmp/spans.jsonl npm run test:conformance
// Skipped when either is unset. node --test runs each file in its own
// process, so the global tracer provider and context manager set here stay
// local to this file.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { MemoryType, RecalldClient } from "../../src/index.js";

const addr = process.env.RECALLD_ADDR ?? "";
const tracesFile = process.env.RECALLD_OTEL_TRACES_FILE ?? "";
const missing = [addr === "" && "RECALLD_ADDR", tracesFile === "" && "RECALLD_OTEL_TRACES_FILE"].filter(Boolean);
const skip =
  missing.length > 0
    ? `${missing.join(" and ")} unset: start \`recalld serve\` with RECALLD_OTEL_TRACES_FILE=<path> and export ` +
      "RECALLD_ADDR=host:port and the same RECALLD_OTEL_TRACES_FILE to run the trace propagation test"
    : false;

const RECALL_SPAN = "recalld.v1.MemoryService/Recall";
const POLL_TIMEOUT_MS = 10_000;

/** One line of the server's span file. */
interface ServerSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string;
  name: string;
  attributes: Record<string, unknown>;
}

/** The spans in a JSON Lines file; a missing file is empty, unparsable (partly written) lines are skipped. */
async function readSpans(path: string): Promise<ServerSpan[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  const spans: ServerSpan[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const span = JSON.parse(line) as ServerSpan;
      if (typeof span.trace_id === "string" && typeof span.name === "string") spans.push(span);
    } catch {
      // a line still being written
    }
  }
  return spans;
}

/**
 * Polls `path` until it holds the server's Recall span of `traceId` and at
 * least one `recall.` stage span of that trace, or `timeoutMs` passes; returns
 * every span of the trace seen last.
 */
async function waitForRecallTrace(path: string, traceId: string, timeoutMs: number): Promise<ServerSpan[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const spans = (await readSpans(path)).filter((s) => s.trace_id === traceId);
    const complete = spans.some((s) => s.name === RECALL_SPAN) && spans.some((s) => s.name.startsWith("recall."));
    if (complete || Date.now() >= deadline) return spans;
    await sleep(100);
  }
}

describe("trace propagation", () => {
  it("a Recall inside an application span is traced by the server in the same trace", { skip }, async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const contextManager = new AsyncLocalStorageContextManager().enable();
    assert.ok(context.setGlobalContextManager(contextManager), "another context manager is registered");
    assert.ok(trace.setGlobalTracerProvider(provider), "another tracer provider is registered");
    const run = randomBytes(5).toString("hex");
    const client = new RecalldClient({ address: addr, tenant: `trace-node-${run}` });
    try {
      const userId = `user-${run}`;
      await client.write({
        userId,
        memories: [{ type: MemoryType.PREFERENCE, content: "The user takes their tea with lemon." }],
      });

      const tracer = trace.getTracer("recalld-conformance");
      const appSpan = await tracer.startActiveSpan("conformance.recall", async (span) => {
        try {
          await client.recall({ userId, query: "How does the user take their tea?", topK: 3, minScore: -1 });
        } finally {
          span.end();
        }
        return span;
      });
      const traceId = appSpan.spanContext().traceId;
      assert.match(traceId, /^[0-9a-f]{32}$/);

      // The client's own CLIENT span is a child of the application span, and
      // its span id is the parent the server sees in `traceparent`.
      const clientSpan = exporter
        .getFinishedSpans()
        .find((s) => s.name === RECALL_SPAN && s.spanContext().traceId === traceId);
      assert.ok(clientSpan, `no client span ${RECALL_SPAN} in trace ${traceId}`);
      assert.equal(clientSpan.parentSpanContext?.spanId, appSpan.spanContext().spanId);

      const spans = await waitForRecallTrace(tracesFile, traceId, POLL_TIMEOUT_MS);
      const seen = JSON.stringify(spans.map((s) => s.name));
      const server = spans.find((s) => s.name === RECALL_SPAN);
      assert.ok(
        server,
        `no server span ${RECALL_SPAN} with trace id ${traceId} in ${tracesFile} within ${POLL_TIMEOUT_MS} ms; spans of the trace: ${seen}`,
      );
      assert.match(server.span_id, /^[0-9a-f]{16}$/);
      assert.equal(
        server.parent_span_id,
        clientSpan.spanContext().spanId,
        "the server span's parent is the client span",
      );
      const stages = spans.filter((s) => s.name.startsWith("recall."));
      assert.ok(stages.length > 0, `no recall.* stage span in trace ${traceId}; spans of the trace: ${seen}`);
    } finally {
      await client.close();
      await provider.shutdown();
      trace.disable();
      context.disable();
    }
  });
});
