// Package recalld is a thin Go client for recalld, the gRPC memory backend
// for AI agents.
//
// It wraps the generated recalld.v1.MemoryService and recalld.v1.SessionService
// stubs (package recalldv1 under gen/recalld/v1), both on one connection (or
// one per replica, each user's calls routed to one of them: WithRouting), with
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
// The module lives in a subdirectory of the repository, so its releases are
// tagged clients/go/vX.Y.Z:
//
//	go get github.com/recalld/recalld/clients/go@v0.1.0
package recalld
