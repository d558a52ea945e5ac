// The two messages and the one RPC of grpc.health.v1 that health() needs,
// declared with the protobuf-es runtime. scripts/gen-protos.sh regenerates
// src/gen from the recalld contract and the google.rpc files only (and
// deletes anything else there), so this small descriptor lives here instead;
// it matches grpc/health/v1/health.proto field for field.
import { create, createFileRegistry, type Message } from "@bufbuild/protobuf";
import { type GenMessage, type GenService, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

const HEALTH_PROTO = "grpc/health/v1/health.proto";

const file = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: HEALTH_PROTO,
    package: "grpc.health.v1",
    syntax: "proto3",
    messageType: [
      {
        name: "HealthCheckRequest",
        field: [
          {
            name: "service",
            jsonName: "service",
            number: 1,
            label: FieldDescriptorProto_Label.OPTIONAL,
            type: FieldDescriptorProto_Type.STRING,
          },
        ],
      },
      {
        name: "HealthCheckResponse",
        field: [
          {
            name: "status",
            jsonName: "status",
            number: 1,
            label: FieldDescriptorProto_Label.OPTIONAL,
            type: FieldDescriptorProto_Type.ENUM,
            typeName: ".grpc.health.v1.HealthCheckResponse.ServingStatus",
          },
        ],
        enumType: [
          {
            name: "ServingStatus",
            value: [
              { name: "UNKNOWN", number: 0 },
              { name: "SERVING", number: 1 },
              { name: "NOT_SERVING", number: 2 },
              { name: "SERVICE_UNKNOWN", number: 3 },
            ],
          },
        ],
      },
    ],
    service: [
      {
        name: "Health",
        method: [
          {
            name: "Check",
            inputType: ".grpc.health.v1.HealthCheckRequest",
            outputType: ".grpc.health.v1.HealthCheckResponse",
          },
        ],
      },
    ],
  }),
  () => undefined,
).getFile(HEALTH_PROTO)!;

/** grpc.health.v1.HealthCheckRequest: `service` "" asks about the whole server. */
export type HealthCheckRequest = Message<"grpc.health.v1.HealthCheckRequest"> & { service: string };
export const HealthCheckRequestSchema: GenMessage<HealthCheckRequest> = messageDesc(file, 0);

/** grpc.health.v1.HealthCheckResponse; `status` is a ServingStatus number. */
export type HealthCheckResponse = Message<"grpc.health.v1.HealthCheckResponse"> & { status: number };
export const HealthCheckResponseSchema: GenMessage<HealthCheckResponse> = messageDesc(file, 1);

/** The grpc.health.v1.Health service (Check only; Watch and List are not used). */
export const Health: GenService<{
  check: { methodKind: "unary"; input: typeof HealthCheckRequestSchema; output: typeof HealthCheckResponseSchema };
}> = serviceDesc(file, 0);

/** A server's serving status, as grpc.health.v1 names it. */
export type HealthStatus = "UNKNOWN" | "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";

const STATUS_NAMES: readonly HealthStatus[] = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"];

/** The name of a ServingStatus number; numbers a newer server might add read as UNKNOWN. */
export function healthStatusName(status: number): HealthStatus {
  return STATUS_NAMES[status] ?? "UNKNOWN";
}
