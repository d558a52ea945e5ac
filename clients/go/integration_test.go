package recalld_test

// Integration tests against a live recalld server without API keys
// (loopback), e.g. `recalld serve --host 127.0.0.1 --port 50051 --data-dir
// /tmp/recalld-it` then `RECALLD_ADDR=127.0.0.1:50051 go test ./...`.
// Skipped when RECALLD_ADDR is unset.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	recalld "github.com/recalld/recalld/clients/go"
	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

func liveAddr(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("RECALLD_ADDR")
	if addr == "" {
		t.Skip("RECALLD_ADDR is unset: start a server and export RECALLD_ADDR=host:port to run the integration tests")
	}
	return addr
}

func randomID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

func dial(t *testing.T, addr, tenant string) *recalld.Client {
	t.Helper()
	c, err := recalld.New(addr, recalld.WithTenant(tenant))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func wantCode(t *testing.T, err error, code codes.Code, reason recalld.ErrorReason) *recalld.Error {
	t.Helper()
	var re *recalld.Error
	if !errors.As(err, &re) {
		t.Fatalf("want *recalld.Error with %v, got %v", code, err)
	}
	if re.Code != code {
		t.Fatalf("code = %v, want %v (%v)", re.Code, code, re)
	}
	if reason != recalldv1.ErrorReason_ERROR_REASON_UNSPECIFIED && re.ErrorReason() != reason {
		t.Fatalf("reason = %q, want %v", re.Reason, reason)
	}
	return re
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLiveLifecycle(t *testing.T) {
	addr := liveAddr(t)
	ctx := testContext(t)
	c := dial(t, addr, randomID("it-go"))
	user := randomID("user")
	const en, zh = "The user prefers oat milk in their coffee.", "用户住在杭州，最喜欢喝西湖龙井茶。"

	w, err := c.Write(ctx, &recalld.WriteRequest{UserId: user, RequestId: randomID("req"), Memories: []*recalld.Memory{
		{Type: recalld.TypePreference, Content: en, Tags: []string{"drink"}},
		{Type: recalld.TypeFact, Content: zh, Tags: []string{"home"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.GetResults()) != 2 {
		t.Fatalf("results: %v", w.GetResults())
	}
	for _, r := range w.GetResults() {
		if r.GetOutcome() != recalld.OutcomeCreated || r.GetId() == "" {
			t.Fatalf("result: %v", r)
		}
	}
	enID, zhID := w.GetResults()[0].GetId(), w.GetResults()[1].GetId()

	for query, want := range map[string]string{"Which milk does the user like in coffee?": enID, "用户住在哪个城市？喜欢喝什么茶？": zhID} {
		r, err := c.Recall(ctx, &recalld.RecallRequest{UserId: user, Query: query, TopK: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.GetItems()) == 0 || r.GetItems()[0].GetMemory().GetId() != want {
			t.Fatalf("recall %q: want %s first, got %v", query, want, r.GetItems())
		}
	}

	g, err := c.Get(ctx, &recalld.GetRequest{UserId: user, Id: zhID})
	if err != nil {
		t.Fatal(err)
	}
	if g.GetMemory().GetContent() != zh || g.GetMemory().GetEtag() == "" {
		t.Fatalf("get: %v", g.GetMemory())
	}
	etag := g.GetMemory().GetEtag()

	var listed []string
	for m, err := range c.ListAll(ctx, &recalld.ListRequest{UserId: user, PageSize: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, m.GetId())
	}
	slices.Sort(listed)
	want := []string{enID, zhID}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("list = %v, want %v", listed, want)
	}

	const moved = "用户搬到了上海，仍然喜欢龙井茶。"
	u, err := c.Update(ctx, &recalld.UpdateRequest{
		UserId:     user,
		Memory:     &recalld.Memory{Id: zhID, Etag: etag, Content: moved},
		UpdateMask: recalld.UpdateMask(recalld.FieldContent),
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.GetMemory().GetContent() != moved || u.GetMemory().GetEtag() == etag {
		t.Fatalf("update: %v", u.GetMemory())
	}
	_, err = c.Update(ctx, &recalld.UpdateRequest{
		UserId:     user,
		Memory:     &recalld.Memory{Id: zhID, Etag: etag, Importance: proto.Float32(0.9)},
		UpdateMask: recalld.UpdateMask("importance"),
	})
	wantCode(t, err, codes.Aborted, recalld.ReasonEtagMismatch)

	f, err := c.Forget(ctx, &recalld.ForgetRequest{UserId: user, Ids: []string{enID}, Mode: recalld.ForgetHard})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.GetForgottenIds(), []string{enID}) {
		t.Fatalf("forgotten = %v", f.GetForgottenIds())
	}
	_, err = c.Get(ctx, &recalld.GetRequest{UserId: user, Id: enID})
	wantCode(t, err, codes.NotFound, recalld.ReasonMemoryNotFound)
}

func TestLiveProfile(t *testing.T) {
	addr := liveAddr(t)
	ctx := testContext(t)
	c := dial(t, addr, randomID("it-go"))
	user := randomID("user")

	w, err := c.Write(ctx, &recalld.WriteRequest{UserId: user, Memories: []*recalld.Memory{
		{Type: recalld.TypeFact, Tier: recalld.TierP0, TopicKey: "profile.name", Content: "The user's name is Chen Jing."},
		{Type: recalld.TypePreference, TopicKey: "drink", Content: "The user prefers green tea."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range w.GetResults() {
		ids = append(ids, r.GetId())
	}
	if len(ids) != 2 {
		t.Fatalf("results: %v", w.GetResults())
	}
	wantKeys := []string{"profile.name", "drink"}
	keysAndIDs := func(p *recalld.Profile) (keys, ids []string) {
		for _, m := range p.GetMemories() {
			keys, ids = append(keys, m.GetTopicKey()), append(ids, m.GetId())
		}
		return keys, ids
	}

	first, err := c.GetProfile(ctx, &recalld.GetProfileRequest{UserId: user})
	if err != nil {
		t.Fatal(err)
	}
	if keys, got := keysAndIDs(first.GetProfile()); !slices.Equal(keys, wantKeys) || !slices.Equal(got, ids) {
		t.Fatalf("profile topic keys %v ids %v, want %v %v", keys, got, wantKeys, ids)
	}
	second, err := c.GetProfile(ctx, &recalld.GetProfileRequest{UserId: user})
	if err != nil {
		t.Fatal(err)
	}
	if !second.GetProfile().GetFromCache() {
		t.Fatalf("the second GetProfile is not from the cache: %v", second.GetProfile())
	}
	if _, got := keysAndIDs(second.GetProfile()); !slices.Equal(got, ids) {
		t.Fatalf("cached profile ids %v, want %v", got, ids)
	}

	r, err := c.Recall(ctx, &recalld.RecallRequest{UserId: user, Query: "What should I serve the user to drink?", SkipProfile: false})
	if err != nil {
		t.Fatal(err)
	}
	if keys, _ := keysAndIDs(r.GetProfile()); !slices.Equal(keys, wantKeys) {
		t.Fatalf("recall profile topic keys %v, want %v", keys, wantKeys)
	}
	if !strings.Contains(r.GetContext(), "<user_profile>") {
		t.Fatalf("context lacks <user_profile>: %q", r.GetContext())
	}
}

func TestLiveValidationError(t *testing.T) {
	addr := liveAddr(t)
	c := dial(t, addr, randomID("it-go"))
	_, err := c.Write(testContext(t), &recalld.WriteRequest{UserId: randomID("user"), Memories: []*recalld.Memory{
		{Type: recalld.TypeFact, Content: ""},
	}})
	re := wantCode(t, err, codes.InvalidArgument, recalld.ReasonInvalidField)
	if !slices.ContainsFunc(re.FieldViolations, func(v recalld.FieldViolation) bool { return v.Field == "memories[0].content" }) {
		t.Fatalf("violations = %+v", re.FieldViolations)
	}
}

func TestLiveTenantIsolation(t *testing.T) {
	addr := liveAddr(t)
	ctx := testContext(t)
	run := randomID("it-go")
	a, b := dial(t, addr, run+"-a"), dial(t, addr, run+"-b")
	user := randomID("user")

	w, err := a.Write(ctx, &recalld.WriteRequest{UserId: user, Memories: []*recalld.Memory{
		{Type: recalld.TypeFact, Content: "Tenant A's secret: the vault code is 4711."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := w.GetResults()[0].GetId()
	if _, err := a.Get(ctx, &recalld.GetRequest{UserId: user, Id: id}); err != nil {
		t.Fatal(err)
	}

	_, err = b.Get(ctx, &recalld.GetRequest{UserId: user, Id: id})
	wantCode(t, err, codes.NotFound, recalldv1.ErrorReason_ERROR_REASON_UNSPECIFIED)
	r, err := b.Recall(ctx, &recalld.RecallRequest{UserId: user, Query: "What is the vault code?", TopK: 10, MinScore: proto.Float32(-1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range r.GetItems() {
		if it.GetMemory().GetId() == id || strings.Contains(it.GetMemory().GetContent(), "4711") {
			t.Fatalf("tenant B recalled tenant A's memory: %v", it)
		}
	}
	l, err := b.List(ctx, &recalld.ListRequest{UserId: user})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.GetMemories()) != 0 {
		t.Fatalf("tenant B lists %v", l.GetMemories())
	}
	_, err = b.Forget(ctx, &recalld.ForgetRequest{UserId: user, Ids: []string{id}})
	wantCode(t, err, codes.NotFound, recalldv1.ErrorReason_ERROR_REASON_UNSPECIFIED)
	if _, err := a.Get(ctx, &recalld.GetRequest{UserId: user, Id: id}); err != nil {
		t.Fatalf("B's forget touched A's memory: %v", err)
	}
}

func TestLiveHealthFromTheEnvironment(t *testing.T) {
	liveAddr(t)
	t.Setenv(recalld.EnvAPIKey, "") // the live server runs without keys
	c, err := recalld.New("")       // RECALLD_ADDR
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Health(testContext(t))
	if err != nil || st != recalld.HealthServing {
		t.Fatalf("Health = %v, %v", st, err)
	}
}

func TestLiveTLSMismatch(t *testing.T) {
	addr := liveAddr(t)
	attempts := 0
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		attempts++
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	// The live server is plaintext; force TLS against it.
	c, err := recalld.New(addr, recalld.WithTenant(randomID("it-go")), recalld.WithTLS(nil),
		recalld.WithDialOptions(grpc.WithChainUnaryInterceptor(count)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Health(testContext(t))
	re := wantCode(t, err, codes.Unavailable, recalldv1.ErrorReason_ERROR_REASON_UNSPECIFIED)
	if !strings.Contains(re.Message, "TLS mismatch? the client uses TLS and the server may be plaintext") || attempts != 1 {
		t.Fatalf("%v after %d attempts", err, attempts)
	}
}

// TestLiveChunkedWrite writes more than one call takes, fails a chunk, then
// sends the same call again with the same request id: the committed chunk is
// replayed, not written twice.
func TestLiveChunkedWrite(t *testing.T) {
	addr := liveAddr(t)
	ctx := testContext(t)
	c := dial(t, addr, randomID("it-go"))
	user, requestID := randomID("user"), randomID("req")
	topics := []string{"sailing", "violin", "chess", "pottery", "hiking", "baking", "astronomy", "gardening", "judo", "poetry"}
	mems := make([]*recalld.Memory, 150)
	for i := range mems {
		mems[i] = &recalld.Memory{Type: recalld.TypeEvent, Content: fmt.Sprintf(
			"On day %d of the %s course the user practised %s for %d minutes.", i, topics[i%10], topics[(i/10)%10], 10+i)}
	}
	broken := proto.CloneOf(mems[120])
	broken.Content = "" // chunk 1 fails validation; chunk 0 is committed
	first := slices.Clone(mems)
	first[120] = broken

	_, err := c.Write(ctx, &recalld.WriteRequest{UserId: user, RequestId: requestID, Memories: first})
	re := wantCode(t, err, codes.InvalidArgument, recalld.ReasonInvalidField)
	if re.Partial == nil || re.Partial.Chunks != 1 || re.Partial.Memories != 100 || len(re.Partial.Results) != 100 {
		t.Fatalf("partial = %+v", re.Partial)
	}
	if !slices.ContainsFunc(re.FieldViolations, func(v recalld.FieldViolation) bool { return v.Field == "memories[20].content" }) {
		t.Fatalf("violations = %+v (indices are the chunk's)", re.FieldViolations)
	}

	w, err := c.Write(ctx, &recalld.WriteRequest{UserId: user, RequestId: requestID, Memories: mems})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.GetResults()) != 150 {
		t.Fatalf("results = %d", len(w.GetResults()))
	}
	for i, r := range re.Partial.Results {
		if w.GetResults()[i].GetId() != r.GetId() {
			t.Fatalf("result %d: %s, first written as %s (not replayed)", i, w.GetResults()[i].GetId(), r.GetId())
		}
	}
	count := func() int {
		n := 0
		for _, err := range c.ListAll(ctx, &recalld.ListRequest{UserId: user, PageSize: 500}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	stored := count()
	again, err := c.Write(ctx, &recalld.WriteRequest{UserId: user, RequestId: requestID, Memories: mems})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again.GetResults() {
		if r.GetId() != w.GetResults()[i].GetId() {
			t.Fatalf("replayed result %d: %s, want %s", i, r.GetId(), w.GetResults()[i].GetId())
		}
	}
	if n := count(); n != stored || n == 0 {
		t.Fatalf("%d memories after the replay, %d before", n, stored)
	}
}
