package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pluralParens is a count that dodges its noun's number: "task(s)",
// "file(s)". http(s) is a scheme, not a count.
var pluralParens = regexp.MustCompile(`\b[a-z]+\(s\)`)

// TestMessagesWordTheirCounts: no string lazy prints (a Go literal
// outside the tests and test fakes, a page template) says "task(s)";
// words.Count says "1 task" and "3 tasks".
func TestMessagesWordTheirCounts(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "testfakes", "scripts", "e2e", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		check := func(where, text string) {
			for _, m := range pluralParens.FindAllString(text, -1) {
				if m != "http(s)" {
					t.Errorf("%s: %q says %s; word the count (words.Count)", where, text, m)
				}
			}
		}
		switch {
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					check(fset.Position(lit.Pos()).String(), lit.Value)
				}
				return true
			})
		case strings.HasSuffix(path, ".html"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			check(path, string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
