import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createTraceState, ROOT_CONTEXT, TraceFlags, trace } from "@opentelemetry/api";
import { buildMetadata, injectTraceContext } from "../../src/index.js";

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const SPAN_ID = "b7ad6b7169203331";

describe("buildMetadata", () => {
  it("sends the API key as a bearer token", () => {
    assert.deepEqual(buildMetadata({ apiKey: "k-123" }), { authorization: "Bearer k-123" });
  });
  it("sends the tenant when there is no key", () => {
    assert.deepEqual(buildMetadata({ tenant: "acme" }), { "x-recalld-tenant": "acme" });
  });
  it("sends nothing by default", () => {
    assert.deepEqual(buildMetadata({}), {});
    assert.deepEqual(buildMetadata({ apiKey: "", tenant: "" }), {});
  });
  it("rejects a tenant next to a key, and line breaks", () => {
    assert.throws(() => buildMetadata({ apiKey: "k", tenant: "acme" }), TypeError);
    assert.throws(() => buildMetadata({ apiKey: "k\r\nx-evil: 1" }), TypeError);
  });
});

describe("injectTraceContext", () => {
  it("writes W3C traceparent and tracestate from the context's span", () => {
    const ctx = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      traceFlags: TraceFlags.SAMPLED,
      traceState: createTraceState("vendor=abc"),
    });
    const headers = new Headers();
    injectTraceContext(headers, ctx);
    assert.equal(headers.get("traceparent"), `00-${TRACE_ID}-${SPAN_ID}-01`);
    assert.equal(headers.get("tracestate"), "vendor=abc");
  });
  it("writes the unsampled flag", () => {
    const ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: TraceFlags.NONE });
    const headers = new Headers();
    injectTraceContext(headers, ctx);
    assert.equal(headers.get("traceparent"), `00-${TRACE_ID}-${SPAN_ID}-00`);
  });
  it("adds nothing without a valid span", () => {
    const headers = new Headers();
    injectTraceContext(headers, ROOT_CONTEXT);
    assert.equal(headers.has("traceparent"), false);
    const invalid = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: "0".repeat(32),
      spanId: "0".repeat(16),
      traceFlags: 0,
    });
    injectTraceContext(headers, invalid);
    assert.equal(headers.has("traceparent"), false);
  });
});
