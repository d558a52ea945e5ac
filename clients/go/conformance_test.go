package recalld_test

// Runs the language-neutral memory scripts (tests/scripts/memory_scripts.json,
// format in tests/scripts/README.md) against a live server through
// recalld.Client, with the semantics of the Python reference runner
// (tests/conformance/test_memory_scripts.py). One subtest per script:
//
//	recalld serve --host 127.0.0.1 --port 50051 --data-dir /tmp/recalld-conf
//	RECALLD_ADDR=127.0.0.1:50051 go test -run MemoryScripts -v ./...
//
// The scripts are skipped when RECALLD_ADDR is unset;
// TestMemoryScriptsWellFormed always runs.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	recalld "github.com/recalld/recalld/clients/go"
	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// memoryScriptsPath is relative to this package's directory, where go test runs.
const memoryScriptsPath = "../../tests/scripts/memory_scripts.json"

// memorySpec is MEMORY: the proto Memory in the scripts' small JSON form.
type memorySpec struct {
	Content    *string  `json:"content"`
	Type       *string  `json:"type"`
	Tier       *string  `json:"tier"`
	TopicKey   *string  `json:"topic_key"`
	Importance *float32 `json:"importance"`
	Confidence *float32 `json:"confidence"`
	Tags       []string `json:"tags"`
	AgentScope *string  `json:"agent_scope"`
	SessionID  *string  `json:"session_id"`
	ExpireAt   *string  `json:"expire_at"`
}

// scriptExpect holds every expect key of every op; a nil pointer is an absent key.
type scriptExpect struct {
	Error          *string    `json:"error"`
	Outcomes       *[]string  `json:"outcomes"`
	Related        *[]*string `json:"related"`
	SameAs         *[]*string `json:"same_as"`
	First          *string    `json:"first"`
	Contains       []string   `json:"contains"`
	Excludes       []string   `json:"excludes"`
	Count          *int       `json:"count"`
	Status         *string    `json:"status"`
	Tier           *string    `json:"tier"`
	Content        *string    `json:"content"`
	SupersededBy   *string    `json:"superseded_by"`
	Supersedes     *string    `json:"supersedes"`
	Version        *int64     `json:"version"`
	Operations     *[]string  `json:"operations"`
	Proposed       *[]string  `json:"proposed"`
	Existing       *[]string  `json:"existing"`
	ProposedStatus *string    `json:"proposed_status"`
	ExistingStatus *string    `json:"existing_status"`

	// Sessions.
	MessageCount         *int64    `json:"message_count"`
	WindowMessageCount   *int32    `json:"window_message_count"`
	Extracted            *[]string `json:"extracted"`
	MaxTokens            *int32    `json:"max_tokens"`
	Messages             *[]string `json:"messages"`
	MinMessageCount      *int      `json:"min_message_count"`
	MaxMessageCount      *int      `json:"max_message_count"`
	MessagesInclude      []string  `json:"messages_include"`
	MessagesExclude      []string  `json:"messages_exclude"`
	FirstMessage         *string   `json:"first_message"`
	LastMessage          *string   `json:"last_message"`
	SummaryNonempty      *bool     `json:"summary_nonempty"`
	SummaryContains      []string  `json:"summary_contains"`
	MemoryCount          *int      `json:"memory_count"`
	MemoriesFirst        *string   `json:"memories_first"`
	MemoriesInclude      []string  `json:"memories_include"`
	ContextContains      []string  `json:"context_contains"`
	ContextNotContains   []string  `json:"context_not_contains"`
	Ended                *bool     `json:"ended"`
	SummaryMemoryType    *string   `json:"summary_memory_type"`
	SummaryMemorySession *string   `json:"summary_memory_session"`
	Sessions             *[]string `json:"sessions"`
}

// messageSpec is MESSAGE: a session message in the scripts' small JSON form.
type messageSpec struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// messageFromSpec builds the proto Message for a MESSAGE spec.
func messageFromSpec(s messageSpec) (*recalld.Message, error) {
	role, err := enumValue[recalld.MessageRole](recalldv1.MessageRole_value, "MESSAGE_ROLE_", strings.ToUpper(s.Role))
	if err != nil || s.Role != strings.ToLower(s.Role) || role == recalldv1.MessageRole_MESSAGE_ROLE_UNSPECIFIED {
		return nil, fmt.Errorf("unknown message role %q", s.Role)
	}
	if s.Content == "" {
		return nil, errors.New("a message without content")
	}
	return recalld.NewMessage(role, s.Content), nil
}

type scriptStep struct {
	Op          string        `json:"op"`
	Tenant      *string       `json:"tenant"`
	User        *string       `json:"user"`
	Expect      scriptExpect  `json:"expect"`
	Save        []string      `json:"save"`
	Memories    []memorySpec  `json:"memories"`
	RequestID   string        `json:"request_id"`
	Query       string        `json:"query"`
	TopK        *int32        `json:"top_k"`
	Types       []string      `json:"types"`
	MinScore    *float32      `json:"min_score"`
	TokenBudget *int32        `json:"token_budget"`
	ID          string        `json:"id"`
	Statuses    []string      `json:"statuses"`
	Memory      *memorySpec   `json:"memory"`
	Paths       []string      `json:"paths"`
	Etag        *string       `json:"etag"`
	IDs         []string      `json:"ids"`
	TopicKey    *string       `json:"topic_key"`
	AllOfUser   bool          `json:"all_of_user"`
	Mode        *string       `json:"mode"`
	DryRun      bool          `json:"dry_run"`
	Resolution  string        `json:"resolution"`
	Session     *string       `json:"session"`
	Messages    []messageSpec `json:"messages"`
	Extract     bool          `json:"extract"`
	AgentScope  string        `json:"agent_scope"`

	raw map[string]json.RawMessage // the keys as written, for checkMemoryScript
}

type memoryScript struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Steps       []*scriptStep `json:"steps"`
}

// loadMemoryScripts reads the scripts (version 1); unknown keys are errors.
func loadMemoryScripts() ([]*memoryScript, error) {
	data, err := os.ReadFile(memoryScriptsPath)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Version int             `json:"version"`
		Scripts []*memoryScript `json:"scripts"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", memoryScriptsPath, err)
	}
	if doc.Version != 1 {
		return nil, fmt.Errorf("%s: unsupported version %d", memoryScriptsPath, doc.Version)
	}
	var raw struct {
		Scripts []struct {
			Steps []map[string]json.RawMessage `json:"steps"`
		} `json:"scripts"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	for i, s := range doc.Scripts {
		for j, st := range s.Steps {
			st.raw = raw.Scripts[i].Steps[j]
		}
	}
	return doc.Scripts, nil
}

// scriptOps lists the request fields (besides op, tenant, user, expect) and
// expect keys (besides error) each op reads, as in the Python reference
// runner. A key outside these would be silently ignored, so
// checkMemoryScript rejects it.
var scriptOps = map[string]struct{ fields, expect, required []string }{
	"write":          {[]string{"memories", "request_id", "save"}, []string{"outcomes", "related", "same_as"}, []string{"memories"}},
	"recall":         {[]string{"query", "top_k", "types", "min_score", "token_budget", "save"}, []string{"first", "contains", "excludes", "count"}, []string{"query"}},
	"get":            {[]string{"id"}, []string{"status", "tier", "content", "superseded_by", "supersedes"}, []string{"id"}},
	"list":           {[]string{"statuses"}, []string{"count", "contains", "excludes"}, nil},
	"update":         {[]string{"id", "memory", "paths", "etag"}, []string{"content", "version"}, []string{"id", "memory", "paths"}},
	"forget":         {[]string{"ids", "topic_key", "session", "all_of_user", "mode", "dry_run"}, []string{"count"}, nil},
	"restore":        {[]string{"ids"}, []string{"status"}, []string{"ids"}},
	"confirm":        {[]string{"ids"}, []string{"outcomes", "status"}, []string{"ids"}},
	"history":        {[]string{"id"}, []string{"operations"}, []string{"id"}},
	"list_conflicts": {[]string{"save"}, []string{"count", "proposed", "existing"}, nil},
	"resolve":        {[]string{"id", "resolution"}, []string{"proposed_status", "existing_status"}, []string{"id", "resolution"}},
	"append": {
		[]string{"session", "messages", "extract", "request_id", "agent_scope", "save"},
		[]string{"message_count", "window_message_count", "extracted"},
		[]string{"messages"},
	},
	"get_context": {
		[]string{"session", "query", "token_budget", "save"},
		[]string{
			"max_tokens", "messages", "message_count", "min_message_count", "max_message_count",
			"messages_include", "messages_exclude", "first_message", "last_message",
			"summary_nonempty", "summary_contains", "memory_count", "memories_first", "memories_include",
			"context_contains", "context_not_contains",
		},
		nil,
	},
	"get_session":   {[]string{"session"}, []string{"message_count", "window_message_count", "ended", "summary_nonempty", "summary_contains"}, nil},
	"end_session":   {[]string{"session", "save"}, []string{"ended", "summary_memory_type", "summary_memory_session", "summary_nonempty", "summary_contains"}, nil},
	"list_sessions": {nil, []string{"count", "sessions"}, nil},
}

// enumValue returns the value of the enum constant prefix+name.
func enumValue[E ~int32](values map[string]int32, prefix, name string) (E, error) {
	v, ok := values[prefix+name]
	if !ok {
		return 0, fmt.Errorf("unknown %s%s", prefix, name)
	}
	return E(v), nil
}

// enumName is the constant's name without its prefix (the number if unknown).
func enumName(e fmt.Stringer, prefix string) string { return strings.TrimPrefix(e.String(), prefix) }

// grpcCode parses a canonical code name such as "NOT_FOUND".
func grpcCode(name string) (codes.Code, error) {
	var c codes.Code
	if err := c.UnmarshalJSON([]byte(strconv.Quote(name))); err != nil {
		return 0, fmt.Errorf("unknown gRPC code %q", name)
	}
	return c, nil
}

// checkMemoryScript lists what would otherwise be ignored silently or fail
// only when run: unknown ops and keys, unknown enum and code names, and
// names used before any step saved them.
func checkMemoryScript(s *memoryScript) []string {
	var problems []string
	if s.Name == "" {
		problems = append(problems, "script without a name")
	}
	if len(s.Steps) == 0 {
		return append(problems, "no steps")
	}
	saved := map[string]bool{}
	for i, st := range s.Steps {
		at := fmt.Sprintf("step %d (%s)", i, st.Op)
		report := func(format string, args ...any) { problems = append(problems, at+": "+fmt.Sprintf(format, args...)) }
		op, ok := scriptOps[st.Op]
		if !ok {
			report("unknown op")
			continue
		}
		for k := range st.raw {
			if !slices.Contains([]string{"op", "tenant", "user", "expect"}, k) && !slices.Contains(op.fields, k) {
				report("unknown key %s", k)
			}
		}
		for _, k := range op.required {
			if _, ok := st.raw[k]; !ok {
				report("missing %s", k)
			}
		}
		var expectKeys map[string]json.RawMessage
		if e, ok := st.raw["expect"]; ok {
			_ = json.Unmarshal(e, &expectKeys)
		}
		for k := range expectKeys {
			if k != "error" && !slices.Contains(op.expect, k) {
				report("unknown expect key %s", k)
			}
		}
		check := func(err error) {
			if err != nil {
				report("%v", err)
			}
		}
		specs := st.Memories
		if st.Memory != nil {
			specs = append(slices.Clone(specs), *st.Memory)
		}
		for _, m := range specs {
			_, err := memoryFromSpec(m)
			check(err)
		}
		for _, n := range st.Types {
			_, err := enumValue[recalld.MemoryType](recalldv1.MemoryType_value, "MEMORY_TYPE_", n)
			check(err)
		}
		e := st.Expect
		statuses := slices.Clone(st.Statuses)
		for _, p := range []*string{e.Status, e.ProposedStatus, e.ExistingStatus} {
			if p != nil {
				statuses = append(statuses, *p)
			}
		}
		for _, n := range statuses {
			_, err := enumValue[recalld.MemoryStatus](recalldv1.MemoryStatus_value, "MEMORY_STATUS_", n)
			check(err)
		}
		if st.Mode != nil {
			_, err := enumValue[recalld.ForgetMode](recalldv1.ForgetMode_value, "FORGET_MODE_", *st.Mode)
			check(err)
		}
		if st.Resolution != "" {
			_, err := enumValue[recalld.ConflictResolution](recalldv1.ConflictResolution_value, "CONFLICT_RESOLUTION_", st.Resolution)
			check(err)
		}
		for _, list := range []*[]string{e.Outcomes, e.Extracted} {
			if list != nil {
				for _, n := range *list {
					_, err := enumValue[recalld.WriteOutcome](recalldv1.WriteOutcome_value, "WRITE_OUTCOME_", n)
					check(err)
				}
			}
		}
		if e.SummaryMemoryType != nil {
			_, err := enumValue[recalld.MemoryType](recalldv1.MemoryType_value, "MEMORY_TYPE_", *e.SummaryMemoryType)
			check(err)
		}
		for _, m := range st.Messages {
			_, err := messageFromSpec(m)
			check(err)
		}
		if e.Operations != nil {
			for _, n := range *e.Operations {
				_, err := enumValue[recalld.MemoryOperation](recalldv1.MemoryOperation_value, "MEMORY_OPERATION_", n)
				check(err)
			}
		}
		if e.Tier != nil {
			_, err := enumValue[recalld.MemoryTier](recalldv1.MemoryTier_value, "MEMORY_TIER_", *e.Tier)
			check(err)
		}
		if e.Error != nil {
			_, err := grpcCode(*e.Error)
			check(err)
		}
		if st.Etag != nil && *st.Etag != "current" && *st.Etag != "stale" {
			report(`etag must be "current" or "stale"`)
		}
		used := append(slices.Clone(st.IDs), e.Contains...)
		used = append(used, e.Excludes...)
		for _, p := range []*string{e.First, e.SupersededBy, e.Supersedes} {
			if p != nil {
				used = append(used, *p)
			}
		}
		if st.ID != "" {
			used = append(used, st.ID)
		}
		for _, list := range []*[]*string{e.Related, e.SameAs} {
			if list != nil {
				for _, p := range *list {
					if p != nil {
						used = append(used, *p)
					}
				}
			}
		}
		for _, list := range []*[]string{e.Proposed, e.Existing} {
			if list != nil {
				used = append(used, *list...)
			}
		}
		for _, n := range used {
			if !saved[n] {
				report("%q is not saved by an earlier step", n)
			}
		}
		for _, n := range st.Save {
			saved[n] = true
		}
	}
	return problems
}

// memoryFromSpec builds the proto Memory for a MEMORY spec (unset keys stay
// unset; content defaults to "").
func memoryFromSpec(s memorySpec) (*recalld.Memory, error) {
	m := &recalld.Memory{Tags: slices.Clone(s.Tags)}
	if s.Content != nil {
		m.Content = *s.Content
	}
	var err error
	if s.Type != nil {
		if m.Type, err = enumValue[recalld.MemoryType](recalldv1.MemoryType_value, "MEMORY_TYPE_", *s.Type); err != nil {
			return nil, err
		}
	}
	if s.Tier != nil {
		if m.Tier, err = enumValue[recalld.MemoryTier](recalldv1.MemoryTier_value, "MEMORY_TIER_", *s.Tier); err != nil {
			return nil, err
		}
	}
	if s.TopicKey != nil {
		m.TopicKey = *s.TopicKey
	}
	if s.AgentScope != nil {
		m.AgentScope = *s.AgentScope
	}
	if s.SessionID != nil {
		m.SessionId = *s.SessionID
	}
	if s.Importance != nil {
		m.Importance = proto.Float32(*s.Importance)
	}
	if s.Confidence != nil {
		m.Confidence = proto.Float32(*s.Confidence)
	}
	if s.ExpireAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *s.ExpireAt)
		if err != nil {
			return nil, fmt.Errorf("expire_at: %w", err)
		}
		m.ExpireAt = timestamppb.New(t)
	}
	return m, nil
}

func memoryStatus(m *recalld.Memory) string {
	return enumName(m.GetStatus(), "MEMORY_STATUS_")
}

// scriptRun is one run of one script: symbolic names to fresh tenants, users and ids.
type scriptRun struct {
	t       *testing.T
	addr    string
	runID   string
	clients map[string]*recalld.Client
	names   []string // saved names in first-save order (for nameOf)
	ids     map[string]string
}

func newScriptRun(t *testing.T, addr string) *scriptRun {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return &scriptRun{t: t, addr: addr, runID: hex.EncodeToString(b), clients: map[string]*recalld.Client{}, ids: map[string]string{}}
}

func (r *scriptRun) client(st *scriptStep) (*recalld.Client, error) {
	tenant := "main"
	if st.Tenant != nil {
		tenant = *st.Tenant
	}
	if c, ok := r.clients[tenant]; ok {
		return c, nil
	}
	c, err := recalld.New(r.addr, recalld.WithTenant(tenant+"-"+r.runID))
	if err != nil {
		return nil, err
	}
	r.t.Cleanup(func() { _ = c.Close() })
	r.clients[tenant] = c
	return c, nil
}

func (r *scriptRun) user(st *scriptStep) string {
	u := "u1"
	if st.User != nil {
		u = *st.User
	}
	return u + "-" + r.runID
}

// session returns the step's session name, used as it is: tenants and users
// are fresh per run.
func (r *scriptRun) session(st *scriptStep) string {
	if st.Session != nil {
		return *st.Session
	}
	return "s1"
}

// matches reports whether m is the memory ref names: by id for a saved name,
// else by a content substring.
func (r *scriptRun) matches(m *recalld.Memory, ref string) bool {
	if id, ok := r.ids[ref]; ok {
		return m.GetId() == id
	}
	return m != nil && strings.Contains(m.GetContent(), ref)
}

// checkSummary checks summary_nonempty and summary_contains.
func checkSummary(summary string, e scriptExpect) error {
	if e.SummaryNonempty != nil && (summary != "") != *e.SummaryNonempty {
		return fmt.Errorf("summary_nonempty: want %v, got %q", *e.SummaryNonempty, summary)
	}
	for _, text := range e.SummaryContains {
		if !strings.Contains(summary, text) {
			return fmt.Errorf("summary_contains %q: got %q", text, summary)
		}
	}
	return nil
}

// checkCounts checks message_count and window_message_count of a session.
func checkCounts(s *recalld.Session, e scriptExpect) error {
	if e.MessageCount != nil && s.GetMessageCount() != *e.MessageCount {
		return fmt.Errorf("message_count = %d, want %d", s.GetMessageCount(), *e.MessageCount)
	}
	if e.WindowMessageCount != nil && s.GetWindowMessageCount() != *e.WindowMessageCount {
		return fmt.Errorf("window_message_count = %d, want %d", s.GetWindowMessageCount(), *e.WindowMessageCount)
	}
	return nil
}

func (r *scriptRun) idOf(name string) (string, error) {
	id, ok := r.ids[name]
	if !ok {
		return "", fmt.Errorf("no memory was saved as %q", name)
	}
	return id, nil
}

func (r *scriptRun) idsOf(names []string) ([]string, error) {
	ids := make([]string, len(names))
	for i, n := range names {
		var err error
		if ids[i], err = r.idOf(n); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func (r *scriptRun) nameOf(id string) string {
	for _, n := range r.names {
		if r.ids[n] == id {
			return n
		}
	}
	return id
}

func (r *scriptRun) namesOf(ids []string) []string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = r.nameOf(id)
	}
	return names
}

func (r *scriptRun) save(st *scriptStep, ids []string) {
	for i, n := range st.Save {
		if i >= len(ids) {
			return
		}
		if _, ok := r.ids[n]; !ok {
			r.names = append(r.names, n)
		}
		r.ids[n] = ids[i]
	}
}

// step runs one step. An RPC error passes only when expect.error names its code.
func (r *scriptRun) step(ctx context.Context, st *scriptStep) error {
	err := r.do(ctx, st)
	var re *recalld.Error
	if errors.As(err, &re) {
		if st.Expect.Error == nil {
			return fmt.Errorf("unexpected error: %w", err)
		}
		want, cerr := grpcCode(*st.Expect.Error)
		if cerr != nil {
			return cerr
		}
		if re.Code != want {
			return fmt.Errorf("expected %s, got %w", *st.Expect.Error, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if st.Expect.Error != nil {
		return fmt.Errorf("expected %s, but the call succeeded", *st.Expect.Error)
	}
	return nil
}

func (r *scriptRun) do(ctx context.Context, st *scriptStep) error {
	c, err := r.client(st)
	if err != nil {
		return err
	}
	user := r.user(st)
	e := st.Expect
	switch st.Op {
	case "write":
		req := &recalld.WriteRequest{UserId: user, RequestId: st.RequestID}
		for _, s := range st.Memories {
			m, err := memoryFromSpec(s)
			if err != nil {
				return err
			}
			req.Memories = append(req.Memories, m)
		}
		res, err := c.Write(ctx, req)
		if err != nil {
			return err
		}
		results := res.GetResults()
		ids := make([]string, len(results))
		outcomes := make([]string, len(results))
		for i, w := range results {
			ids[i], outcomes[i] = w.GetId(), enumName(w.GetOutcome(), "WRITE_OUTCOME_")
		}
		r.save(st, ids)
		if e.Outcomes != nil && !slices.Equal(outcomes, *e.Outcomes) {
			return fmt.Errorf("outcomes = %v, want %v", outcomes, *e.Outcomes)
		}
		for _, k := range []struct {
			key   string
			names *[]*string
			field func(*recalld.WriteResult) string
		}{
			{"related", e.Related, (*recalld.WriteResult).GetRelatedId},
			{"same_as", e.SameAs, (*recalld.WriteResult).GetId},
		} {
			if k.names == nil {
				continue
			}
			if len(*k.names) != len(results) {
				return fmt.Errorf("%s: %d names for %d results", k.key, len(*k.names), len(results))
			}
			for i, n := range *k.names {
				if n == nil {
					continue
				}
				want, err := r.idOf(*n)
				if err != nil {
					return err
				}
				if got := k.field(results[i]); got != want {
					return fmt.Errorf("%s[%d] = %s, want %s (%s)", k.key, i, r.nameOf(got), *n, want)
				}
			}
		}

	case "recall":
		req := &recalld.RecallRequest{UserId: user, Query: st.Query, TopK: 10, MinScore: st.MinScore}
		if st.TopK != nil {
			req.TopK = *st.TopK
		}
		if st.TokenBudget != nil {
			req.TokenBudget = *st.TokenBudget
		}
		for _, n := range st.Types {
			v, err := enumValue[recalld.MemoryType](recalldv1.MemoryType_value, "MEMORY_TYPE_", n)
			if err != nil {
				return err
			}
			req.Types = append(req.Types, v)
		}
		res, err := c.Recall(ctx, req)
		if err != nil {
			return err
		}
		var ids []string
		for _, it := range res.GetItems() {
			ids = append(ids, it.GetMemory().GetId())
		}
		r.save(st, ids)
		named := r.namesOf(ids)
		if e.First != nil && (len(named) == 0 || named[0] != *e.First) {
			return fmt.Errorf("first: want %s, got %v", *e.First, named)
		}
		if err := r.checkMembers(ids, e.Contains, e.Excludes); err != nil {
			return err
		}
		if e.Count != nil && len(ids) != *e.Count {
			return fmt.Errorf("count = %d, want %d: %v", len(ids), *e.Count, named)
		}

	case "get":
		id, err := r.idOf(st.ID)
		if err != nil {
			return err
		}
		res, err := c.Get(ctx, &recalld.GetRequest{UserId: user, Id: id})
		if err != nil {
			return err
		}
		m := res.GetMemory()
		if e.Status != nil && memoryStatus(m) != *e.Status {
			return fmt.Errorf("status = %s, want %s", memoryStatus(m), *e.Status)
		}
		if got := enumName(m.GetTier(), "MEMORY_TIER_"); e.Tier != nil && got != *e.Tier {
			return fmt.Errorf("tier = %s, want %s", got, *e.Tier)
		}
		if e.Content != nil && m.GetContent() != *e.Content {
			return fmt.Errorf("content = %q, want %q", m.GetContent(), *e.Content)
		}
		for _, k := range []struct {
			key, got string
			name     *string
		}{{"superseded_by", m.GetSupersededById(), e.SupersededBy}, {"supersedes", m.GetSupersedesId(), e.Supersedes}} {
			if k.name == nil {
				continue
			}
			want, err := r.idOf(*k.name)
			if err != nil {
				return err
			}
			if k.got != want {
				return fmt.Errorf("%s = %s, want %s (%s)", k.key, r.nameOf(k.got), *k.name, want)
			}
		}

	case "list":
		req := &recalld.ListRequest{UserId: user, PageSize: 100}
		for _, n := range st.Statuses {
			v, err := enumValue[recalld.MemoryStatus](recalldv1.MemoryStatus_value, "MEMORY_STATUS_", n)
			if err != nil {
				return err
			}
			req.Statuses = append(req.Statuses, v)
		}
		var ids []string
		for m, err := range c.ListAll(ctx, req) {
			if err != nil {
				return err
			}
			ids = append(ids, m.GetId())
		}
		if e.Count != nil && len(ids) != *e.Count {
			return fmt.Errorf("count = %d, want %d: %v", len(ids), *e.Count, r.namesOf(ids))
		}
		if err := r.checkMembers(ids, e.Contains, e.Excludes); err != nil {
			return err
		}

	case "update":
		var spec memorySpec
		if st.Memory != nil {
			spec = *st.Memory
		}
		m, err := memoryFromSpec(spec)
		if err != nil {
			return err
		}
		if m.Id, err = r.idOf(st.ID); err != nil {
			return err
		}
		if st.Etag != nil {
			switch *st.Etag {
			case "current":
				g, err := c.Get(ctx, &recalld.GetRequest{UserId: user, Id: m.Id})
				if err != nil {
					return err
				}
				m.Etag = g.GetMemory().GetEtag()
			case "stale":
				m.Etag = `W/"0"`
			}
		}
		res, err := c.Update(ctx, &recalld.UpdateRequest{UserId: user, Memory: m, UpdateMask: &fieldmaskpb.FieldMask{Paths: st.Paths}})
		if err != nil {
			return err
		}
		u := res.GetMemory()
		if e.Content != nil && u.GetContent() != *e.Content {
			return fmt.Errorf("content = %q, want %q", u.GetContent(), *e.Content)
		}
		if e.Version != nil && u.GetVersion() != *e.Version {
			return fmt.Errorf("version = %d, want %d", u.GetVersion(), *e.Version)
		}

	case "forget":
		ids, err := r.idsOf(st.IDs)
		if err != nil {
			return err
		}
		mode := "SOFT"
		if st.Mode != nil {
			mode = *st.Mode
		}
		req := &recalld.ForgetRequest{UserId: user, Ids: ids, DryRun: st.DryRun, AllOfUser: st.AllOfUser}
		if req.Mode, err = enumValue[recalld.ForgetMode](recalldv1.ForgetMode_value, "FORGET_MODE_", mode); err != nil {
			return err
		}
		if st.TopicKey != nil {
			req.TopicKey = *st.TopicKey
		}
		if st.Session != nil {
			req.SessionId = r.session(st)
		}
		res, err := c.Forget(ctx, req)
		if err != nil {
			return err
		}
		if e.Count != nil && len(res.GetForgottenIds()) != *e.Count {
			return fmt.Errorf("count = %d, want %d", len(res.GetForgottenIds()), *e.Count)
		}

	case "restore":
		ids, err := r.idsOf(st.IDs)
		if err != nil {
			return err
		}
		res, err := c.Restore(ctx, &recalld.RestoreRequest{UserId: user, Ids: ids})
		if err != nil {
			return err
		}
		for _, m := range res.GetMemories() {
			if e.Status != nil && memoryStatus(m) != *e.Status {
				return fmt.Errorf("status of %s = %s, want %s", r.nameOf(m.GetId()), memoryStatus(m), *e.Status)
			}
		}

	case "confirm":
		ids, err := r.idsOf(st.IDs)
		if err != nil {
			return err
		}
		res, err := c.Confirm(ctx, &recalld.ConfirmRequest{UserId: user, Ids: ids})
		if err != nil {
			return err
		}
		var outcomes []string
		for _, w := range res.GetResults() {
			outcomes = append(outcomes, enumName(w.GetOutcome(), "WRITE_OUTCOME_"))
		}
		if e.Outcomes != nil && !slices.Equal(outcomes, *e.Outcomes) {
			return fmt.Errorf("outcomes = %v, want %v", outcomes, *e.Outcomes)
		}
		for _, w := range res.GetResults() {
			if e.Status != nil && memoryStatus(w.GetMemory()) != *e.Status {
				return fmt.Errorf("status of %s = %s, want %s", r.nameOf(w.GetId()), memoryStatus(w.GetMemory()), *e.Status)
			}
		}

	case "history":
		id, err := r.idOf(st.ID)
		if err != nil {
			return err
		}
		res, err := c.History(ctx, &recalld.HistoryRequest{UserId: user, Id: id})
		if err != nil {
			return err
		}
		var ops []string
		for _, v := range res.GetVersions() {
			ops = append(ops, enumName(v.GetOperation(), "MEMORY_OPERATION_"))
		}
		if e.Operations != nil && !slices.Equal(ops, *e.Operations) {
			return fmt.Errorf("operations = %v, want %v", ops, *e.Operations)
		}

	case "list_conflicts":
		res, err := c.ListConflicts(ctx, &recalld.ListConflictsRequest{UserId: user})
		if err != nil {
			return err
		}
		var proposed, existing []string
		for _, cf := range res.GetConflicts() {
			proposed = append(proposed, cf.GetProposed().GetId())
			existing = append(existing, cf.GetExisting().GetId())
		}
		r.save(st, proposed)
		if e.Count != nil && len(proposed) != *e.Count {
			return fmt.Errorf("count = %d, want %d: %v", len(proposed), *e.Count, r.namesOf(proposed))
		}
		for _, k := range []struct {
			key   string
			got   []string
			names *[]string
		}{{"proposed", proposed, e.Proposed}, {"existing", existing, e.Existing}} {
			if k.names == nil {
				continue
			}
			want, err := r.idsOf(*k.names)
			if err != nil {
				return err
			}
			if !slices.Equal(k.got, want) {
				return fmt.Errorf("%s = %v, want %v", k.key, r.namesOf(k.got), *k.names)
			}
		}

	case "resolve":
		id, err := r.idOf(st.ID)
		if err != nil {
			return err
		}
		resolution, err := enumValue[recalld.ConflictResolution](recalldv1.ConflictResolution_value, "CONFLICT_RESOLUTION_", st.Resolution)
		if err != nil {
			return err
		}
		res, err := c.ResolveConflict(ctx, &recalld.ResolveConflictRequest{UserId: user, ConflictId: id, Resolution: resolution})
		if err != nil {
			return err
		}
		if e.ProposedStatus != nil && memoryStatus(res.GetProposed()) != *e.ProposedStatus {
			return fmt.Errorf("proposed_status = %s, want %s", memoryStatus(res.GetProposed()), *e.ProposedStatus)
		}
		if e.ExistingStatus != nil && memoryStatus(res.GetExisting()) != *e.ExistingStatus {
			return fmt.Errorf("existing_status = %s, want %s", memoryStatus(res.GetExisting()), *e.ExistingStatus)
		}

	case "append":
		req := &recalld.AppendMessagesRequest{
			UserId: user, SessionId: r.session(st), Extract: st.Extract, RequestId: st.RequestID, AgentScope: st.AgentScope,
		}
		for _, s := range st.Messages {
			m, err := messageFromSpec(s)
			if err != nil {
				return err
			}
			req.Messages = append(req.Messages, m)
		}
		res, err := c.AppendMessages(ctx, req)
		if err != nil {
			return err
		}
		var ids, outcomes []string
		for _, w := range res.GetExtracted() {
			ids = append(ids, w.GetId())
			outcomes = append(outcomes, enumName(w.GetOutcome(), "WRITE_OUTCOME_"))
		}
		r.save(st, ids)
		if err := checkCounts(res.GetSession(), e); err != nil {
			return err
		}
		if e.Extracted != nil && !slices.Equal(outcomes, *e.Extracted) {
			return fmt.Errorf("extracted = %v, want %v", outcomes, *e.Extracted)
		}

	case "get_context":
		req := &recalld.GetContextRequest{UserId: user, SessionId: r.session(st), Query: st.Query}
		if st.TokenBudget != nil {
			req.TokenBudget = *st.TokenBudget
		}
		res, err := c.GetContext(ctx, req)
		if err != nil {
			return err
		}
		var ids, texts, contents []string
		var memories []*recalld.Memory
		for _, it := range res.GetMemories() {
			memories = append(memories, it.GetMemory())
			ids = append(ids, it.GetMemory().GetId())
			texts = append(texts, it.GetMemory().GetContent())
		}
		r.save(st, ids)
		for _, m := range res.GetMessages() {
			contents = append(contents, m.GetContent())
		}
		if e.MaxTokens != nil && res.GetTokenEstimate() > *e.MaxTokens {
			return fmt.Errorf("token_estimate %d > %d", res.GetTokenEstimate(), *e.MaxTokens)
		}
		if e.Messages != nil && !slices.Equal(contents, *e.Messages) {
			return fmt.Errorf("messages = %q, want %q", contents, *e.Messages)
		}
		if e.MessageCount != nil && int64(len(contents)) != *e.MessageCount {
			return fmt.Errorf("message_count = %d, want %d: %q", len(contents), *e.MessageCount, contents)
		}
		if e.MinMessageCount != nil && len(contents) < *e.MinMessageCount {
			return fmt.Errorf("min_message_count %d: %q", *e.MinMessageCount, contents)
		}
		if e.MaxMessageCount != nil && len(contents) > *e.MaxMessageCount {
			return fmt.Errorf("max_message_count %d: %q", *e.MaxMessageCount, contents)
		}
		for _, text := range e.MessagesInclude {
			if !slices.Contains(contents, text) {
				return fmt.Errorf("messages_include %q: %q", text, contents)
			}
		}
		for _, text := range e.MessagesExclude {
			if slices.Contains(contents, text) {
				return fmt.Errorf("messages_exclude %q: %q", text, contents)
			}
		}
		if e.FirstMessage != nil && (len(contents) == 0 || contents[0] != *e.FirstMessage) {
			return fmt.Errorf("first_message: want %q, got %q", *e.FirstMessage, contents)
		}
		if e.LastMessage != nil && (len(contents) == 0 || contents[len(contents)-1] != *e.LastMessage) {
			return fmt.Errorf("last_message: want %q, got %q", *e.LastMessage, contents)
		}
		if err := checkSummary(res.GetSummary(), e); err != nil {
			return err
		}
		if e.MemoryCount != nil && len(memories) != *e.MemoryCount {
			return fmt.Errorf("memory_count = %d, want %d: %q", len(memories), *e.MemoryCount, texts)
		}
		if e.MemoriesFirst != nil && (len(memories) == 0 || !r.matches(memories[0], *e.MemoriesFirst)) {
			return fmt.Errorf("memories_first %s: %q", *e.MemoriesFirst, texts)
		}
		for _, ref := range e.MemoriesInclude {
			if !slices.ContainsFunc(memories, func(m *recalld.Memory) bool { return r.matches(m, ref) }) {
				return fmt.Errorf("memories_include %s: %q", ref, texts)
			}
		}
		for _, text := range e.ContextContains {
			if !strings.Contains(res.GetContext(), text) {
				return fmt.Errorf("context_contains %q: %q", text, res.GetContext())
			}
		}
		for _, text := range e.ContextNotContains {
			if strings.Contains(res.GetContext(), text) {
				return fmt.Errorf("context_not_contains %q: %q", text, res.GetContext())
			}
		}

	case "get_session":
		res, err := c.GetSession(ctx, &recalld.GetSessionRequest{UserId: user, SessionId: r.session(st)})
		if err != nil {
			return err
		}
		s := res.GetSession()
		if err := checkCounts(s, e); err != nil {
			return err
		}
		if e.Ended != nil && (s.GetEndedAt() != nil) != *e.Ended {
			return fmt.Errorf("ended: want %v, got %v", *e.Ended, s.GetEndedAt())
		}
		if err := checkSummary(s.GetSummary(), e); err != nil {
			return err
		}

	case "end_session":
		res, err := c.EndSession(ctx, &recalld.EndSessionRequest{UserId: user, SessionId: r.session(st)})
		if err != nil {
			return err
		}
		m := res.GetSummaryMemory()
		if m != nil {
			r.save(st, []string{m.GetId()})
		}
		s := res.GetSession()
		if e.Ended != nil && (s.GetEndedAt() != nil) != *e.Ended {
			return fmt.Errorf("ended: want %v, got %v", *e.Ended, s.GetEndedAt())
		}
		if e.SummaryMemoryType != nil {
			if m == nil {
				return errors.New("no summary memory")
			}
			if got := enumName(m.GetType(), "MEMORY_TYPE_"); got != *e.SummaryMemoryType {
				return fmt.Errorf("summary_memory_type = %s, want %s", got, *e.SummaryMemoryType)
			}
			if s.GetSummaryMemoryId() != m.GetId() {
				return fmt.Errorf("session.summary_memory_id = %q, want %q", s.GetSummaryMemoryId(), m.GetId())
			}
		}
		if e.SummaryMemorySession != nil && m.GetSessionId() != *e.SummaryMemorySession {
			return fmt.Errorf("summary_memory_session = %q, want %q", m.GetSessionId(), *e.SummaryMemorySession)
		}
		if err := checkSummary(s.GetSummary(), e); err != nil {
			return err
		}

	case "list_sessions":
		var names []string
		for s, err := range c.ListAllSessions(ctx, &recalld.ListSessionsRequest{UserId: user}) {
			if err != nil {
				return err
			}
			names = append(names, s.GetSessionId())
		}
		if e.Count != nil && len(names) != *e.Count {
			return fmt.Errorf("count = %d, want %d: %q", len(names), *e.Count, names)
		}
		if e.Sessions != nil {
			got, want := slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(*e.Sessions))
			if !slices.Equal(got, want) {
				return fmt.Errorf("sessions = %q, want %q", got, want)
			}
		}

	default:
		return fmt.Errorf("unknown op %q", st.Op)
	}
	return nil
}

// checkMembers checks that ids holds every memory named in contains and none in excludes.
func (r *scriptRun) checkMembers(ids, contains, excludes []string) error {
	for _, n := range contains {
		id, err := r.idOf(n)
		if err != nil {
			return err
		}
		if !slices.Contains(ids, id) {
			return fmt.Errorf("contains %s: got %v", n, r.namesOf(ids))
		}
	}
	for _, n := range excludes {
		id, err := r.idOf(n)
		if err != nil {
			return err
		}
		if slices.Contains(ids, id) {
			return fmt.Errorf("excludes %s: got %v", n, r.namesOf(ids))
		}
	}
	return nil
}

func TestMemoryScriptsWellFormed(t *testing.T) {
	scripts, err := loadMemoryScripts()
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) == 0 {
		t.Fatal("no scripts")
	}
	seen := map[string]bool{}
	for _, s := range scripts {
		if seen[s.Name] {
			t.Errorf("duplicate script name %q", s.Name)
		}
		seen[s.Name] = true
		for _, p := range checkMemoryScript(s) {
			t.Errorf("%s: %s", s.Name, p)
		}
	}
}

func TestMemoryScripts(t *testing.T) {
	scripts, err := loadMemoryScripts()
	if err != nil {
		t.Fatal(err)
	}
	addr := os.Getenv("RECALLD_ADDR")
	for _, s := range scripts {
		t.Run(s.Name, func(t *testing.T) {
			if addr == "" {
				t.Skip("RECALLD_ADDR is unset: start `recalld serve` without API keys and export RECALLD_ADDR=host:port to run the memory scripts")
			}
			run := newScriptRun(t, addr)
			ctx := t.Context() // no deadline: the client's default per-call deadlines apply
			for i, st := range s.Steps {
				if err := run.step(ctx, st); err != nil {
					t.Fatalf("step %d (%s): %v", i, st.Op, err)
				}
			}
		})
	}
}
