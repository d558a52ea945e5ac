package recalld_test

// TestREADMEInstallSteps depends on the client the documented way, from a
// fresh module outside the repository. Nothing is published yet, so the
// release is simulated: a file-based module proxy (GOPROXY=file://…) holds
// this directory as the module zip of the documented version, as the
// clients/go/vX.Y.Z tag would serve it. The README's shell steps then run
// verbatim, with the environment of a user of the public proxy: no replace,
// no go.work, no -mod=mod (that would hide a missing go.sum entry, the
// failure this test is for); only the checksum database is skipped for this
// module, which it cannot know.

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	recalld "github.com/recalld/recalld/clients/go"
)

// readmeBlock is one fenced block of the README's install section.
type readmeBlock struct {
	lang  string
	lines []string
}

// installSection returns the fenced blocks under "## Install…" in order.
func installSection(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	in, fenced := false, false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !fenced && strings.HasPrefix(line, "## "):
			in = strings.HasPrefix(line, "## Install")
		case in && !fenced && strings.HasPrefix(line, "```"):
			fenced = true
			blocks = append(blocks, readmeBlock{lang: strings.TrimPrefix(line, "```")})
		case fenced && line == "```":
			fenced = false
		case in && fenced:
			blocks[len(blocks)-1].lines = append(blocks[len(blocks)-1].lines, line)
		}
	}
	if len(blocks) == 0 {
		t.Fatal(`README.md has no fenced blocks under "## Install"`)
	}
	return blocks
}

// goEnv is one `go env` value of the environment the test runs in.
func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

// writeProxy lays out a GOPROXY=file:// directory serving this directory as
// modulePath@version: @v/list, .info, .mod and the module zip (made by
// golang.org/x/mod/zip, which applies the rules the go command checks).
func writeProxy(t *testing.T, dir, modulePath, version string) {
	t.Helper()
	escaped, err := module.EscapePath(modulePath)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(dir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": goMod} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	zf, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	if err := modzip.CreateFromDir(zf, module.Version{Path: modulePath, Version: version}, "."); err != nil {
		t.Fatalf("module zip: %v", err)
	}
}

func TestREADMEInstallSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from a simulated release (-short skips it)")
	}
	goMod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	modulePath := modfile.ModulePath(goMod)
	version := "v" + recalld.Version
	blocks := installSection(t)
	documented := modulePath + "@" + version
	if !slices.ContainsFunc(blocks, func(b readmeBlock) bool {
		return b.lang == "sh" && slices.Contains(b.lines, "go get "+documented)
	}) {
		t.Fatalf("README.md does not install %s (module path from go.mod, version from recalld.Version)", documented)
	}

	root := t.TempDir() // outside the repository: no go.mod or go.work above it
	proxy, modCache, app := filepath.Join(root, "proxy"), filepath.Join(root, "modcache"), filepath.Join(root, "app")
	for _, d := range []string{proxy, modCache, app} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeProxy(t, proxy, modulePath, version)

	// The dependencies come from the local module cache's download directory
	// (itself a valid file proxy) when it has them, else from the proxy this
	// machine uses. A fresh GOMODCACHE: the shared one would keep serving the
	// first zip ever extracted for this version.
	sharedDownloads := filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download")
	env := append(os.Environ(),
		"GOPROXY="+strings.Join([]string{"file://" + filepath.ToSlash(proxy), "file://" + filepath.ToSlash(sharedDownloads), goEnv(t, "GOPROXY")}, ","),
		"GOMODCACHE="+modCache,
		"GONOSUMDB="+modulePath,
		"GOPRIVATE=", "GONOPROXY=", "GOWORK=off", "GOTOOLCHAIN=local",
		// -trimpath only keeps the fresh GOMODCACHE's path out of the build
		// cache keys, so that later runs reuse the compiled dependencies.
		"GOFLAGS=-trimpath",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(name string, args []string, extraEnv []string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env, cmd.WaitDelay = app, append(slices.Clone(env), extraEnv...), 10*time.Second
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { // the module cache is read-only; go clean knows how to remove it
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})

	ranBinary := false
	for _, b := range blocks {
		switch b.lang {
		case "go":
			if err := os.WriteFile(filepath.Join(app, "main.go"), []byte(strings.Join(b.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		case "sh":
			for _, line := range b.lines {
				line, _, _ = strings.Cut(line, "#")
				fields := strings.Fields(line)
				if len(fields) == 0 {
					continue
				}
				var lineEnv []string
				for len(fields) > 1 && strings.Contains(fields[0], "=") {
					lineEnv, fields = append(lineEnv, fields[0]), fields[1:]
				}
				switch {
				case fields[0] == "go":
					start := time.Now()
					run("go", fields[1:], lineEnv)
					t.Logf("$ %s (%v)", line, time.Since(start).Round(time.Millisecond))
				case strings.HasPrefix(fields[0], "./"):
					if os.Getenv("RECALLD_ADDR") == "" {
						t.Logf("skipping %q: RECALLD_ADDR is unset", line)
						continue
					}
					// The live test server has no API keys.
					out := run(filepath.Join(app, fields[0]), fields[1:], append([]string{"RECALLD_API_KEY="}, lineEnv...))
					if !strings.Contains(out, "InvalidArgument true memories[0].content") {
						t.Errorf("%s printed:\n%s", line, out)
					}
					ranBinary = true
				default:
					t.Fatalf("README step %q: the test runs only go commands and the built program", line)
				}
			}
		default:
			t.Fatalf("README install block of language %q", b.lang)
		}
	}

	appMod, err := os.ReadFile(filepath.Join(app, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", appMod, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(f.Require, func(r *modfile.Require) bool {
		return r.Mod.Path == modulePath && r.Mod.Version == version && !r.Indirect
	}) {
		t.Errorf("go.mod after the README steps does not require %s directly:\n%s", documented, appMod)
	}
	t.Logf("ran the built program against a live server: %v", ranBinary)
}
