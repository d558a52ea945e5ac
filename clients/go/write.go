package recalld

import (
	"context"
	"fmt"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Server limits the client works with (see WriteRequest in the contract).
const (
	// MaxWriteBatch is the most memories one Write RPC takes; Client.Write
	// sends a larger batch as consecutive calls of at most this many.
	MaxWriteBatch = 100
	// MaxRequestIDLength is the longest request_id, in characters.
	MaxRequestIDLength = 128
)

// Write stores one memory or a batch. Retried on UNAVAILABLE only when
// req.RequestId is set.
//
// More than MaxWriteBatch memories are sent as consecutive chunks of at most
// MaxWriteBatch, in order, and the results are returned as one response in
// input order. With a RequestId R, chunk i (from 0) carries "R#i", so that
// sending the same call again replays the chunks already committed instead of
// writing them twice; Write refuses (INVALID_ARGUMENT, before sending
// anything) when "R#i" would be longer than MaxRequestIDLength. Without a
// RequestId the chunks carry none and none is retried. Each chunk gets the
// default deadline when ctx has none. If a chunk fails, the *Error's Partial
// says what was written before it.
func (c *Client) Write(ctx context.Context, req *WriteRequest, opts ...grpc.CallOption) (*WriteResponse, error) {
	memories := req.GetMemories()
	if len(memories) <= MaxWriteBatch {
		return c.writeOnce(ctx, req, opts)
	}
	chunks := (len(memories) + MaxWriteBatch - 1) / MaxWriteBatch
	requestID := req.GetRequestId()
	if last := chunkRequestID(requestID, chunks-1); utf8.RuneCountInString(last) > MaxRequestIDLength {
		return nil, requestIDTooLong(last, chunks)
	}
	out := &WriteResponse{}
	for i := range chunks {
		part := memories[i*MaxWriteBatch : min((i+1)*MaxWriteBatch, len(memories))]
		res, err := c.writeOnce(ctx, writeChunk(req, part, chunkRequestID(requestID, i)), opts)
		if err != nil {
			failed := *FromError(err)
			failed.Partial = &PartialWrite{Chunks: i, Memories: i * MaxWriteBatch, Results: out.Results}
			return nil, &failed
		}
		out.Results = append(out.Results, res.GetResults()...)
	}
	return out, nil
}

func (c *Client) writeOnce(ctx context.Context, req *WriteRequest, opts []grpc.CallOption) (*WriteResponse, error) {
	return invoke(ctx, c, MethodWrite, req.GetRequestId() != "", func(ctx context.Context) (*WriteResponse, error) {
		return c.raw.Write(ctx, req, opts...)
	})
}

func chunkRequestID(requestID string, chunk int) string {
	if requestID == "" {
		return ""
	}
	return fmt.Sprintf("%s#%d", requestID, chunk)
}

// writeChunk is req with other memories and request id; every other field
// (present or added to the contract later) is carried over.
func writeChunk(req *WriteRequest, memories []*Memory, requestID string) *WriteRequest {
	chunk := &WriteRequest{}
	dst := chunk.ProtoReflect()
	req.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != "memories" {
			dst.Set(fd, v)
		}
		return true
	})
	chunk.Memories, chunk.RequestId = memories, requestID
	return chunk
}

// requestIDTooLong is the error the server would return for the longest chunk
// request id, raised before anything is sent so that no chunk is committed.
func requestIDTooLong(last string, chunks int) *Error {
	desc := fmt.Sprintf("must be at most %d characters: a write of %d chunks sends %q", MaxRequestIDLength, chunks, last)
	st, _ := status.New(codes.InvalidArgument, "request_id: "+desc).WithDetails(
		&errdetails.ErrorInfo{Reason: "INVALID_FIELD", Domain: ErrorDomain, Metadata: map[string]string{"field": "request_id"}},
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "request_id", Description: desc, Reason: "TOO_LONG"}}},
	)
	return FromError(st.Err())
}
