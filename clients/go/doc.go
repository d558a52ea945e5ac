// Package recalld is a thin Go client for recalld, the gRPC memory backend
// for AI agents.
//
// It wraps the generated recalld.v1.MemoryService and recalld.v1.SessionService
// stubs (package recalldv1 under gen/recalld/v1), both on one connection, with
// what every caller needs: credentials or a tenant
// in the request metadata, default deadlines, retries of UNAVAILABLE where a
// call is idempotent, W3C trace-context propagation from the OpenTelemetry
// context, and errors that expose the gRPC code, the google.rpc.ErrorInfo
// reason and the google.rpc.BadRequest field violations.
//
//	c, err := recalld.New("127.0.0.1:50051")
//	if err != nil { ... }
//	defer c.Close()
//	res, err := c.Recall(ctx, &recalld.RecallRequest{UserId: "u1", Query: "coffee?"})
//
// The module path recalld.invalid/clients/go is a placeholder (.invalid is a
// reserved top-level domain, so it can never collide with a real module); it
// will be replaced by the public repository path once there is one.
package recalld
