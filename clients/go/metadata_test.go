package recalld

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

func TestBuildMetadata(t *testing.T) {
	md, err := BuildMetadata("k-123", "")
	if err != nil || md.Get("authorization")[0] != "Bearer k-123" || len(md.Get(TenantHeader)) != 0 {
		t.Fatalf("api key: %v %v", md, err)
	}
	md, err = BuildMetadata("", "acme")
	if err != nil || md.Get(TenantHeader)[0] != "acme" || len(md.Get("authorization")) != 0 {
		t.Fatalf("tenant: %v %v", md, err)
	}
	if md, _ = BuildMetadata("", ""); len(md) != 0 {
		t.Fatalf("empty: %v", md)
	}
	if _, err = BuildMetadata("k", "acme"); err == nil {
		t.Fatal("key and tenant together must fail")
	}
	if _, err = BuildMetadata("k\r\nx-evil: 1", ""); err == nil {
		t.Fatal("line breaks must fail")
	}
}

func spanContext(t *testing.T, sampled bool) context.Context {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	flags := trace.TraceFlags(0)
	if sampled {
		flags = trace.FlagsSampled
	}
	ts, _ := trace.ParseTraceState("vendor=abc")
	return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: flags, TraceState: ts,
	}))
}

func TestInjectTraceContext(t *testing.T) {
	ctx := metadata.AppendToOutgoingContext(spanContext(t, true), "x-other", "kept")
	md, _ := metadata.FromOutgoingContext(InjectTraceContext(ctx, nil))
	if got := md.Get("traceparent"); len(got) != 1 || got[0] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Fatalf("traceparent = %v", got)
	}
	if md.Get("tracestate")[0] != "vendor=abc" || md.Get("x-other")[0] != "kept" {
		t.Fatalf("metadata = %v", md)
	}

	md, _ = metadata.FromOutgoingContext(InjectTraceContext(spanContext(t, false), propagation.TraceContext{}))
	if got := md.Get("traceparent"); len(got) != 1 || got[0] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00" {
		t.Fatalf("unsampled traceparent = %v", got)
	}

	md, _ = metadata.FromOutgoingContext(InjectTraceContext(context.Background(), nil))
	if len(md.Get("traceparent")) != 0 {
		t.Fatal("no span, no traceparent")
	}
}
