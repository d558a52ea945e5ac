package recalld_test

// User affinity against two live servers: RECALLD_ADDR and
// RECALLD_ADDR_REPLICA (scripts/test.sh starts both, on the same port of
// 127.0.0.1 and 127.0.0.2, each with its own store), plus a loopback port
// nothing listens on as a third, stopped replica. Skipped unless both are set.

import (
	"context"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	recalld "github.com/recalld/recalld/clients/go"
)

func TestLiveUserAffinity(t *testing.T) {
	addr := liveAddr(t)
	second := os.Getenv("RECALLD_ADDR_REPLICA")
	if second == "" {
		t.Skip("RECALLD_ADDR_REPLICA is unset: start a second server and export it to run the routing test")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stopped := lis.Addr().String()
	_ = lis.Close()

	// Every attempt's replica, by user.
	var mu sync.Mutex
	tries := map[string][]string{}
	record := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if u, ok := req.(interface{ GetUserId() string }); ok {
			mu.Lock()
			tries[u.GetUserId()] = append(tries[u.GetUserId()], cc.Target())
			mu.Unlock()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	tenant := randomID("it-go")
	c, err := recalld.New(strings.Join([]string{addr, second, stopped}, ","), recalld.WithTenant(tenant),
		recalld.WithDialOptions(grpc.WithChainUnaryInterceptor(record)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	replicas := c.Replicas()
	if len(replicas) != 3 {
		t.Fatalf("replicas: %v", replicas)
	}

	// Users until each replica is the first choice of two.
	first := map[string]int{}
	var us []string
	for len(us) < 200 && (first[replicas[0]] < 2 || first[replicas[1]] < 2 || first[replicas[2]] < 2) {
		u := randomID("user")
		first[recalld.RendezvousOrder(replicas, u)[0]]++
		us = append(us, u)
	}
	ctx := testContext(t)
	for _, u := range us {
		order := recalld.RendezvousOrder(replicas, u)
		want := order[0]
		if want == stopped {
			want = order[1] // its next replica takes it over
		}
		w, err := c.Write(ctx, &recalld.WriteRequest{UserId: u, RequestId: randomID("req"), Memories: []*recalld.Memory{
			{Type: recalld.TypeFact, Content: "The user keeps bees on the roof."},
		}})
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		id := w.GetResults()[0].GetId()
		// The replica that took the write serves the read: with stores of their
		// own, a read on the other replica would not find it.
		if _, err := c.Get(ctx, &recalld.GetRequest{UserId: u, Id: id}); err != nil {
			t.Fatalf("%s: read back: %v", u, err)
		}
		mu.Lock()
		got := slices.Clone(tries[u])
		mu.Unlock()
		for i, r := range got {
			// Only its first replica, if stopped, is tried before want.
			if r != want && (r != stopped || order[0] != stopped || i == len(got)-1) {
				t.Fatalf("%s (order %v): calls went to %v, want %s", u, order, got, want)
			}
		}
		direct := dial(t, want, tenant)
		if _, err := direct.Get(ctx, &recalld.GetRequest{UserId: u, Id: id}); err != nil {
			t.Fatalf("%s: the memory is not on %s, its replica: %v", u, want, err)
		}
	}
}
