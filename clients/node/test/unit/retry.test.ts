import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  backoffMs,
  Code,
  DEFAULT_RETRY_POLICY,
  isIdempotent,
  MemoryService,
  type MethodName,
  RETRY_SAFE_RPCS,
  SessionService,
  shouldRetry,
} from "../../src/index.js";

describe("retry policy", () => {
  it("treats reads as idempotent, Write only with a request_id, Update/Forget never", () => {
    const cases: [MethodName, { requestId?: string }, boolean][] = [
      ["Recall", {}, true],
      ["GetProfile", {}, true],
      ["Get", {}, true],
      ["List", {}, true],
      ["Write", {}, false],
      ["Write", { requestId: "" }, false],
      ["Write", { requestId: "req-1" }, true],
      ["Update", {}, false],
      ["Forget", {}, false],
      ["History", {}, true],
      ["ListConflicts", {}, true],
      ["Restore", {}, false],
      ["Confirm", {}, false],
      ["ResolveConflict", {}, false],
      ["Consolidate", {}, false],
      ["AppendMessages", {}, false],
      ["AppendMessages", { requestId: "req-1" }, true],
      ["GetContext", {}, true],
      ["GetSession", {}, true],
      ["ListSessions", {}, true],
      ["EndSession", {}, false],
    ];
    for (const [method, request, want] of cases) {
      assert.equal(isIdempotent(method, request), want, `${method} ${JSON.stringify(request)}`);
    }
  });

  it("reads the retry-safe RPCs from the contract's idempotency levels", () => {
    assert.deepEqual([...RETRY_SAFE_RPCS].sort(), [
      "Get",
      "GetContext",
      "GetProfile",
      "GetSession",
      "History",
      "List",
      "ListConflicts",
      "ListSessions",
      "Recall",
    ]);
    assert.ok(
      [...MemoryService.methods, ...SessionService.methods].every(
        (m) => RETRY_SAFE_RPCS.has(m.name) || !isIdempotent(m.name as MethodName, {}),
      ),
    );
  });

  it("retries UNAVAILABLE only", () => {
    const p = DEFAULT_RETRY_POLICY;
    assert.equal(shouldRetry("Get", {}, Code.Unavailable, 1, p), true);
    assert.equal(shouldRetry("GetProfile", {}, Code.Unavailable, 1, p), true);
    for (const code of [
      Code.DeadlineExceeded,
      Code.Internal,
      Code.Aborted,
      Code.ResourceExhausted,
      Code.InvalidArgument,
      Code.NotFound,
      Code.Unknown,
      Code.Canceled,
    ]) {
      assert.equal(shouldRetry("Get", {}, code, 1, p), false, `code ${code}`);
    }
    assert.equal(shouldRetry("Update", {}, Code.Unavailable, 1, p), false);
    assert.equal(shouldRetry("Forget", {}, Code.Unavailable, 1, p), false);
    assert.equal(shouldRetry("Write", {}, Code.Unavailable, 1, p), false);
    assert.equal(shouldRetry("Write", { requestId: "r" }, Code.Unavailable, 1, p), true);
  });

  it("stops after maxAttempts", () => {
    const p = { ...DEFAULT_RETRY_POLICY, maxAttempts: 3 };
    assert.equal(shouldRetry("Recall", {}, Code.Unavailable, 2, p), true);
    assert.equal(shouldRetry("Recall", {}, Code.Unavailable, 3, p), false);
    assert.equal(shouldRetry("Recall", {}, Code.Unavailable, 1, { ...p, maxAttempts: 1 }), false);
  });

  it("backs off exponentially, capped, with jitter below the cap", () => {
    const p = DEFAULT_RETRY_POLICY;
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7].map((r) => backoffMs(r, p, () => 0)),
      [100, 200, 400, 800, 1600, 2000, 2000],
    );
    assert.deepEqual(
      [1, 2, 6].map((r) => backoffMs(r, p, () => 0.999999)),
      [80, 160, 1600],
    );
    for (let i = 0; i < 100; i++) {
      const d = backoffMs(3, p);
      assert.ok(d >= 320 && d <= 400, String(d));
    }
  });
});
