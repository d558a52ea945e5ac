package recalld

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Metadata keys recalld reads.
const (
	AuthorizationHeader = "authorization"
	TenantHeader        = "x-recalld-tenant"
)

// UserHeader carries RoutingKey(user_id) on every call that names a user, for
// a proxy that sends each user to one replica (docs/routing.md). The server
// does not read it.
const UserHeader = "x-recalld-user"

// BuildMetadata returns the request metadata for an API key (sent as
// "authorization: Bearer <key>"; the server derives the tenant from it) or,
// for a server without keys, a tenant ("x-recalld-tenant"). Giving both is
// an error: with a key the key decides the tenant.
func BuildMetadata(apiKey, tenant string) (metadata.MD, error) {
	if apiKey != "" && tenant != "" {
		return nil, errors.New("recalld: a tenant is only for servers without keys; with an API key the key decides the tenant")
	}
	if strings.ContainsAny(apiKey+tenant, "\r\n") {
		return nil, errors.New("recalld: API key and tenant must not contain line breaks")
	}
	md := metadata.MD{}
	if apiKey != "" {
		md.Set(AuthorizationHeader, "Bearer "+apiKey)
	}
	if tenant != "" {
		md.Set(TenantHeader, tenant)
	}
	return md, nil
}

// InjectTraceContext adds the W3C trace context of ctx to its outgoing gRPC
// metadata. The propagator (the global OpenTelemetry one when nil) runs
// first, so that baggage or other configured formats are sent too; if it
// wrote no "traceparent" (the global propagator is a no-op until the
// application sets one) and ctx holds a valid span, the W3C TraceContext
// propagator writes it.
func InjectTraceContext(ctx context.Context, prop propagation.TextMapPropagator) context.Context {
	if prop == nil {
		prop = otel.GetTextMapPropagator()
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	carrier := propagation.HeaderCarrier{}
	prop.Inject(ctx, carrier)
	if carrier.Get("traceparent") == "" {
		propagation.TraceContext{}.Inject(ctx, carrier)
	}
	if len(carrier) == 0 {
		return ctx
	}
	for _, k := range carrier.Keys() {
		md.Set(strings.ToLower(k), carrier.Get(k))
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// metadataInterceptor adds md, UserHeader for a request with a user_id, and
// the trace context to every unary call.
func metadataInterceptor(md metadata.MD, prop propagation.TextMapPropagator) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		add := md
		if u, ok := req.(userRequest); ok && u.GetUserId() != "" {
			add = metadata.Join(md, metadata.Pairs(UserHeader, RoutingKey(u.GetUserId())))
		}
		if len(add) > 0 {
			out, _ := metadata.FromOutgoingContext(ctx)
			ctx = metadata.NewOutgoingContext(ctx, metadata.Join(out, add))
		}
		return invoker(InjectTraceContext(ctx, prop), method, req, reply, cc, opts...)
	}
}
