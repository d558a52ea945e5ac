/** Session messages as a caller may give them: a generated Message or a plain `{ role, content }`. */

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { type Message, MessageRole, type MessageSchema } from "./gen/recalld/v1/session_service_pb.js";

/** A message role by its name, as a convenience over the MessageRole enum. */
export type MessageRoleName = "user" | "assistant" | "system" | "tool";

const ROLES: Readonly<Record<MessageRoleName, MessageRole>> = {
  user: MessageRole.USER,
  assistant: MessageRole.ASSISTANT,
  system: MessageRole.SYSTEM,
  tool: MessageRole.TOOL,
};

/**
 * A message to append: a generated Message, or a plain `{ role, content }`
 * whose role is a MessageRole or its name ("user", "assistant", ...).
 */
export type MessageInput =
  | Message
  | {
      role: MessageRole | MessageRoleName;
      content: string;
      /** When it was said; defaults to the time it was appended. */
      createdAt?: MessageInitShape<typeof TimestampSchema> | undefined;
    };

/** AppendMessagesRequest with messages given as MessageInput. */
export interface AppendMessagesInput {
  userId: string;
  sessionId: string;
  messages: MessageInput[];
  /** Turn the user messages into memories (through the write rules). */
  extract?: boolean | undefined;
  /** With extract: return before extraction finishes. */
  extractAsync?: boolean | undefined;
  /** Idempotency key: a retry with it appends nothing twice. */
  requestId?: string | undefined;
  agentScope?: string | undefined;
}

/** The Message init for a MessageInput (role names become MessageRole values). */
export function toMessage(message: MessageInput): MessageInitShape<typeof MessageSchema> {
  if ("$typeName" in message) return message;
  const { role, content, createdAt } = message;
  const value = typeof role === "number" ? role : ROLES[role];
  if (value === undefined) throw new TypeError(`recalld: unknown message role ${JSON.stringify(role)}`);
  return createdAt === undefined ? { role: value, content } : { role: value, content, createdAt };
}
