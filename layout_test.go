package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's Layout section is the map of the packages, in layers from
// top to bottom; these tests hold the code to it.

const modulePath = "github.com/lazyorch/lazy"

// layer is one group of the README's map.
type layer struct {
	name     string
	entries  []string // package paths relative to the module ("." is the root); "x/..." covers x and below
	isolated bool     // its packages never import one another
	tools    bool     // tests and tools: may import anything, and nothing else imports them
}

var (
	layerHeading = regexp.MustCompile(`^\*\*(.+)\*\*\s*$`)
	mapLine      = regexp.MustCompile(`^ {4}(\S+)(\s|$)`)
)

// readLayout parses the Layout section of README.md.
func readLayout(t *testing.T) []layer {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no \"## Layout\" section")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var layers []layer
	sc := bufio.NewScanner(strings.NewReader(section))
	for sc.Scan() {
		line := sc.Text()
		if m := layerHeading.FindStringSubmatch(line); m != nil {
			layers = append(layers, layer{
				name:     m[1],
				isolated: strings.Contains(m[1], "none imports another"),
				tools:    strings.HasPrefix(m[1], "Tests and tools"),
			})
			continue
		}
		if m := mapLine.FindStringSubmatch(line); m != nil {
			if len(layers) == 0 {
				t.Fatalf("README Layout: %q comes before any **layer** heading", line)
			}
			l := &layers[len(layers)-1]
			l.entries = append(l.entries, strings.TrimSuffix(m[1], "/"))
		}
	}
	if len(layers) == 0 {
		t.Fatal("README Layout names no layers")
	}
	return layers
}

// goList returns every package of the module with its direct non-test
// imports inside the module, by relative path.
func goList(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		var own []string
		for _, imp := range f[1:] {
			if r, ok := relPath(imp); ok {
				own = append(own, r)
			}
		}
		r, _ := relPath(f[0])
		pkgs[r] = own
	}
	return pkgs
}

func relPath(importPath string) (string, bool) {
	if importPath == modulePath {
		return ".", true
	}
	r, ok := strings.CutPrefix(importPath, modulePath+"/")
	return r, ok
}

func covers(entry, pkg string) bool {
	if base, ok := strings.CutSuffix(entry, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return entry == pkg
}

// layerOf maps each package to the index of its layer, and reports
// packages the map misses and entries that name no package.
func layerOf(layers []layer, pkgs map[string][]string) (idx map[string]int, problems []string) {
	idx = map[string]int{}
	for li, l := range layers {
		for _, e := range l.entries {
			matched := false
			for p := range pkgs {
				if !covers(e, p) {
					continue
				}
				matched = true
				if prev, dup := idx[p]; dup && prev != li {
					problems = append(problems, fmt.Sprintf("%s is in two layers: %q and %q", p, layers[prev].name, l.name))
				}
				idx[p] = li
			}
			if !matched {
				problems = append(problems, fmt.Sprintf("the README Layout names %s, which is not a package (go list ./...): remove or rename its line", e))
			}
		}
	}
	for p := range pkgs {
		if _, ok := idx[p]; !ok {
			problems = append(problems, fmt.Sprintf("package %s is missing from the README Layout: add a line for it under its layer", p))
		}
	}
	return idx, problems
}

// layering lists the imports that reach up a layer, across an isolated
// layer, or into the tests and tools from outside them.
func layering(layers []layer, idx map[string]int, pkgs map[string][]string) []string {
	var bad []string
	for p, imps := range pkgs {
		from, ok := idx[p]
		if !ok || layers[from].tools {
			continue
		}
		for _, q := range imps {
			to, ok := idx[q]
			switch {
			case !ok:
			case layers[to].tools:
				bad = append(bad, fmt.Sprintf("%s imports %s, a test or tool package", p, q))
			case to < from:
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s from the layer above it (%s)", p, layers[from].name, q, layers[to].name))
			case to == from && layers[from].isolated && p != q:
				bad = append(bad, fmt.Sprintf("%s imports %s, another package of %s", p, q, layers[from].name))
			}
		}
	}
	slices.Sort(bad)
	return bad
}

func TestReadmeLayoutMatchesGoList(t *testing.T) {
	_, problems := layerOf(readLayout(t), goList(t))
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

func TestImportsRunDownTheLayers(t *testing.T) {
	layers, pkgs := readLayout(t), goList(t)
	idx, _ := layerOf(layers, pkgs)
	for _, b := range layering(layers, idx, pkgs) {
		t.Error(b)
	}
}

// TestPinnedLayering holds the arrows that must run one way whatever the
// map says (CLI/MCP/web -> ops -> gitstore -> machine), transitively: a
// reordered README cannot excuse them.
func TestPinnedLayering(t *testing.T) {
	pkgs := goList(t)
	forbidden := map[string][]string{
		"machine":      {"gitstore", "wire", "cli", "web", "mcp", "daemon"},
		"gitstore":     {"wire", "cli", "web", "mcp", "daemon"},
		"wire":         {"cli", "web", "mcp", "daemon"},
		"session":      {"gitstore", "wire", "lifecycle", "review", "submission", "conversation", "attempts", "handoff", "reconcile", "cli", "web", "mcp", "daemon"},
		"lifecycle":    {"gitstore", "wire", "submission", "attempts", "reconcile", "cli", "web", "mcp", "daemon"},
		"spending":     {"gitstore", "wire", "lifecycle", "reconcile", "cli", "web", "mcp", "daemon"},
		"review":       {"gitstore", "wire", "lifecycle", "reconcile", "cli", "web", "mcp", "daemon"},
		"conversation": {"gitstore", "wire", "lifecycle", "review", "submission", "reconcile", "cli", "web", "mcp", "daemon"},
		"submission":   {"gitstore", "wire", "reconcile", "cli", "web", "mcp", "daemon"},
		"landing":      {"gitstore", "wire", "reconcile", "cli", "web", "mcp", "daemon"},
		"attempts":     {"gitstore", "wire", "submission", "conversation", "reconcile", "cli", "web", "mcp", "daemon"},
		"queue":        {"gitstore", "wire", "lifecycle", "review", "submission", "conversation", "spending", "attempts", "reconcile", "cli", "web", "mcp", "daemon"},
		"runner":       {"gitstore", "wire", "reconcile", "cli", "web", "mcp", "daemon"},
		"handoff":      {"gitstore", "wire", "lifecycle", "attempts", "reconcile", "cli", "web", "mcp", "daemon"},
		"configcheck":  {"wire", "reconcile", "cli", "web", "mcp", "daemon"},
		"render":       {"gitstore", "wire", "reconcile", "cli", "web", "mcp", "daemon", "tui"},
		"tui":          {"gitstore", "wire", "reconcile", "cli", "web", "mcp", "daemon"},
		"demo":         {"gitstore", "wire", "reconcile", "cli", "web", "mcp", "daemon"},
		"web":          {"daemon", "mcp", "cli"},
		"mcp":          {"daemon", "web", "cli"},
		"daemon":       {"web", "mcp", "cli"},
	}
	for p, bans := range forbidden {
		deps := closure(pkgs, p)
		for _, q := range bans {
			if deps[q] {
				t.Errorf("%s depends on %s: the arrow runs the other way; move the shared concept below both", p, q)
			}
		}
	}
	// Imports of its own, for a package that consumes what it needs of
	// the banned one through interfaces it declares, whose adapters sit
	// below it: the reconciler reads git and the store's files through
	// adapters in ops, and calls the capabilities' steps.
	direct := map[string][]string{
		"reconcile": {"gitstore", "worktree"},
		// The surfaces read the store through task's port and the few
		// reads they declare beside it; they still reach gitstore
		// through ops.
		"web": {"gitstore"},
		"mcp": {"gitstore"},
	}
	for p, bans := range direct {
		for _, q := range bans {
			if slices.Contains(pkgs[p], q) {
				t.Errorf("%s imports %s: declare what it consumes as an interface and put the adapter below it", p, q)
			}
		}
	}
}

// closure is every package p depends on within the module.
func closure(pkgs map[string][]string, p string) map[string]bool {
	seen := map[string]bool{}
	todo := slices.Clone(pkgs[p])
	for len(todo) > 0 {
		q := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if !seen[q] {
			seen[q] = true
			todo = append(todo, pkgs[q]...)
		}
	}
	return seen
}

// TestLayoutCheckerCatches feeds the checker a small world with each
// kind of fault, so a checker that found nothing would fail here.
func TestLayoutCheckerCatches(t *testing.T) {
	layers := []layer{
		{name: "Top", entries: []string{"cli"}},
		{name: "Surfaces (none imports another)", entries: []string{"web", "daemon"}, isolated: true},
		{name: "Low", entries: []string{"machine", "gone", "lib/..."}},
		{name: "Tests and tools", entries: []string{"fake"}, tools: true},
	}
	pkgs := map[string][]string{
		"cli":     {"web", "daemon", "machine"},
		"web":     {"daemon"},
		"daemon":  {"machine"},
		"machine": {"cli", "fake"},
		"lib/a":   nil,
		"extra":   nil,
		"fake":    {"cli"},
	}
	idx, problems := layerOf(layers, pkgs)
	slices.Sort(problems)
	wantProblems := []string{
		"package extra is missing from the README Layout: add a line for it under its layer",
		"the README Layout names gone, which is not a package (go list ./...): remove or rename its line",
	}
	if !slices.Equal(problems, wantProblems) {
		t.Errorf("map problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(wantProblems, "\n"))
	}
	bad := layering(layers, idx, pkgs)
	wantBad := []string{
		"machine (Low) imports cli from the layer above it (Top)",
		"machine imports fake, a test or tool package",
		"web imports daemon, another package of Surfaces (none imports another)",
	}
	if !slices.Equal(bad, wantBad) {
		t.Errorf("layering:\n%s\nwant:\n%s", strings.Join(bad, "\n"), strings.Join(wantBad, "\n"))
	}
	if deps := closure(map[string][]string{"a": {"b"}, "b": {"c"}}, "a"); !deps["c"] {
		t.Errorf("closure misses a transitive dependency: %v", deps)
	}
}

// updateCalls names, by position, the calls of a method or function
// named Update (x.Update(...)) in src: a store's compare-and-swap write.
func updateCalls(t *testing.T, fset *token.FileSet, name string, src any) []string {
	t.Helper()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Update" {
				calls = append(calls, fset.Position(c.Pos()).String())
			}
		}
		return true
	})
	return calls
}

// TestReconcilerWritesNothing holds issue 45's rule that the reconciler
// writes no record itself: it judges what it sees, and the capabilities'
// steps (lifecycle's system steps, landing's) take the task lock and
// write. So package reconcile's code calls no Update on a store.
func TestReconcilerWritesNothing(t *testing.T) {
	fset := token.NewFileSet()
	if got := updateCalls(t, fset, "catch.go", "package p\nfunc f() { _, _, _ = r.store().Update(ctx, id, nil) }\n"); len(got) != 1 {
		t.Fatalf("the check misses a store's Update: %v", got)
	}
	files, err := filepath.Glob(filepath.Join("reconcile", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("reconcile's files: %v %v", files, err)
	}
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		for _, at := range updateCalls(t, fset, p, nil) {
			t.Errorf("%s: the reconciler writes a record itself (Update); ask the capability's step", at)
		}
	}
}
