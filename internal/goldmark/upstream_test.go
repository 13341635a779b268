package goldmark_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/goldmark"
	"github.com/lazyorch/lazy/internal/goldmark/extension"
	"github.com/lazyorch/lazy/internal/goldmark/parser"
	"github.com/lazyorch/lazy/internal/goldmark/renderer"
	"github.com/lazyorch/lazy/internal/goldmark/renderer/html"
	ugoldmark "github.com/yuin/goldmark"
	uextension "github.com/yuin/goldmark/extension"
	uparser "github.com/yuin/goldmark/parser"
	urenderer "github.com/yuin/goldmark/renderer"
	uhtml "github.com/yuin/goldmark/renderer/html"
)

// The tests below hold the fork to upstream where the rewrite touched it:
// every input, Markdown and raw HTML that reaches the deferred regexps,
// is rendered by upstream goldmark and by the fork under the same
// options, and the HTML must be byte-identical. Upstream is imported by
// tests only, so it never reaches the binary.

// config is one set of options, built once with each goldmark.
type config struct {
	name       string
	xhtml      bool // XHTML output with raw HTML let through (WithUnsafe)
	attributes bool // the {#id .class} attribute syntax
	align      int  // table cell alignment: 0 default, then attribute, style, none
	tableXHTML bool // the table extension's own WithTableHTMLOptions(WithXHTML)
}

// configs are lazy's own (HTML5, safe) first, then XHTML with raw HTML,
// and each table alignment method.
var configs = []config{
	{name: "lazy"},
	{name: "xhtml-unsafe", xhtml: true},
	{name: "align-attribute", align: 1},
	{name: "align-style-attributes", align: 2, attributes: true},
	{name: "align-none-xhtml", align: 3, xhtml: true},
	{name: "table-html-options", tableXHTML: true},
}

func (c config) fork() goldmark.Markdown {
	var ropts []renderer.Option
	if c.xhtml {
		ropts = append(ropts, html.WithXHTML(), html.WithUnsafe())
	}
	var popts []parser.Option
	if c.attributes {
		popts = append(popts, parser.WithAttribute())
	}
	var topts []extension.TableOption
	if c.align > 0 {
		m := []extension.TableCellAlignMethod{extension.TableCellAlignAttribute,
			extension.TableCellAlignStyle, extension.TableCellAlignNone}[c.align-1]
		topts = append(topts, extension.WithTableCellAlignMethod(m))
	}
	if c.tableXHTML {
		topts = append(topts, extension.WithTableHTMLOptions(html.WithXHTML()))
	}
	var table goldmark.Extender = extension.Table
	if topts != nil {
		table = extension.NewTable(topts...)
	}
	return goldmark.New(
		goldmark.WithExtensions(extension.Strikethrough, table, extension.TaskList),
		goldmark.WithRendererOptions(ropts...),
		goldmark.WithParserOptions(popts...),
	)
}

func (c config) upstream() ugoldmark.Markdown {
	var ropts []urenderer.Option
	if c.xhtml {
		ropts = append(ropts, uhtml.WithXHTML(), uhtml.WithUnsafe())
	}
	var popts []uparser.Option
	if c.attributes {
		popts = append(popts, uparser.WithAttribute())
	}
	var topts []uextension.TableOption
	if c.align > 0 {
		m := []uextension.TableCellAlignMethod{uextension.TableCellAlignAttribute,
			uextension.TableCellAlignStyle, uextension.TableCellAlignNone}[c.align-1]
		topts = append(topts, uextension.WithTableCellAlignMethod(m))
	}
	if c.tableXHTML {
		topts = append(topts, uextension.WithTableHTMLOptions(uhtml.WithXHTML()))
	}
	var table ugoldmark.Extender = uextension.Table
	if topts != nil {
		table = uextension.NewTable(topts...)
	}
	return ugoldmark.New(
		ugoldmark.WithExtensions(uextension.Strikethrough, table, uextension.TaskList),
		ugoldmark.WithRendererOptions(ropts...),
		ugoldmark.WithParserOptions(popts...),
	)
}

// pair is one config built with each.
type pair struct {
	name           string
	upstream, fork func([]byte) (string, error)
}

func pairs() []pair {
	var ps []pair
	for _, c := range configs {
		u, f := c.upstream(), c.fork()
		ps = append(ps, pair{
			name: c.name,
			upstream: func(src []byte) (string, error) {
				var b bytes.Buffer
				err := u.Convert(src, &b)
				return b.String(), err
			},
			fork: func(src []byte) (string, error) {
				var b bytes.Buffer
				err := f.Convert(src, &b)
				return b.String(), err
			},
		})
	}
	return ps
}

// same renders src under every config with both goldmarks, fails on any
// difference and returns the fork's HTML by config name.
func same(t testing.TB, ps []pair, name string, src []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range ps {
		want, werr := p.upstream(src)
		got, gerr := p.fork(src)
		if got != want || (werr == nil) != (gerr == nil) {
			t.Errorf("%s [%s]: input %q\nupstream: %q (%v)\nfork:     %q (%v)", name, p.name, src, want, werr, got, gerr)
		}
		out[p.name] = got
	}
	return out
}

// corpus reaches each deferred regexp (raw HTML inline and in each of
// the seven HTML block kinds, e-mail autolinks, table delimiters, task
// boxes) and the rest of the three extensions. has is a fragment the
// HTML must contain and hasNot one it must not, so the corpus cannot pass
// by never triggering what it names: under lazy's config, or for raw
// HTML under xhtml-unsafe, which lets it through.
var corpus = []struct {
	name, md, has, hasNot string
}{
	{"html-inline-open-close", "a <b class=\"x\" id='y' data-z=w>bold</b> c\n", "<b class=\"x\" id='y' data-z=w>bold</b>", ""},
	{"html-inline-selfclose", "a <br/> b <img src=x />\n", "<br/>", ""},
	{"html-inline-multiline", "a <span\ntitle=\"t\">x</span>\n", "<span\ntitle=\"t\">", ""},
	{"html-inline-bad", "a <1b> <b =x> </b x>\n", "&lt;1b&gt;", "<1b>"},
	{"html-block-1-script", "<script>\nalert(1)\n</script>\nafter\n", "<script>\nalert(1)\n</script>\n<p>after</p>", ""},
	{"html-block-1-pre-same-line", "<pre>x</pre>\n\npara\n", "<pre>x</pre>\n<p>para</p>", ""},
	{"html-block-1-textarea-upper", "<TEXTAREA>\nx\n</TEXTAREA>\n", "<TEXTAREA>\nx\n</TEXTAREA>\n", "<p>"},
	{"html-block-2-comment", "<!-- note\nmore -->\npara\n", "<!-- note\nmore -->\n<p>para</p>", ""},
	{"html-block-3-pi", "<?php echo 1; ?>\n", "<?php echo 1; ?>\n", "<p>"},
	{"html-block-4-doctype", "<!DOCTYPE html>\n", "<!DOCTYPE html>\n", "<p>"},
	{"html-block-5-cdata", "<![CDATA[\nx\n]]>\n", "<![CDATA[\nx\n]]>\n", "<p>"},
	{"html-block-6-div", "<div class=\"a\">\n*x*\n</div>\n", "<div class=\"a\">\n*x*\n</div>\n", "<em>"},
	{"html-block-6-close", "</table>\n", "</table>\n", "<p>"},
	{"html-block-7-custom", "<custom-tag a=\"1\">\n\n", "<custom-tag a=\"1\">\n", "<p>"},
	{"html-block-7-not-after-para", "para\n<custom-tag>\n", "<p>para\n<custom-tag></p>", ""},
	{"html-block-indented", "   <div>\n    <div>\n", "   <div>\n    <div>\n", "<pre>"},
	{"email-autolink", "<someone@example.com> <a@b-c.d.e> <x@-bad.com>\n", "mailto:someone@example.com", ""},
	{"email-autolink-long-label", "<x@" + strings.Repeat("a", 63) + ".com> <y@" + strings.Repeat("b", 64) + ".com>\n", "mailto:x@", ""},
	{"url-autolink", "<http://example.com/a?b> <javascript:alert(1)>\n", `href="http://example.com/a?b"`, ""},
	{"table-basic", "| a | b |\n|---|---|\n| 1 | 2 |\n", "<td>2</td>", ""},
	{"table-align", "| l | r | c | n |\n|:---|---:|:---:|---|\n| 1 | 2 | 3 | 4 |\n",
		`<td style="text-align:center">3</td>`, ""},
	{"table-no-outer-pipes", "a | b\n--|--\n1 | 2\n", "<th>a</th>", ""},
	{"table-escaped-pipe", "| a | b |\n|---|---|\n| x \\| y | `z \\| w` |\n", "<td>x | y</td>", ""},
	{"table-header-mismatch", "| a | b |\n|---|\n| 1 | 2 |\n", "<p>", "<table>"},
	{"table-delim-bad", "| a |\n|-x-|\n| 1 |\n", "", "<table>"},
	{"table-delim-spaces-tabs", "| a | b |\n|\t:-- | --:\t|\n| 1 | 2 |\n", `<th style="text-align:right">b</th>`, ""},
	{"table-in-list", "- item\n\n  | a | b |\n  |---|---|\n  | 1 | 2 |\n", "<li>", ""},
	{"table-html-in-cell", "| a |\n|---|\n| <b>x</b> |\n", "<td><b>x</b></td>", ""},
	{"table-attributes", "| a |\n|---|\n| 1 |\n{.c}\n", "<table>", ""},
	{"strike", "~~gone~~ ~one~ ~~~no~~~", "<del>gone</del>", ""},
	{"strike-nested", "*a ~~b **c**~~ d*", "<em>a <del>b <strong>c</strong></del> d</em>", ""},
	{"task", "- [ ] todo\n- [x] done\n- [X] Done\n", `<input checked="" disabled="" type="checkbox">`, ""},
	{"task-not-first", "- text [x] later\n- [y] no\n", "text [x] later", "<input"},
	{"all-mixed", "# Plan {#p}\n\n- [x] ~~old~~ step <b>\n\n| step | state |\n|:-----|------:|\n| `a\\|b` | ~done~ |\n",
		"<table>", ""},
}

func TestCorpusMatchesUpstream(t *testing.T) {
	ps := pairs()
	for _, c := range corpus {
		out := same(t, ps, c.name, []byte(c.md))
		got := out["lazy"]
		if strings.HasPrefix(c.name, "html-") || strings.Contains(c.name, "html-in") {
			got = out["xhtml-unsafe"]
		}
		if c.has != "" && !strings.Contains(got, c.has) {
			t.Errorf("%s: %q renders %q, want it to contain %q", c.name, c.md, got, c.has)
		}
		if c.hasNot != "" && strings.Contains(got, c.hasNot) {
			t.Errorf("%s: %q renders %q, want no %q", c.name, c.md, got, c.hasNot)
		}
	}
}

// caseFile reads the inputs of a goldmark test case file (the format of
// upstream's testutil.DoTestCaseFile): a case's Markdown lies between
// its first two attribute separators.
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

// TestUpstreamTestFilesMatch compares the fork with upstream on
// goldmark's own test inputs: the 652 CommonMark spec examples, its extra
// cases, and the case files of the three extensions.
func TestUpstreamTestFilesMatch(t *testing.T) {
	dir, _ := upstreamDir(t)
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
	if len(spec) < 600 {
		t.Fatalf("%d spec examples: too few, has the format changed?", len(spec))
	}
	ps := pairs()
	for _, c := range spec {
		same(t, ps, fmt.Sprintf("spec example %d", c.Example), []byte(c.Markdown))
	}
	for _, f := range []struct {
		path string
		min  int
	}{
		{filepath.Join("_test", "extra.txt"), 50},
		{filepath.Join("extension", "_test", "strikethrough.txt"), 5},
		{filepath.Join("extension", "_test", "table.txt"), 10},
		{filepath.Join("extension", "_test", "tasklist.txt"), 3},
	} {
		inputs := caseFile(t, filepath.Join(dir, f.path))
		if len(inputs) < f.min {
			t.Fatalf("%s: %d cases, want at least %d: has the format changed?", f.path, len(inputs), f.min)
		}
		for i, in := range inputs {
			same(t, ps, fmt.Sprintf("%s case %d", f.path, i+1), []byte(in))
		}
	}
}

// FuzzForkMatchesUpstream compares the fork with upstream on random
// input under every config.
func FuzzForkMatchesUpstream(f *testing.F) {
	for _, c := range corpus {
		f.Add([]byte(c.md))
	}
	ps := pairs()
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 8<<10 {
			return
		}
		same(t, ps, "fuzz", src)
	})
}
