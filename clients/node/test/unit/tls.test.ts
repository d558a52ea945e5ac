// The client against real HTTP/2 servers in this process: TLS and plaintext
// gRPC servers (connect-node's server side) serving grpc.health.v1, to check
// health(), how a TLS mismatch is reported in both directions, and that
// close() ends the connection cleanly.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { constants, createSecureServer, createServer, type Http2Server, type Http2Session } from "node:http2";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Code, Health, RecalldClient, RecalldError } from "../../src/index.js";

/** A self-signed certificate for 127.0.0.1, made with the openssl CLI; undefined without it. */
function selfSigned(): { cert: string; key: string } | undefined {
  const dir = mkdtempSync(join(tmpdir(), "recalld-tls-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore", timeout: 20_000 },
    );
    return { cert: readFileSync(join(dir, "cert.pem"), "utf8"), key: readFileSync(join(dir, "key.pem"), "utf8") };
  } catch {
    return undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const pem = selfSigned();

interface GrpcServer {
  address: string;
  /** The HTTP/2 error code of every GOAWAY the server received, in order. */
  goaways: number[];
  /** Check calls the server has finished answering. */
  answered: number;
  close(): Promise<void>;
}

/**
 * A gRPC server on 127.0.0.1 (TLS with `pem`, or plaintext) whose
 * grpc.health.v1 Check answers SERVING for "" and NOT_SERVING for any other
 * service, after `delayMs`.
 */
async function grpcServer(tls: boolean, delayMs = 0): Promise<GrpcServer> {
  const state = { goaways: [] as number[], answered: 0 };
  const handler = connectNodeAdapter({
    grpc: true,
    grpcWeb: false,
    connect: false,
    routes: (router) =>
      router.service(Health, {
        async check(req) {
          await sleep(delayMs);
          state.answered++;
          return { status: req.service === "" ? 1 : 2 };
        },
      }),
  });
  const server: Http2Server = tls
    ? createSecureServer({ cert: pem!.cert, key: pem!.key, allowHTTP1: false }, handler)
    : createServer(handler);
  const sessions = new Set<Http2Session>();
  server.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.on("goaway", (code: number) => state.goaways.push(code));
    session.on("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${(server.address() as { port: number }).port}`,
    get goaways() {
      return state.goaways;
    },
    get answered() {
      return state.answered;
    },
    close: async () => {
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("TLS", { skip: pem ? false : "the openssl CLI is not available" }, () => {
  it("verifies the server against the given CA", async () => {
    // A minimal gRPC endpoint: every call ends with NOT_FOUND in the trailers.
    const seen: string[] = [];
    const server = createSecureServer({ cert: pem!.cert, key: pem!.key, allowHTTP1: false });
    server.on("stream", (stream, headers) => {
      seen.push(String(headers["x-recalld-tenant"] ?? ""));
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "5", "grpc-message": "no such memory" }));
      stream.resume();
      stream.on("end", () => stream.end());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const trusted = new RecalldClient({ address: `127.0.0.1:${port}`, tls: { ca: pem!.cert }, tenant: "t1" });
    const untrusted = new RecalldClient({ address: `127.0.0.1:${port}`, tls: true, retry: { maxAttempts: 1 } });
    try {
      assert.equal(trusted.target.baseUrl, `https://127.0.0.1:${port}`);
      await assert.rejects(
        trusted.get({ userId: "u", id: "x" }, { timeoutMs: 5000 }),
        (e: unknown) => e instanceof RecalldError && e.code === Code.NotFound && e.rawMessage === "no such memory",
      );
      assert.deepEqual(seen, ["t1"]);
      await assert.rejects(
        untrusted.get({ userId: "u", id: "x" }, { timeoutMs: 5000 }),
        (e: unknown) => e instanceof RecalldError && e.code !== Code.NotFound,
      );
      assert.equal(seen.length, 1, "no request reaches a server whose certificate is not trusted");
    } finally {
      await Promise.all([trusted.close(), untrusted.close()]);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("health()", { skip: pem ? false : "the openssl CLI is not available" }, () => {
  it("returns the serving status, NOT_SERVING as a value", async () => {
    const server = await grpcServer(true);
    const client = new RecalldClient({ address: server.address, tls: { ca: pem!.cert } });
    try {
      assert.equal(await client.health(), "SERVING");
      assert.equal(await client.health({ service: "recalld.v1.Unknown" }), "NOT_SERVING");
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("rejects with RecalldError when the server cannot be reached", async () => {
    const probe = createNetServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const client = new RecalldClient({ address: `127.0.0.1:${port}` });
    try {
      await assert.rejects(client.health({ timeoutMs: 3000 }), (e: unknown) => {
        assert.ok(e instanceof RecalldError && e.code === Code.Unavailable, String(e));
        assert.doesNotMatch(e.message, /TLS mismatch/, "a closed port is not a TLS mismatch");
        return true;
      });
    } finally {
      await client.close();
    }
  });
});

describe("TLS mismatch", { skip: pem ? false : "the openssl CLI is not available" }, () => {
  it("is UNAVAILABLE with a hint when a TLS client meets a plaintext server", async () => {
    const server = await grpcServer(false);
    const client = new RecalldClient({ address: server.address, tls: { ca: pem!.cert } });
    try {
      await assert.rejects(client.health({ timeoutMs: 5000 }), (e: unknown) => {
        assert.ok(e instanceof RecalldError, String(e));
        assert.equal(e.codeName, "UNAVAILABLE", e.message);
        assert.match(e.message, /TLS mismatch\? the client uses TLS and the server may be plaintext; pass tls: false/);
        return true;
      });
      // A read is retried on UNAVAILABLE; the hint survives the retries.
      await assert.rejects(client.list({ userId: "u" }, { timeoutMs: 5000 }), /UNAVAILABLE.*TLS mismatch/);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("is UNAVAILABLE with a hint when a plaintext client meets a TLS server", async () => {
    const server = await grpcServer(true);
    // 127.0.0.1 is loopback, so the client uses plaintext by default.
    const client = new RecalldClient({ address: server.address });
    try {
      await assert.rejects(client.health({ timeoutMs: 5000 }), (e: unknown) => {
        assert.ok(e instanceof RecalldError, String(e));
        assert.equal(e.codeName, "UNAVAILABLE", e.message);
        assert.match(
          e.message,
          /TLS mismatch\? the client uses plaintext and the server may require TLS; pass tls: true/,
        );
        return true;
      });
      await assert.rejects(client.list({ userId: "u" }, { timeoutMs: 5000 }), /UNAVAILABLE.*TLS mismatch/);
      assert.equal(server.answered, 0);
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe("close()", () => {
  it("lets the call in flight finish and ends the connection with GOAWAY NO_ERROR", async () => {
    const server = await grpcServer(false, 300);
    const client = new RecalldClient({ address: server.address });
    try {
      const inFlight = client.health();
      await sleep(100); // the call is now waiting for the server's answer
      await client.close();
      assert.equal(await inFlight, "SERVING", "the call was not cut");
      // connect-node's abort() would have sent NGHTTP2_CANCEL (8): a gRPC server logs `Got goaway [8]`.
      const clean = (codes: number[]) => codes.length > 0 && codes.every((c) => c === constants.NGHTTP2_NO_ERROR);
      assert.ok(clean(server.goaways), `GOAWAY codes ${server.goaways}`);
      // Calls made afterwards connect again, and close again cleanly.
      const before = server.goaways.length;
      assert.equal(await client.health(), "SERVING");
      await client.close();
      assert.ok(clean(server.goaways.slice(before)), `GOAWAY codes ${server.goaways}`);
    } finally {
      await server.close();
    }
  });
});
