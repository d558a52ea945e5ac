package recalld

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// selfSigned returns a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	f := &fakeServer{}
	recalldv1.RegisterMemoryServiceServer(s, f)
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()
	addr := lis.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	trusted := newClient(t, addr, WithTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	if _, err := trusted.Get(ctx, &GetRequest{Id: "m"}); err != nil {
		t.Fatalf("trusted: %v", err)
	}
	untrusted := newClient(t, addr, WithTLS(nil), WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
	if _, err := untrusted.Get(ctx, &GetRequest{Id: "m"}); FromError(err).Code != codes.Unavailable || strings.Contains(err.Error(), "mismatch") {
		t.Fatalf("untrusted (a certificate problem, not a TLS mismatch): %v", err)
	}
	if f.n() != 1 {
		t.Fatalf("calls that reached the server: %d", f.n())
	}
}

// attemptCounter counts the attempts a client makes.
func attemptCounter(n *atomic.Int32) Option {
	return WithDialOptions(grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			n.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
}

// wantTLSMismatch checks that err is UNAVAILABLE with the hint, after the
// given number of attempts.
func wantTLSMismatch(t *testing.T, err error, attempts *atomic.Int32, want int32, hint string) {
	t.Helper()
	var re *Error
	if !errors.As(err, &re) || re.Code != codes.Unavailable || !strings.Contains(re.Message, hint) {
		t.Fatalf("want UNAVAILABLE with %q, got %v", hint, err)
	}
	if st := status.Convert(err); !strings.Contains(st.Message(), hint) {
		t.Errorf("GRPCStatus message without the hint: %q", st.Message())
	}
	if attempts.Load() != want {
		t.Errorf("attempts = %d, want %d", attempts.Load(), want)
	}
}

func TestTLSMismatchHint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cert, pool := selfSigned(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	recalldv1.RegisterMemoryServiceServer(s, &fakeServer{})
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()

	var n atomic.Int32
	// Retried (a closed connection may be transient), and the last error
	// keeps the hint; a Write without request id is not retried.
	plain := newClient(t, lis.Addr().String(), attemptCounter(&n), WithRetryPolicy(fastRetry)) // loopback default: plaintext
	_, err = plain.Get(ctx, &GetRequest{Id: "m"})
	wantTLSMismatch(t, err, &n, int32(fastRetry.MaxAttempts), "TLS mismatch? the client uses plaintext and the server may use TLS; pass WithTLS(cfg)")
	n.Store(0)
	_, err = plain.Write(ctx, &WriteRequest{})
	wantTLSMismatch(t, err, &n, 1, "TLS mismatch? the client uses plaintext and the server may use TLS")

	n.Store(0)
	secure := newClient(t, serve(t, &fakeServer{}), attemptCounter(&n), WithTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	_, err = secure.Get(ctx, &GetRequest{Id: "m"})
	wantTLSMismatch(t, err, &n, 1, "TLS mismatch? the client uses TLS and the server may be plaintext; pass WithInsecure()")

	n.Store(0)
	down := newClient(t, closedPort(t), attemptCounter(&n), WithRetryPolicy(fastRetry))
	if _, err := down.Get(ctx, &GetRequest{}); err == nil || strings.Contains(err.Error(), "mismatch") || n.Load() != 3 {
		t.Fatalf("a closed port is no TLS mismatch and is retried: %v after %d attempts", err, n.Load())
	}
}

func TestDefaultTransportSecurity(t *testing.T) {
	remote := newClient(t, "recalld.example.invalid:443")
	if remote.cfg.tls == nil {
		t.Error("a non-loopback address must default to TLS")
	}
	local := newClient(t, "127.0.0.1:50051")
	if local.cfg.tls != nil {
		t.Error("a loopback address must default to plaintext")
	}
	forced := newClient(t, "recalld.example.invalid:443", WithInsecure())
	if forced.cfg.tls != nil {
		t.Error("WithInsecure must force plaintext")
	}
}
