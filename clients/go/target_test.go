package recalld

// The targets that name several replicas, and what New makes of each target
// form: a router over several replicas, or one connection as before.

import (
	"slices"
	"testing"
)

func TestReplicaList(t *testing.T) {
	for target, want := range map[string][]string{
		"10.0.0.1:50051,10.0.0.2:50051":                {"10.0.0.1:50051", "10.0.0.2:50051"},
		" Recalld-0.Recalld:50051 , recalld-1:50051, ": {"recalld-0.recalld:50051", "recalld-1:50051"},
		"h:1,h:1":                              {"h:1"},
		"ipv4:10.0.0.1:50051,10.0.0.2:50051":   {"10.0.0.1:50051", "10.0.0.2:50051"},
		"ipv4:10.0.0.1":                        {"10.0.0.1"},
		"ipv6:[FD00::1]:50051,[fd00::2]:50051": {"[fd00::1]:50051", "[fd00::2]:50051"},
		"ipv6:::1":                             {"::1"},
		"127.0.0.1:50051":                      nil,
		"dns:///recalld-headless:50051":        nil,
		"passthrough:///a:1,b:1":               nil,
		"unix:///tmp/a,b.sock":                 nil,
	} {
		got, err := replicaList(target)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("replicaList(%q) = %q, %v; want %q", target, got, err, want)
		}
	}
	for _, bad := range []string{"a:1,b", "a:1,b:http", "ipv4:recalld:1,10.0.0.1:1", "ipv4:", ","} {
		if got, err := replicaList(bad); err == nil {
			t.Errorf("replicaList(%q) = %q, want an error", bad, got)
		}
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) must fail", bad)
		}
	}
}

func TestNewRoutesOnlySeveralReplicas(t *testing.T) {
	for target, want := range map[string][]string{
		"127.0.0.1:1,127.0.0.2:1":       {"127.0.0.1:1", "127.0.0.2:1"},
		"ipv4:127.0.0.2:1,127.0.0.1:1":  {"127.0.0.1:1", "127.0.0.2:1"},
		"ipv6:[::1]:1,[::1]:2":          {"[::1]:1", "[::1]:2"},
		"dns:///localhost:1":            {}, // resolved on the first call
		"127.0.0.1:1":                   nil,
		"127.0.0.1:1,":                  nil,
		"ipv4:127.0.0.1:1":              nil,
		"passthrough:///127.0.0.1:1":    nil,
		"unix:///tmp/recalld-test.sock": nil,
	} {
		c := newClient(t, target)
		switch {
		case want == nil && c.router != nil:
			t.Errorf("New(%q): one target is one connection, as before", target)
		case want != nil && (c.router == nil || !slices.Equal(c.Replicas(), want)):
			t.Errorf("New(%q): replicas %q, want %q", target, c.Replicas(), want)
		case c.cfg.tls != nil:
			t.Errorf("New(%q): a loopback target is plaintext", target)
		}
	}
	for _, target := range []string{"127.0.0.1:1,127.0.0.2:1", "dns:///localhost:1"} {
		c := newClient(t, target, WithRouting(RoundRobin))
		if (c.router == nil) != (target == "dns:///localhost:1") {
			t.Errorf("New(%q, RoundRobin): a list takes turns in the client, dns:/// in grpc-go", target)
		}
	}
	if c := newClient(t, "10.0.0.1:1,127.0.0.1:1"); c.cfg.tls == nil {
		t.Error("a list with a host that is not loopback uses TLS")
	}
	if _, err := New("127.0.0.1:1,127.0.0.2:1", WithRouting(Routing(7))); err == nil {
		t.Error("an unknown routing must fail")
	}
	if dns := parseDNSTarget("dns://8.8.8.8/recalld:50051"); *dns != (dnsTarget{host: "recalld", port: "50051", server: "8.8.8.8"}) {
		t.Errorf("parseDNSTarget: %+v", dns)
	}
}
