package configkeys

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README's configuration table from the registry")

const root = "../.."

// keyLit is a string literal that is a whole lazy.* key.
var keyLit = regexp.MustCompile(`^lazy\.[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*$`)

// Every lazy.* key a string literal of the code (tests aside) names is
// in the registry, so lazy config and the README cannot miss one.
func TestEveryKeyTheCodeReadsIsRegistered(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && keyLit.MatchString(s) {
				seen[s] = true
				if _, ok := Lookup(s); !ok {
					t.Errorf("%s reads git config %s, which internal/configkeys does not list: add it (name, kind, default, example, help)", path, s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 30 {
		t.Fatalf("found only %d keys in the code: is the walk looking in the right place?", len(seen))
	}
	for _, k := range keys {
		if !seen[k.Name] {
			t.Errorf("the registry lists %s, which no code reads: remove it", k.Name)
		}
	}
}

// The README's configuration table is the registry's.
func TestREADMETableIsTheRegistry(t *testing.T) {
	p := filepath.Join(root, "README.md")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const heading = "## Configuration (git config)\n\n"
	i := strings.Index(readme, heading)
	if i < 0 {
		t.Fatalf("README.md has no %q section", strings.TrimSpace(heading))
	}
	start := strings.Index(readme[i:], "\n| key |")
	if start < 0 {
		t.Fatal("the README's configuration section has no table")
	}
	start += i + 1
	end := strings.Index(readme[start:], "\n\n")
	if end < 0 {
		t.Fatal("the README's configuration table has no end")
	}
	end += start + 1
	if got, want := readme[start:end], Markdown(); got != want {
		if *update {
			if err := os.WriteFile(p, []byte(readme[:start]+want+readme[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the README's configuration table is not the registry's; run go test ./internal/configkeys -update\nREADME:\n%s\nregistry:\n%s", got, want)
	}
}

func TestKeysAreWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, k := range keys {
		if names[k.Name] {
			t.Errorf("%s is listed twice", k.Name)
		}
		names[k.Name] = true
		if !keyLit.MatchString(k.Name) || k.Help == "" || k.Default == "" || k.Example == "" {
			t.Errorf("%+v: a name, help, default and example are required", k)
		}
		if k.Kind == Enum && len(k.Values) == 0 {
			t.Errorf("%s is an enum without values", k.Name)
		}
		// The example, unquoted as a shell would, passes the key's own check.
		if err := k.Check(strings.Trim(k.Example, "'")); err != nil {
			t.Errorf("%s's example fails its check: %v", k.Name, err)
		}
	}
}

func TestInvalidNamesTheKeyTheValueAndTheFix(t *testing.T) {
	k, _ := Lookup("lazy.gate.timeout")
	err := k.Check("banana")
	want := `git config lazy.gate.timeout = "banana" is not a duration above 0; fix it with git config lazy.gate.timeout 10m (or git config --unset lazy.gate.timeout for the default)`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	if k, _ := Lookup("LAZY.GATE.TIMEOUT"); k.Name != "lazy.gate.timeout" {
		t.Fatal("Lookup does not fold case as git does")
	}
	if f := Fix("lazy.gate"); f != "git config --add lazy.gate 'go test ./...'" {
		t.Fatalf("Fix of a list: %q", f)
	}
	for _, ok := range []string{"on", "OFF"} {
		if k, _ := Lookup("lazy.sandbox"); k.Check(ok) != nil {
			t.Errorf("lazy.sandbox %s refused", ok)
		}
	}
}
