package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/jsondoc"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/runner"
	"github.com/lazyorch/lazy/task"
)

// readDocs parses docs/json.md.
func readDocs(t *testing.T) map[string]jsondoc.Spec {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	docs, err := jsondoc.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// listedTask is one element of lazy list --json as writeJSONList splices
// it: the cached summary, a working task's live substate and a task's
// overlaps.
type listedTask struct {
	task.Summary
	Live string `json:"live_substate,omitempty"`
	review.TaskOverlaps
}

// TestJSONDocCoversTheGoTypes holds docs/json.md to the Go types that
// print them, field by field, rare fields included (the e2e test holds
// every command's printed output to it): what each can print is what
// the document says.
func TestJSONDocCoversTheGoTypes(t *testing.T) {
	docs := readDocs(t)
	for cmd, typ := range map[string]reflect.Type{
		"lazy show":              reflect.TypeFor[showJSON](),
		"lazy list":              reflect.TypeFor[[]listedTask](),
		"lazy blocked":           reflect.TypeFor[[]listedTask](),
		"lazy active":            reflect.TypeFor[[]listedTask](),
		"lazy push":              reflect.TypeFor[gitstore.SyncReport](),
		"lazy diff":              reflect.TypeFor[diffJSON](),
		"lazy status":            reflect.TypeFor[statusView](),
		"lazy cost":              reflect.TypeFor[cost.Report](),
		"lazy pool":              reflect.TypeFor[poolView](),
		"lazy pool release TASK": reflect.TypeFor[runner.ClaimRelease](),
		"lazy config":            reflect.TypeFor[[]configSetting](),
		"lazy config KEY VALUE":  reflect.TypeFor[configChange](),
		"lazy init":              reflect.TypeFor[initResult](),
		"lazy version":           reflect.TypeFor[buildInfo](),
		"lazy comment":           reflect.TypeFor[task.Comment](),
		"lazy ask":               reflect.TypeFor[task.Turn](),
		"lazy wait":              reflect.TypeFor[[]task.Summary](),
		"lazy create":            reflect.TypeFor[task.Summary](),
		"lazy accept --dry-run":  reflect.TypeFor[landing.AcceptPreview](),
		"lazy queue":             reflect.TypeFor[[]queue.View](),
		"lazy stash":             reflect.TypeFor[stashView](),
	} {
		if os.Getenv("LAZY_JSONDOC_DUMP") != "" {
			goes := jsondoc.GoPaths(typ)
			var paths []string
			for p := range goes {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			var b strings.Builder
			fmt.Fprintf(&b, "## %s --json\n", cmd)
			for _, p := range paths {
				var ks []string
				for k := range goes[p].Kinds {
					ks = append(ks, k)
				}
				sort.Strings(ks)
				fmt.Fprintf(&b, "| `%s` | %s%s |\n", p, strings.Join(ks, " or "), map[bool]string{true: ", optional"}[goes[p].Optional])
			}
			t.Log(b.String())
		}
		for _, p := range jsondoc.CheckGo(cmd, docs[cmd], typ) {
			t.Error(p)
		}
	}
}

// TestEveryJSONFlagIsDocumented: each command that takes --json has its
// section in docs/json.md ("## lazy CMD ... --json").
func TestEveryJSONFlagIsDocumented(t *testing.T) {
	docs := readDocs(t)
	var g Globals
	parser, err := newParser(&g, commands, build{version: "dev"}, io.Discard, io.Discard, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			path := "lazy " + commandPath(c)
			for _, f := range c.Flags {
				if f.Name != "json" {
					continue
				}
				documented := false
				for key := range docs {
					if key == path || strings.HasPrefix(key, path+" ") {
						documented = true
					}
				}
				if !documented {
					t.Errorf("%s takes --json, and docs/json.md has no section for it (## %s --json)", path, path)
				}
			}
			walk(c)
		}
	}
	walk(parser.Model.Node)
}
