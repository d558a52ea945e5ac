// The SessionService calls of a Client: a conversation's messages, its
// context, its summary.

package recalld

import (
	"context"
	"iter"

	"google.golang.org/grpc"
)

// AppendMessages appends messages to a session, creating it on first use
// (see NewMessage). With req.Extract, user messages also become memories
// through the write rules (Extracted says what each became; with
// req.ExtractAsync, later Session.Extraction). Retried on UNAVAILABLE only
// when req.RequestId is set.
func (c *Client) AppendMessages(ctx context.Context, req *AppendMessagesRequest, opts ...grpc.CallOption) (*AppendMessagesResponse, error) {
	return invoke(ctx, c, MethodAppendMessages, req.GetRequestId() != "", func(ctx context.Context) (*AppendMessagesResponse, error) {
		return c.sessions.AppendMessages(ctx, req, opts...)
	})
}

// GetContext returns everything the next model turn needs, within
// req.TokenBudget (0: the server's 4000): the newest messages that fit
// (oldest first), the running summary, the memories recalled for req.Query
// (default: the last user message) and the profile, with one rendered
// Context block.
func (c *Client) GetContext(ctx context.Context, req *GetContextRequest, opts ...grpc.CallOption) (*GetContextResponse, error) {
	return invoke(ctx, c, MethodGetContext, false, func(ctx context.Context) (*GetContextResponse, error) {
		return c.sessions.GetContext(ctx, req, opts...)
	})
}

// GetSession returns a session's counters, summary and extraction status
// (NOT_FOUND if there is none).
func (c *Client) GetSession(ctx context.Context, req *GetSessionRequest, opts ...grpc.CallOption) (*GetSessionResponse, error) {
	return invoke(ctx, c, MethodGetSession, false, func(ctx context.Context) (*GetSessionResponse, error) {
		return c.sessions.GetSession(ctx, req, opts...)
	})
}

// ListSessions returns one page of the user's sessions, newest first.
func (c *Client) ListSessions(ctx context.Context, req *ListSessionsRequest, opts ...grpc.CallOption) (*ListSessionsResponse, error) {
	return invoke(ctx, c, MethodListSessions, false, func(ctx context.Context) (*ListSessionsResponse, error) {
		return c.sessions.ListSessions(ctx, req, opts...)
	})
}

// ListAllSessions iterates over every session of the user, newest first,
// fetching pages as needed (each page with its own default deadline).
// Iteration stops at the first error.
func (c *Client) ListAllSessions(ctx context.Context, req *ListSessionsRequest, opts ...grpc.CallOption) iter.Seq2[*Session, error] {
	return func(yield func(*Session, error) bool) {
		page := &ListSessionsRequest{UserId: req.GetUserId(), PageSize: req.GetPageSize(), PageToken: req.GetPageToken()}
		for {
			res, err := c.ListSessions(ctx, page, opts...)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, s := range res.GetSessions() {
				if !yield(s, nil) {
					return
				}
			}
			if res.GetNextPageToken() == "" {
				return
			}
			page.PageToken = res.GetNextPageToken()
		}
	}
}

// EndSession folds the remaining messages into the summary, stores it as a
// SUMMARY memory linked to the session and closes the session. Never retried.
func (c *Client) EndSession(ctx context.Context, req *EndSessionRequest, opts ...grpc.CallOption) (*EndSessionResponse, error) {
	return invoke(ctx, c, MethodEndSession, false, func(ctx context.Context) (*EndSessionResponse, error) {
		return c.sessions.EndSession(ctx, req, opts...)
	})
}
