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
// one connection, or one per replica when its target names several (see
// WithRouting). It is safe for concurrent use.
//
// Every method applies the default deadline when ctx has none, retries
// UNAVAILABLE with bounded exponential backoff where that is safe (the reads
// Recall, GetProfile, Get, List, History, ListConflicts, GetContext,
// GetSession and ListSessions always, Write and AppendMessages only with a
// request_id, the other writes never; retries stay within the deadline), and
// returns errors as *Error.
type Client struct {
	conn     *grpc.ClientConn // one target (nil with router)
	router   *router          // several replicas (nil with conn)
	raw      recalldv1.MemoryServiceClient
	sessions recalldv1.SessionServiceClient
	health   grpc_health_v1.HealthClient
	cfg      config
}

// New creates a client for address: "host:port" (one server), or several
// replicas — "host:port,host:port", the gRPC lists "ipv4:a:port,b:port" and
// "ipv6:[a]:port,[b]:port", or "dns:///name:port" for every address the name
// resolves to (a headless Service; resolved again every 30 s) — over which
// each user's calls go to one replica (docs/routing.md; WithRouting(RoundRobin)
// spreads them in turn instead); the other gRPC target forms (passthrough:///,
// unix:) are passed through. With address "" it uses RECALLD_ADDR, or
// 127.0.0.1:50051 if that is unset too.
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
	replicas, err := replicaList(address)
	if err != nil {
		return nil, err
	}
	switch scheme {
	case "", "dns", "passthrough":
		if _, _, err := net.SplitHostPort(endpoint); err != nil && replicas == nil {
			return nil, fmt.Errorf("recalld: address must be host:port: %w", err)
		}
	}
	if cfg.timeout <= 0 || cfg.recallTimeout <= 0 || cfg.consolidateTimeout <= 0 {
		return nil, errors.New("recalld: timeouts must be positive")
	}
	if cfg.retry.MaxAttempts < 1 {
		return nil, errors.New("recalld: RetryPolicy.MaxAttempts must be at least 1")
	}
	if cfg.routing != UserAffinity && cfg.routing != RoundRobin {
		return nil, fmt.Errorf("recalld: unknown routing %d", cfg.routing)
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
	c := &Client{cfg: cfg}
	switch {
	case len(replicas) > 1:
		c.router = newRouter(cfg.routing, replicaDialer(append(dial, cfg.dialOptions...), ""))
		if err := c.router.set(replicas); err != nil {
			return nil, err
		}
		c.attach(c.router)
		return c, nil
	case scheme == "dns" && cfg.routing == UserAffinity:
		c.router = newRouter(cfg.routing, replicaDialer(append(dial, cfg.dialOptions...), endpoint))
		c.router.dns = parseDNSTarget(address)
		c.router.lookup = newLookup(c.router.dns.server)
		c.attach(c.router)
		return c, nil
	case scheme == "dns":
		dial = append(dial, grpc.WithDefaultServiceConfig(RoundRobinServiceConfig))
	case len(replicas) == 1 && scheme == "":
		address = replicas[0] // "host:port," or a repeated address
	}
	dial = append(dial, cfg.dialOptions...)
	conn, err := grpc.NewClient(address, dial...)
	if err != nil {
		return nil, fmt.Errorf("recalld: %w", err)
	}
	c.conn = conn
	c.attach(conn)
	return c, nil
}

// attach makes the stubs call through cc: the connection, or the router.
func (c *Client) attach(cc grpc.ClientConnInterface) {
	c.raw = recalldv1.NewMemoryServiceClient(cc)
	c.sessions = recalldv1.NewSessionServiceClient(cc)
	c.health = grpc_health_v1.NewHealthClient(cc)
}

// RoundRobinServiceConfig balances calls over every resolved address; New uses it
// for "dns:///" targets with WithRouting(RoundRobin).
const RoundRobinServiceConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// Version is the client version, sent in the user agent.
const Version = "0.1.0"

// Raw returns the generated stub, for anything the wrapper does not cover.
// Over several replicas its calls are routed by their user_id too (without
// the retries).
func (c *Client) Raw() recalldv1.MemoryServiceClient { return c.raw }

// RawSessions returns the generated SessionService stub (same connection).
func (c *Client) RawSessions() recalldv1.SessionServiceClient { return c.sessions }

// Replicas returns the replicas the client routes over, as last resolved (for
// "dns:///", none before the first call); with one target, that target.
func (c *Client) Replicas() []string {
	if c.router != nil {
		return c.router.current()
	}
	return []string{c.conn.Target()}
}

// Close closes the connection (every replica's).
func (c *Client) Close() error {
	if c.router != nil {
		return c.router.close()
	}
	return c.conn.Close()
}

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
