// Options of New: credentials, TLS, default deadlines, retries, tracing and
// dial options, and the environment New reads when they are not given
// (WithRouting is in routing.go).

package recalld

import (
	"crypto/tls"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
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
	routing            Routing
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
