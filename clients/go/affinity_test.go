package recalld

// The rendezvous order and the x-recalld-user value against the vectors all
// three clients check (tests/scripts/affinity_vectors.json, written by
// tests/scripts/make_affinity_vectors.py), and the header on the wire.

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// affinityVectorsPath is relative to this package's directory, where go test runs.
const affinityVectorsPath = "../../tests/scripts/affinity_vectors.json"

type affinityVectors struct {
	Orders []struct {
		Replicas []string `json:"replicas"`
		UserID   string   `json:"user_id"`
		Order    []string `json:"order"`
	} `json:"orders"`
	RoutingKeys []struct {
		UserID     string `json:"user_id"`
		RoutingKey string `json:"routing_key"`
	} `json:"routing_keys"`
}

func TestAffinityVectors(t *testing.T) {
	raw, err := os.ReadFile(affinityVectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var v affinityVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Orders) == 0 || len(v.RoutingKeys) == 0 {
		t.Fatalf("no vectors: %d orders, %d routing keys", len(v.Orders), len(v.RoutingKeys))
	}
	for _, c := range v.Orders {
		replicas := slices.Clone(c.Replicas)
		if got := RendezvousOrder(c.Replicas, c.UserID); !slices.Equal(got, c.Order) {
			t.Errorf("RendezvousOrder(%q, %q) = %q, want %q", c.Replicas, c.UserID, got, c.Order)
		}
		if !slices.Equal(replicas, c.Replicas) {
			t.Errorf("RendezvousOrder changed its argument: %q", c.Replicas)
		}
		// Only the users of a replica that goes move: the order without it is
		// the full order without it.
		if len(c.Order) > 1 {
			gone := c.Order[0]
			rest := slices.DeleteFunc(slices.Clone(c.Replicas), func(r string) bool { return r == gone })
			if got := RendezvousOrder(rest, c.UserID); !slices.Equal(got, c.Order[1:]) {
				t.Errorf("without %s: %q, want %q", gone, got, c.Order[1:])
			}
		}
	}
	for _, c := range v.RoutingKeys {
		if got := RoutingKey(c.UserID); got != c.RoutingKey {
			t.Errorf("RoutingKey(%q) = %s, want %s", c.UserID, got, c.RoutingKey)
		}
	}
}

func TestRendezvousOrderTiesAndRepeats(t *testing.T) {
	if got := RendezvousOrder([]string{"b:1", "a:1", "b:1"}, "u"); len(got) != 2 {
		t.Errorf("repeats count once: %q", got)
	}
	if got := RendezvousOrder(nil, "u"); len(got) != 0 {
		t.Errorf("no replicas: %q", got)
	}
}

// With one replica too, every call that names a user carries the header
// (proxies may route on it); a call without a user (Health) or with an empty
// user id carries none.
func TestUserHeaderOnEveryCallWithAUser(t *testing.T) {
	f := &fakeServer{}
	c := newClient(t, serve(t, f))
	ctx := context.Background()
	if _, err := c.Get(ctx, &GetRequest{UserId: "Ünïcødé", Id: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Raw().Get(ctx, &GetRequest{UserId: "u1", Id: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, &GetRequest{Id: "m"}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{RoutingKey("Ünïcødé"), RoutingKey("u1"), ""} {
		got := f.md(i).Get(UserHeader)
		if (want == "" && len(got) != 0) || (want != "" && !slices.Equal(got, []string{want})) {
			t.Errorf("call %d: %s = %q, want %q", i, UserHeader, got, want)
		}
	}
	if len(RoutingKey("u1")) != 32 {
		t.Errorf("RoutingKey is 32 hex digits: %q", RoutingKey("u1"))
	}
}
