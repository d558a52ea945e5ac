// Which replica a user's calls go to: the rendezvous order of docs/routing.md,
// which the Python and Node clients compute the same way
// (tests/scripts/affinity_vectors.json), and the x-recalld-user header a proxy
// may route on.

package recalld

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
)

// userRequest is a request that names a user: every MemoryService and
// SessionService request does.
type userRequest interface{ GetUserId() string }

// RendezvousOrder returns the replicas in the order a user's calls try them:
// by weight, highest first, where a replica's weight is the first 8 bytes,
// big-endian, of SHA-256(replica + "\n" + userID); ties go by replica name,
// ascending. Repeated names count once. replicas is not changed.
//
// When a replica leaves the set only its users move, each to the next
// replica in its own order.
func RendezvousOrder(replicas []string, userID string) []string {
	order := slices.Clone(replicas)
	slices.Sort(order)
	order = slices.Compact(order)
	weights := make(map[string]uint64, len(order))
	for _, r := range order {
		weights[r] = rendezvousWeight(r, userID)
	}
	slices.SortStableFunc(order, func(a, b string) int {
		if c := cmp.Compare(weights[b], weights[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b) // byte order of UTF-8 is code point order
	})
	return order
}

func rendezvousWeight(replica, userID string) uint64 {
	h := sha256.New()
	h.Write([]byte(replica))
	h.Write([]byte{'\n'})
	h.Write([]byte(userID))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}

// RoutingKey is the value of the x-recalld-user header (UserHeader) for a
// user: the first 32 hex digits of SHA-256 of the user id. It is ASCII
// whatever the user id holds, and shows no user id in a proxy's logs.
func RoutingKey(userID string) string {
	sum := sha256.Sum256([]byte(userID))
	return hex.EncodeToString(sum[:16])
}
