package recalld

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of recalld's own errors.
const ErrorDomain = "recalld.v1"

// FieldViolation is one offending request field from google.rpc.BadRequest.
type FieldViolation struct {
	// Field is the path of the field, for example "memories[0].content".
	Field string
	// Description explains what is wrong.
	Description string
	// Reason is a machine-readable reason for this field, if the server set one.
	Reason string
}

// Error is a failed recalld call. Every error a Client method returns is an
// *Error; use errors.As to get it. It also implements GRPCStatus, so
// status.Code(err) and status.FromError(err) keep working.
type Error struct {
	// Code is the gRPC status code.
	Code codes.Code
	// Message is the server's status message.
	Message string
	// Reason is google.rpc.ErrorInfo.reason, for example "ETAG_MISMATCH";
	// empty without an ErrorInfo.
	Reason string
	// Domain is google.rpc.ErrorInfo.domain ("recalld.v1" for recalld's own errors).
	Domain string
	// Metadata is google.rpc.ErrorInfo.metadata.
	Metadata map[string]string
	// FieldViolations are google.rpc.BadRequest.field_violations, in server order.
	FieldViolations []FieldViolation
	// Partial is set when a Write of more than MaxWriteBatch memories failed
	// after some of its chunks were written; nil otherwise.
	Partial *PartialWrite

	status *status.Status
	cause  error
}

// PartialWrite is what a chunked Write committed before a chunk failed. Sending
// the same request again with the same RequestId replays the committed chunks
// (the server returns their first results) and writes the rest; without a
// RequestId a resend would write them again.
type PartialWrite struct {
	// Chunks is the number of chunks written, Memories the number of memories
	// in them (the first Memories of the request).
	Chunks, Memories int
	// Results are the written memories' results, in request order.
	Results []*WriteResult
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "recalld: %s: %s", codeName(e.Code), e.Message)
	if e.Reason != "" {
		fmt.Fprintf(&b, " (reason %s)", e.Reason)
	}
	if e.Partial != nil {
		fmt.Fprintf(&b, " [chunked write: %d memories in %d chunks were written before this chunk failed]",
			e.Partial.Memories, e.Partial.Chunks)
	}
	return b.String()
}

// withMessage is a copy of e with another message, in GRPCStatus too.
func (e *Error) withMessage(msg string) *Error {
	p := e.status.Proto()
	p.Message = msg
	c := *e
	c.Message, c.status = msg, status.FromProto(p)
	return &c
}

// GRPCStatus returns the status the error was decoded from.
func (e *Error) GRPCStatus() *status.Status { return e.status }

// Unwrap returns the original error (for example context.DeadlineExceeded).
func (e *Error) Unwrap() error { return e.cause }

// Is makes errors.Is(err, context.DeadlineExceeded) and errors.Is(err,
// context.Canceled) hold for DEADLINE_EXCEEDED and CANCELLED however they came
// about: the caller's context, the deadline sent with the call, or the server.
func (e *Error) Is(target error) bool {
	switch target {
	case context.DeadlineExceeded:
		return e.Code == codes.DeadlineExceeded
	case context.Canceled:
		return e.Code == codes.Canceled
	}
	return false
}

// ErrorReason returns Reason as the contract's ErrorReason enum;
// ERROR_REASON_UNSPECIFIED when it is absent, unknown, or from another domain.
func (e *Error) ErrorReason() ErrorReason {
	if e.Domain != ErrorDomain {
		return recalldv1.ErrorReason_ERROR_REASON_UNSPECIFIED
	}
	if v, ok := recalldv1.ErrorReason_value["ERROR_REASON_"+e.Reason]; ok {
		return ErrorReason(v)
	}
	return recalldv1.ErrorReason_ERROR_REASON_UNSPECIFIED
}

// FromError converts any error from a gRPC call into an *Error (nil stays
// nil; an *Error is returned unchanged). Details other than ErrorInfo and
// BadRequest are ignored.
func FromError(err error) *Error {
	if err == nil {
		return nil
	}
	var re *Error
	if errors.As(err, &re) {
		return re
	}
	var st *status.Status
	var grpcErr interface{ GRPCStatus() *status.Status }
	switch {
	case errors.As(err, &grpcErr):
		st = grpcErr.GRPCStatus() // the server's message, without any wrapping prefix
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		st = status.FromContextError(err)
	default:
		st = status.New(codes.Unknown, err.Error())
	}
	re = &Error{Code: st.Code(), Message: st.Message(), status: st, cause: err}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if re.Reason == "" && re.Domain == "" {
				re.Reason, re.Domain, re.Metadata = d.GetReason(), d.GetDomain(), d.GetMetadata()
			}
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				re.FieldViolations = append(re.FieldViolations, FieldViolation{
					Field: v.GetField(), Description: v.GetDescription(), Reason: v.GetReason(),
				})
			}
		}
	}
	return re
}

// codeName is the canonical upper-case name of a code, for example NOT_FOUND.
func codeName(c codes.Code) string {
	switch c {
	case codes.Canceled:
		return "CANCELLED"
	case codes.DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.AlreadyExists:
		return "ALREADY_EXISTS"
	case codes.PermissionDenied:
		return "PERMISSION_DENIED"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.FailedPrecondition:
		return "FAILED_PRECONDITION"
	case codes.OutOfRange:
		return "OUT_OF_RANGE"
	case codes.DataLoss:
		return "DATA_LOSS"
	default:
		return strings.ToUpper(c.String())
	}
}
