package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/internal/configkeys"
)

// Config is git configuration as lazy reads it: the user's global file
// then the repository's, later values winning, as git resolves them,
// with include.path and includeIf followed where they stand (see
// configinclude.go).
type Config struct {
	entries []configEntry
	// read is every file the configuration was read from or looked for,
	// as it was then: what Fresh compares.
	read []fileStamp
}

// configEntry is one variable of a config file. key is its name as git
// lists it: section and variable name in lower case, a subsection as
// written. bare is a variable without "=", which git reads as true.
type configEntry struct {
	key, value string
	bare       bool
	file       string // the file it was read from
	scope      string // ScopeGlobal or ScopeLocal
}

// The scopes of a config value, as git config --show-scope names them.
// lazy reads these two; the system file is not read.
const (
	ScopeGlobal = "global"
	ScopeLocal  = "local"
)

// Origin is one value of a key and where it was read.
type Origin struct {
	Value string
	File  string
	Scope string // ScopeGlobal or ScopeLocal
}

// Origins returns every value of key with where it was read, in the
// order git reads them (the last one wins for a single-valued key).
func (c *Config) Origins(key string) []Origin {
	key = canonicalKey(key)
	var out []Origin
	for _, e := range c.entries {
		if e.key == key {
			out = append(out, Origin{Value: e.value, File: e.file, Scope: e.scope})
		}
	}
	return out
}

// InScope returns the values of key in one scope's file (ScopeGlobal
// or ScopeLocal), and that file: what a change to that file starts from.
func (c *Config) InScope(key, scope string) (values []string, file string) {
	for _, o := range c.Origins(key) {
		if o.Scope == scope {
			values, file = append(values, o.Value), o.File
		}
	}
	return values, file
}

// Names returns the distinct keys set under prefix (such as "lazy."),
// as git lists them (section and variable name in lower case), in the
// order first read.
func (c *Config) Names(prefix string) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range c.entries {
		if strings.HasPrefix(e.key, prefix) && !seen[e.key] {
			seen[e.key] = true
			out = append(out, e.key)
		}
	}
	return out
}

// ReadConfig reads the global configuration and that of the repository
// whose common git directory is commonDir (only the global one when
// commonDir is "": outside any repository), as git reads it for a
// command run in that directory.
func ReadConfig(commonDir string) (*Config, error) { return ReadRepoConfig(commonDir, commonDir) }

// ReadRepoConfig is ReadConfig for a command run in the worktree whose
// git directory is gitDir (.git, or .git/worktrees/x for a linked one):
// an includeIf "gitdir:" condition matches gitDir, "onbranch:" the
// branch its HEAD names.
func ReadRepoConfig(commonDir, gitDir string) (*Config, error) {
	var paths []string
	if home, err := os.UserHomeDir(); err == nil {
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if xdg == "" {
			xdg = filepath.Join(home, ".config")
		}
		paths = append(paths, filepath.Join(xdg, "git", "config"), filepath.Join(home, ".gitconfig"))
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		paths = []string{g}
	}
	local := ""
	if commonDir != "" {
		local = filepath.Join(commonDir, "config")
		paths = append(paths, local)
	}
	rd := &configReader{gitDir: gitDir, c: &Config{}}
	for _, p := range paths {
		scope := ScopeGlobal
		if p == local {
			scope = ScopeLocal
		}
		if err := rd.file(p, scope, 0); err != nil {
			return nil, err
		}
	}
	if rd.needGit {
		return readConfigWithGit(gitDir, commonDir != "", rd.c.read)
	}
	return rd.c, nil
}

// Get returns the last value of key ("section.key" or
// "section.subsection.key"), and whether it is set.
func (c *Config) Get(key string) (string, bool) {
	e := c.last(key)
	if e == nil {
		return "", false
	}
	return e.value, true
}

// last is the entry of key that wins, or nil.
func (c *Config) last(key string) *configEntry {
	key = canonicalKey(key)
	for i := len(c.entries) - 1; i >= 0; i-- {
		if e := &c.entries[i]; e.key == key {
			return e
		}
	}
	return nil
}

// canonicalKey folds a key's section and variable name to lower case,
// as git does; a subsection keeps its case.
func canonicalKey(key string) string {
	first := strings.IndexByte(key, '.')
	last := strings.LastIndexByte(key, '.')
	if first < 0 {
		return strings.ToLower(key)
	}
	return strings.ToLower(key[:first]) + key[first:last] + strings.ToLower(key[last:])
}

// All returns every value of a multi-valued key, in the order git reads
// them (global file first).
func (c *Config) All(key string) []string {
	key = canonicalKey(key)
	var vals []string
	for _, e := range c.entries {
		if e.key == key {
			vals = append(vals, e.value)
		}
	}
	return vals
}

// Int returns key as an integer, def when unset, and an error naming the
// key when it is not a number.
func (c *Config) Int(key string, def int) (int, error) {
	v, ok := c.Get(key)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return def, configkeys.Invalid(key, v, "is not a number")
	}
	return n, nil
}

// Bool returns key as a git boolean, def when unset, and an error naming
// the key otherwise. As in git, a bare "key" is true and "key =" false.
func (c *Config) Bool(key string, def bool) (bool, error) {
	e := c.last(key)
	switch {
	case e == nil:
		return def, nil
	case e.bare:
		return true, nil
	}
	switch strings.ToLower(strings.TrimSpace(e.value)) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0", "":
		return false, nil
	}
	return def, configkeys.Invalid(key, e.value, "is not a boolean (true or false)")
}

// parseConfig reads a git config file the way git's config.c does, down
// to its errors: sections "[name]", "[name "sub"]" and the deprecated
// "[name.sub]" (sub folded to lower case), "key = value" or a bare "key"
// (true, read as ""), values with quotes, the escapes \\ \" \n \t \b,
// backslash-newline continuations and # or ; comments, CRLF line ends and
// a UTF-8 byte order mark. Anything git would call a bad config line is
// an error naming the line.
func parseConfig(b []byte) ([]configEntry, error) {
	p := configParser{src: b, line: 1}
	if len(b) >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf {
		p.pos = 3
	}
	var out []configEntry
	base := "" // "section" or "section.subsection", as git joins them
	comment := false
	for {
		c := p.next()
		switch {
		case c == '\n':
			if p.eof {
				return out, nil
			}
			comment = false
			continue
		case comment || isConfigSpace(c):
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			var ok bool
			if base, ok = p.header(); !ok || base == "" {
				return nil, p.bad()
			}
			continue
		case !isAlpha(c):
			return nil, p.bad()
		}
		name, value, bare, ok := p.variable(c)
		if !ok {
			return nil, p.bad()
		}
		// A key before any [section] is read, as git reads it, and
		// matches no "section.key" lazy asks for.
		if base != "" {
			name = base + "." + name
		}
		out = append(out, configEntry{key: name, value: value, bare: bare})
	}
}

// configParser is git's config_source: a cursor over one file.
type configParser struct {
	src  []byte
	pos  int
	line int
	eof  bool
}

// next is git's get_next_char: CRLF reads as LF, and the end of the file
// as a final LF (with eof set).
func (p *configParser) next() byte {
	if p.pos >= len(p.src) {
		if !p.eof {
			p.eof = true
			p.line++
		}
		return '\n'
	}
	c := p.src[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.src) && p.src[p.pos] == '\n' {
		c = '\n'
		p.pos++
	}
	if c == '\n' {
		p.line++
	}
	return c
}

// bad is git's "bad config line" error, on the line the parse stopped at.
func (p *configParser) bad() error {
	line := p.line
	if p.pos > 0 && p.src[p.pos-1] == '\n' && !p.eof {
		line-- // the newline that ended the bad line was read already
	}
	return fmt.Errorf("bad config line %d", line)
}

// header reads a section header after its '[' (git's get_base_var). The
// deprecated [section.sub] form is folded to lower case whole.
func (p *configParser) header() (string, bool) {
	var name []byte
	for {
		c := p.next()
		if p.eof {
			return "", false
		}
		if c == ']' {
			return string(name), true
		}
		if isConfigSpace(c) {
			return p.extendedHeader(string(name), c)
		}
		if !isKeyChar(c) && c != '.' {
			return "", false
		}
		name = append(name, toLower(c))
	}
}

// extendedHeader reads the rest of [section "sub"] (git's
// get_extended_base_var); c is the space after the name.
func (p *configParser) extendedHeader(section string, c byte) (string, bool) {
	for {
		if c == '\n' {
			return "", false
		}
		c = p.next()
		if !isConfigSpace(c) {
			break
		}
	}
	if c != '"' {
		return "", false
	}
	sub := []byte(section + ".")
	for {
		c := p.next()
		if c == '\n' {
			return "", false
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = p.next(); c == '\n' {
				return "", false
			}
		}
		sub = append(sub, c)
	}
	if p.next() != ']' {
		return "", false
	}
	return string(sub), true
}

// variable reads a variable whose name starts with c (git's get_value).
func (p *configParser) variable(c byte) (name, value string, bare, ok bool) {
	n := []byte{toLower(c)}
	for {
		c = p.next()
		if p.eof || !isKeyChar(c) {
			break
		}
		n = append(n, toLower(c))
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	if c == '\n' {
		return string(n), "", true, true
	}
	if c != '=' {
		return "", "", false, false
	}
	v, ok := p.value()
	return string(n), v, false, ok
}

// value reads a value after its '=' (git's parse_value).
func (p *configParser) value() (string, bool) {
	var v []byte
	quote, comment := false, false
	trim := 0
	for {
		c := p.next()
		if c == '\n' {
			if quote {
				return "", false
			}
			if trim > 0 {
				v = v[:trim]
			}
			return string(v), true
		}
		if comment {
			continue
		}
		if isConfigSpace(c) && !quote {
			if trim == 0 {
				trim = len(v)
			}
			if len(v) > 0 {
				v = append(v, ' ') // any space outside quotes reads as ' '
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		trim = 0
		if c == '\\' {
			switch c = p.next(); c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", false
			}
			v = append(v, c)
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		v = append(v, c)
	}
}

// isConfigSpace is isspace in git's own ctype table: space, \t, \n and
// \r, not \v or \f.
func isConfigSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

func isKeyChar(c byte) bool { return isAlpha(c) || (c >= '0' && c <= '9') || c == '-' }

func toLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
