import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createSecureServer } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Code, RecalldClient, RecalldError } from "../../src/index.js";

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
      trusted.close();
      untrusted.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
