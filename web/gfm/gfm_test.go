package gfm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/testutil"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The tests hold the port to upstream: every input is rendered by
// goldmark with its own extension package and with this one, under the
// same options, and the HTML must be byte-identical. Package extension is
// imported by tests only, so it never reaches the binary.

// attrTransformer sets attributes on every node the extensions make, so
// that the comparison also covers the attribute-rendering paths and the
// merge of an existing style with TableCellAlignStyle.
type attrTransformer struct{}

func (attrTransformer) Transform(doc *gast.Document, _ text.Reader, _ parser.Context) {
	_ = gast.Walk(doc, func(n gast.Node, entering bool) (gast.WalkStatus, error) {
		if !entering {
			return gast.WalkContinue, nil
		}
		switch n.Kind() {
		case ast.KindTable, ast.KindTableHeader, ast.KindTableRow, ast.KindStrikethrough:
			n.SetAttributeString("class", []byte("c"))
			n.SetAttributeString("onclick", []byte("x")) // in no filter: dropped
		case ast.KindTableCell:
			n.SetAttributeString("style", []byte("color:red"))
			n.SetAttributeString("scope", []byte("col"))
			if n.(*ast.TableCell).Alignment == ast.AlignRight {
				n.SetAttributeString("align", []byte("justify"))
			}
		}
		return gast.WalkContinue, nil
	})
}

// pair is one configuration built twice: with upstream's extenders and
// with this package's.
type pair struct {
	name           string
	upstream, port goldmark.Markdown
}

func newPair(name string, ropts []renderer.Option, popts []parser.Option,
	upstream, port []goldmark.Extender) pair {
	build := func(ext []goldmark.Extender) goldmark.Markdown {
		return goldmark.New(
			goldmark.WithExtensions(ext...),
			goldmark.WithRendererOptions(ropts...),
			goldmark.WithParserOptions(popts...),
		)
	}
	return pair{name, build(upstream), build(port)}
}

// pairs are the configurations every input is compared under: lazy's own
// (HTML5, safe), XHTML with raw HTML, and each table alignment method.
func pairs() []pair {
	all := func(opts ...TableOption) []goldmark.Extender {
		return []goldmark.Extender{Strikethrough, NewTable(opts...), TaskList}
	}
	up := func(opts ...extension.TableOption) []goldmark.Extender {
		return []goldmark.Extender{extension.Strikethrough, extension.NewTable(opts...), extension.TaskList}
	}
	xhtml := []renderer.Option{html.WithXHTML(), html.WithUnsafe()}
	attrs := []parser.Option{
		parser.WithASTTransformers(util.Prioritized(attrTransformer{}, 1000)),
		parser.WithAttribute(),
	}
	return []pair{
		newPair("lazy", nil, nil,
			[]goldmark.Extender{extension.Strikethrough, extension.Table, extension.TaskList},
			[]goldmark.Extender{Strikethrough, Table, TaskList}),
		newPair("xhtml-unsafe", xhtml, nil, up(), all()),
		newPair("align-attribute", nil, nil,
			up(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
			all(WithTableCellAlignMethod(TableCellAlignAttribute))),
		newPair("align-none-xhtml", xhtml, nil,
			up(extension.WithTableCellAlignMethod(extension.TableCellAlignNone)),
			all(WithTableCellAlignMethod(TableCellAlignNone))),
		newPair("attrs-style", nil, attrs,
			up(extension.WithTableCellAlignMethod(extension.TableCellAlignStyle)),
			all(WithTableCellAlignMethod(TableCellAlignStyle))),
		newPair("attrs-xhtml", xhtml, attrs, up(), all()),
		newPair("table-html-options", nil, nil,
			up(extension.WithTableHTMLOptions(html.WithXHTML())),
			all(WithTableHTMLOptions(html.WithXHTML()))),
	}
}

func render(t testing.TB, m goldmark.Markdown, src []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := m.Convert(src, &b); err != nil {
		t.Fatalf("Convert(%q): %v", src, err)
	}
	return b.String()
}

// same renders src under every configuration with both sets of
// extenders, fails on any difference and returns the port's HTML under
// lazy's configuration.
func same(t testing.TB, ps []pair, name string, src []byte) string {
	t.Helper()
	var lazy string
	for i, p := range ps {
		want := render(t, p.upstream, src)
		got := render(t, p.port, src)
		if got != want {
			t.Errorf("%s [%s]: input %q\nupstream: %q\nport:     %q", name, p.name, src, want, got)
		}
		if i == 0 {
			lazy = got
		}
	}
	return lazy
}

// corpus is GFM written to reach each branch of the three extensions.
// has is a fragment the HTML (lazy's configuration) must contain and
// hasNot one it must not, so the corpus cannot pass by never triggering
// an extension.
var corpus = []struct {
	name, md, has, hasNot string
}{
	{"table-basic", "| a | b |\n|---|---|\n| 1 | 2 |\n", "<td>2</td>", ""},
	{"table-align", "| l | r | c | n |\n|:---|---:|:---:|---|\n| 1 | 2 | 3 | 4 |\n",
		`<td style="text-align:center">3</td>`, ""},
	{"table-align-spaced", "| l | r |\n| :-- | --: |\n| 1 | 2 |\n", `<th style="text-align:right">r</th>`, ""},
	{"table-no-outer-pipes", "a | b\n--|--\n1 | 2\n", "<th>a</th>", ""},
	{"table-single-column", "| a |\n|---|\n| 1 |\n", "<td>1</td>", ""},
	{"table-single-column-no-pipes", "a\n-|\n1\n", "<th>a</th>", ""},
	{"table-escaped-pipe", "| a | b |\n|---|---|\n| x \\| y | z |\n", "<td>x | y</td>", ""},
	{"table-code-with-pipe", "| a | b |\n|---|---|\n| `x \\| y` | z |\n", "<code>x | y</code>", ""},
	{"table-code-with-pipes", "| a |\n|---|\n| `\\|` and `a\\|b\\|c` |\n", "<code>a|b|c</code>", ""},
	{"table-code-pipe-unescaped", "| a | b |\n|---|---|\n| `x | y` | z |\n", "<td>`x</td>", ""},
	{"table-missing-cells", "| a | b | c |\n|---|---|---|\n| 1 |\n", "<td></td>", ""},
	{"table-extra-cells", "| a | b |\n|---|---|\n| 1 | 2 | 3 |\n", "<td>2</td>", "<td>3</td>"},
	{"table-header-only", "| a | b |\n|---|---|\n", "</thead>", "<tbody>"},
	{"table-header-mismatch", "| a | b |\n|---|\n| 1 | 2 |\n", "<p>", "<table>"},
	{"table-after-paragraph", "some text\n| a | b |\n|---|---|\n| 1 | 2 |\n", "<p>some text</p>\n<table>", ""},
	{"table-after-two-lines", "one\ntwo\n| a |\n|---|\n| 1 |\n", "<p>one\ntwo</p>", ""},
	{"table-in-list", "- item\n\n  | a | b |\n  |---|---|\n  | 1 | 2 |\n", "<li>", ""},
	{"table-in-list-tight", "* 0\n-|\n\t0", "<th>0</th>", ""},
	{"table-in-blockquote", "> | a | b |\n> |---|---|\n> | 1 | 2 |\n", "<blockquote>\n<table>", ""},
	{"table-ends-at-blank", "| a |\n|---|\n| 1 |\n\nafter\n", "<p>after</p>", ""},
	{"table-ends-at-block", "| a |\n|---|\n| 1 |\n> quote\n", "<blockquote>", ""},
	{"table-inline-markup", "| *a* | **b** |\n|---|---|\n| [l](http://x) | ~~s~~ |\n", "<del>s</del>", ""},
	{"table-html-in-cell", "| a |\n|---|\n| <b>x</b> |\n", "<td>", ""},
	{"table-empty-cells", "| | |\n|-|-|\n| | |\n", "<th></th>", ""},
	{"table-indented-delim", "| a |\n    |---|\n| 1 |\n", "", "<table>"},
	{"table-delim-three-spaces", "| a |\n   |---|\n| 1 |\n", "<table>", ""},
	{"table-delim-tab", "| a |\n|\t---\t|\n| 1 |\n", "<table>", ""},
	{"table-delim-bad", "| a |\n|-x-|\n| 1 |\n", "", "<table>"},
	{"table-delim-colon-only", "| a |\n|:|\n| 1 |\n", "", "<table>"},
	{"table-delim-double-colon", "| a |\n|::|\n| 1 |\n", "", "<table>"},
	{"table-delim-colon-inside", "| a |\n|-:-|\n| 1 |\n", "", "<table>"},
	{"table-two-delims", "| a |\n|---|\n|---|\n| 1 |\n", "<table>", ""},
	{"table-two-tables", "| a |\n|---|\n| 1 |\n\n| b |\n|:-:|\n| 2 |\n", `<th style="text-align:center">b</th>`, ""},
	{"table-setext-like", "a\n---\n", "<h2>a</h2>", "<table>"},
	{"table-trailing-backslash", "| a |\n|---|\n| x\\ |\n", "<table>", ""},
	{"table-crlf", "| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n", "<td>2</td>", ""},
	{"table-unicode", "| ä | 日本 |\n|---|---|\n| ✓ | ✗ |\n", "<td>✗</td>", ""},
	{"table-heading-then-table", "# h\n| a |\n|---|\n| 1 |\n", "<h1>h</h1>", ""},
	{"table-in-code-block", "```\n| a |\n|---|\n```\n", "<pre><code>", "<table>"},
	{"strike-double", "~~gone~~", "<del>gone</del>", ""},
	{"strike-single", "~gone~", "<del>gone</del>", ""},
	{"strike-triple", "~~~gone~~~", "", "<del>"},
	{"strike-mixed", "~~a~ b", "<p>~<del>a</del> b</p>", ""},
	{"strike-nested-emphasis", "~~**bold** and *em*~~", "<del><strong>bold</strong>", ""},
	{"strike-inside-emphasis", "*a ~~b~~ c*", "<em>a <del>b</del> c</em>", ""},
	{"strike-unmatched", "~~open only", "~~open only", "<del>"},
	{"strike-unmatched-close", "close only~~", "close only~~", "<del>"},
	{"strike-intraword", "a~~b~~c", "a<del>b</del>c", ""},
	{"strike-spaces", "~~ a ~~", "", "<del>"},
	{"strike-escaped", "\\~~a~~", "", ""},
	{"strike-in-code", "`~~a~~`", "<code>~~a~~</code>", "<del>"},
	{"strike-multiline", "~~a\nb~~", "<del>a\nb</del>", ""},
	{"strike-punct", "~~(a)~~.", "<del>(a)</del>.", ""},
	{"strike-many", "~a~ ~~b~~ ~c~~ ~~d~", "<del>a</del>", ""},
	{"strike-link", "~~[x](http://y)~~", `<del><a href="http://y">x</a></del>`, ""},
	{"task-unchecked", "- [ ] todo\n", `<input disabled="" type="checkbox">`, ""},
	{"task-checked", "- [x] done\n", `<input checked="" disabled="" type="checkbox">`, ""},
	{"task-checked-upper", "- [X] done\n", `checked=""`, ""},
	{"task-nested", "- [x] a\n  - [ ] b\n    - [X] c\n- [ ] d\n", "<ul>\n<li><input disabled", ""},
	{"task-ordered", "1. [x] one\n2. [ ] two\n", "<ol>", ""},
	{"task-loose", "- [x] a\n\n- [ ] b\n", "<p><input checked", ""},
	{"task-tab", "- [\t] tab\n", "<input", ""},
	{"task-no-space-after", "- [x]done\n", "<input", ""},
	{"task-only-box", "- [x]\n", "", ""},
	{"task-not-list", "[x] not in a list\n", "[x] not in a list", "<input"},
	{"task-not-first", "- text [x] later\n", "text [x] later", "<input"},
	{"task-second-paragraph", "- a\n\n  [x] b\n", "[x] b", "<input"},
	{"task-bad-char", "- [y] no\n", "[y] no", "<input"},
	{"task-two-spaces", "- [  ] no\n", "[  ] no", "<input"},
	{"task-link-ref", "- [x]\n\n[x]: http://example.com\n", "", ""},
	{"task-link", "- [x](http://y) link\n", "", ""},
	{"task-in-blockquote", "> - [x] quoted\n", "<blockquote>", ""},
	{"task-in-table", "| a |\n|---|\n| - [x] b |\n", "<td>- [x] b</td>", "<input"},
	{"task-strike", "- [x] ~~done~~\n", "<del>done</del>", ""},
	{"all-mixed", "# Plan\n\n- [x] ~~old~~ step\n- [ ] new\n\n| step | state |\n|:-----|------:|\n| `a\\|b` | ~done~ |\n",
		"<table>", ""},
	{"raw-html", "<del>x</del> <script>alert(1)</script>\n", "", "<script>"},
}

func TestCorpusMatchesUpstream(t *testing.T) {
	ps := pairs()
	for _, c := range corpus {
		got := same(t, ps, c.name, []byte(c.md))
		if c.has != "" && !strings.Contains(got, c.has) {
			t.Errorf("%s: %q renders %q, want it to contain %q", c.name, c.md, got, c.has)
		}
		if c.hasNot != "" && strings.Contains(got, c.hasNot) {
			t.Errorf("%s: %q renders %q, want no %q", c.name, c.md, got, c.hasNot)
		}
	}
}

// moduleDir is where goldmark's module, at the version in go.mod, lies.
func moduleDir(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to locate goldmark's test files")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/yuin/goldmark").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -m github.com/yuin/goldmark: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -m github.com/yuin/goldmark: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("go list -m github.com/yuin/goldmark: no directory")
	}
	return dir
}

// caseFile reads the inputs of a goldmark test case file (the format
// testutil.DoTestCaseFile reads): a case's markdown lies between its
// first two attribute separators.
func caseFile(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const (
		attr  = "//- - - - - - - - -//"
		cases = "//= = = = = = = = = = = = = = = = = = = = = = = =//"
	)
	var out []string
	for _, c := range strings.Split(string(b), cases+"\n") {
		parts := strings.Split(c, attr+"\n")
		if len(parts) < 3 {
			continue
		}
		out = append(out, strings.TrimSuffix(parts[1], "\n"))
	}
	return out
}

// TestUpstreamCaseFiles runs goldmark's own test files for the three
// extensions against the port, with the options upstream runs them with,
// then compares every input with upstream under every configuration.
func TestUpstreamCaseFiles(t *testing.T) {
	dir := filepath.Join(moduleDir(t), "extension", "_test")
	unsafe := goldmark.WithRendererOptions(html.WithUnsafe())
	files := []struct {
		name string
		md   goldmark.Markdown
		min  int
	}{
		{"strikethrough.txt", goldmark.New(unsafe, goldmark.WithExtensions(Strikethrough)), 5},
		{"table.txt", goldmark.New(goldmark.WithRendererOptions(html.WithUnsafe(), html.WithXHTML()),
			goldmark.WithExtensions(Table)), 10},
		{"tasklist.txt", goldmark.New(unsafe, goldmark.WithExtensions(TaskList)), 3},
	}
	ps := pairs()
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		testutil.DoTestCaseFile(f.md, path, t)
		inputs := caseFile(t, path)
		if len(inputs) < f.min {
			t.Fatalf("%s: %d cases, want at least %d: has the format changed?", f.name, len(inputs), f.min)
		}
		for i, in := range inputs {
			same(t, ps, fmt.Sprintf("%s case %d", f.name, i+1), []byte(in))
		}
	}
}

// TestUpstreamOptionCases are the table cases of upstream's table_test.go
// that set options, with their expected HTML.
func TestUpstreamOptionCases(t *testing.T) {
	const src = "\n| abc | defghi |\n:-: | -----------:\nbar | baz\n"
	table := func(cell func(tag, align, text string) string) string {
		return "<table>\n<thead>\n<tr>\n" + cell("th", "center", "abc") + cell("th", "right", "defghi") +
			"</tr>\n</thead>\n<tbody>\n<tr>\n" + cell("td", "center", "bar") + cell("td", "right", "baz") +
			"</tr>\n</tbody>\n</table>\n"
	}
	attr := table(func(tag, align, text string) string {
		return fmt.Sprintf("<%s align=%q>%s</%s>\n", tag, align, text, tag)
	})
	style := table(func(tag, align, text string) string {
		return fmt.Sprintf("<%s style=\"text-align:%s\">%s</%s>\n", tag, align, text, tag)
	})
	none := table(func(tag, _, text string) string {
		return fmt.Sprintf("<%s>%s</%s>\n", tag, text, tag)
	})
	xhtml := goldmark.WithRendererOptions(html.WithXHTML(), html.WithUnsafe())
	unsafe := goldmark.WithRendererOptions(html.WithUnsafe())
	for _, c := range []struct {
		name   string
		opts   []goldmark.Option
		method TableCellAlignMethod
		want   string
	}{
		{"default-xhtml", []goldmark.Option{xhtml}, TableCellAlignDefault, attr},
		{"default-html5", []goldmark.Option{unsafe}, TableCellAlignDefault, style},
		{"attribute-xhtml", []goldmark.Option{xhtml}, TableCellAlignAttribute, attr},
		{"attribute-html5", []goldmark.Option{unsafe}, TableCellAlignAttribute, attr},
		{"style-xhtml", []goldmark.Option{xhtml}, TableCellAlignStyle, style},
		{"style-html5", []goldmark.Option{unsafe}, TableCellAlignStyle, style},
		{"none-xhtml", []goldmark.Option{xhtml}, TableCellAlignNone, none},
	} {
		opts := append([]goldmark.Option{goldmark.WithExtensions(NewTable(WithTableCellAlignMethod(c.method)))}, c.opts...)
		if got := render(t, goldmark.New(opts...), []byte(src)); got != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// TestCommonMarkAndExtraMatchUpstream compares the port with upstream on
// goldmark's CommonMark spec examples and its extra cases: the
// extensions must leave plain CommonMark as upstream's leave it.
func TestCommonMarkAndExtraMatchUpstream(t *testing.T) {
	dir := moduleDir(t)
	b, err := os.ReadFile(filepath.Join(dir, "_test", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec []struct {
		Markdown string `json:"markdown"`
		Example  int    `json:"example"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	extra := caseFile(t, filepath.Join(dir, "_test", "extra.txt"))
	if len(spec) < 600 || len(extra) < 50 {
		t.Fatalf("%d spec examples and %d extra cases: too few, has the format changed?", len(spec), len(extra))
	}
	ps := pairs()
	for _, c := range spec {
		same(t, ps, fmt.Sprintf("spec example %d", c.Example), []byte(c.Markdown))
	}
	for i, in := range extra {
		same(t, ps, fmt.Sprintf("extra.txt case %d", i+1), []byte(in))
	}
}

// TestMatchersAgreeWithRegexps checks the functions that replace
// upstream's regexps against those regexps on every string up to a
// length over an alphabet of the bytes that matter: the RE2 \s bytes,
// \v (which \s leaves out), and the characters of the patterns.
func TestMatchersAgreeWithRegexps(t *testing.T) {
	delims := []struct {
		re *regexp.Regexp
		a  ast.Alignment
	}{
		{regexp.MustCompile(`^\s*\:\-+\s*$`), ast.AlignLeft},
		{regexp.MustCompile(`^\s*\-+\:\s*$`), ast.AlignRight},
		{regexp.MustCompile(`^\s*\:\-+\:\s*$`), ast.AlignCenter},
		{regexp.MustCompile(`^\s*\-+\s*$`), ast.AlignNone},
	}
	n := 0
	each([]byte(" \t\n\f\r\v:-a"), 6, func(s []byte) {
		wantA, wantOK := ast.AlignNone, false
		for _, d := range delims {
			if d.re.Match(s) {
				wantA, wantOK = d.a, true
				break
			}
		}
		gotA, gotOK := tableDelimAlignment(s)
		if gotA != wantA || gotOK != wantOK {
			t.Fatalf("tableDelimAlignment(%q) = %v, %v; regexps say %v, %v", s, gotA, gotOK, wantA, wantOK)
		}
		if wantOK {
			n++
		}
	})
	if n < 1000 {
		t.Fatalf("only %d delimiters matched: alphabet too narrow", n)
	}

	task := regexp.MustCompile(`^\[([\sxX])\]\s*`)
	n = 0
	each([]byte("[] \t\n\f\r\vxXa"), 5, func(s []byte) {
		m := task.FindSubmatchIndex(s)
		value, end, ok := matchTaskList(s)
		if ok != (m != nil) {
			t.Fatalf("matchTaskList(%q) ok = %v; regexp says %v", s, ok, m != nil)
		}
		if m == nil {
			return
		}
		n++
		if value != s[m[2]] || end != m[1] {
			t.Fatalf("matchTaskList(%q) = %q, %d; regexp says %q, %d", s, value, end, s[m[2]], m[1])
		}
	})
	if n < 500 {
		t.Fatalf("only %d task boxes matched: alphabet too narrow", n)
	}
}

// each calls f with every string over alphabet of length 0 to max.
func each(alphabet []byte, max int, f func([]byte)) {
	var rec func(s []byte)
	rec = func(s []byte) {
		f(s)
		if len(s) == max {
			return
		}
		for _, c := range alphabet {
			rec(append(s, c))
		}
	}
	rec(make([]byte, 0, max))
}

// FuzzPortMatchesUpstream compares the port with upstream on random
// input under every configuration.
func FuzzPortMatchesUpstream(f *testing.F) {
	for _, c := range corpus {
		f.Add([]byte(c.md))
	}
	f.Add([]byte("|a|b|\n|:-|-:|\n|`\\|`|~~x~~|\n- [x] ~y~\n"))
	ps := pairs()
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 8<<10 {
			return
		}
		same(t, ps, "fuzz", src)
	})
}
