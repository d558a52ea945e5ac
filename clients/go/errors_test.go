package recalld

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// craftedStatus builds the google.rpc.Status a server puts in
// grpc-status-details-bin, from its wire bytes.
func craftedStatus(t *testing.T, code codes.Code, msg string, details ...proto.Message) error {
	t.Helper()
	st := &spb.Status{Code: int32(code), Message: msg}
	for _, d := range details {
		a, err := anypb.New(d)
		if err != nil {
			t.Fatal(err)
		}
		st.Details = append(st.Details, a)
	}
	wire, err := proto.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var decoded spb.Status
	if err := proto.Unmarshal(wire, &decoded); err != nil {
		t.Fatal(err)
	}
	return status.ErrorProto(&decoded)
}

func TestFromErrorDecodesErrorInfoAndBadRequest(t *testing.T) {
	err := craftedStatus(t, codes.InvalidArgument, "memories[0].content: must not be empty",
		&errdetails.ErrorInfo{Reason: "INVALID_FIELD", Domain: "recalld.v1", Metadata: map[string]string{"field": "memories[0].content"}},
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "memories[0].content", Description: "must not be empty"},
			{Field: "memories[1].importance", Description: "must be within 0..1", Reason: "OUT_OF_RANGE"},
		}},
		&errdetails.RetryInfo{}, // ignored
	)
	re := FromError(fmt.Errorf("wrapped: %w", err))
	if re.Code != codes.InvalidArgument || re.Message != "memories[0].content: must not be empty" {
		t.Fatalf("code/message: %v %q", re.Code, re.Message)
	}
	if re.Reason != "INVALID_FIELD" || re.Domain != ErrorDomain || re.Metadata["field"] != "memories[0].content" {
		t.Fatalf("error info: %+v", re)
	}
	if re.ErrorReason() != recalldv1.ErrorReason_ERROR_REASON_INVALID_FIELD {
		t.Fatalf("ErrorReason() = %v", re.ErrorReason())
	}
	want := []FieldViolation{
		{Field: "memories[0].content", Description: "must not be empty"},
		{Field: "memories[1].importance", Description: "must be within 0..1", Reason: "OUT_OF_RANGE"},
	}
	if fmt.Sprint(re.FieldViolations) != fmt.Sprint(want) {
		t.Fatalf("violations = %+v", re.FieldViolations)
	}
	if got := re.Error(); got != "recalld: INVALID_ARGUMENT: memories[0].content: must not be empty (reason INVALID_FIELD)" {
		t.Fatalf("Error() = %q", got)
	}
	if status.Code(re) != codes.InvalidArgument {
		t.Fatal("status.Code does not see through *Error")
	}
	var target *Error
	if !errors.As(error(re), &target) || FromError(re) != re {
		t.Fatal("FromError must be idempotent")
	}
}

func TestFromErrorReasons(t *testing.T) {
	aborted := FromError(craftedStatus(t, codes.Aborted, "stale",
		&errdetails.ErrorInfo{Reason: "ETAG_MISMATCH", Domain: "recalld.v1"}))
	if aborted.ErrorReason() != recalldv1.ErrorReason_ERROR_REASON_ETAG_MISMATCH || len(aborted.FieldViolations) != 0 {
		t.Fatalf("aborted: %+v", aborted)
	}
	foreign := FromError(craftedStatus(t, codes.NotFound, "nope",
		&errdetails.ErrorInfo{Reason: "MEMORY_NOT_FOUND", Domain: "proxy.example"}))
	if foreign.Reason != "MEMORY_NOT_FOUND" || foreign.ErrorReason() != recalldv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		t.Fatalf("foreign: %+v", foreign)
	}
	unknown := FromError(craftedStatus(t, codes.Internal, "x",
		&errdetails.ErrorInfo{Reason: "SOMETHING_NEW", Domain: "recalld.v1"}))
	if unknown.ErrorReason() != recalldv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		t.Fatal("an unknown reason must map to UNSPECIFIED")
	}
	bare := FromError(status.Error(codes.NotFound, "not found"))
	if bare.Code != codes.NotFound || bare.Reason != "" || bare.FieldViolations != nil {
		t.Fatalf("bare: %+v", bare)
	}
}

func TestFromErrorNonGRPC(t *testing.T) {
	if FromError(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	dl := FromError(context.DeadlineExceeded)
	if dl.Code != codes.DeadlineExceeded || !errors.Is(dl, context.DeadlineExceeded) {
		t.Fatalf("deadline: %+v", dl)
	}
	if FromError(errors.New("boom")).Code != codes.Unknown {
		t.Fatal("plain errors are UNKNOWN")
	}
}

func TestContextErrorsMatchStatusCodesFromTheWire(t *testing.T) {
	// A deadline the server or the transport enforced arrives as a status, not
	// as the caller's context error; errors.Is still names it.
	dl := FromError(status.Error(codes.DeadlineExceeded, "deadline exceeded"))
	if !errors.Is(dl, context.DeadlineExceeded) || errors.Is(dl, context.Canceled) {
		t.Fatalf("deadline: %+v", dl)
	}
	cancelled := FromError(status.Error(codes.Canceled, "cancelled"))
	if !errors.Is(cancelled, context.Canceled) || errors.Is(cancelled, context.DeadlineExceeded) {
		t.Fatalf("cancelled: %+v", cancelled)
	}
	if errors.Is(FromError(status.Error(codes.NotFound, "gone")), context.DeadlineExceeded) {
		t.Fatal("NOT_FOUND is no deadline")
	}
}
