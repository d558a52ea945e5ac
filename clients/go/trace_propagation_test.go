package recalld_test

// Trace propagation against a live server: a Recall made inside an
// application span must show up in the server's spans under the same trace.
//
// Needs a server started without API keys with RECALLD_OTEL_TRACES_FILE=<path>
// (it appends one JSON object per finished span to that file), and both
// RECALLD_ADDR and RECALLD_OTEL_TRACES_FILE set here:
//
//	RECALLD_OTEL_TRACES_FILE=/tmp/spans.jsonl recalld serve --host 127.0.0.1 --port 50051 --data-dir /tmp/d
//	RECALLD_ADDR=127.0.0.1:50051 RECALLD_OTEL_TRACES_FILE=/tmp/spans.jsonl go test -run TracePropagation -v ./...
//
// Skipped when either is unset.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	recalld "github.com/recalld/recalld/clients/go"
	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

const recallSpanName = "recalld.v1.MemoryService/Recall"

// serverSpan is one line of the server's span file.
type serverSpan struct {
	TraceID      string         `json:"trace_id"`
	SpanID       string         `json:"span_id"`
	ParentSpanID string         `json:"parent_span_id"`
	Name         string         `json:"name"`
	Attributes   map[string]any `json:"attributes"`
}

// readServerSpans returns the spans in a JSON Lines file; a missing file is
// empty and unparsable (partly written) lines are skipped.
func readServerSpans(path string) ([]serverSpan, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var spans []serverSpan
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var s serverSpan
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.TraceID != "" && s.Name != "" {
			spans = append(spans, s)
		}
	}
	return spans, sc.Err()
}

// waitForRecallTrace polls path until it holds the server's Recall span of
// traceID and at least one "recall." stage span of that trace, or timeout
// passes; it returns every span of the trace seen last.
func waitForRecallTrace(path, traceID string, timeout time.Duration) ([]serverSpan, error) {
	deadline := time.Now().Add(timeout)
	for {
		all, err := readServerSpans(path)
		if err != nil {
			return nil, err
		}
		var spans []serverSpan
		var server, stage bool
		for _, s := range all {
			if s.TraceID == traceID {
				spans = append(spans, s)
				server = server || s.Name == recallSpanName
				stage = stage || strings.HasPrefix(s.Name, "recall.")
			}
		}
		if (server && stage) || time.Now().After(deadline) {
			return spans, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTracePropagation(t *testing.T) {
	addr, file := os.Getenv("RECALLD_ADDR"), os.Getenv("RECALLD_OTEL_TRACES_FILE")
	if addr == "" || file == "" {
		t.Skip("RECALLD_ADDR or RECALLD_OTEL_TRACES_FILE is unset: start `recalld serve` with RECALLD_OTEL_TRACES_FILE=<path> " +
			"and set RECALLD_ADDR=host:port and the same RECALLD_OTEL_TRACES_FILE to run the trace propagation test")
	}
	ctx := t.Context()
	tp := sdktrace.NewTracerProvider() // samples every root span
	t.Cleanup(func() { _ = tp.Shutdown(ctx) })
	run := randomID("trace-go")
	c, err := recalld.New(addr, recalld.WithTenant(run))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	user := "user-" + run
	if _, err := c.Write(ctx, &recalld.WriteRequest{UserId: user, Memories: []*recalld.Memory{
		{Type: recalldv1.MemoryType_MEMORY_TYPE_PREFERENCE, Content: "The user takes their tea with lemon."},
	}}); err != nil {
		t.Fatal(err)
	}

	// The client injects the context's span as W3C traceparent, so the
	// application span is the server span's parent.
	spanCtx, span := tp.Tracer("recalld-conformance").Start(ctx, "conformance.recall")
	_, err = c.Recall(spanCtx, &recalld.RecallRequest{UserId: user, Query: "How does the user take their tea?", TopK: 3, MinScore: proto.Float32(-1)})
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	traceID, spanID := span.SpanContext().TraceID().String(), span.SpanContext().SpanID().String()

	spans, err := waitForRecallTrace(file, traceID, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var server *serverSpan
	var stages int
	for i, s := range spans {
		names = append(names, s.Name)
		if s.Name == recallSpanName && server == nil {
			server = &spans[i]
		}
		if strings.HasPrefix(s.Name, "recall.") {
			stages++
		}
	}
	if server == nil {
		t.Fatalf("no server span %s with trace id %s in %s within 10 s; spans of the trace: %q", recallSpanName, traceID, file, names)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(server.SpanID) {
		t.Errorf("server span id %q is not 16 lowercase hex digits", server.SpanID)
	}
	if server.ParentSpanID != spanID {
		t.Errorf("server span's parent = %q, want the application span %s", server.ParentSpanID, spanID)
	}
	if stages == 0 {
		t.Errorf("no recall.* stage span in trace %s; spans of the trace: %q", traceID, names)
	}
}
