package web

import (
	"bytes"
	"fmt"
	"html/template"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"

	"github.com/lazyorch/lazy/internal/sanitize"
)

// md renders goals, turns and comments. goldmark is CommonMark-exact
// and well kept; without html.WithUnsafe it drops javascript:, vbscript:,
// file: and data: links (other than images), and rawHTML below shows raw
// HTML as the text it is, so agent or remote text cannot inject markup.
// Images are blocked anyway by the CSP (img-src is 'none').
//
// md is built on first use: its parser is 28 KB of heap that a process
// which never renders (lazy show, lazy create) need not allocate.
var md = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.Strikethrough, extension.Table, extension.TaskList),
		// A newline in a turn's or a comment's text is a line break, as
		// its writer meant it: agents and people write lines, not
		// CommonMark paragraphs.
		goldmark.WithRendererOptions(html.WithHardWraps(), renderer.WithNodeRenderers(util.Prioritized(rawHTML{}, 100))),
	)
})

// rawHTML renders raw HTML escaped, as text: goldmark's safe mode would
// drop it, and a person who wrote "<b>" in a comment should see "<b>".
// It also renders autolinks, to check their URLs.
type rawHTML struct{}

func (rawHTML) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := node.(*ast.RawHTML).Segments
			for i := 0; i < segs.Len(); i++ {
				seg := segs.At(i)
				_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	// goldmark checks the URL of a [text](url) link, but not of an
	// autolink: <javascript:alert(1)> would become a live href. The CSP
	// would refuse to run it; the link is rendered as a dead one anyway,
	// as goldmark renders a dangerous [text](url).
	reg.Register(ast.KindAutoLink, func(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		n := node.(*ast.AutoLink)
		url := n.URL(source)
		_, _ = w.WriteString(`<a href="`)
		switch {
		case n.AutoLinkType == ast.AutoLinkEmail:
			if !bytes.HasPrefix(bytes.ToLower(url), []byte("mailto:")) {
				_, _ = w.WriteString("mailto:")
			}
			_, _ = w.Write(util.EscapeHTML(util.URLEscape(url, false)))
		case !html.IsDangerousURL(bytes.ToLower(url)):
			_, _ = w.Write(util.EscapeHTML(util.URLEscape(url, false)))
		}
		_, _ = w.WriteString(`">`)
		_, _ = w.Write(util.EscapeHTML(n.Label(source)))
		_, _ = w.WriteString(`</a>`)
		return ast.WalkContinue, nil
	})
	// A heading in someone's markdown is theirs, inside their box: it is
	// rendered three levels down (h4 to h6, class md-h), so an agent's
	// "## Goal" never reads as one of the page's own sections (h1 to h3).
	reg.Register(ast.KindHeading, func(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
		level := min(node.(*ast.Heading).Level+3, 6)
		if entering {
			_, _ = fmt.Fprintf(w, `<h%d class="md-h">`, level)
		} else {
			_, _ = fmt.Fprintf(w, "</h%d>\n", level)
		}
		return ast.WalkContinue, nil
	})
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
		n := node.(*ast.HTMLBlock)
		if entering {
			_, _ = w.WriteString("<pre>")
			for i := 0; i < n.Lines().Len(); i++ {
				line := n.Lines().At(i)
				_, _ = w.Write(util.EscapeHTML(line.Value(source)))
			}
			if n.HasClosure() {
				_, _ = w.Write(util.EscapeHTML(n.ClosureLine.Value(source)))
			}
			_, _ = w.WriteString("</pre>\n")
		}
		return ast.WalkSkipChildren, nil
	})
}

// mdLimit bounds the text one block renders; longer text shows as plain
// preformatted text, which costs nothing to render.
const mdLimit = 200 << 10

// markdown renders text as sanitized HTML.
func markdown(text string) template.HTML {
	// Records arrive from remotes without passing lazy's intake, so bidi
	// overrides and C0 controls are escaped visibly here too (issue 29).
	text = sanitize.Field(text)
	if len(text) > mdLimit {
		return template.HTML("<pre>" + template.HTMLEscapeString(text) + "</pre>") //nolint:gosec // escaped just here
	}
	var b bytes.Buffer
	if err := md().Convert([]byte(text), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(text) + "</pre>") //nolint:gosec // escaped just here
	}
	return template.HTML(b.String()) //nolint:gosec // goldmark without WithUnsafe escapes raw HTML and dangerous links
}
