// How a Client makes one call: the default deadline when the context has
// none, retries of UNAVAILABLE where the call allows them, and the errors
// (a context that ends while waiting, a TLS mismatch) explained.

package recalld

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// invoke makes one call of method m: with the default deadline of m when ctx
// has none, retried while the retry policy allows it (over several replicas,
// each attempt on the next one in the user's order), its error as *Error.
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
	if c.router != nil {
		ctx = withAttempts(ctx) // each retry to the next replica
	}
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
