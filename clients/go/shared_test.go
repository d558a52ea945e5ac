package recalld

// The behaviour every recalld client shares (health, configuration from the
// environment, chunked writes, deadlines, context errors), against in-process
// gRPC servers on loopback ports.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// listen starts a gRPC server on a loopback port with register's services.
func listen(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	return addr
}

func TestHealth(t *testing.T) {
	hs := health.NewServer() // grpc-go's implementation of grpc.health.v1
	addr := listen(t, func(s *grpc.Server) { grpc_health_v1.RegisterHealthServer(s, hs) })
	c := newClient(t, addr)
	ctx := context.Background()
	for _, want := range []HealthStatus{HealthServing, HealthNotServing} {
		hs.SetServingStatus("", want)
		got, err := c.Health(ctx)
		if err != nil || got != want {
			t.Fatalf("Health = %v, %v; want %v", got, err, want)
		}
	}

	down := newClient(t, closedPort(t), WithRetryPolicy(fastRetry))
	got, err := down.Health(ctx)
	var re *Error
	if !errors.As(err, &re) || re.Code != codes.Unavailable || got != HealthUnknown {
		t.Fatalf("Health of a closed port = %v, %v", got, err)
	}
}

func TestConfigurationFromTheEnvironment(t *testing.T) {
	f := &fakeServer{}
	addr := serve(t, f)
	ctx := context.Background()
	call := func(c *Client) metadata.MD {
		t.Helper()
		n := f.n()
		if _, err := c.Get(ctx, &GetRequest{Id: "m"}); err != nil {
			t.Fatal(err)
		}
		return f.md(n)
	}

	t.Setenv(EnvAddress, addr)
	t.Setenv(EnvAPIKey, "from-env")
	md := call(newClient(t, ""))
	if got := md.Get(AuthorizationHeader); len(got) != 1 || got[0] != "Bearer from-env" {
		t.Errorf("RECALLD_ADDR/RECALLD_API_KEY: metadata %v", md)
	}
	md = call(newClient(t, "", WithAPIKey("explicit")))
	if got := md.Get(AuthorizationHeader); len(got) != 1 || got[0] != "Bearer explicit" {
		t.Errorf("an explicit key must win: %v", md)
	}
	md = call(newClient(t, "", WithAPIKey("")))
	if len(md.Get(AuthorizationHeader)) != 0 {
		t.Errorf(`WithAPIKey("") must send no key: %v`, md)
	}
	md = call(newClient(t, "", WithTenant("acme")))
	if len(md.Get(AuthorizationHeader)) != 0 || md.Get(TenantHeader)[0] != "acme" {
		t.Errorf("an explicit tenant must not pick up RECALLD_API_KEY: %v", md)
	}

	t.Setenv(EnvAddress, closedPort(t))
	call(newClient(t, addr)) // the explicit address wins over RECALLD_ADDR

	t.Setenv(EnvAddress, "")
	t.Setenv(EnvAPIKey, "")
	def := newClient(t, "")
	if def.conn.Target() != DefaultAddress || def.cfg.apiKey != "" || def.cfg.tls != nil {
		t.Errorf("defaults: target %q, key %q, TLS %v", def.conn.Target(), def.cfg.apiKey, def.cfg.tls != nil)
	}
	if _, err := New("", WithAPIKey("k"), WithTenant("t")); err == nil {
		t.Error("an API key and a tenant together must be refused")
	}
}

func TestLoopbackTargetsDefaultToPlaintext(t *testing.T) {
	for target, want := range map[string]bool{
		"127.0.0.1:50051":               true,
		"127.9.9.9:50051":               true,
		"localhost:50051":               true,
		"LOCALHOST:1":                   true,
		"[::1]:50051":                   true,
		"::1":                           true,
		"[::ffff:127.0.0.1]:50051":      true,
		"::ffff:127.0.0.1":              true,
		"[::ffff:7f00:1]:50051":         true,
		"dns:///localhost:50051":        true,
		"dns:///[::ffff:127.0.0.1]:1":   true,
		"dns://8.8.8.8/127.0.0.1:50051": true,
		"passthrough:///127.0.0.1:1":    true,
		"ipv4:127.0.0.1:1,127.0.0.2:1":  true,
		"ipv6:[::1]:50051":              true,
		"unix:///tmp/recalld.sock":      true,
		"localhost":                     true,
		"127.0.0.1":                     true,
		"ipv4:127.0.0.1:1,10.0.0.1:1":   false,
		"[::ffff:10.0.0.1]:50051":       false,
		"10.0.0.1:50051":                false,
		"recalld.example.com:443":       false,
		"dns:///recalld.example.com:1":  false,
		"dns://127.0.0.1/example.com:1": false, // the DNS server is not the target
		"localhost.example.com:1":       false,
		"xds:///localhost:1":            false, // unknown scheme: TLS
	} {
		if got := IsLoopbackTarget(target); got != want {
			t.Errorf("IsLoopbackTarget(%q) = %v", target, got)
		}
	}
	for target, wantTLS := range map[string]bool{
		"[::ffff:127.0.0.1]:50051":         false,
		"dns:///localhost:50051":           false,
		"ipv4:127.0.0.1:50051":             false,
		"dns:///recalld.example.com:50051": true,
		"passthrough:///10.1.2.3:50051":    true,
	} {
		if c := newClient(t, target); (c.cfg.tls != nil) != wantTLS {
			t.Errorf("New(%q): TLS %v, want %v", target, c.cfg.tls != nil, wantTLS)
		}
	}
	if c := newClient(t, "dns:///recalld.example.com:50051", WithInsecure()); c.cfg.tls != nil {
		t.Error("WithInsecure must win over the default")
	}
	if c := newClient(t, "[::ffff:127.0.0.1]:50051", WithTLS(nil)); c.cfg.tls == nil {
		t.Error("WithTLS must win over the default")
	}
	for _, bad := range []string{"localhost", "dns:///localhost", "passthrough:///::1"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) without a port must fail", bad)
		}
	}
}

func TestConsolidateDeadline(t *testing.T) {
	d := &deadlineServer{left: make(chan time.Duration, 1)}
	c := newClient(t, listen(t, func(s *grpc.Server) { recalldv1.RegisterMemoryServiceServer(s, d) }))
	if _, err := c.Consolidate(context.Background(), &ConsolidateRequest{}); err != nil {
		t.Fatal(err)
	}
	if left := <-d.left; left <= 100*time.Second || left > DefaultConsolidateTimeout {
		t.Errorf("Consolidate deadline: %v", left)
	}
	c = newClient(t, c.conn.Target(), WithConsolidateTimeout(time.Second))
	if _, err := c.Consolidate(context.Background(), &ConsolidateRequest{}); err != nil {
		t.Fatal(err)
	}
	if left := <-d.left; left > time.Second {
		t.Errorf("WithConsolidateTimeout: %v", left)
	}
}

func (d *deadlineServer) Consolidate(ctx context.Context, _ *recalldv1.ConsolidateRequest) (*recalldv1.ConsolidateResponse, error) {
	dl, _ := ctx.Deadline()
	d.left <- time.Until(dl)
	return &recalldv1.ConsolidateResponse{}, nil
}

// stallServer answers Get only when the call's context ends.
type stallServer struct {
	recalldv1.UnimplementedMemoryServiceServer
}

func (stallServer) Get(ctx context.Context, _ *recalldv1.GetRequest) (*recalldv1.GetResponse, error) {
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

func TestContextErrorsMatchErrorsIs(t *testing.T) {
	addr := listen(t, func(s *grpc.Server) { recalldv1.RegisterMemoryServiceServer(s, stallServer{}) })
	c := newClient(t, addr, WithTimeout(200*time.Millisecond))
	ctx := context.Background()

	_, err := c.Get(ctx, &GetRequest{}) // the client's default deadline
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("default deadline: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err = c.Get(short, &GetRequest{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller's deadline: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err = c.Get(cancelled, &GetRequest{}); !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled call: %v", err)
	}

	// Cancelled while waiting to retry an UNAVAILABLE: the context's error,
	// not the last attempt's.
	f := &fakeServer{fail: 100, code: codes.Unavailable}
	slow := newClient(t, serve(t, f), WithRetryPolicy(RetryPolicy{MaxAttempts: 5, InitialBackoff: 3 * time.Second, MaxBackoff: 3 * time.Second, Multiplier: 1}))
	cancelled, cancel = context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err = slow.Get(cancelled, &GetRequest{})
	var re *Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || re.Code != codes.Canceled || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled during backoff: %v after %v", err, time.Since(start))
	}
	if !strings.Contains(re.Message, "UNAVAILABLE: injected") || status.Code(err) != codes.Canceled || f.n() != 1 {
		t.Errorf("message %q, status %v, attempts %d", re.Message, status.Code(err), f.n())
	}
}

// writeServer records every Write request; the chunk whose index is failAt
// fails with failCode.
type writeServer struct {
	recalldv1.UnimplementedMemoryServiceServer
	mu       sync.Mutex
	requests []*recalldv1.WriteRequest
	failAt   int
	failCode codes.Code
}

func (w *writeServer) Write(_ context.Context, r *recalldv1.WriteRequest) (*recalldv1.WriteResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests = append(w.requests, proto.CloneOf(r))
	if w.failCode != codes.OK && len(w.requests)-1 == w.failAt {
		return nil, status.Error(w.failCode, "injected")
	}
	res := &recalldv1.WriteResponse{}
	for _, m := range r.GetMemories() {
		res.Results = append(res.Results, &recalldv1.WriteResult{Id: "id-" + m.GetContent()})
	}
	return res, nil
}

func (w *writeServer) sent() []*recalldv1.WriteRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requests
}

func memories(n int) []*Memory {
	ms := make([]*Memory, n)
	for i := range ms {
		ms[i] = &Memory{Type: TypeFact, Content: fmt.Sprint(i)}
	}
	return ms
}

func TestChunkedWrite(t *testing.T) {
	ctx := context.Background()
	start := func(w *writeServer) *Client {
		return newClient(t, listen(t, func(s *grpc.Server) { recalldv1.RegisterMemoryServiceServer(s, w) }), WithRetryPolicy(fastRetry))
	}

	t.Run("in order with chunk request ids", func(t *testing.T) {
		w := &writeServer{}
		req := &WriteRequest{UserId: "u", RequestId: "turn-7", Memories: memories(250)}
		res, err := start(w).Write(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		sent := w.sent()
		if len(sent) != 3 {
			t.Fatalf("calls = %d, want 3", len(sent))
		}
		for i, want := range []int{100, 100, 50} {
			r := sent[i]
			if len(r.GetMemories()) != want || r.GetRequestId() != fmt.Sprintf("turn-7#%d", i) || r.GetUserId() != "u" ||
				r.GetMemories()[0].GetContent() != fmt.Sprint(i*100) {
				t.Errorf("chunk %d: %d memories, request id %q, user %q", i, len(r.GetMemories()), r.GetRequestId(), r.GetUserId())
			}
		}
		if len(res.GetResults()) != 250 {
			t.Fatalf("results = %d", len(res.GetResults()))
		}
		for i, r := range res.GetResults() {
			if r.GetId() != fmt.Sprintf("id-%d", i) {
				t.Fatalf("result %d = %s: not in input order", i, r.GetId())
			}
		}
		if req.GetRequestId() != "turn-7" || len(req.GetMemories()) != 250 {
			t.Error("the caller's request must not change")
		}
	})

	t.Run("at most 100 unchanged", func(t *testing.T) {
		w := &writeServer{}
		if _, err := start(w).Write(ctx, &WriteRequest{UserId: "u", RequestId: "r", Memories: memories(100)}); err != nil {
			t.Fatal(err)
		}
		if sent := w.sent(); len(sent) != 1 || sent[0].GetRequestId() != "r" || len(sent[0].GetMemories()) != 100 {
			t.Fatalf("sent %d calls, request id %q", len(sent), sent[0].GetRequestId())
		}
	})

	t.Run("without request id: none sent, not retried", func(t *testing.T) {
		w := &writeServer{failAt: 1, failCode: codes.Unavailable}
		_, err := start(w).Write(ctx, &WriteRequest{UserId: "u", Memories: memories(201)})
		var re *Error
		if !errors.As(err, &re) || re.Code != codes.Unavailable || re.Partial == nil {
			t.Fatalf("err = %v", err)
		}
		if sent := w.sent(); len(sent) != 2 || sent[0].GetRequestId() != "" || sent[1].GetRequestId() != "" {
			t.Fatalf("%d calls (want 2: chunk 1 not retried)", len(sent))
		}
	})

	t.Run("failure reports what was written", func(t *testing.T) {
		w := &writeServer{failAt: 2, failCode: codes.InvalidArgument}
		_, err := start(w).Write(ctx, &WriteRequest{UserId: "u", RequestId: "r", Memories: memories(320)})
		var re *Error
		if !errors.As(err, &re) || re.Code != codes.InvalidArgument || re.Message != "injected" {
			t.Fatalf("err = %v", err)
		}
		if p := re.Partial; p == nil || p.Chunks != 2 || p.Memories != 200 || len(p.Results) != 200 || p.Results[199].GetId() != "id-199" {
			t.Fatalf("partial = %+v", re.Partial)
		}
		if !strings.Contains(err.Error(), "200 memories in 2 chunks were written") {
			t.Errorf("message: %v", err)
		}
		if len(w.sent()) != 3 {
			t.Errorf("calls = %d: nothing may be sent after the failed chunk", len(w.sent()))
		}
	})

	t.Run("request id too long for the chunks", func(t *testing.T) {
		w := &writeServer{}
		c := start(w)
		long := strings.Repeat("界", 126) // 126 characters, 378 bytes: "#0" fits, "#10" does not
		_, err := c.Write(ctx, &WriteRequest{UserId: "u", RequestId: long, Memories: memories(1001)})
		var re *Error
		if !errors.As(err, &re) || re.Code != codes.InvalidArgument || re.ErrorReason() != ReasonInvalidField ||
			len(re.FieldViolations) != 1 || re.FieldViolations[0].Field != "request_id" ||
			re.FieldViolations[0].Reason != "TOO_LONG" || re.Partial != nil {
			t.Fatalf("err = %v", err)
		}
		if len(w.sent()) != 0 {
			t.Fatalf("%d calls sent before refusing", len(w.sent()))
		}
		if _, err := c.Write(ctx, &WriteRequest{UserId: "u", RequestId: long, Memories: memories(1000)}); err != nil {
			t.Fatalf("%q#9 is 128 characters: %v", long, err)
		}
	})
}
