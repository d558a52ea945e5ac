import type * as http2 from "node:http2";
import { Code, ConnectError, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

/** How long a graceful close waits for the server to close the connection after our GOAWAY. */
const CLOSE_TIMEOUT_MS = 30_000;

/** NGHTTP2_CANCEL: how a stream ends when its session goes away under it. */
const H2_CANCEL = 8;

// What OpenSSL reports when the peer answers a ClientHello with something that
// is not TLS: a plaintext HTTP/2 server sends its SETTINGS frame first, which
// reads as a record with a bad version or an absurd length.
const NOT_TLS_CODES = new Set([
  "ERR_SSL_WRONG_VERSION_NUMBER",
  "ERR_SSL_PACKET_LENGTH_TOO_LONG",
  "ERR_SSL_HTTP_REQUEST",
]);

/** The hint a TLS client adds when the server answered in plaintext. */
export const TLS_AGAINST_PLAINTEXT_HINT =
  "TLS mismatch? the client uses TLS and the server may be plaintext; pass tls: false for a plaintext server";
/** The hint a plaintext client adds when the server never spoke HTTP/2 (it expected a TLS handshake). */
export const PLAINTEXT_AGAINST_TLS_HINT =
  "TLS mismatch? the client uses plaintext and the server may require TLS; pass tls: true (or tls: { ca }) for a TLS server";

/**
 * An Http2SessionManager that can close its connections gracefully and tell
 * a TLS mismatch from other connection failures.
 *
 * connect-node's own `abort()` destroys the session with HTTP/2 error code
 * CANCEL, which cuts in-flight calls and makes a gRPC server log
 * `Got goaway [8]`. `closeGracefully()` instead sends GOAWAY with NO_ERROR,
 * lets the open streams finish and resolves once every connection is closed.
 */
export class RecalldSessionManager extends Http2SessionManager {
  private readonly sessions = new Set<http2.Http2Session>();
  /** The last stream ended because its session closed before the server acknowledged our SETTINGS. */
  private serverSpokeNoHttp2 = false;

  override async request(
    method: string,
    path: string,
    headers: http2.OutgoingHttpHeaders,
    options: Omit<http2.ClientSessionRequestOptions, "signal">,
  ): Promise<http2.ClientHttp2Stream> {
    const stream = await super.request(method, path, headers, options);
    const session = stream.session;
    if (session !== undefined && !this.sessions.has(session)) {
      this.sessions.add(session);
      session.once("close", () => this.sessions.delete(session));
    }
    // Registered before connect-node's own listeners, so the verdict is in
    // place by the time the call's error reaches explain().
    stream.once("response", () => {
      this.serverSpokeNoHttp2 = false;
    });
    stream.once("close", () => {
      if (stream.rstCode === H2_CANCEL && session?.pendingSettingsAck === true) this.serverSpokeNoHttp2 = true;
    });
    return stream;
  }

  /** Sends GOAWAY (NO_ERROR) on every connection, waits for open streams, resolves when all are closed. */
  async closeGracefully(): Promise<void> {
    const open = [...this.sessions].filter((s) => !s.destroyed);
    await Promise.all(
      open.map(
        (session) =>
          new Promise<void>((resolve) => {
            // connect-node unrefs a session when its last stream ends, so
            // nothing would keep the process alive until the server has
            // closed its side: close() would never settle. This timer does,
            // and bounds the wait for a server that never hangs up.
            const timer = setTimeout(() => session.destroy(), CLOSE_TIMEOUT_MS);
            session.once("close", () => {
              clearTimeout(timer);
              resolve();
            });
            session.close();
          }),
      ),
    );
    // Nothing is open any more; this resets the manager (and cancels a
    // connection still being opened, which no call is waiting for).
    this.abort();
  }

  /**
   * `err` as an UNAVAILABLE error with a hint when it looks like a TLS
   * mismatch; otherwise `err` unchanged.
   */
  explain(err: unknown, secure: boolean, signal: AbortSignal | undefined): unknown {
    if (signal?.aborted) return err;
    const ce = ConnectError.from(err);
    if (secure) {
      const notTls = causes(err).find((e) => NOT_TLS_CODES.has(String((e as { code?: unknown }).code)));
      if (notTls === undefined) return err;
      const reason = (notTls as { reason?: unknown }).reason;
      const what = typeof reason === "string" && reason !== "" ? reason : ce.rawMessage;
      return new ConnectError(
        `TLS handshake with ${this.authority} failed: ${what} (${TLS_AGAINST_PLAINTEXT_HINT})`,
        Code.Unavailable,
        undefined,
        undefined,
        err,
      );
    }
    if (!this.serverSpokeNoHttp2 || ![Code.Canceled, Code.Unavailable, Code.Internal].includes(ce.code)) return err;
    return new ConnectError(
      `connection to ${this.authority} closed before the server spoke HTTP/2 (${PLAINTEXT_AGAINST_TLS_HINT})`,
      Code.Unavailable,
      undefined,
      undefined,
      err,
    );
  }
}

function causes(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = err; e instanceof Error && !chain.includes(e); e = e.cause) chain.push(e);
  return chain;
}

/** One connection (one HTTP/2 session) to one address, and how to close it. */
export interface Connection {
  transport: Transport;
  close(): Promise<void>;
}

/**
 * A gRPC transport over one RecalldSessionManager whose failures are passed
 * through `explain()`, so a TLS mismatch surfaces as UNAVAILABLE with a hint.
 */
export function connect(
  baseUrl: string,
  secure: boolean,
  nodeOptions: http2.ClientSessionOptions | http2.SecureClientSessionOptions,
  interceptors: Interceptor[],
): Connection {
  const sessionManager = new RecalldSessionManager(
    baseUrl,
    { pingIntervalMs: 30_000, idleConnectionTimeoutMs: 5 * 60_000 },
    nodeOptions,
  );
  const inner = createGrpcTransport({ baseUrl, sessionManager, interceptors });
  const transport: Transport = {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      try {
        return await inner.unary(method, signal, timeoutMs, header, input, contextValues);
      } catch (e) {
        throw sessionManager.explain(e, secure, signal);
      }
    },
    async stream(method, signal, timeoutMs, header, input, contextValues) {
      try {
        return await inner.stream(method, signal, timeoutMs, header, input, contextValues);
      } catch (e) {
        throw sessionManager.explain(e, secure, signal);
      }
    },
  };
  return { transport, close: () => sessionManager.closeGracefully() };
}
