// Command kubecheck validates Kubernetes manifests offline against the API types
// that client-go compiles in: every document must decode strictly (no unknown or
// duplicate field, every value of its field's type) into a known kind.
//
//	helm template deploy/helm/recalld | go tool kubecheck
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

func main() {
	if err := check(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubecheck:", err)
		os.Exit(1)
	}
}

func check(in io.Reader, out io.Writer) error {
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	count := 0
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading document %d: %w", count+1, err)
		}
		if len(bytes.TrimSpace(stripComments(document))) == 0 {
			continue
		}
		count++
		_, kind, err := decoder.Decode(document, nil, nil)
		if err != nil {
			return fmt.Errorf("document %d: %w", count, err)
		}
		fmt.Fprintf(out, "ok %s/%s\n", kind.GroupVersion(), kind.Kind)
	}
	if count == 0 {
		return errors.New("no manifests")
	}
	return nil
}

// stripComments drops comment-only lines, so a document of comments counts as empty.
func stripComments(document []byte) []byte {
	var kept [][]byte
	for _, line := range bytes.Split(document, []byte("\n")) {
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] != '#' {
			kept = append(kept, line)
		}
	}
	return bytes.Join(kept, []byte("\n"))
}
