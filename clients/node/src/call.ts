/**
 * One RPC as the client makes it: one deadline over every attempt, UNAVAILABLE
 * retried with backoff where the RPC allows it, and an OpenTelemetry client span
 * around the whole (its context travels in the metadata).
 */

import { setTimeout as sleep } from "node:timers/promises";
import { Code, type CallOptions as ConnectCallOptions, createContextValues } from "@connectrpc/connect";
import { context as otelContext, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { codeName, RecalldError } from "./errors.js";
import { otelContextKey } from "./metadata.js";
import type { CallOptions } from "./options.js";
import { backoffMs, type RetryPolicy } from "./retry.js";
import { definedFields, positive } from "./values.js";
import { VERSION } from "./version.js";

const tracer = trace.getTracer("@recalld/client", VERSION);

/** How one RPC is called: its span name, default deadline and whether UNAVAILABLE may be retried. */
export interface Rpc {
  service: string;
  method: string;
  timeoutMs: number;
  retryable: boolean;
}

/**
 * Calls `fn` until it succeeds, its error may not be retried, the attempts of
 * `policy` run out or the next wait would pass the deadline (`options.timeoutMs`,
 * else the RPC's default). Rejects with RecalldError.
 */
export async function callWithRetries<Req, Res>(
  rpc: Rpc,
  request: Req,
  options: CallOptions | undefined,
  fn: (request: Req, options: ConnectCallOptions) => Promise<Res>,
  policy: RetryPolicy,
): Promise<Res> {
  const timeoutMs = positive(options?.timeoutMs ?? rpc.timeoutMs, "timeoutMs");
  const deadline = Date.now() + timeoutMs;
  const parent = otelContext.active();
  const span = tracer.startSpan(
    `${rpc.service}/${rpc.method}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        "rpc.system": "grpc",
        "rpc.service": rpc.service,
        "rpc.method": rpc.method,
      },
    },
    parent,
  );
  const contextValues = createContextValues().set(otelContextKey, trace.setSpan(parent, span));
  const signal = options?.signal;
  try {
    for (let attempt = 1; ; attempt++) {
      const remaining = deadline - Date.now();
      try {
        if (remaining <= 0) {
          throw new RecalldError({ code: Code.DeadlineExceeded, message: `deadline of ${timeoutMs} ms exceeded` });
        }
        const response = await fn(
          request,
          definedFields({ timeoutMs: remaining, signal, headers: options?.headers, contextValues }),
        );
        span.setAttribute("rpc.grpc.status_code", 0);
        return response;
      } catch (e) {
        const err = RecalldError.from(e);
        const delay = backoffMs(attempt, policy);
        const retry =
          rpc.retryable &&
          err.code === Code.Unavailable &&
          attempt < policy.maxAttempts &&
          !signal?.aborted &&
          Date.now() + delay < deadline;
        if (!retry) throw err;
        span.addEvent("retry", { attempt, "rpc.grpc.status_code": err.code, delay_ms: delay });
        await sleep(delay, undefined, signal === undefined ? undefined : { signal });
      }
    }
  } catch (e) {
    const err = RecalldError.from(e);
    span.setAttribute("rpc.grpc.status_code", err.code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: `${codeName(err.code)}: ${err.rawMessage}` });
    throw err;
  } finally {
    span.end();
  }
}
