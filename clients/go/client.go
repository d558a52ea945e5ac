package recalld

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"iter"
	"net"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// Default deadlines, applied when the caller's context has none.
const (
	DefaultTimeout       = 10 * time.Second
	DefaultRecallTimeout = 5 * time.Second // Recall sits on an agent's reply path
	// Consolidate works through the user's whole memory set.
	DefaultConsolidateTimeout = 120 * time.Second
)

// Configuration New reads from the environment when the caller passes none.
const (
	// EnvAddress is the target used when New gets "".
	EnvAddress = "RECALLD_ADDR"
	// EnvAPIKey is the API key used when neither WithAPIKey nor WithTenant is given.
	EnvAPIKey = "RECALLD_API_KEY"
	// DefaultAddress is the target without an argument or RECALLD_ADDR: the
	// server's default port on loopback.
	DefaultAddress = "127.0.0.1:50051"
)

// Option configures a Client.
type Option func(*config)

type config struct {
	apiKey, tenant     string
	apiKeySet          bool
	tls                *tls.Config
	tlsSet             bool
	timeout            time.Duration
	recallTimeout      time.Duration
	consolidateTimeout time.Duration
	retry              RetryPolicy
	propagator         propagation.TextMapPropagator
	dialOptions        []grpc.DialOption
}

// WithAPIKey sends key as "authorization: Bearer <key>"; the server derives
// the tenant from it. Without it, New uses RECALLD_API_KEY unless WithTenant
// is given; WithAPIKey("") sends no key whatever the environment says.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey, c.apiKeySet = key, true } }

// WithTenant selects the tenant on a server running without keys (loopback
// development), sent as "x-recalld-tenant". Not allowed with WithAPIKey.
func WithTenant(tenant string) Option { return func(c *config) { c.tenant = tenant } }

// WithTLS uses TLS with cfg (nil: the system roots). By default loopback
// addresses use plaintext and every other address TLS with the system roots.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c.tls, c.tlsSet = cfg, true
	}
}

// WithInsecure uses plaintext even for a non-loopback address (for example
// behind a service mesh that adds TLS).
func WithInsecure() Option { return func(c *config) { c.tls, c.tlsSet = nil, true } }

// WithTimeout sets the default deadline of every call but Recall and
// Consolidate (retries included), used when the context has none. Default 10 s.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithRecallTimeout sets the default deadline of Recall. Default 5 s.
func WithRecallTimeout(d time.Duration) Option { return func(c *config) { c.recallTimeout = d } }

// WithConsolidateTimeout sets the default deadline of Consolidate. Default 120 s.
func WithConsolidateTimeout(d time.Duration) Option {
	return func(c *config) { c.consolidateTimeout = d }
}

// WithRetryPolicy replaces DefaultRetryPolicy; MaxAttempts 1 disables retries.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *config) { c.retry = p } }

// WithPropagator sets the OpenTelemetry propagator used for outgoing calls
// (default: the global one, with W3C TraceContext as a fallback).
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.propagator = p }
}

// WithDialOptions appends gRPC dial options, for example
// grpc.WithStatsHandler(otelgrpc.NewClientHandler()) for client spans.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dialOptions = append(c.dialOptions, opts...) }
}

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

// HealthStatus is the serving status of grpc.health.v1.
type HealthStatus = grpc_health_v1.HealthCheckResponse_ServingStatus

// Serving statuses Health returns.
const (
	HealthUnknown    = grpc_health_v1.HealthCheckResponse_UNKNOWN
	HealthServing    = grpc_health_v1.HealthCheckResponse_SERVING
	HealthNotServing = grpc_health_v1.HealthCheckResponse_NOT_SERVING
)

// Health asks the server's standard gRPC health service
// (grpc.health.v1.Health/Check, service "": the whole server) on the client's
// connection. NOT_SERVING and UNKNOWN are answers, returned without an error;
// a call that fails (server down, wrong credentials, deadline) returns an
// *Error. Retried on UNAVAILABLE like the other reads.
func (c *Client) Health(ctx context.Context, opts ...grpc.CallOption) (HealthStatus, error) {
	res, err := invoke(ctx, c, MethodHealth, false, func(ctx context.Context) (*grpc_health_v1.HealthCheckResponse, error) {
		return c.health.Check(ctx, &grpc_health_v1.HealthCheckRequest{}, opts...)
	})
	if err != nil {
		return HealthUnknown, err
	}
	return res.GetStatus(), nil
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

func invoke[T any](ctx context.Context, c *Client, m Method, hasRequestID bool, call func(context.Context) (T, error)) (T, error) {
	var zero T
	if _, ok := ctx.Deadline(); !ok {
		d := c.cfg.timeout
		switch m {
		case MethodRecall:
			d = c.cfg.recallTimeout
		case MethodConsolidate:
			d = c.cfg.consolidateTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	for attempt := 1; ; attempt++ {
		res, err := call(ctx)
		if err == nil {
			return res, nil
		}
		rerr := FromError(err)
		hint, final := tlsMismatchHint(c.cfg.tls != nil, rerr)
		if hint != "" {
			rerr = rerr.withMessage(rerr.Message + hint)
		}
		if final {
			return zero, rerr
		}
		delay := c.cfg.retry.Backoff(attempt, nil)
		if !c.cfg.retry.ShouldRetry(m, hasRequestID, rerr.Code, attempt) || time.Until(deadline) <= delay {
			return zero, rerr
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, interrupted(ctx, rerr)
		case <-t.C:
		}
	}
}

// interrupted is the error of a call whose context ended while it waited to
// retry: the context's code, so that errors.Is(err, context.Canceled) or
// context.DeadlineExceeded holds, with the last attempt's error in the message.
func interrupted(ctx context.Context, last *Error) *Error {
	code := status.FromContextError(ctx.Err()).Code()
	st := status.New(code, fmt.Sprintf("%v while waiting to retry after %s", ctx.Err(), last.Error()))
	return &Error{Code: code, Message: st.Message(), status: st, cause: ctx.Err()}
}

// tlsMismatchHint explains an UNAVAILABLE that grpc-go reports when one side
// speaks TLS and the other does not; the messages are grpc-go's, seen against
// both the recalld server and a grpc-go server. final says that no retry can
// help: a plaintext answer to a TLS handshake is certain, while a connection
// closed before the HTTP/2 preface (what a TLS server does to a plaintext
// client) may also be a proxy or a restarting server, so that one is retried
// and keeps its hint if it is the last.
func tlsMismatchHint(clientTLS bool, e *Error) (hint string, final bool) {
	if e.Code != codes.Unavailable {
		return "", false
	}
	switch {
	case clientTLS && strings.Contains(e.Message, "first record does not look like a TLS handshake"):
		return " (TLS mismatch? the client uses TLS and the server may be plaintext; pass WithInsecure() for a plaintext server)", true
	case !clientTLS && strings.Contains(e.Message, "server preface"):
		return " (TLS mismatch? the client uses plaintext and the server may use TLS; pass WithTLS(cfg) for a TLS server)", false
	}
	return "", false
}
