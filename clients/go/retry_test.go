package recalld

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

func TestRetrySafeRPCsComeFromTheContract(t *testing.T) {
	want := []Method{
		MethodRecall, MethodGetProfile, MethodGet, MethodList, MethodHistory, MethodListConflicts,
		MethodGetContext, MethodGetSession, MethodListSessions, MethodHealth,
	}
	if len(RetrySafeRPCs) != len(want) {
		t.Fatalf("RetrySafeRPCs = %v, want %v", RetrySafeRPCs, want)
	}
	for _, m := range want {
		if !RetrySafeRPCs[m] {
			t.Errorf("%s is not retry-safe", m)
		}
	}
}

func TestIsIdempotent(t *testing.T) {
	cases := []struct {
		m     Method
		reqID bool
		want  bool
	}{
		{MethodRecall, false, true}, {MethodGetProfile, false, true}, {MethodGet, false, true}, {MethodList, false, true},
		{MethodWrite, false, false}, {MethodWrite, true, true},
		{MethodUpdate, false, false}, {MethodUpdate, true, false}, {MethodForget, false, false},
		{MethodHistory, false, true}, {MethodListConflicts, false, true},
		{MethodRestore, false, false}, {MethodConfirm, false, false},
		{MethodResolveConflict, false, false}, {MethodConsolidate, false, false},
		{MethodAppendMessages, false, false}, {MethodAppendMessages, true, true},
		{MethodGetContext, false, true}, {MethodGetSession, false, true}, {MethodListSessions, false, true},
		{MethodEndSession, false, false}, {MethodEndSession, true, false},
		{MethodHealth, false, true},
	}
	for _, c := range cases {
		if got := IsIdempotent(c.m, c.reqID); got != c.want {
			t.Errorf("IsIdempotent(%s, %v) = %v", c.m, c.reqID, got)
		}
	}
}

func TestShouldRetry(t *testing.T) {
	p := DefaultRetryPolicy
	if !p.ShouldRetry(MethodGet, false, codes.Unavailable, 1) {
		t.Error("Get on UNAVAILABLE must retry")
	}
	for _, c := range []codes.Code{codes.DeadlineExceeded, codes.Internal, codes.Aborted, codes.ResourceExhausted,
		codes.InvalidArgument, codes.NotFound, codes.Unknown, codes.Canceled} {
		if p.ShouldRetry(MethodGet, false, c, 1) {
			t.Errorf("must not retry %v", c)
		}
	}
	if p.ShouldRetry(MethodWrite, false, codes.Unavailable, 1) || !p.ShouldRetry(MethodWrite, true, codes.Unavailable, 1) {
		t.Error("Write retries only with a request_id")
	}
	if p.ShouldRetry(MethodUpdate, false, codes.Unavailable, 1) || p.ShouldRetry(MethodForget, false, codes.Unavailable, 1) {
		t.Error("Update and Forget are never retried")
	}
	if !p.ShouldRetry(MethodRecall, false, codes.Unavailable, 3) || p.ShouldRetry(MethodRecall, false, codes.Unavailable, 4) {
		t.Error("MaxAttempts 4 allows three retries")
	}
}

func TestBackoff(t *testing.T) {
	p := DefaultRetryPolicy
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms}
	for i, w := range want {
		if got := p.Backoff(i+1, func() float64 { return 0 }); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := p.Backoff(2, func() float64 { return 1 }); got != 160*ms {
		t.Errorf("full jitter: %v", got)
	}
	for range 100 {
		if d := p.Backoff(3, nil); d < 320*ms || d > 400*ms {
			t.Fatalf("jittered delay out of range: %v", d)
		}
	}
}
