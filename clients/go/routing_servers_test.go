package recalld

// User affinity over real gRPC servers on loopback ports (the fake
// MemoryService of client_test.go, which records each call's metadata): each
// user's calls land on the replica its order predicts; with one server
// stopped its users fail over to their next replica and the others stay;
// started again on the same port, it gets its users back after its back-off;
// a server whose answers say it is draining (the header a stopping recalld
// sends) loses its users at once.

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

type loopbackReplica struct {
	f    *fakeServer
	addr string
	stop func()
}

// startReplica serves a fakeServer on addr ("127.0.0.1:0" for any port).
func startReplica(t *testing.T, addr string, opts ...grpc.ServerOption) *loopbackReplica {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{}
	s := grpc.NewServer(opts...)
	recalldv1.RegisterMemoryServiceServer(s, f)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return &loopbackReplica{f: f, addr: lis.Addr().String(), stop: s.Stop}
}

func TestRoutingOverLoopbackServers(t *testing.T) {
	replicas := []*loopbackReplica{startReplica(t, "127.0.0.1:0"), startReplica(t, "127.0.0.1:0"), startReplica(t, "127.0.0.1:0")}
	var addrs []string
	for _, r := range replicas {
		addrs = append(addrs, r.addr)
	}
	c := newClient(t, strings.Join(addrs, ","), WithRetryPolicy(fastRetry))
	if got := c.Replicas(); !slices.Equal(got, slices.Sorted(slices.Values(addrs))) || c.cfg.tls != nil {
		t.Fatalf("replicas %v (TLS %v), want %v in plaintext", got, c.cfg.tls != nil, addrs)
	}
	// servedBy makes one Get for user and returns the replica that answered it.
	servedBy := func(user string) string {
		t.Helper()
		before := make([]int, len(replicas))
		for i, r := range replicas {
			before[i] = r.f.n()
		}
		if _, err := c.Get(context.Background(), &GetRequest{UserId: user, Id: "m"}); err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		served := ""
		for i, r := range replicas {
			if n := r.f.n(); n > before[i] {
				if served != "" || n != before[i]+1 {
					t.Fatalf("%s: answered more than once", user)
				}
				if got := r.f.md(n - 1).Get(UserHeader); !slices.Equal(got, []string{RoutingKey(user)}) {
					t.Fatalf("%s: %s = %v", user, UserHeader, got)
				}
				served = r.addr
			}
		}
		return served
	}
	us := users(30)
	for _, u := range us {
		for range 2 {
			if got, want := servedBy(u), RendezvousOrder(addrs, u)[0]; got != want {
				t.Fatalf("%s served by %s, want %s", u, got, want)
			}
		}
	}

	stopped := replicas[0]
	stopped.stop()
	downSince := time.Now() // it is marked down after this, for 1 s
	var moved string
	for _, u := range us {
		order := RendezvousOrder(addrs, u)
		want := order[0]
		if want == stopped.addr {
			want, moved = order[1], u
		}
		if got := servedBy(u); got != want {
			t.Fatalf("with %s stopped, %s served by %s, want %s", stopped.addr, u, got, want)
		}
	}
	if moved == "" {
		t.Fatal("no user on the stopped replica")
	}

	replicas[0] = startReplica(t, stopped.addr)
	started := time.Now()
	if got := servedBy(moved); got == stopped.addr && time.Since(downSince) < time.Second {
		t.Fatalf("%s is back before its back-off: served by %s", moved, got)
	}
	for servedBy(moved) != stopped.addr {
		if time.Since(started) > 15*time.Second {
			t.Fatalf("%s did not come back to %s", moved, stopped.addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s back on its replica %v after it started again", moved, time.Since(started).Round(time.Millisecond))
}

// drainNotice sends the draining header first on every call while draining is
// set, as recalld's DrainNoticeInterceptor does while it stops.
func drainNotice(draining *atomic.Bool) grpc.ServerOption {
	return grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if draining.Load() {
			if err := grpc.SendHeader(ctx, metadata.Pairs(drainingHeader, "1")); err != nil {
				return nil, err
			}
		}
		return handler(ctx, req)
	})
}

func TestADrainingServerHandsItsUsersOnAtItsFirstAnswer(t *testing.T) {
	var draining atomic.Bool
	replicas := []*loopbackReplica{startReplica(t, "127.0.0.1:0", drainNotice(&draining)), startReplica(t, "127.0.0.1:0")}
	addrs := []string{replicas[0].addr, replicas[1].addr}
	c := newClient(t, strings.Join(addrs, ","), WithRetryPolicy(fastRetry))
	var us []string // users of replica 0
	for _, u := range users(100) {
		if RendezvousOrder(addrs, u)[0] == replicas[0].addr {
			us = append(us, u)
		}
	}
	if len(us) < 2 {
		t.Fatalf("users of replica 0: %v", us)
	}
	get := func(u string) error {
		_, err := c.Get(context.Background(), &GetRequest{UserId: u, Id: "m"})
		return err
	}
	for _, u := range us {
		if err := get(u); err != nil {
			t.Fatal(err)
		}
	}
	served := replicas[0].f.n()
	if served != len(us) {
		t.Fatalf("replica 0 served %d of its %d users' calls", served, len(us))
	}
	// Its answer says it drains: the call's result is as usual, and the
	// users' next calls go to replica 1.
	draining.Store(true)
	if err := get(us[0]); err != nil {
		t.Fatalf("the answer that says draining: %v", err)
	}
	for _, u := range us {
		if err := get(u); err != nil {
			t.Fatal(err)
		}
	}
	if n := replicas[0].f.n(); n != served+1 {
		t.Fatalf("replica 0 answered %d calls after its notice, want 0", n-served-1)
	}
	if n := replicas[1].f.n(); n != len(us) {
		t.Fatalf("replica 1 served %d calls, want %d", n, len(us))
	}

	// An error that says so holds the replica as well (a second client, whose
	// replica 0 is not held yet).
	c2 := newClient(t, strings.Join(addrs, ","), WithRetryPolicy(fastRetry))
	replicas[0].f.mu.Lock()
	replicas[0].f.fail, replicas[0].f.code = len(replicas[0].f.calls)+1, codes.Internal
	replicas[0].f.mu.Unlock()
	if _, err := c2.Update(context.Background(), &UpdateRequest{UserId: us[0]}); status.Code(err) != codes.Internal {
		t.Fatalf("Update: %v, want the replica's INTERNAL", err)
	}
	if _, err := c2.Get(context.Background(), &GetRequest{UserId: us[0], Id: "m"}); err != nil {
		t.Fatal(err)
	}
	if n := replicas[1].f.n(); n != len(us)+1 {
		t.Fatalf("after an error with the notice, replica 1 served %d calls, want %d", n, len(us)+1)
	}
}
