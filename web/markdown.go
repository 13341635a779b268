package web

import (
	"bytes"
	"html/template"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"

	"github.com/lazyorch/lazy/web/gfm"
)

// md renders goals, turns and comments. goldmark is CommonMark-exact
// and well kept; without html.WithUnsafe it drops javascript:, vbscript:,
// file: and data: links (other than images), and rawHTML below shows raw
// HTML as the text it is, so agent or remote text cannot inject markup.
// Images are blocked anyway by the CSP (img-src is 'none').
//
// The GFM extensions come from web/gfm, a port of goldmark's own: package
// goldmark/extension compiles Linkify's regexps at init, in every lazy
// process (see web/gfm's package comment).
var md = goldmark.New(
	goldmark.WithExtensions(gfm.Strikethrough, gfm.Table, gfm.TaskList),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(rawHTML{}, 100))),
)

// rawHTML renders raw HTML escaped, as text: goldmark's safe mode would
// drop it, and a person who wrote "<b>" in a comment should see "<b>".
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
	if len(text) > mdLimit {
		return template.HTML("<pre>" + template.HTMLEscapeString(text) + "</pre>") //nolint:gosec // escaped just here
	}
	var b bytes.Buffer
	if err := md.Convert([]byte(text), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(text) + "</pre>") //nolint:gosec // escaped just here
	}
	return template.HTML(b.String()) //nolint:gosec // goldmark without WithUnsafe escapes raw HTML and dangerous links
}
