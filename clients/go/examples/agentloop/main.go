// Command agentloop is a toy agent loop against a live recalld server: before
// answering each turn it recalls what it knows about the user; after
// answering it writes down what the turn taught it.
//
//	RECALLD_ADDR=127.0.0.1:50051 go run ./examples/agentloop
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	recalld "github.com/recalld/recalld/clients/go"
)

func main() {
	user := envOr("RECALLD_USER", "demo-"+randomHex(4))
	var opts []recalld.Option
	if t := os.Getenv("RECALLD_TENANT"); t != "" {
		opts = append(opts, recalld.WithTenant(t))
	}
	c, err := recalld.New("", opts...) // RECALLD_ADDR (default 127.0.0.1:50051), RECALLD_API_KEY
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	turns := []string{
		"Hi! I live in Hangzhou and I prefer oat milk in my coffee.",
		"我最喜欢的茶是西湖龙井。",
		"Can you order me a coffee the way I like it?",
		"我喜欢喝什么茶？",
	}
	ctx := context.Background()
	for _, turn := range turns {
		fmt.Println("user  >", turn)
		// 1. Recall before answering (default deadline 5 s; retried on UNAVAILABLE).
		r, err := c.Recall(ctx, &recalld.RecallRequest{UserId: user, Query: turn, TopK: 3})
		if err != nil {
			fail(err)
		}
		// 2. Answer (a real agent would put these memories into its LLM prompt).
		var known []string
		for _, it := range r.GetItems() {
			known = append(known, fmt.Sprintf("%q", it.GetMemory().GetContent()))
		}
		if len(known) > 0 {
			fmt.Println("agent > From what I remember:", strings.Join(known, "; "))
		} else {
			fmt.Println("agent > Nice to meet you! I'll remember that.")
		}
		// 3. Learn: statements become memories; the request_id makes the write safe to retry.
		if !strings.HasSuffix(turn, "?") && !strings.HasSuffix(turn, "？") {
			sum := sha256.Sum256([]byte(user + "\n" + turn))
			w, err := c.Write(ctx, &recalld.WriteRequest{
				UserId:    user,
				RequestId: hex.EncodeToString(sum[:16]),
				Memories:  []*recalld.Memory{{Type: recalld.TypeFact, Content: turn, Source: "chat"}},
			})
			if err != nil {
				fail(err)
			}
			for _, res := range w.GetResults() {
				fmt.Printf("        (memory %s: %s)\n", res.GetId(), res.GetOutcome())
			}
		}
	}
}

func fail(err error) {
	var re *recalld.Error
	if errors.As(err, &re) {
		log.Fatalf("agent loop failed: %v %+v", re, re.FieldViolations)
	}
	log.Fatal(err)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
