// Routing over several replicas (docs/routing.md): each call goes to the first
// healthy replica in its user's rendezvous order (or, with RoundRobin, the
// next in turn); a replica that answers UNAVAILABLE is skipped for a back-off,
// one whose answer says it is draining for a hold; a retry goes to the next
// replica. The set of replicas, its connections and the DNS refresh are in
// replicas.go.

package recalld

import (
	"context"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Routing says how a Client whose target names several replicas picks one
// for a call.
type Routing int

const (
	// UserAffinity (the default) sends each call to the first healthy replica
	// in its user's order (RendezvousOrder), so that each user's working set
	// is loaded by one replica.
	UserAffinity Routing = iota
	// RoundRobin spreads calls over the replicas in turn, whatever their user.
	RoundRobin
)

func (r Routing) String() string {
	if r == RoundRobin {
		return "RoundRobin"
	}
	return "UserAffinity"
}

// WithRouting chooses how calls are spread when the target names several
// replicas (a list "host:port,host:port", "ipv4:…"/"ipv6:…" lists, or a
// "dns:///name:port" that resolves to several addresses). Default
// UserAffinity; RoundRobin spreads calls in turn, as before routing by user
// (for "dns:///", grpc-go's round_robin policy). A single address is one
// replica either way.
func WithRouting(r Routing) Option { return func(c *config) { c.routing = r } }

// Back-off of a replica that failed with UNAVAILABLE: 1 s, doubling while it
// keeps failing, at most 30 s.
const (
	replicaFirstBackoff = time.Second
	replicaMaxBackoff   = 30 * time.Second
)

// drainingHeader is in the initial metadata (the response header) of every
// answer, success or error, of a replica that has begun to stop (SIGTERM: it
// drains for up to its --shutdown-grace). Its users then go to their next
// replica for replicaDrainingHold, so it goes quiet and exits; after the hold
// a restarted replica at the same address gets them back.
const (
	drainingHeader      = "x-recalld-draining"
	replicaDrainingHold = 30 * time.Second
)

// saysDraining reports whether an answer's header comes from a draining replica.
func saysDraining(header metadata.MD) bool { return len(header.Get(drainingHeader)) > 0 }

func replicaBackoff(failures int) time.Duration {
	if failures > 5 { // 1 s << 5 = 32 s is past the cap already
		return replicaMaxBackoff
	}
	return min(replicaFirstBackoff<<max(0, failures-1), replicaMaxBackoff)
}

// replicaConn is a connection to one replica: a *grpc.ClientConn, or a fake
// in the tests.
type replicaConn interface {
	grpc.ClientConnInterface
	Close() error
}

// replica is one replica of a router. Every field but name and conn is
// guarded by router.mu.
type replica struct {
	name string
	conn replicaConn
	// failures counts the UNAVAILABLE in a row; the replica is skipped until
	// downUntil, the end of its back-off or (with failures 0) of its draining
	// hold.
	failures  int
	downUntil time.Time
	inflight  int  // calls running on conn
	gone      bool // left the set: conn closes when the last call ends
}

func (p *replica) up(now time.Time) bool { return !now.Before(p.downUntil) }

// router is the grpc.ClientConnInterface of a Client over several replicas: the
// generated stubs call its Invoke, which picks a replica by the request's
// user_id and observes how the call ended.
type router struct {
	mode Routing
	dial func(name string) (replicaConn, error)
	now  func() time.Time

	dns       *dnsTarget // nil for a list of replicas
	lookup    lookupFunc
	refresh   time.Duration
	resolving chan struct{} // one DNS lookup at a time
	startLoop sync.Once
	stop      chan struct{}

	mu       sync.Mutex
	replicas map[string]*replica
	names    []string // the replicas' names, sorted
	turn     int      // RoundRobin, and calls without a user
	closed   bool
}

func newRouter(mode Routing, dial func(string) (replicaConn, error)) *router {
	return &router{
		mode: mode, dial: dial, now: time.Now,
		refresh: dnsRefreshInterval, resolving: make(chan struct{}, 1), stop: make(chan struct{}),
		replicas: map[string]*replica{},
	}
}

// Invoke sends one call to the replica pick chooses and records the outcome,
// and whether the answer's header says the replica is draining.
func (r *router) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	p, err := r.pick(ctx, args)
	if err != nil {
		return err
	}
	var header metadata.MD
	err = p.conn.Invoke(ctx, method, args, reply, append(slices.Clip(opts), grpc.Header(&header))...)
	r.done(p, err, true, saysDraining(header))
	return err
}

// NewStream opens a stream on the replica pick chooses for a call without a
// request (no recalld RPC streams; this is for Raw use of other services).
func (r *router) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	p, err := r.pick(ctx, nil)
	if err != nil {
		return nil, err
	}
	r.done(p, nil, false, false)
	return p.conn.NewStream(ctx, desc, method, opts...)
}

// pick chooses the replica for a call: the first in the call's order that is
// up and not yet tried by this call (its earlier attempts, see withAttempts);
// when every untried replica is down, the first untried one anyway; when this
// call has tried them all, it starts over. The order is the user's rendezvous
// order, or the replicas in turn for RoundRobin and requests without a user.
func (r *router) pick(ctx context.Context, args any) (*replica, error) {
	if err := r.ensureResolved(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClientClosed
	}
	if len(r.names) == 0 {
		return nil, status.Error(codes.Unavailable, "recalld: no replica to call")
	}
	var order []string
	if u, ok := args.(userRequest); ok && r.mode == UserAffinity {
		order = RendezvousOrder(r.names, u.GetUserId())
	} else {
		i := r.turn % len(r.names)
		r.turn++
		order = append(slices.Clone(r.names[i:]), r.names[:i]...)
	}
	tried := attemptsOf(ctx)
	if tried.all(order) {
		tried.reset()
	}
	now := r.now()
	var chosen *replica
	for _, name := range order {
		if p := r.replicas[name]; p.up(now) && !tried.has(name) {
			chosen = p
			break
		}
	}
	for _, name := range order {
		if chosen == nil && !tried.has(name) {
			chosen = r.replicas[name] // every replica left is down: in order anyway
		}
	}
	tried.add(chosen.name)
	chosen.inflight++
	if chosen.failures > 0 {
		// gRPC's own reconnection waits up to 2 minutes; try now.
		if c, ok := chosen.conn.(interface{ ResetConnectBackoff() }); ok {
			c.ResetConnectBackoff()
		}
	}
	return chosen, nil
}

// done ends a call on p and, with observe, records how it ended: an answer
// that says p is draining (a success or an error) holds p out of every order
// for replicaDrainingHold — not a failure: no back-off, and neither a later
// success (a call that was already running) nor a failure ends, shortens or
// lengthens the hold; otherwise a success marks p up after a back-off, and
// UNAVAILABLE marks it down for its back-off (which doubles when p fails again
// after it, not for each call that was already running when it went down).
func (r *router) done(p *replica, err error, observe, draining bool) {
	r.mu.Lock()
	p.inflight--
	switch {
	case !observe:
	case draining:
		p.failures = 0
		if until := r.now().Add(replicaDrainingHold); until.After(p.downUntil) {
			p.downUntil = until
		}
	case err == nil:
		if p.failures > 0 { // a draining hold (failures 0) stays
			p.failures, p.downUntil = 0, time.Time{}
		}
	case status.Code(err) == codes.Unavailable && FromError(err).Reason == "":
		// Without an ErrorInfo reason the replica was not reached; with one
		// (BACKEND_UNAVAILABLE) it answered, and its users stay.
		if now := r.now(); p.up(now) {
			p.failures++
			p.downUntil = now.Add(replicaBackoff(p.failures))
		}
	}
	release := p.gone && p.inflight == 0 // left the set (close does not close it)
	r.mu.Unlock()
	if release {
		_ = p.conn.Close()
	}
}

var errClientClosed = status.Error(codes.Canceled, "recalld: the client is closed")

// attempts are the replicas one call (one invoke, whose attempts run one after
// the other) has tried, so that a retry goes to the next replica. Read and
// written by pick under router.mu.
type attempts struct{ tried map[string]bool }

type attemptsKey struct{}

// withAttempts gives a call's context the record of the replicas it tries.
func withAttempts(ctx context.Context) context.Context {
	return context.WithValue(ctx, attemptsKey{}, &attempts{tried: map[string]bool{}})
}

func attemptsOf(ctx context.Context) *attempts {
	a, _ := ctx.Value(attemptsKey{}).(*attempts)
	return a
}

func (a *attempts) has(name string) bool { return a != nil && a.tried[name] }

func (a *attempts) add(name string) {
	if a != nil {
		a.tried[name] = true
	}
}

func (a *attempts) reset() {
	if a != nil {
		clear(a.tried)
	}
}

func (a *attempts) all(names []string) bool {
	if a == nil {
		return false
	}
	for _, n := range names {
		if !a.tried[n] {
			return false
		}
	}
	return true
}
