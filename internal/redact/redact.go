// Package redact is the one place lazy takes secrets out of text that
// leaves it: notifications, gate output tails (kept in task records that
// are pushed, and sent in notifications and feedback), and the agent
// logs lazy renders.
//
// It replaces with "…" what has the shape of a credential: NAME=value for
// a name that says it is one (TOKEN, SECRET, PASSWORD, API_KEY...), a
// URL's user:password@, an Authorization bearer or basic value, AWS
// access key ids (AKIA... and ASIA...), tokens of well-known kinds
// (GitHub, GitLab, Slack, Anthropic, OpenAI, Google), private key
// blocks, long runs of random-looking token alphabet, and, given the
// values of lazy.notify, the paths and queries of the URLs they name (an
// ntfy topic or a webhook's path is its credential).
package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Mark is what a secret is replaced with.
const Mark = "…"

// The shapes of a secret, compiled on first use.
var shapes = sync.OnceValue(func() *patterns {
	return &patterns{
		assign:  regexp.MustCompile(`(?i)\b([A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|APIKEY|API_KEY|AUTH|CREDENTIAL|PRIVATE)[A-Z0-9_]*)(\s*[=:]\s*)("[^"\n]*"|'[^'\n]*'|[^\s"'\\]+)`),
		key:     regexp.MustCompile(`(?i)\b[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|APIKEY|API_KEY|AUTH|CREDENTIAL|PRIVATE)[A-Z0-9_]*\s*[=:]`),
		user:    regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.-]*://)[^/\s@"'\\]+@`),
		bearer:  regexp.MustCompile(`(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}`),
		aws:     regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
		known:   regexp.MustCompile(`\b(?:gh[opsur]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|sk-ant-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9_-]{20,}|AIza[A-Za-z0-9_-]{35})`),
		pem:     regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[^"]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[^"]*)`),
		run:     regexp.MustCompile(`[A-Za-z0-9_+/=-]{32,}`),
		urlLike: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`),
	}
})

type patterns struct {
	assign, key, user, bearer, aws, known, pem, run, urlLike *regexp.Regexp
}

// Redactor takes secrets out of text. The zero value knows the shapes of
// secrets; New adds the URLs of a configuration.
type Redactor struct {
	// parts are the secret parts of configured URLs, longest first:
	// host+path (kept: host), path and query (kept: nothing).
	parts []part
}

// part is a secret string and what stands in its place.
type part struct{ secret, with string }

// minPart is the shortest path or query redacted on its own, without
// its host: a shorter one ("/x") would match ordinary text everywhere.
const minPart = 8

// New returns a Redactor that also takes out the paths and queries of
// the URLs in values (the values of lazy.notify: an ntfy topic, a
// webhook's path or token, a command's URL), wherever they appear, with
// their host or without it.
func New(values ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	add := func(p, keep string) {
		if p == "" || seen[p] {
			return
		}
		seen[p] = true
		with := keep + Mark
		if strings.HasPrefix(strings.TrimPrefix(p, keep), "/") {
			with = keep + "/" + Mark
		}
		r.parts = append(r.parts, part{p, with})
	}
	for _, v := range values {
		for _, raw := range shapes().urlLike.FindAllString(v, -1) {
			u, err := url.Parse(raw)
			if err != nil || u.Hostname() == "" {
				continue
			}
			path := u.EscapedPath()
			if path == "/" {
				path = ""
			}
			if path == "" && u.RawQuery == "" {
				continue
			}
			rest := path
			if u.RawQuery != "" {
				rest += "?" + u.RawQuery
			}
			if len(u.Host+rest) >= minPart {
				add(u.Host+rest, u.Host)
			}
			for _, p := range []string{rest, path, u.Path, u.RawQuery} {
				if len(p) >= minPart {
					add(p, "")
				}
			}
		}
	}
	sort.Slice(r.parts, func(i, j int) bool { return len(r.parts[i].secret) > len(r.parts[j].secret) })
	return r
}

// Text is s with every secret replaced by Mark: for text kept whole (a
// gate's output tail, an agent log's lines). Long runs of token alphabet
// are taken out only when they look random (randomLooking), so paths,
// commit ids and identifiers stay readable.
func (r *Redactor) Text(s string) string {
	s = r.common(s)
	return shapes().run.ReplaceAllStringFunc(s, func(m string) string {
		if randomLooking(m) {
			return Mark
		}
		return m
	})
}

// Line is s with every secret replaced by Mark, and every long run of
// token alphabet too, random-looking or not: for a short notice (a
// notification's reason) where a commit id or a hash is no loss.
func (r *Redactor) Line(s string) string {
	return shapes().run.ReplaceAllString(r.common(s), Mark)
}

func (r *Redactor) common(s string) string {
	if r != nil {
		for _, p := range r.parts {
			if strings.Contains(s, p.secret) {
				s = strings.ReplaceAll(s, p.secret, p.with)
			}
		}
	}
	p := shapes()
	s = p.user.ReplaceAllString(s, "$1"+Mark+"@")
	s = p.bearer.ReplaceAllString(s, "$1 "+Mark)
	s = redactAssignments(p, s)
	s = p.aws.ReplaceAllString(s, Mark)
	s = p.known.ReplaceAllString(s, Mark)
	// A private key block last: an unended one runs to the end of its
	// string and would otherwise swallow the name of a secret after it.
	s = p.pem.ReplaceAllString(s, Mark)
	return s
}

// redactAssignments replaces the value of every NAME=value whose name
// says it is a secret. A value that runs into another such assignment
// (an opening quote never closed before it, or a bare value that is the
// next name) is cut there, and the assignment it ran into is redacted in
// its turn: otherwise the value would swallow the next name and leave
// its value bare.
func redactAssignments(p *patterns, s string) string {
	var b strings.Builder
	for {
		m := p.assign.FindStringSubmatchIndex(s)
		if m == nil {
			if b.Len() == 0 {
				return s
			}
			b.WriteString(s)
			return b.String()
		}
		valStart, valEnd := m[6], m[7]
		end := valEnd
		from := valStart
		if q := s[valStart]; q == '"' || q == '\'' {
			from++
		}
		// A value that runs into another secret's name (an unclosed
		// quote, or a bare value such as the "API_KEY=" of
		// `--password: API_KEY="a b"`) or a private key block's header
		// is cut before it, so that name's own value (or the block) is
		// redacted in its turn rather than left bare. The cut is after
		// the name of this assignment, so the loop always moves on.
		// A private key block's header is left whole for the block's
		// own pattern, which runs last.
		cut := -1
		if inner := p.key.FindStringIndex(s[from:valEnd]); inner != nil {
			cut = inner[0]
		}
		if i := strings.Index(s[from:valEnd], "-----BEGIN"); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
		if cut >= 0 {
			end = from + cut
			for end > from && (s[end-1] == ' ' || s[end-1] == '\t') {
				end--
			}
		} else if from > valStart {
			// A quoted value runs on through what is glued to it, as a
			// shell reads it ("a"b is ab): otherwise the glued part is
			// left, and read as the value on a second pass.
			for end < len(s) && !strings.ContainsRune(" \t\r\n\"'\\", rune(s[end])) {
				end++
			}
		}
		b.WriteString(s[:valStart])
		b.WriteString(Mark)
		s = s[end:]
	}
}

// randomLooking reports whether a run of token alphabet has a stretch
// (between slashes) of 24 or more characters that mixes upper and lower
// case letters with digits scattered among them (two groups of digits or
// more), as generated keys do; paths, words, identifiers in camel case
// with a number (a Go test's temporary directory, TestName123456) and
// hexadecimal ids do not.
func randomLooking(run string) bool {
	for _, seg := range strings.Split(run, "/") {
		if len(seg) < 24 {
			continue
		}
		var upper, lower bool
		groups := 0
		for i := 0; i < len(seg); i++ {
			switch c := seg[i]; {
			case c >= 'A' && c <= 'Z':
				upper = true
			case c >= 'a' && c <= 'z':
				lower = true
			case c >= '0' && c <= '9':
				if i == 0 || seg[i-1] < '0' || seg[i-1] > '9' {
					groups++
				}
			}
		}
		if upper && lower && groups >= 2 {
			return true
		}
	}
	return false
}

// Text is (*Redactor)(nil).Text: the shapes of secrets only.
func Text(s string) string { return (*Redactor)(nil).Text(s) }

// Line is (*Redactor)(nil).Line: the shapes of secrets only.
func Line(s string) string { return (*Redactor)(nil).Line(s) }

// Log is an agent's log with its secrets taken out, line by line: a line
// that is JSON (an agent's event stream) has them taken out of its
// strings, so it stays the JSON it was; any other line as Text does.
func (r *Redactor) Log(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b))
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line = b[:i+1]
		}
		b = b[len(line):]
		s := string(line)
		if clean := r.Text(s); clean != s {
			s = r.jsonLine(s, clean)
		}
		out.WriteString(s)
	}
	return out.Bytes()
}

// jsonLine redacts the strings of line when it is one JSON value, and
// returns asText otherwise. The value is rewritten token by token, so its
// keys keep their order and everything but a redacted string stays as the
// agent wrote it, to the byte where the encoding allows: a reader of
// lazy logs --raw gets the agent's event with only the secrets gone.
func (r *Redactor) jsonLine(line, asText string) string {
	body := strings.TrimRight(line, "\r\n")
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(body))
	// Each open container: whether it is an object, and how many keys and
	// values it has had so far.
	type open struct {
		object bool
		n      int
	}
	var stack []open
	values := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return asText
		}
		closing := tok == json.Delim('}') || tok == json.Delim(']')
		key := false
		if len(stack) == 0 {
			if values++; values > 1 {
				return asText
			}
		} else if top := &stack[len(stack)-1]; !closing {
			switch {
			case top.object && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			key = top.object && top.n%2 == 0
			top.n++
		}
		switch t := tok.(type) {
		case json.Delim:
			out.WriteRune(rune(t))
			if closing {
				stack = stack[:len(stack)-1]
			} else {
				stack = append(stack, open{object: t == '{'})
			}
		case string:
			if !key {
				t = r.Text(t)
			}
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(t); err != nil {
				return asText
			}
			out.Truncate(out.Len() - 1) // Encode's newline
		case json.Number:
			out.WriteString(t.String())
		case bool:
			out.WriteString(strconv.FormatBool(t))
		case nil:
			out.WriteString("null")
		}
	}
	if len(stack) != 0 || values != 1 {
		return asText
	}
	return out.String() + line[len(body):]
}
