package recalld

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// fakeServer records each call's metadata and fails the first `fail` calls
// with `code` (with recalld-style details), then succeeds.
type fakeServer struct {
	recalldv1.UnimplementedMemoryServiceServer
	mu    sync.Mutex
	calls []metadata.MD
	fail  int
	code  codes.Code
	// The last Recall and GetProfile requests received.
	recallReq  *recalldv1.RecallRequest
	profileReq *recalldv1.GetProfileRequest
}

func (f *fakeServer) record(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, md)
	if len(f.calls) <= f.fail {
		st, _ := status.New(f.code, "injected").WithDetails(
			&errdetails.ErrorInfo{Reason: "BACKEND_UNAVAILABLE", Domain: ErrorDomain},
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "user_id", Description: "x"}}},
		)
		return st.Err()
	}
	return nil
}

func (f *fakeServer) md(i int) metadata.MD { f.mu.Lock(); defer f.mu.Unlock(); return f.calls[i] }

func (f *fakeServer) n() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.calls) }

func (f *fakeServer) lastRecall() *recalldv1.RecallRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recallReq
}

func (f *fakeServer) lastProfile() *recalldv1.GetProfileRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.profileReq
}

func (f *fakeServer) Write(ctx context.Context, _ *recalldv1.WriteRequest) (*recalldv1.WriteResponse, error) {
	if err := f.record(ctx); err != nil {
		return nil, err
	}
	return &recalldv1.WriteResponse{Results: []*recalldv1.WriteResult{{Id: "m1"}}}, nil
}

func (f *fakeServer) Recall(ctx context.Context, r *recalldv1.RecallRequest) (*recalldv1.RecallResponse, error) {
	if err := f.record(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.recallReq = r
	f.mu.Unlock()
	return &recalldv1.RecallResponse{
		Items: []*recalldv1.RecalledMemory{{
			Memory:    &recalldv1.Memory{Id: "m1"},
			Score:     0.9,
			Breakdown: &recalldv1.ScoreBreakdown{Dense: 0.8, Keyword: 1.5, Fused: 1, Decay: 0.9, ImportanceWeight: 1},
		}},
		Profile: &recalldv1.Profile{Memories: []*recalldv1.Memory{{Id: "p1", TopicKey: "profile.name"}}},
		Context: "<user_profile>\n- Name: Ada\n</user_profile>",
		Candidates: []*recalldv1.RecallCandidate{{
			MemoryId: "m2", DropReason: recalldv1.DropReason_DROP_REASON_BELOW_THRESHOLD,
			Breakdown: &recalldv1.ScoreBreakdown{Dense: 0.05},
		}},
	}, nil
}

func (f *fakeServer) GetProfile(ctx context.Context, r *recalldv1.GetProfileRequest) (*recalldv1.GetProfileResponse, error) {
	if err := f.record(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.profileReq = r
	f.mu.Unlock()
	return &recalldv1.GetProfileResponse{
		Profile: &recalldv1.Profile{
			Memories: []*recalldv1.Memory{
				{Id: "m1", Tier: recalldv1.MemoryTier_MEMORY_TIER_P0, TopicKey: "profile.name"},
				{Id: "m2", TopicKey: "drink"},
			},
			FromCache: true,
		},
		DegradedStages: []string{"profile_cache"},
	}, nil
}

func (f *fakeServer) Get(ctx context.Context, r *recalldv1.GetRequest) (*recalldv1.GetResponse, error) {
	if err := f.record(ctx); err != nil {
		return nil, err
	}
	return &recalldv1.GetResponse{Memory: &recalldv1.Memory{Id: r.GetId()}}, nil
}

func (f *fakeServer) List(ctx context.Context, r *recalldv1.ListRequest) (*recalldv1.ListResponse, error) {
	if err := f.record(ctx); err != nil {
		return nil, err
	}
	page, _ := strconv.Atoi(r.GetPageToken())
	res := &recalldv1.ListResponse{Memories: []*recalldv1.Memory{{Id: "m" + strconv.Itoa(page)}}}
	if page < 2 {
		res.NextPageToken = strconv.Itoa(page + 1)
	}
	return res, nil
}

func (f *fakeServer) Update(ctx context.Context, _ *recalldv1.UpdateRequest) (*recalldv1.UpdateResponse, error) {
	return &recalldv1.UpdateResponse{}, f.record(ctx)
}

func (f *fakeServer) Forget(ctx context.Context, _ *recalldv1.ForgetRequest) (*recalldv1.ForgetResponse, error) {
	return &recalldv1.ForgetResponse{}, f.record(ctx)
}

func (f *fakeServer) Restore(ctx context.Context, _ *recalldv1.RestoreRequest) (*recalldv1.RestoreResponse, error) {
	return &recalldv1.RestoreResponse{}, f.record(ctx)
}

func (f *fakeServer) Confirm(ctx context.Context, _ *recalldv1.ConfirmRequest) (*recalldv1.ConfirmResponse, error) {
	return &recalldv1.ConfirmResponse{}, f.record(ctx)
}

func (f *fakeServer) History(ctx context.Context, _ *recalldv1.HistoryRequest) (*recalldv1.HistoryResponse, error) {
	return &recalldv1.HistoryResponse{}, f.record(ctx)
}

func (f *fakeServer) ListConflicts(ctx context.Context, _ *recalldv1.ListConflictsRequest) (*recalldv1.ListConflictsResponse, error) {
	return &recalldv1.ListConflictsResponse{}, f.record(ctx)
}

func (f *fakeServer) ResolveConflict(ctx context.Context, _ *recalldv1.ResolveConflictRequest) (*recalldv1.ResolveConflictResponse, error) {
	return &recalldv1.ResolveConflictResponse{}, f.record(ctx)
}

func (f *fakeServer) Consolidate(ctx context.Context, _ *recalldv1.ConsolidateRequest) (*recalldv1.ConsolidateResponse, error) {
	return &recalldv1.ConsolidateResponse{}, f.record(ctx)
}

// serve starts f on a loopback port and returns its address.
func serve(t *testing.T, f *fakeServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	recalldv1.RegisterMemoryServiceServer(s, f)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

var fastRetry = RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Multiplier: 2}

func newClient(t *testing.T, addr string, opts ...Option) *Client {
	t.Helper()
	c, err := New(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestNewValidatesOptions(t *testing.T) {
	if _, err := New("127.0.0.1:1", WithAPIKey("k"), WithTenant("t")); err == nil {
		t.Error("key and tenant together must fail")
	}
	if _, err := New("no-port"); err == nil {
		t.Error("an address without port must fail")
	}
	if _, err := New("127.0.0.1:1", WithRetryPolicy(RetryPolicy{})); err == nil {
		t.Error("MaxAttempts 0 must fail")
	}
	for host, want := range map[string]bool{"127.0.0.1": true, "127.9.9.9": true, "localhost": true, "::1": true, "[::1]": true, "::ffff:127.0.0.1": true, "[::ffff:7f00:1]": true, "::ffff:10.0.0.1": false, "10.0.0.1": false, "example.com": false} {
		if IsLoopbackHost(host) != want {
			t.Errorf("IsLoopbackHost(%q) != %v", host, want)
		}
	}
}

func TestMetadataDeadlineAndTraceparent(t *testing.T) {
	f := &fakeServer{}
	c := newClient(t, serve(t, f), WithAPIKey("secret"))
	if _, err := c.Get(spanContext(t, true), &GetRequest{UserId: "u", Id: "m"}); err != nil {
		t.Fatal(err)
	}
	md := f.md(0)
	if md.Get("authorization")[0] != "Bearer secret" || len(md.Get(TenantHeader)) != 0 {
		t.Errorf("metadata: %v", md)
	}
	if got := md.Get("traceparent"); len(got) != 1 || got[0] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("traceparent: %v", got)
	}

	c2 := newClient(t, serve(t, f), WithTenant("acme"))
	if _, err := c2.Recall(context.Background(), &RecallRequest{UserId: "u", Query: "q"}); err != nil {
		t.Fatal(err)
	}
	md = f.md(1)
	if md.Get(TenantHeader)[0] != "acme" || len(md.Get("authorization")) != 0 || len(md.Get("traceparent")) != 0 {
		t.Errorf("metadata: %v", md)
	}
}

// deadlineServer reports the deadline it sees.
type deadlineServer struct {
	recalldv1.UnimplementedMemoryServiceServer
	left chan time.Duration
}

func (d *deadlineServer) Get(ctx context.Context, _ *recalldv1.GetRequest) (*recalldv1.GetResponse, error) {
	dl, _ := ctx.Deadline()
	d.left <- time.Until(dl)
	return &recalldv1.GetResponse{}, nil
}

func (d *deadlineServer) GetProfile(ctx context.Context, _ *recalldv1.GetProfileRequest) (*recalldv1.GetProfileResponse, error) {
	dl, _ := ctx.Deadline()
	d.left <- time.Until(dl)
	return &recalldv1.GetProfileResponse{}, nil
}

func (d *deadlineServer) Recall(ctx context.Context, _ *recalldv1.RecallRequest) (*recalldv1.RecallResponse, error) {
	dl, _ := ctx.Deadline()
	d.left <- time.Until(dl)
	return &recalldv1.RecallResponse{}, nil
}

func TestDefaultDeadlines(t *testing.T) {
	d := &deadlineServer{left: make(chan time.Duration, 3)}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	recalldv1.RegisterMemoryServiceServer(s, d)
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()
	c := newClient(t, lis.Addr().String())
	ctx := context.Background()
	if _, err := c.Get(ctx, &GetRequest{}); err != nil {
		t.Fatal(err)
	}
	if left := <-d.left; left <= 5*time.Second || left > DefaultTimeout {
		t.Errorf("Get deadline: %v", left)
	}
	if _, err := c.Recall(ctx, &RecallRequest{}); err != nil {
		t.Fatal(err)
	}
	if left := <-d.left; left <= 3*time.Second || left > DefaultRecallTimeout {
		t.Errorf("Recall deadline: %v", left)
	}
	if _, err := c.GetProfile(ctx, &GetProfileRequest{}); err != nil {
		t.Fatal(err)
	}
	if left := <-d.left; left <= 5*time.Second || left > DefaultTimeout {
		t.Errorf("GetProfile deadline (the default, not Recall's): %v", left)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := c.Get(short, &GetRequest{}); err != nil {
		t.Fatal(err)
	}
	if left := <-d.left; left > time.Second {
		t.Errorf("the caller's deadline wins: %v", left)
	}
}

func TestRetriesOnlyIdempotentCalls(t *testing.T) {
	cases := []struct {
		name string
		call func(*Client) error
		want int // attempts
	}{
		{"Get", func(c *Client) error { _, err := c.Get(context.Background(), &GetRequest{}); return err }, 3},
		{"List", func(c *Client) error { _, err := c.List(context.Background(), &ListRequest{}); return err }, 3},
		{"Recall", func(c *Client) error { _, err := c.Recall(context.Background(), &RecallRequest{}); return err }, 3},
		{"GetProfile", func(c *Client) error {
			_, err := c.GetProfile(context.Background(), &GetProfileRequest{})
			return err
		}, 3},
		{"Write", func(c *Client) error { _, err := c.Write(context.Background(), &WriteRequest{}); return err }, 1},
		{"WriteWithRequestID", func(c *Client) error {
			_, err := c.Write(context.Background(), &WriteRequest{RequestId: "r1"})
			return err
		}, 3},
		{"Update", func(c *Client) error { _, err := c.Update(context.Background(), &UpdateRequest{}); return err }, 1},
		{"Forget", func(c *Client) error { _, err := c.Forget(context.Background(), &ForgetRequest{}); return err }, 1},
		{"History", func(c *Client) error { _, err := c.History(context.Background(), &HistoryRequest{}); return err }, 3},
		{"ListConflicts", func(c *Client) error {
			_, err := c.ListConflicts(context.Background(), &ListConflictsRequest{})
			return err
		}, 3},
		{"Restore", func(c *Client) error { _, err := c.Restore(context.Background(), &RestoreRequest{}); return err }, 1},
		{"Confirm", func(c *Client) error { _, err := c.Confirm(context.Background(), &ConfirmRequest{}); return err }, 1},
		{"ResolveConflict", func(c *Client) error {
			_, err := c.ResolveConflict(context.Background(), &ResolveConflictRequest{})
			return err
		}, 1},
		{"Consolidate", func(c *Client) error {
			_, err := c.Consolidate(context.Background(), &ConsolidateRequest{})
			return err
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServer{fail: 100, code: codes.Unavailable}
			c := newClient(t, serve(t, f), WithRetryPolicy(fastRetry))
			err := tc.call(c)
			re := FromError(err)
			if re == nil || re.Code != codes.Unavailable || re.Reason != "BACKEND_UNAVAILABLE" || len(re.FieldViolations) != 1 {
				t.Fatalf("error: %#v", re)
			}
			if f.n() != tc.want {
				t.Fatalf("attempts = %d, want %d", f.n(), tc.want)
			}
		})
	}
}

func TestRetrySucceedsAndOtherCodesAreFinal(t *testing.T) {
	f := &fakeServer{fail: 2, code: codes.Unavailable}
	c := newClient(t, serve(t, f), WithRetryPolicy(fastRetry))
	res, err := c.Get(context.Background(), &GetRequest{Id: "m7"})
	if err != nil || res.GetMemory().GetId() != "m7" || f.n() != 3 {
		t.Fatalf("res=%v err=%v attempts=%d", res, err, f.n())
	}
	g := &fakeServer{fail: 100, code: codes.Internal}
	c = newClient(t, serve(t, g), WithRetryPolicy(fastRetry))
	if _, err := c.Get(context.Background(), &GetRequest{}); status.Code(err) != codes.Internal || g.n() != 1 {
		t.Fatalf("err=%v attempts=%d", err, g.n())
	}
}

func TestRetriesStayWithinTheDeadline(t *testing.T) {
	f := &fakeServer{fail: 1000, code: codes.Unavailable}
	c := newClient(t, serve(t, f), WithRetryPolicy(RetryPolicy{MaxAttempts: 50, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Multiplier: 1}))
	ctx, cancel := context.WithTimeout(context.Background(), 350*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Get(ctx, &GetRequest{})
	if status.Code(err) != codes.Unavailable || time.Since(start) > time.Second || f.n() < 2 || f.n() > 4 {
		t.Fatalf("err=%v elapsed=%v attempts=%d", err, time.Since(start), f.n())
	}
}

func TestUnavailableWhenNothingListens(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	attempts := 0
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		attempts++
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c := newClient(t, addr, WithRetryPolicy(fastRetry), WithDialOptions(grpc.WithChainUnaryInterceptor(count)))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.List(ctx, &ListRequest{}); status.Code(err) != codes.Unavailable || attempts != 3 {
		t.Fatalf("err=%v attempts=%d", err, attempts)
	}
}

func TestListAllPages(t *testing.T) {
	f := &fakeServer{}
	c := newClient(t, serve(t, f))
	var ids []string
	for m, err := range c.ListAll(context.Background(), &ListRequest{UserId: "u"}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.GetId())
	}
	if len(ids) != 3 || ids[0] != "m0" || ids[2] != "m2" {
		t.Fatalf("ids = %v", ids)
	}
}

func TestGetProfile(t *testing.T) {
	f := &fakeServer{fail: 1, code: codes.Unavailable}
	c := newClient(t, serve(t, f), WithTenant("acme"), WithRetryPolicy(fastRetry))
	res, err := c.GetProfile(context.Background(), &GetProfileRequest{UserId: "u", AgentScope: "planner"})
	if err != nil {
		t.Fatal(err)
	}
	if f.n() != 2 {
		t.Errorf("attempts = %d, want 2 (one UNAVAILABLE retried)", f.n())
	}
	if r := f.lastProfile(); r.GetUserId() != "u" || r.GetAgentScope() != "planner" {
		t.Errorf("request: %v", r)
	}
	if md := f.md(1); len(md.Get(TenantHeader)) != 1 || md.Get(TenantHeader)[0] != "acme" {
		t.Errorf("metadata: %v", md)
	}
	var keys []string
	for _, m := range res.GetProfile().GetMemories() {
		keys = append(keys, m.GetTopicKey())
	}
	if len(keys) != 2 || keys[0] != "profile.name" || keys[1] != "drink" || !res.GetProfile().GetFromCache() {
		t.Errorf("profile: %v", res.GetProfile())
	}
	if ds := res.GetDegradedStages(); len(ds) != 1 || ds[0] != "profile_cache" {
		t.Errorf("degraded stages: %v", ds)
	}
}

func TestRecallExplainAndProfileFields(t *testing.T) {
	f := &fakeServer{}
	c := newClient(t, serve(t, f))
	res, err := c.Recall(context.Background(), &RecallRequest{UserId: "u", Query: "q", Explain: true, SkipProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := f.lastRecall(); !r.GetExplain() || !r.GetSkipProfile() {
		t.Errorf("explain/skip_profile not sent: %v", r)
	}
	if b := res.GetItems()[0].GetBreakdown(); b.GetKeyword() != 1.5 || b.GetImportanceWeight() != 1 {
		t.Errorf("breakdown: %v", b)
	}
	if p := res.GetProfile().GetMemories(); len(p) != 1 || p[0].GetTopicKey() != "profile.name" {
		t.Errorf("profile: %v", res.GetProfile())
	}
	if !strings.Contains(res.GetContext(), "<user_profile>") {
		t.Errorf("context: %q", res.GetContext())
	}
	if cs := res.GetCandidates(); len(cs) != 1 || cs[0].GetDropReason() != recalldv1.DropReason_DROP_REASON_BELOW_THRESHOLD {
		t.Errorf("candidates: %v", cs)
	}
	if _, err := c.Recall(context.Background(), &RecallRequest{UserId: "u", Query: "q"}); err != nil {
		t.Fatal(err)
	}
	if r := f.lastRecall(); r.GetExplain() || r.GetSkipProfile() {
		t.Errorf("defaults must be false: %v", r)
	}
}
