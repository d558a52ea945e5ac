// The standard gRPC health check (grpc.health.v1), on the Client's connection.

package recalld

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health/grpc_health_v1"
)

// HealthStatus is the serving status of grpc.health.v1.
type HealthStatus = grpc_health_v1.HealthCheckResponse_ServingStatus

// Serving statuses Health returns.
const (
	HealthUnknown    = grpc_health_v1.HealthCheckResponse_UNKNOWN
	HealthServing    = grpc_health_v1.HealthCheckResponse_SERVING
	HealthNotServing = grpc_health_v1.HealthCheckResponse_NOT_SERVING
)

// Health asks the server's standard gRPC health service
// (grpc.health.v1.Health/Check, service "": the whole server) on the client's
// connection (over several replicas, the next one in turn). NOT_SERVING and UNKNOWN are answers, returned without an error;
// a call that fails (server down, wrong credentials, deadline) returns an
// *Error. Retried on UNAVAILABLE like the other reads.
func (c *Client) Health(ctx context.Context, opts ...grpc.CallOption) (HealthStatus, error) {
	res, err := invoke(ctx, c, MethodHealth, false, func(ctx context.Context) (*grpc_health_v1.HealthCheckResponse, error) {
		return c.health.Check(ctx, &grpc_health_v1.HealthCheckRequest{}, opts...)
	})
	if err != nil {
		return HealthUnknown, err
	}
	return res.GetStatus(), nil
}
