// Command composecheck loads a compose file the way `docker compose config` does
// (compose-go: the Compose Specification's JSON schema, interpolation, defaults,
// cross-references such as depends_on and named volumes) and prints the resolved
// project as JSON. It needs no Docker daemon and no network.
//
//	go tool composecheck deploy/compose.yaml
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: composecheck compose.yaml [more.yaml ...]")
		os.Exit(2)
	}
	if err := check(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "composecheck:", err)
		os.Exit(1)
	}
}

func check(files []string) error {
	options, err := cli.NewProjectOptions(
		files,
		cli.WithName("recalld"),
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return err
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(project, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Println(string(out))
	return err
}
