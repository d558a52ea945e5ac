package recalld

// Routing, health and back-off over several replicas, with fake connections
// and a fake clock. They are fakes for what a unit test cannot otherwise cause
// on cue: a replica that refuses calls until told otherwise, and back-offs of
// 1 to 30 s that run out at once. routing_servers_test.go does the same with
// real gRPC servers on loopback ports, one of them stopped and started again.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// fakeReplica is a connection to one replica: it logs each call and fails it
// with UNAVAILABLE while down; while draining, its answers carry the draining
// header, as a stopping recalld's do.
type fakeReplica struct {
	name     string
	log      *callLog
	mu       sync.Mutex
	down     bool
	draining bool
	block    chan struct{} // when set, calls wait for it to close
	calls    int
	// closed and resets count Close and ResetConnectBackoff.
	closed, resets int
}

func (f *fakeReplica) Invoke(_ context.Context, _ string, _, _ any, opts ...grpc.CallOption) error {
	f.mu.Lock()
	f.calls++
	down, draining, block, closed := f.down, f.draining, f.block, f.closed > 0
	f.mu.Unlock()
	f.log.add(f.name)
	if block != nil {
		<-block
	}
	if draining {
		for _, o := range opts {
			if h, ok := o.(grpc.HeaderCallOption); ok {
				*h.HeaderAddr = metadata.Pairs(drainingHeader, "1")
			}
		}
	}
	switch {
	case closed:
		return status.Error(codes.Canceled, "fake: closed")
	case down:
		return status.Error(codes.Unavailable, "fake: connection refused")
	}
	return nil
}

func (f *fakeReplica) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "fake")
}

func (f *fakeReplica) Close() error { f.mu.Lock(); defer f.mu.Unlock(); f.closed++; return nil }

func (f *fakeReplica) ResetConnectBackoff() { f.mu.Lock(); defer f.mu.Unlock(); f.resets++ }

func (f *fakeReplica) set(down bool) { f.mu.Lock(); defer f.mu.Unlock(); f.down = down }

func (f *fakeReplica) setDraining(draining bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.draining = draining
}

func (f *fakeReplica) state() (calls, closed, resets int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.closed, f.resets
}

// callLog is the replicas called, in order, for every fake replica of a test.
type callLog struct {
	mu    sync.Mutex
	calls []string // replica names
}

func (l *callLog) add(replica string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, replica)
}

func (l *callLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls[n:])
}

func (l *callLog) len() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.calls) }

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// fakeCluster is a Client whose router dials fake replicas.
type fakeCluster struct {
	c     *Client
	r     *router
	clock *fakeClock
	log   *callLog
	mu    sync.Mutex
	conns map[string]*fakeReplica
}

func newFakeCluster(t *testing.T, mode Routing, retry RetryPolicy, names ...string) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{clock: &fakeClock{t: time.Unix(1_000_000_000, 0)}, log: &callLog{}, conns: map[string]*fakeReplica{}}
	fc.r = newRouter(mode, func(name string) (replicaConn, error) {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		f := &fakeReplica{name: name, log: fc.log}
		fc.conns[name] = f
		return f, nil
	})
	fc.r.now = fc.clock.now
	if len(names) > 0 {
		if err := fc.r.set(names); err != nil {
			t.Fatal(err)
		}
	}
	fc.c = &Client{router: fc.r, cfg: config{
		timeout: DefaultTimeout, recallTimeout: DefaultRecallTimeout, consolidateTimeout: DefaultConsolidateTimeout, retry: retry,
	}}
	fc.c.attach(fc.r)
	t.Cleanup(func() { _ = fc.c.Close() })
	return fc
}

func (fc *fakeCluster) conn(name string) *fakeReplica {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.conns[name]
}

// get makes one Get (with its retries) for user and returns the replicas its
// attempts went to.
func (fc *fakeCluster) get(t *testing.T, user string) ([]string, error) {
	t.Helper()
	n := fc.log.len()
	_, err := fc.c.Get(context.Background(), &GetRequest{UserId: user, Id: "m"})
	return fc.log.since(n), err
}

var three = []string{"10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"}

func users(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user-%d", i)
	}
	return out
}

func TestAUserSticksToOneReplica(t *testing.T) {
	fc := newFakeCluster(t, UserAffinity, fastRetry, three...)
	perReplica := map[string]int{}
	for _, u := range users(60) {
		want := RendezvousOrder(three, u)[0]
		for range 3 {
			if got, err := fc.get(t, u); err != nil || !slices.Equal(got, []string{want}) {
				t.Fatalf("%s: %v %v, want %s", u, got, err, want)
			}
		}
		perReplica[want]++
	}
	if len(perReplica) != 3 {
		t.Fatalf("every replica gets users: %v", perReplica)
	}
}

func TestADownReplicaMovesOnlyItsUsers(t *testing.T) {
	fc := newFakeCluster(t, UserAffinity, fastRetry, three...)
	down := three[1]
	fc.conn(down).set(true)
	moved := 0
	for _, u := range users(60) {
		order := RendezvousOrder(three, u)
		got, err := fc.get(t, u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		switch {
		case order[0] != down && !slices.Equal(got, order[:1]):
			t.Fatalf("%s is not on the down replica and moved: %v, want %s", u, got, order[0])
		case order[0] == down && moved == 0 && !slices.Equal(got, order[:2]):
			t.Fatalf("%s: the retry goes to the next replica in its order: %v, want %v", u, got, order[:2])
		case order[0] == down && moved > 0 && !slices.Equal(got, order[1:2]):
			t.Fatalf("%s: a down replica is skipped: %v, want %s", u, got, order[1])
		}
		if order[0] == down {
			moved++
		}
	}
	if calls, _, _ := fc.conn(down).state(); moved == 0 || calls != 1 {
		t.Fatalf("%d users moved; the down replica got %d calls, want 1", moved, calls)
	}
	// A call that is not retried (Update) fails on a replica that is not yet
	// known down; the next one goes to the next replica.
	fc.clock.advance(time.Second)
	u := userOn(t, down, three)
	_, err := fc.c.Update(context.Background(), &UpdateRequest{UserId: u})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("Update on a down replica: %v", err)
	}
	n := fc.log.len()
	if _, err := fc.c.Update(context.Background(), &UpdateRequest{UserId: u}); err != nil || !slices.Equal(fc.log.since(n), RendezvousOrder(three, u)[1:2]) {
		t.Fatalf("the next Update: %v on %v", err, fc.log.since(n))
	}
}

// userOn returns a user whose first replica is replica.
func userOn(t *testing.T, replica string, replicas []string) string {
	t.Helper()
	for _, u := range users(1000) {
		if RendezvousOrder(replicas, u)[0] == replica {
			return u
		}
	}
	t.Fatalf("no user on %s", replica)
	return ""
}

func TestADownReplicaComesBackAfterItsBackoff(t *testing.T) {
	two := three[:2]
	fc := newFakeCluster(t, UserAffinity, fastRetry, two...)
	a, b := two[0], two[1]
	u := userOn(t, a, two)
	fc.conn(a).set(true)
	if got, _ := fc.get(t, u); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("first call: %v", got)
	}
	// Each failed try after the back-off doubles it, up to 30 s.
	for _, backoff := range []time.Duration{1, 2, 4, 8, 16, 30, 30} {
		backoff *= time.Second
		fc.clock.advance(backoff - time.Millisecond)
		if got, _ := fc.get(t, u); !slices.Equal(got, []string{b}) {
			t.Fatalf("within a back-off of %v: %v, want %s only", backoff, got, b)
		}
		fc.clock.advance(time.Millisecond)
		if got, _ := fc.get(t, u); !slices.Equal(got, []string{a, b}) {
			t.Fatalf("after a back-off of %v: %v, want %s tried again", backoff, got, a)
		}
	}
	if _, _, resets := fc.conn(a).state(); resets == 0 {
		t.Error("a try after the back-off resets gRPC's reconnection back-off")
	}
	fc.conn(a).set(false)
	fc.clock.advance(30 * time.Second)
	for range 3 {
		if got, err := fc.get(t, u); err != nil || !slices.Equal(got, []string{a}) {
			t.Fatalf("back up: %v %v, want %s", got, err, a)
		}
	}
	// A success marks it up: the next failure starts at 1 s again.
	fc.conn(a).set(true)
	_, _ = fc.get(t, u)
	fc.clock.advance(time.Second)
	if got, _ := fc.get(t, u); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("after a success the back-off starts at 1 s: %v", got)
	}
}

func TestCallsAlreadyRunningDoNotLengthenTheBackoff(t *testing.T) {
	two := three[:2]
	fc := newFakeCluster(t, UserAffinity, RetryPolicy{MaxAttempts: 1}, two...)
	a := two[0]
	u := userOn(t, a, two)
	block := make(chan struct{})
	fa := fc.conn(a)
	fa.mu.Lock()
	fa.down, fa.block = true, block
	fa.mu.Unlock()
	var wg sync.WaitGroup
	for range 5 { // five calls on a when it goes down: one failure, not five
		wg.Go(func() { _, _ = fc.get(t, u) })
	}
	for fc.log.len() < 5 {
		time.Sleep(time.Millisecond)
	}
	close(block)
	wg.Wait()
	if got := fc.log.since(0); !slices.Equal(got, []string{a, a, a, a, a}) {
		t.Fatalf("calls: %v", got)
	}
	fc.clock.advance(time.Second)
	if got, _ := fc.get(t, u); !slices.Equal(got, []string{a}) {
		t.Fatalf("after 1 s: %v, want %s tried again", got, a)
	}
}

func TestADrainingReplicaGetsNoNewCallsUntilItsHoldPasses(t *testing.T) {
	fc := newFakeCluster(t, UserAffinity, fastRetry, three...)
	a := three[0]
	u := userOn(t, a, three)
	order := RendezvousOrder(three, u)
	other := userOn(t, three[1], three)
	// Two calls for u are running on a when it begins to stop; they end later.
	running := make([]*replica, 2)
	for i := range running {
		p, err := fc.r.pick(context.Background(), &GetRequest{UserId: u})
		if err != nil || p.name != a {
			t.Fatalf("in flight: %v %v", p, err)
		}
		running[i] = p
	}
	// The first answer with the notice is the call's result as usual, and its
	// users go to their next replica at once; the others stay.
	fc.conn(a).setDraining(true)
	if got, err := fc.get(t, u); err != nil || !slices.Equal(got, []string{a}) {
		t.Fatalf("the draining answer: %v %v, want a success from %s", got, err, a)
	}
	heldUntil := fc.clock.now().Add(replicaDrainingHold)
	if got, err := fc.get(t, u); err != nil || !slices.Equal(got, order[1:2]) {
		t.Fatalf("after the notice: %v %v, want %s", got, err, order[1])
	}
	if got, err := fc.get(t, other); err != nil || !slices.Equal(got, []string{three[1]}) {
		t.Fatalf("another replica's user: %v %v", got, err)
	}
	// A call that was already running succeeds without the notice: the hold
	// stays. One that fails once the replica has gone neither shortens nor
	// lengthens it (and is no failure back-off).
	fc.clock.advance(time.Second)
	fc.r.done(running[0], nil, true, false)
	if got, _ := fc.get(t, u); !slices.Equal(got, order[1:2]) {
		t.Fatalf("after a plain success of a running call: %v, want %s", got, order[1])
	}
	fc.r.done(running[1], status.Error(codes.Unavailable, "fake: connection reset"), true, false)
	fc.r.mu.Lock()
	held, failures := fc.r.replicas[a].downUntil, fc.r.replicas[a].failures
	fc.r.mu.Unlock()
	if !held.Equal(heldUntil) || failures != 0 {
		t.Fatalf("after a failure: held until %v with %d failures, want %v and 0", held, failures, heldUntil)
	}
	fc.clock.advance(replicaDrainingHold - time.Second - time.Millisecond)
	if got, _ := fc.get(t, u); !slices.Equal(got, order[1:2]) {
		t.Fatalf("just before the hold ends: %v, want %s", got, order[1])
	}
	if calls, _, _ := fc.conn(a).state(); calls != 1 {
		t.Fatalf("the draining replica got %d calls, want the 1 that said so", calls)
	}
	// After the hold the replica is tried again: a restarted one takes its users back.
	fc.conn(a).setDraining(false)
	fc.clock.advance(time.Millisecond)
	for range 2 {
		if got, err := fc.get(t, u); err != nil || !slices.Equal(got, []string{a}) {
			t.Fatalf("after the hold: %v %v, want %s", got, err, a)
		}
	}
}

func TestAFailedCallThatSaysDrainingHoldsTheReplica(t *testing.T) {
	fc := newFakeCluster(t, UserAffinity, fastRetry, three...)
	a := three[0]
	u := userOn(t, a, three)
	order := RendezvousOrder(three, u)
	fc.conn(a).set(true)
	fc.conn(a).setDraining(true)
	// Update is not retried: its error is returned as usual.
	if _, err := fc.c.Update(context.Background(), &UpdateRequest{UserId: u}); status.Code(err) != codes.Unavailable {
		t.Fatalf("Update: %v", err)
	}
	// A hold, not the 1 s back-off of a failure.
	fc.clock.advance(replicaDrainingHold - time.Millisecond)
	if got, err := fc.get(t, u); err != nil || !slices.Equal(got, order[1:2]) {
		t.Fatalf("within the hold: %v %v, want %s", got, err, order[1])
	}
	fc.clock.advance(time.Millisecond)
	fc.conn(a).set(false)
	fc.conn(a).setDraining(false)
	if got, err := fc.get(t, u); err != nil || !slices.Equal(got, []string{a}) {
		t.Fatalf("after the hold: %v %v, want %s", got, err, a)
	}
}

func TestRoundRobinSkipsADrainingReplica(t *testing.T) {
	fc := newFakeCluster(t, RoundRobin, fastRetry, three...)
	fc.conn(three[0]).setDraining(true)
	counts := map[string]int{}
	for range 9 {
		got, err := fc.get(t, "alice")
		if err != nil || len(got) != 1 {
			t.Fatalf("%v %v", got, err)
		}
		counts[got[0]]++
	}
	if counts[three[0]] != 1 || counts[three[1]]+counts[three[2]] != 8 || counts[three[1]] == 0 || counts[three[2]] == 0 {
		t.Fatalf("after its first answer the draining replica gets no calls: %v", counts)
	}
}

func TestEveryReplicaDownTriesThemInTheUsersOrder(t *testing.T) {
	fc := newFakeCluster(t, UserAffinity, RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Multiplier: 1}, three...)
	for _, name := range three {
		fc.conn(name).set(true)
	}
	u := "alice"
	order := RendezvousOrder(three, u)
	for range 2 { // the second while every replica is in its back-off
		got, err := fc.get(t, u)
		if status.Code(err) != codes.Unavailable || !slices.Equal(got, append(slices.Clone(order), order[0])) {
			t.Fatalf("%v %v, want %v then %s", got, err, order, order[0])
		}
	}
}

func TestRoundRobinRouting(t *testing.T) {
	fc := newFakeCluster(t, RoundRobin, fastRetry, three...)
	var served []string
	for range 6 {
		got, err := fc.get(t, "alice")
		if err != nil || len(got) != 1 {
			t.Fatalf("%v %v", got, err)
		}
		served = append(served, got[0])
	}
	if !slices.Equal(served, append(slices.Clone(three), three...)) {
		t.Fatalf("one user's calls in turn: %v", served)
	}
	fc.conn(three[0]).set(true)
	counts := map[string]int{}
	for range 7 {
		got, err := fc.get(t, "alice")
		if err != nil {
			t.Fatal(err)
		}
		counts[got[len(got)-1]]++
	}
	if counts[three[0]] != 0 || counts[three[1]] == 0 || counts[three[2]] == 0 {
		t.Fatalf("a down replica is skipped: %v", counts)
	}
}

func TestHealthGoesToTheReplicasInTurn(t *testing.T) {
	fc := newFakeCluster(t, UserAffinity, fastRetry, three...)
	for range 3 {
		if _, err := fc.c.Health(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := fc.log.since(0); !slices.Equal(got, three) {
		t.Fatalf("Health has no user: %v", got)
	}
}

func TestAReplicaThatLeavesClosesAfterItsCalls(t *testing.T) {
	fc := newFakeCluster(t, UserAffinity, fastRetry, three...)
	a := three[0]
	u := userOn(t, a, three)
	block := make(chan struct{})
	fc.conn(a).mu.Lock()
	fc.conn(a).block = block
	fc.conn(a).mu.Unlock()
	done := make(chan error, 1)
	go func() { _, err := fc.get(t, u); done <- err }()
	for fc.log.len() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := fc.r.set(three[1:]); err != nil {
		t.Fatal(err)
	}
	if _, closed, _ := fc.conn(a).state(); closed != 0 {
		t.Fatal("closed while a call runs on it")
	}
	close(block)
	if err := <-done; err != nil {
		t.Fatalf("the running call: %v", err)
	}
	if _, closed, _ := fc.conn(a).state(); closed != 1 {
		t.Fatalf("closed %d times after its call ended, want 1", closed)
	}
	if got, _ := fc.get(t, u); !slices.Equal(got, RendezvousOrder(three, u)[1:2]) {
		t.Fatalf("its user moves to the next in its order: %v", got)
	}
	if err := fc.c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range three[1:] {
		if _, closed, _ := fc.conn(name).state(); closed != 1 {
			t.Errorf("Close closes %s: %d", name, closed)
		}
	}
	if _, err := fc.get(t, u); status.Code(err) != codes.Canceled {
		t.Fatalf("a call after Close: %v", err)
	}
}

func TestDNSTargetResolvedOnFirstCallAndRefreshed(t *testing.T) {
	fc := newFakeCluster(t, UserAffinity, fastRetry)
	var mu sync.Mutex
	answer, lookupErr := []string{"10.0.0.1", "::ffff:10.0.0.2"}, errors.New("no such host")
	lookups := 0
	fc.r.dns = &dnsTarget{host: "recalld-headless", port: "50051"}
	fc.r.refresh = 5 * time.Millisecond
	fc.r.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		lookups++
		if lookupErr != nil {
			return nil, lookupErr
		}
		var out []netip.Addr
		for _, a := range answer {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
	if got := fc.c.Replicas(); len(got) != 0 {
		t.Fatalf("resolved before the first call: %v", got)
	}
	// A name that does not resolve: UNAVAILABLE, and the next call tries again.
	if _, err := fc.get(t, "u"); status.Code(err) != codes.Unavailable {
		t.Fatalf("unresolved name: %v", err)
	}
	mu.Lock()
	lookupErr = nil
	mu.Unlock()
	if _, err := fc.get(t, "u"); err != nil {
		t.Fatal(err)
	}
	if got := fc.c.Replicas(); !slices.Equal(got, []string{"10.0.0.1:50051", "10.0.0.2:50051"}) {
		t.Fatalf("replicas: %v", got)
	}
	waitFor := func(want []string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if slices.Equal(fc.c.Replicas(), want) {
				return
			}
		}
		t.Fatalf("replicas %v, want %v", fc.c.Replicas(), want)
	}
	// A replica appears, one goes: the refresh follows.
	mu.Lock()
	answer = []string{"10.0.0.2", "10.0.0.3", "fd00::1"}
	mu.Unlock()
	waitFor([]string{"10.0.0.2:50051", "10.0.0.3:50051", "[fd00::1]:50051"})
	if _, closed, _ := fc.conn("10.0.0.1:50051").state(); closed != 1 {
		t.Error("the replica that went is closed")
	}
	// A failed lookup or an empty answer keeps the replicas.
	mu.Lock()
	lookupErr, before := errors.New("timeout"), lookups
	mu.Unlock()
	for {
		mu.Lock()
		n := lookups
		mu.Unlock()
		if n > before+2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if got := fc.c.Replicas(); len(got) != 3 {
		t.Fatalf("a failed lookup dropped replicas: %v", got)
	}
}
