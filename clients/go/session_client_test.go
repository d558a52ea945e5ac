package recalld

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// fakeSessions serves SessionService beside fakeServer's MemoryService on one port.
type fakeSessions struct {
	recalldv1.UnimplementedSessionServiceServer
	f      *fakeServer
	append *recalldv1.AppendMessagesRequest
}

func (s *fakeSessions) AppendMessages(ctx context.Context, r *recalldv1.AppendMessagesRequest) (*recalldv1.AppendMessagesResponse, error) {
	s.f.mu.Lock()
	s.append = r
	s.f.mu.Unlock()
	return &recalldv1.AppendMessagesResponse{Messages: r.GetMessages()}, s.f.record(ctx)
}

func (s *fakeSessions) GetContext(ctx context.Context, _ *recalldv1.GetContextRequest) (*recalldv1.GetContextResponse, error) {
	return &recalldv1.GetContextResponse{}, s.f.record(ctx)
}

func (s *fakeSessions) GetSession(ctx context.Context, r *recalldv1.GetSessionRequest) (*recalldv1.GetSessionResponse, error) {
	return &recalldv1.GetSessionResponse{Session: &recalldv1.Session{SessionId: r.GetSessionId()}}, s.f.record(ctx)
}

func (s *fakeSessions) ListSessions(ctx context.Context, r *recalldv1.ListSessionsRequest) (*recalldv1.ListSessionsResponse, error) {
	if err := s.f.record(ctx); err != nil {
		return nil, err
	}
	if r.GetPageToken() == "" {
		return &recalldv1.ListSessionsResponse{Sessions: []*recalldv1.Session{{SessionId: "s1"}}, NextPageToken: "p2"}, nil
	}
	return &recalldv1.ListSessionsResponse{Sessions: []*recalldv1.Session{{SessionId: "s2"}}}, nil
}

func (s *fakeSessions) EndSession(ctx context.Context, _ *recalldv1.EndSessionRequest) (*recalldv1.EndSessionResponse, error) {
	return &recalldv1.EndSessionResponse{}, s.f.record(ctx)
}

// serveBoth starts MemoryService and SessionService on one loopback port.
func serveBoth(t *testing.T, f *fakeServer) (string, *fakeSessions) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	sessions := &fakeSessions{f: f}
	recalldv1.RegisterMemoryServiceServer(s, f)
	recalldv1.RegisterSessionServiceServer(s, sessions)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String(), sessions
}

func TestSessionCallsRetryOnlyWhenSafe(t *testing.T) {
	msgs := []*Message{NewMessage(RoleUser, "hi")}
	cases := []struct {
		name string
		call func(*Client) error
		want int // attempts
	}{
		{"AppendMessages", func(c *Client) error {
			_, err := c.AppendMessages(context.Background(), &AppendMessagesRequest{UserId: "u", SessionId: "s", Messages: msgs})
			return err
		}, 1},
		{"AppendMessagesWithRequestID", func(c *Client) error {
			_, err := c.AppendMessages(context.Background(), &AppendMessagesRequest{UserId: "u", SessionId: "s", Messages: msgs, RequestId: "r1"})
			return err
		}, 3},
		{"GetContext", func(c *Client) error {
			_, err := c.GetContext(context.Background(), &GetContextRequest{UserId: "u", SessionId: "s"})
			return err
		}, 3},
		{"GetSession", func(c *Client) error {
			_, err := c.GetSession(context.Background(), &GetSessionRequest{UserId: "u", SessionId: "s"})
			return err
		}, 3},
		{"ListSessions", func(c *Client) error {
			_, err := c.ListSessions(context.Background(), &ListSessionsRequest{UserId: "u"})
			return err
		}, 3},
		{"EndSession", func(c *Client) error {
			_, err := c.EndSession(context.Background(), &EndSessionRequest{UserId: "u", SessionId: "s"})
			return err
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServer{fail: 100, code: codes.Unavailable}
			addr, _ := serveBoth(t, f)
			c := newClient(t, addr, WithRetryPolicy(fastRetry))
			if re := FromError(tc.call(c)); re == nil || re.Code != codes.Unavailable {
				t.Fatalf("error: %#v", re)
			}
			if f.n() != tc.want {
				t.Fatalf("attempts = %d, want %d", f.n(), tc.want)
			}
		})
	}
}

func TestSessionCallsShareTheConnection(t *testing.T) {
	f := &fakeServer{}
	addr, sessions := serveBoth(t, f)
	c := newClient(t, addr, WithTenant("acme"))
	res, err := c.AppendMessages(context.Background(), &AppendMessagesRequest{
		UserId: "u", SessionId: "s", Extract: true,
		Messages: []*Message{NewMessage(RoleUser, "I prefer tea"), NewMessage(RoleAssistant, "Noted")},
	})
	if err != nil || len(res.GetMessages()) != 2 {
		t.Fatalf("res=%v err=%v", res, err)
	}
	if got := sessions.append; got.GetMessages()[0].GetRole() != RoleUser || !got.GetExtract() {
		t.Fatalf("sent %v", got)
	}
	if got := f.md(0).Get(TenantHeader); len(got) != 1 || got[0] != "acme" {
		t.Fatalf("tenant metadata = %v", got)
	}
	var ids []string
	for s, err := range c.ListAllSessions(context.Background(), &ListSessionsRequest{UserId: "u"}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.GetSessionId())
	}
	if len(ids) != 2 || ids[0] != "s1" || ids[1] != "s2" {
		t.Fatalf("ids = %v", ids)
	}
	if _, err := c.Get(context.Background(), &GetRequest{Id: "m1"}); err != nil {
		t.Fatalf("MemoryService on the same connection: %v", err)
	}
}
