package recalld_test

// User affinity against two live servers: RECALLD_ADDR and
// RECALLD_ADDR_REPLICA (scripts/test.sh starts both, on the same port of
// 127.0.0.1 and 127.0.0.2, each with its own store), plus a loopback port
// nothing listens on as a third, stopped replica. Skipped unless both are set.
//
// TestLiveDrainingReplica starts a recalld of its own (python -m
// recalld_server from PATH, as scripts/test.sh sets it) beside RECALLD_ADDR and
// stops it with SIGTERM and a long --shutdown-grace while its users' calls go
// on.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

// recalldProcess is a recalld server this test started.
type recalldProcess struct {
	cmd    *exec.Cmd
	addr   string
	exited chan struct{} // closed when the process has exited
	log    string        // its output file
}

var listeningLine = regexp.MustCompile(`recalld listening on (127\.0\.0\.1:\d+)`)

// startRecalld starts `python -m recalld_server serve` on a free loopback port
// with an in-memory store and args, and waits until it listens. Skipped when
// no python on PATH has recalld_server.
func startRecalld(t *testing.T, args ...string) *recalldProcess {
	t.Helper()
	python, err := exec.LookPath("python")
	if err != nil {
		if python, err = exec.LookPath("python3"); err != nil {
			t.Skip("no python on PATH to start a recalld replica")
		}
	}
	dir := t.TempDir()
	out, err := os.Create(dir + "/server.log")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(python, append([]string{"-m", "recalld_server", "serve", "--host", "127.0.0.1", "--port", "0",
		"--storage", "memory", "--data-dir", dir, "--consolidate-interval", "0"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	for _, kv := range os.Environ() { // the live server's trace file is its own
		if !strings.HasPrefix(kv, "RECALLD_OTEL_TRACES_FILE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &recalldProcess{cmd: cmd, exited: make(chan struct{}), log: out.Name()}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	for deadline := time.Now().Add(60 * time.Second); p.addr == ""; time.Sleep(100 * time.Millisecond) {
		logged, _ := os.ReadFile(p.log)
		if m := listeningLine.FindSubmatch(logged); m != nil {
			p.addr = string(m[1])
			break
		}
		select {
		case <-p.exited:
			if strings.Contains(string(logged), "No module named recalld_server") {
				t.Skipf("%s has no recalld_server: cannot start a replica", python)
			}
			t.Fatalf("recalld exited before it listened: %s\n%s", cmd.ProcessState, logged)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("recalld did not listen within 60 s:\n%s", logged)
		}
	}
	return p
}

func TestLiveDrainingReplica(t *testing.T) {
	addr := liveAddr(t)
	stopping := startRecalld(t, "--shutdown-grace", "30")
	tenant := randomID("it-go-drain")
	c, err := recalld.New(stopping.addr+","+addr, recalld.WithTenant(tenant))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	replicas := c.Replicas()
	var moved []string // the users of the replica that stops
	for i := 0; len(moved) < 4; i++ {
		u := fmt.Sprintf("user-%d-%s", i, tenant)
		if recalld.RendezvousOrder(replicas, u)[0] == stopping.addr {
			moved = append(moved, u)
		}
	}
	ctx := testContext(t)
	recall := func(u string) error {
		_, err := c.Recall(ctx, &recalld.RecallRequest{UserId: u, Query: "anything"})
		return err
	}
	for _, u := range moved { // connected, warm
		if err := recall(u); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}

	// SIGTERM with a grace of 30 s while its users' calls go on: recalls
	// (retried on UNAVAILABLE) and writes without a request id (never retried).
	if err := stopping.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var (
		mu     sync.Mutex
		failed []string
		calls  int
	)
	note := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", what, err))
		}
	}
	for round := 0; ; round++ {
		select {
		case <-stopping.exited:
		default:
			if time.Since(began) < 45*time.Second {
				var wg sync.WaitGroup
				for _, u := range moved {
					wg.Go(func() { note("recall "+u, recall(u)) })
				}
				wg.Go(func() {
					_, err := c.Write(ctx, &recalld.WriteRequest{UserId: moved[0], Memories: []*recalld.Memory{
						{Type: recalld.TypeFact, Content: fmt.Sprintf("The user wrote this while a replica drained (%d).", round)},
					}})
					note("write", err)
				})
				wg.Wait()
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		break
	}
	took := time.Since(began)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d calls while the replica stopped; it exited after %v", calls, took.Round(time.Millisecond))
	if len(failed) > 0 {
		t.Errorf("%d of %d calls failed while the replica drained, first: %s", len(failed), calls, failed[0])
	}
	// Its users left at its first answer, so it went quiet and exited well
	// inside its grace (without the notice it would serve them for all 30 s).
	if took >= 10*time.Second {
		t.Fatalf("the draining replica exited after %v, want well inside its 30 s grace", took)
	}
	// The writes made after the notice are on the user's next replica.
	listed, err := dial(t, addr, tenant).List(ctx, &recalld.ListRequest{UserId: moved[0]})
	if err != nil || len(listed.GetMemories()) == 0 {
		t.Fatalf("%s's writes on %s, its next replica: %v %v", moved[0], addr, listed, err)
	}
}
