package gitrepo

import "strings"

// wildmatch reports whether text matches pattern as git's wildmatch
// matches with WM_PATHNAME (the includeIf conditions' globs, see
// gitignore(5) for the syntax): "?" and "*" never match a "/"; "**" as a
// whole path component matches any number of them ("a/**/b" matches
// a/b and a/x/y/b, a trailing "/**" everything below, a leading "**/"
// any directories); "[...]" is a class of one byte ("!" or "^" negates
// it, a-z ranges, [:alpha:] and the other POSIX names), never "/"; "\"
// quotes the next character. fold compares ASCII letters without case
// (gitdir/i:). Like git it works on bytes.
func wildmatch(pattern, text string, fold bool) bool {
	m := matcher{p: pattern, t: text, fold: fold, memo: map[[2]int]bool{}}
	return m.match(0, 0)
}

type matcher struct {
	p, t string
	fold bool
	// memo holds what is known not to match, so that stars against
	// long texts stay polynomial.
	memo map[[2]int]bool
}

func (m *matcher) lower(c byte) byte {
	if m.fold && c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// match reports whether p[pi:] matches t[ti:].
func (m *matcher) match(pi, ti int) bool {
	key := [2]int{pi, ti}
	if failed, ok := m.memo[key]; ok && failed {
		return false
	}
	ok := m.step(pi, ti)
	if !ok {
		m.memo[key] = true
	}
	return ok
}

func (m *matcher) step(pi, ti int) bool {
	p, t := m.p, m.t
	if pi == len(p) {
		return ti == len(t)
	}
	switch c := p[pi]; c {
	case '*':
		stars := pi
		for stars < len(p) && p[stars] == '*' {
			stars++
		}
		component := stars-pi >= 2 && (pi == 0 || p[pi-1] == '/') && (stars == len(p) || p[stars] == '/')
		if component {
			if stars == len(p) {
				return true // a trailing ** matches everything left
			}
			// "**/": no directory, or anything up to a "/" of the text.
			if m.match(stars+1, ti) {
				return true
			}
			for i := ti; i < len(t); i++ {
				if t[i] == '/' && m.match(stars+1, i+1) {
					return true
				}
			}
			return false
		}
		// One star (or stars inside a component): anything but "/".
		for i := ti; ; i++ {
			if m.match(stars, i) {
				return true
			}
			if i == len(t) || t[i] == '/' {
				return false
			}
		}
	case '?':
		return ti < len(t) && t[ti] != '/' && m.match(pi+1, ti+1)
	case '[':
		if ti == len(t) || t[ti] == '/' {
			return false
		}
		end, ok := m.class(pi, t[ti])
		return end > 0 && ok && m.match(end, ti+1)
	case '\\':
		if pi+1 == len(p) {
			return false // a pattern ending in "\" matches nothing
		}
		return ti < len(t) && m.lower(p[pi+1]) == m.lower(t[ti]) && m.match(pi+2, ti+1)
	default:
		return ti < len(t) && m.lower(c) == m.lower(t[ti]) && m.match(pi+1, ti+1)
	}
}

// posixClasses are the [:name:] classes of a bracket expression.
var posixClasses = map[string]func(byte) bool{
	"alnum":  func(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' },
	"alpha":  isAlpha,
	"blank":  func(c byte) bool { return c == ' ' || c == '\t' },
	"cntrl":  func(c byte) bool { return c < 0x20 || c == 0x7f },
	"digit":  func(c byte) bool { return c >= '0' && c <= '9' },
	"graph":  func(c byte) bool { return c > 0x20 && c < 0x7f },
	"lower":  func(c byte) bool { return c >= 'a' && c <= 'z' },
	"print":  func(c byte) bool { return c >= 0x20 && c < 0x7f },
	"punct":  func(c byte) bool { return c > 0x20 && c < 0x7f && !isAlpha(c) && (c < '0' || c > '9') },
	"space":  func(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' },
	"upper":  func(c byte) bool { return c >= 'A' && c <= 'Z' },
	"xdigit": func(c byte) bool { return c >= '0' && c <= '9' || (c|0x20) >= 'a' && (c|0x20) <= 'f' },
}

// class reads the bracket expression at p[pi] ('[') and reports where it
// ends (0 when it never closes, which matches nothing) and whether c is
// in it.
func (m *matcher) class(pi int, c byte) (int, bool) {
	p := m.p
	i := pi + 1
	negate := i < len(p) && (p[i] == '!' || p[i] == '^')
	if negate {
		i++
	}
	tc := m.lower(c)
	in := false
	first := true
	var prev byte
	havePrev := false
	for ; i < len(p); i++ {
		ch := p[i]
		if ch == ']' && !first {
			return i + 1, in != negate
		}
		first = false
		switch {
		case ch == '\\':
			i++
			if i == len(p) {
				return 0, false
			}
			ch = p[i]
		case ch == '-' && havePrev && i+1 < len(p) && p[i+1] != ']':
			i++
			hi := p[i]
			if hi == '\\' {
				i++
				if i == len(p) {
					return 0, false
				}
				hi = p[i]
			}
			if prev <= c && c <= hi || m.fold && (prev <= tc && tc <= hi || prev <= upper(tc) && upper(tc) <= hi) {
				in = true
			}
			havePrev = false
			continue
		case ch == '[' && i+1 < len(p) && p[i+1] == ':':
			end := strings.Index(p[i+2:], ":]")
			if end < 0 {
				// Not a class name: "[" is itself.
				break
			}
			name := p[i+2 : i+2+end]
			is, known := posixClasses[name]
			if !known {
				return 0, false // git: a malformed class matches nothing
			}
			if is(c) || m.fold && name == "upper" && is(upper(tc)) || m.fold && name == "lower" && is(tc) {
				in = true
			}
			i += 2 + end + 1
			havePrev = false
			continue
		}
		if m.lower(ch) == tc {
			in = true
		}
		prev, havePrev = ch, true
	}
	return 0, false
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
