import type { Interceptor } from "@connectrpc/connect";
import { createContextKey } from "@connectrpc/connect";
import {
  type Context,
  isSpanContextValid,
  context as otelContext,
  propagation,
  type TextMapSetter,
  trace,
} from "@opentelemetry/api";

/** Credentials and tenant selection sent with every call. */
export interface MetadataOptions {
  /**
   * API key, sent as `authorization: Bearer <key>`; the server derives the
   * tenant from it. RecalldClient reads `RECALLD_API_KEY` when it is not given
   * (undefined); `""` means no key.
   */
  apiKey?: string | undefined;
  /**
   * Tenant for a server running without keys (loopback development), sent as
   * `x-recalld-tenant`. Not allowed together with `apiKey`.
   */
  tenant?: string | undefined;
}

export const AUTHORIZATION_HEADER = "authorization";
export const TENANT_HEADER = "x-recalld-tenant";

/** The request metadata for `options`; throws TypeError on contradictory options. */
export function buildMetadata(options: MetadataOptions): Record<string, string> {
  const md: Record<string, string> = {};
  const apiKey = options.apiKey ?? "";
  const tenant = options.tenant ?? "";
  if (apiKey !== "" && tenant !== "") {
    throw new TypeError("recalld: `tenant` is only for servers without keys; with `apiKey` the key decides the tenant");
  }
  if (/[\r\n]/.test(apiKey) || /[\r\n]/.test(tenant)) {
    throw new TypeError("recalld: apiKey and tenant must not contain line breaks");
  }
  if (apiKey !== "") md[AUTHORIZATION_HEADER] = `Bearer ${apiKey}`;
  if (tenant !== "") md[TENANT_HEADER] = tenant;
  return md;
}

/** An interceptor that adds `buildMetadata(options)` to every request. */
export function metadataInterceptor(options: MetadataOptions): Interceptor {
  const md = buildMetadata(options);
  return (next) => async (req) => {
    for (const [k, v] of Object.entries(md)) req.header.set(k, v);
    return next(req);
  };
}

/**
 * Carries the OpenTelemetry context of a call to the interceptor, so that
 * propagation works even when no OpenTelemetry context manager is installed.
 */
export const otelContextKey = createContextKey<Context | undefined>(undefined, {
  description: "OpenTelemetry context of the call",
});

const headersSetter: TextMapSetter<Headers> = {
  set(carrier, key, value) {
    carrier.set(key, value);
  },
};

/**
 * Writes the W3C `traceparent` (and `tracestate`) of `ctx` into `headers`.
 *
 * The globally registered propagator runs first (so baggage or other formats
 * configured by the application are sent too); if it wrote no `traceparent`
 * (none registered) and `ctx` holds a valid span, the W3C header is written
 * directly. Without a valid span nothing is added.
 */
export function injectTraceContext(headers: Headers, ctx: Context = otelContext.active()): void {
  propagation.inject(ctx, headers, headersSetter);
  if (headers.has("traceparent")) return;
  const sc = trace.getSpanContext(ctx);
  if (!sc || !isSpanContextValid(sc)) return;
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, "0");
  headers.set("traceparent", `00-${sc.traceId}-${sc.spanId}-${flags}`);
  const state = sc.traceState?.serialize();
  if (state) headers.set("tracestate", state);
}

/**
 * An interceptor that propagates the call's OpenTelemetry context (from
 * `otelContextKey`, else the active context) as W3C trace context.
 */
export function traceContextInterceptor(): Interceptor {
  return (next) => async (req) => {
    injectTraceContext(req.header, req.contextValues.get(otelContextKey) ?? otelContext.active());
    return next(req);
  };
}
