// The Client: New, which configures and opens its connection, and the
// MemoryService calls. Options are in options.go, how one call is made in
// call.go, the SessionService calls in sessions.go, Write in write.go.

package recalld

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"iter"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// Client talks to recalld.v1.MemoryService and recalld.v1.SessionService over
// one connection. It is safe for concurrent use.
//
// Every method applies the default deadline when ctx has none, retries
// UNAVAILABLE with bounded exponential backoff where that is safe (the reads
// Recall, GetProfile, Get, List, History, ListConflicts, GetContext,
// GetSession and ListSessions always, Write and AppendMessages only with a
// request_id, the other writes never; retries stay within the deadline), and
// returns errors as *Error.
type Client struct {
	conn     *grpc.ClientConn
	raw      recalldv1.MemoryServiceClient
	sessions recalldv1.SessionServiceClient
	health   grpc_health_v1.HealthClient
	cfg      config
}

// New creates a client for address: "host:port", or "dns:///host:port" to spread
// calls over every address the name resolves to (round_robin: one connection per
// replica behind a headless Service, each call to the next); the other gRPC
// target forms (passthrough:///, ipv4:, ipv6:, unix:) are passed through. With
// address "" it uses RECALLD_ADDR, or 127.0.0.1:50051 if that is unset too.
// Without WithAPIKey or WithTenant it sends RECALLD_API_KEY if set. Explicit
// arguments always win over the environment. It does not connect until the
// first call.
func New(address string, opts ...Option) (*Client, error) {
	cfg := config{
		timeout: DefaultTimeout, recallTimeout: DefaultRecallTimeout,
		consolidateTimeout: DefaultConsolidateTimeout, retry: DefaultRetryPolicy,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if address == "" {
		address = os.Getenv(EnvAddress)
	}
	if address == "" {
		address = DefaultAddress
	}
	// A tenant means a server without keys: a key in the environment is then
	// meant for some other server, not a conflict to refuse.
	if !cfg.apiKeySet && cfg.tenant == "" {
		cfg.apiKey = os.Getenv(EnvAPIKey)
	}
	scheme, endpoint := splitScheme(address)
	switch scheme {
	case "", "dns", "passthrough":
		if _, _, err := net.SplitHostPort(endpoint); err != nil {
			return nil, fmt.Errorf("recalld: address must be host:port: %w", err)
		}
	}
	if cfg.timeout <= 0 || cfg.recallTimeout <= 0 || cfg.consolidateTimeout <= 0 {
		return nil, errors.New("recalld: timeouts must be positive")
	}
	if cfg.retry.MaxAttempts < 1 {
		return nil, errors.New("recalld: RetryPolicy.MaxAttempts must be at least 1")
	}
	md, err := BuildMetadata(cfg.apiKey, cfg.tenant)
	if err != nil {
		return nil, err
	}
	if !cfg.tlsSet && !IsLoopbackTarget(address) {
		cfg.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	creds := insecure.NewCredentials()
	if cfg.tls != nil {
		creds = credentials.NewTLS(cfg.tls)
	}
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithUserAgent("recalld-go/" + Version),
		grpc.WithChainUnaryInterceptor(metadataInterceptor(md, cfg.propagator)),
	}
	if scheme == "dns" {
		dial = append(dial, grpc.WithDefaultServiceConfig(RoundRobinServiceConfig))
	}
	dial = append(dial, cfg.dialOptions...)
	conn, err := grpc.NewClient(address, dial...)
	if err != nil {
		return nil, fmt.Errorf("recalld: %w", err)
	}
	return &Client{
		conn:     conn,
		raw:      recalldv1.NewMemoryServiceClient(conn),
		sessions: recalldv1.NewSessionServiceClient(conn),
		health:   grpc_health_v1.NewHealthClient(conn),
		cfg:      cfg,
	}, nil
}

// RoundRobinServiceConfig balances calls over every resolved address; New uses it
// for "dns:///" targets.
const RoundRobinServiceConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// Version is the client version, sent in the user agent.
const Version = "0.1.0"

// Raw returns the generated stub, for anything the wrapper does not cover.
func (c *Client) Raw() recalldv1.MemoryServiceClient { return c.raw }

// RawSessions returns the generated SessionService stub (same connection).
func (c *Client) RawSessions() recalldv1.SessionServiceClient { return c.sessions }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Recall returns the user's memories most relevant to a query, with the
// user's profile (unless req.SkipProfile), a Context block ready for a prompt
// and, with req.Explain, every candidate considered and why it was dropped.
func (c *Client) Recall(ctx context.Context, req *RecallRequest, opts ...grpc.CallOption) (*RecallResponse, error) {
	return invoke(ctx, c, MethodRecall, false, func(ctx context.Context) (*RecallResponse, error) {
		return c.raw.Recall(ctx, req, opts...)
	})
}

// GetProfile returns the user's profile: the active core (P0) memories and
// the active facts and preferences that carry a topic_key, one per topic
// (core first, then by topic key). Profile.FromCache tells whether the server
// served it from its cache.
func (c *Client) GetProfile(ctx context.Context, req *GetProfileRequest, opts ...grpc.CallOption) (*GetProfileResponse, error) {
	return invoke(ctx, c, MethodGetProfile, false, func(ctx context.Context) (*GetProfileResponse, error) {
		return c.raw.GetProfile(ctx, req, opts...)
	})
}

// Get returns one memory by id.
func (c *Client) Get(ctx context.Context, req *GetRequest, opts ...grpc.CallOption) (*GetResponse, error) {
	return invoke(ctx, c, MethodGet, false, func(ctx context.Context) (*GetResponse, error) {
		return c.raw.Get(ctx, req, opts...)
	})
}

// List returns one page of the user's memories, newest first.
func (c *Client) List(ctx context.Context, req *ListRequest, opts ...grpc.CallOption) (*ListResponse, error) {
	return invoke(ctx, c, MethodList, false, func(ctx context.Context) (*ListResponse, error) {
		return c.raw.List(ctx, req, opts...)
	})
}

// ListAll iterates over every memory of a listing, fetching pages as needed
// (each page with its own default deadline). Iteration stops at the first error.
func (c *Client) ListAll(ctx context.Context, req *ListRequest, opts ...grpc.CallOption) iter.Seq2[*Memory, error] {
	return func(yield func(*Memory, error) bool) {
		page := &ListRequest{
			UserId: req.GetUserId(), PageSize: req.GetPageSize(), PageToken: req.GetPageToken(),
			Statuses: req.GetStatuses(), Types: req.GetTypes(),
		}
		for {
			res, err := c.List(ctx, page, opts...)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, m := range res.GetMemories() {
				if !yield(m, nil) {
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

// Update changes the fields in req.UpdateMask; a stale memory.etag fails with
// ABORTED (reason ETAG_MISMATCH). Never retried.
func (c *Client) Update(ctx context.Context, req *UpdateRequest, opts ...grpc.CallOption) (*UpdateResponse, error) {
	return invoke(ctx, c, MethodUpdate, false, func(ctx context.Context) (*UpdateResponse, error) {
		return c.raw.Update(ctx, req, opts...)
	})
}

// Forget archives (SOFT, the default) or deletes (HARD) memories: by id, or
// one other target (TopicKey, Selector, SessionId, AllOfUser, WholeTenant).
// SessionId also deletes the session with its messages and summary. Never
// retried.
func (c *Client) Forget(ctx context.Context, req *ForgetRequest, opts ...grpc.CallOption) (*ForgetResponse, error) {
	return invoke(ctx, c, MethodForget, false, func(ctx context.Context) (*ForgetResponse, error) {
		return c.raw.Forget(ctx, req, opts...)
	})
}

// Restore brings soft-forgotten (archived) memories back. Never retried.
func (c *Client) Restore(ctx context.Context, req *RestoreRequest, opts ...grpc.CallOption) (*RestoreResponse, error) {
	return invoke(ctx, c, MethodRestore, false, func(ctx context.Context) (*RestoreResponse, error) {
		return c.raw.Restore(ctx, req, opts...)
	})
}

// Confirm promotes draft (low-confidence) memories to active. Never retried.
func (c *Client) Confirm(ctx context.Context, req *ConfirmRequest, opts ...grpc.CallOption) (*ConfirmResponse, error) {
	return invoke(ctx, c, MethodConfirm, false, func(ctx context.Context) (*ConfirmResponse, error) {
		return c.raw.Confirm(ctx, req, opts...)
	})
}

// History returns every version of a memory, oldest first.
func (c *Client) History(ctx context.Context, req *HistoryRequest, opts ...grpc.CallOption) (*HistoryResponse, error) {
	return invoke(ctx, c, MethodHistory, false, func(ctx context.Context) (*HistoryResponse, error) {
		return c.raw.History(ctx, req, opts...)
	})
}

// ListConflicts lists writes parked because they contradict a core (P0) memory.
func (c *Client) ListConflicts(ctx context.Context, req *ListConflictsRequest, opts ...grpc.CallOption) (*ListConflictsResponse, error) {
	return invoke(ctx, c, MethodListConflicts, false, func(ctx context.Context) (*ListConflictsResponse, error) {
		return c.raw.ListConflicts(ctx, req, opts...)
	})
}

// ResolveConflict applies a person's decision on a parked conflict. Never retried.
func (c *Client) ResolveConflict(ctx context.Context, req *ResolveConflictRequest, opts ...grpc.CallOption) (*ResolveConflictResponse, error) {
	return invoke(ctx, c, MethodResolveConflict, false, func(ctx context.Context) (*ResolveConflictResponse, error) {
		return c.raw.ResolveConflict(ctx, req, opts...)
	})
}

// Consolidate runs (or, with DryRun, previews) consolidation. Never retried;
// default deadline 120 s (WithConsolidateTimeout).
func (c *Client) Consolidate(ctx context.Context, req *ConsolidateRequest, opts ...grpc.CallOption) (*ConsolidateResponse, error) {
	return invoke(ctx, c, MethodConsolidate, false, func(ctx context.Context) (*ConsolidateResponse, error) {
		return c.raw.Consolidate(ctx, req, opts...)
	})
}
