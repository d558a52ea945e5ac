// The replicas a router calls: one connection each, the set replaced when a
// DNS name resolves to other addresses (looked up by the client on the first
// call and every 30 s after), connections of replicas that left closed once
// their calls end.

package recalld

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// dnsRefreshInterval is how often a DNS target is resolved again, so that a
// replica that appears gets its share of users and one that goes hands its
// users on.
const dnsRefreshInterval = 30 * time.Second

// dnsLookupTimeout bounds one lookup of the refresh loop.
const dnsLookupTimeout = 10 * time.Second

// lookupFunc returns the addresses of a host name.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// dnsTarget is a "dns:[//server/]host:port" target.
type dnsTarget struct {
	host, port string
	server     string // the DNS server to ask ("" for the system's)
}

// newLookup resolves with the system resolver, or with the DNS server a
// "dns://server/" target names.
func newLookup(server string) lookupFunc {
	res := net.DefaultResolver
	if server != "" {
		if _, _, err := net.SplitHostPort(server); err != nil {
			server = net.JoinHostPort(strings.Trim(server, "[]"), "53")
		}
		res = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}}
	}
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		return res.LookupNetIP(ctx, "ip", host)
	}
}

// replicaDialer opens a connection to one replica with opts; authority, when
// set, is the name TLS checks and the :authority sent (a DNS target's name,
// where the replica's address is a resolved IP).
func replicaDialer(opts []grpc.DialOption, authority string) func(string) (replicaConn, error) {
	opts = slices.Clip(opts)
	if authority != "" {
		opts = append([]grpc.DialOption{grpc.WithAuthority(authority)}, opts...)
	}
	return func(name string) (replicaConn, error) { return grpc.NewClient(name, opts...) }
}

// set makes names the replicas: new ones are dialled (gRPC connects on the
// first call), the ones that left are closed when their last call ends, the
// others keep their connection and health.
func (r *router) set(names []string) error {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errClientClosed
	}
	next := make(map[string]*replica, len(names))
	var opened, idle []replicaConn
	for _, name := range names {
		if p, ok := r.replicas[name]; ok {
			next[name] = p
			continue
		}
		conn, err := r.dial(name)
		if err != nil {
			r.mu.Unlock()
			for _, c := range opened {
				_ = c.Close()
			}
			return fmt.Errorf("recalld: replica %s: %w", name, err)
		}
		opened = append(opened, conn)
		next[name] = &replica{name: name, conn: conn}
	}
	for name, p := range r.replicas {
		if _, ok := next[name]; !ok {
			p.gone = true
			if p.inflight == 0 {
				idle = append(idle, p.conn)
			}
		}
	}
	r.replicas, r.names = next, names
	r.mu.Unlock()
	for _, c := range idle {
		_ = c.Close()
	}
	return nil
}

// current returns the replicas' names.
func (r *router) current() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}

// ensureResolved makes sure a DNS target has replicas before a call: on the
// first call it resolves the name (and starts the refresh), and while no
// lookup has given an address each call tries again.
func (r *router) ensureResolved(ctx context.Context) error {
	if r.dns == nil {
		return nil
	}
	r.startLoop.Do(func() { go r.refreshLoop() })
	if len(r.current()) > 0 {
		return nil
	}
	select {
	case r.resolving <- struct{}{}:
		defer func() { <-r.resolving }()
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
	if len(r.current()) > 0 { // another call resolved it meanwhile
		return nil
	}
	if err := r.resolve(ctx); err != nil {
		if errors.Is(err, errClientClosed) {
			return err
		}
		return status.Errorf(codes.Unavailable, "recalld: resolving %s: %v", r.dns.host, err)
	}
	return nil
}

// resolve looks the DNS name up and makes its addresses (with the target's
// port) the replicas. A failed lookup or an empty answer leaves them as they
// are.
func (r *router) resolve(ctx context.Context) error {
	addrs, err := r.lookup(ctx, r.dns.host)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(addrs))
	for _, a := range addrs {
		names = append(names, net.JoinHostPort(a.Unmap().String(), r.dns.port))
	}
	if len(names) == 0 {
		return fmt.Errorf("%s resolves to no address", r.dns.host)
	}
	return r.set(names)
}

// refreshLoop resolves the DNS name every r.refresh until the client closes.
func (r *router) refreshLoop() {
	t := time.NewTicker(r.refresh)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		select {
		case <-r.stop:
			return
		case r.resolving <- struct{}{}:
		}
		ctx, cancel := context.WithTimeout(context.Background(), dnsLookupTimeout)
		_ = r.resolve(ctx) // on failure the replicas stay as they were
		cancel()
		<-r.resolving
	}
}

// close stops the refresh and closes every connection; calls still running
// end with CANCELED, as on a closed grpc.ClientConn.
func (r *router) close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	replicas := r.replicas
	r.replicas, r.names = nil, nil
	r.mu.Unlock()
	close(r.stop)
	var errs []error
	for _, p := range replicas {
		errs = append(errs, p.conn.Close())
	}
	return errors.Join(errs...)
}
