// A toy agent loop against a live recalld server: before answering each turn
// it recalls what it knows about the user; after answering it writes down
// what the turn taught it. Run with a server on RECALLD_ADDR (default
// 127.0.0.1:50051): `npm run example`.
import { createHash, randomUUID } from "node:crypto";
import { MemoryType, RecalldClient, RecalldError, WriteOutcome } from "../src/index.js";

const address = process.env.RECALLD_ADDR ?? "127.0.0.1:50051";
const userId = process.env.RECALLD_USER ?? `demo-${randomUUID().slice(0, 8)}`;

const turns = [
  "Hi! I live in Hangzhou and I prefer oat milk in my coffee.",
  "我最喜欢的茶是西湖龙井。",
  "Can you order me a coffee the way I like it?",
  "我喜欢喝什么茶？",
];

function isQuestion(text: string): boolean {
  return /[?？]\s*$/.test(text);
}

async function main(): Promise<void> {
  const client = new RecalldClient({ address, tenant: process.env.RECALLD_TENANT });
  try {
    for (const turn of turns) {
      console.log(`user  > ${turn}`);
      // 1. Recall before answering (5 s default deadline, retried if the server is briefly unavailable).
      const recalled = await client.recall({ userId, query: turn, topK: 3 });
      const known = recalled.items.map((i) => i.memory?.content ?? "");
      // 2. Answer (a real agent would put `known` into its LLM prompt).
      console.log(
        known.length > 0
          ? `agent > From what I remember: ${known.map((k) => `"${k}"`).join("; ")}`
          : "agent > Nice to meet you! I'll remember that.",
      );
      // 3. Learn: statements become memories. The request_id makes the write safe to retry.
      if (!isQuestion(turn)) {
        const requestId = createHash("sha256").update(`${userId}\n${turn}`).digest("hex").slice(0, 32);
        const res = await client.write({
          userId,
          requestId,
          memories: [{ type: MemoryType.FACT, content: turn, source: "chat" }],
        });
        for (const r of res.results) console.log(`        (memory ${r.id}: ${WriteOutcome[r.outcome]})`);
      }
    }
  } finally {
    await client.close();
  }
}

main().catch((err: unknown) => {
  const e = RecalldError.from(err);
  console.error(`agent loop failed: ${e.message}`, e.fieldViolations);
  process.exitCode = 1;
});
