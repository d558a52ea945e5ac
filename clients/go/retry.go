package recalld

import (
	"math"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// RetryPolicy is a bounded exponential backoff for UNAVAILABLE on
// idempotent calls.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts in total, the first included; 1
	// disables retries.
	MaxAttempts int
	// InitialBackoff is the delay before the first retry.
	InitialBackoff time.Duration
	// MaxBackoff caps any single delay.
	MaxBackoff time.Duration
	// Multiplier is the growth factor between consecutive delays.
	Multiplier float64
	// Jitter (0..1): each delay is drawn uniformly from [d*(1-Jitter), d].
	Jitter float64
}

// DefaultRetryPolicy is used unless WithRetryPolicy says otherwise.
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:    4,
	InitialBackoff: 100 * time.Millisecond,
	MaxBackoff:     2 * time.Second,
	Multiplier:     2,
	Jitter:         0.2,
}

// Method names an RPC of recalld.v1.MemoryService or recalld.v1.SessionService
// (method names are unique across the two).
type Method string

// The RPCs of recalld.v1.MemoryService.
const (
	MethodWrite      Method = "Write"
	MethodRecall     Method = "Recall"
	MethodGetProfile Method = "GetProfile"
	MethodGet        Method = "Get"
	MethodList       Method = "List"
	MethodUpdate     Method = "Update"
	MethodForget     Method = "Forget"

	MethodRestore         Method = "Restore"
	MethodConfirm         Method = "Confirm"
	MethodHistory         Method = "History"
	MethodListConflicts   Method = "ListConflicts"
	MethodResolveConflict Method = "ResolveConflict"
	MethodConsolidate     Method = "Consolidate"
)

// The RPCs of recalld.v1.SessionService.
const (
	MethodAppendMessages Method = "AppendMessages"
	MethodGetContext     Method = "GetContext"
	MethodGetSession     Method = "GetSession"
	MethodListSessions   Method = "ListSessions"
	MethodEndSession     Method = "EndSession"
)

// MethodHealth is grpc.health.v1.Health/Check (Client.Health).
const MethodHealth Method = "Health"

// RetrySafeRPCs are the RPCs the contract marks NO_SIDE_EFFECTS or IDEMPOTENT
// (the proto's idempotency_level): Recall, GetProfile, Get, List, History and
// ListConflicts of MemoryService; GetContext, GetSession and ListSessions of
// SessionService; and the health check, which only reads.
var RetrySafeRPCs = retrySafeRPCs()

func retrySafeRPCs() map[Method]bool {
	safe := map[Method]bool{}
	for _, service := range []protoreflect.ServiceDescriptor{
		recalldv1.File_recalld_v1_memory_service_proto.Services().ByName("MemoryService"),
		recalldv1.File_recalld_v1_session_service_proto.Services().ByName("SessionService"),
	} {
		methods := service.Methods()
		for i := range methods.Len() {
			options, _ := methods.Get(i).Options().(*descriptorpb.MethodOptions)
			switch options.GetIdempotencyLevel() {
			case descriptorpb.MethodOptions_NO_SIDE_EFFECTS, descriptorpb.MethodOptions_IDEMPOTENT:
				safe[Method(methods.Get(i).Name())] = true
			}
		}
	}
	safe[MethodHealth] = true
	return safe
}

// IsIdempotent reports whether a call may be sent again: the RPCs the contract
// marks safe (RetrySafeRPCs), and Write and AppendMessages with a request_id
// (the server replays the first result). The other RPCs change state and never
// are (a lost Update response would fail the etag check on replay; a Forget,
// Restore, Confirm, ResolveConflict or EndSession may have happened; a
// Consolidate run is left to its schedule).
func IsIdempotent(m Method, hasRequestID bool) bool {
	if m == MethodWrite || m == MethodAppendMessages {
		return hasRequestID
	}
	return RetrySafeRPCs[m]
}

// ShouldRetry reports whether to retry after failed attempt number attempt
// (counted from 1) that ended with code.
func (p RetryPolicy) ShouldRetry(m Method, hasRequestID bool, code codes.Code, attempt int) bool {
	return code == codes.Unavailable && attempt < p.MaxAttempts && IsIdempotent(m, hasRequestID)
}

// Backoff is the delay before retry number retry (1 for the first); random
// returns a number in [0, 1).
func (p RetryPolicy) Backoff(retry int, random func() float64) time.Duration {
	if random == nil {
		random = rand.Float64
	}
	base := float64(p.InitialBackoff) * math.Pow(p.Multiplier, float64(max(0, retry-1)))
	base = min(base, float64(p.MaxBackoff))
	jitter := min(1, max(0, p.Jitter))
	return time.Duration(math.Round(base * (1 - jitter*random())))
}
