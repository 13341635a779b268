package task

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/lazyorch/lazy/machine"
)

// Field bits, to refuse a key seen twice.
const (
	fVersion uint32 = 1 << iota
	fID
	fSlug
	fTitle
	fStatus
	fParent
	fTarget
	fCreatedAt
	fUpdatedAt
	fCreatedBy
	fClock
	fOutcome
	fReason
	fReopened
	fAllowed
	fTurns
	fComments
	fSessions
	fHost
	fSubstate
)

// ScanTask decodes b, a task.json, into t if b is in the strict subset
// of JSON the list cache's fast path handles: one object of the scalar
// fields lazy writes for every task (and allowed_paths), each key
// spelled exactly and at most once, strings without escapes, integers
// without fraction or exponent. Anything else reports false, and the
// caller decodes b with encoding/json, which gives the same Task for
// every b ScanTask takes (gitstore's FuzzSummaryDecoder holds it to that).
func ScanTask(b []byte, t *Task) bool {
	// The task's strings are cut from one copy of the record: one
	// allocation per task instead of one per field.
	p := jsonScanner{b: b, s: string(b)}
	p.ws()
	if !p.byte('{') {
		return false
	}
	var seen uint32
	p.ws()
	if p.byte('}') {
		return p.end()
	}
	for {
		p.ws()
		key, ok := p.str()
		if !ok {
			return false
		}
		p.ws()
		if !p.byte(':') {
			return false
		}
		p.ws()
		var bit uint32
		switch key {
		case "version":
			bit, ok = fVersion, p.int(&t.Version)
		case "id":
			bit, ok = fID, p.strTo(&t.ID)
		case "slug":
			bit, ok = fSlug, p.strTo(&t.Slug)
		case "title":
			bit, ok = fTitle, p.strTo(&t.Title)
		case "status":
			var s string
			bit, ok = fStatus, p.strTo(&s)
			t.Status = machine.Status(s)
		case "parent":
			bit, ok = fParent, p.strTo(&t.Parent)
		case "target_branch":
			bit, ok = fTarget, p.strTo(&t.TargetBranch)
		case "created_at":
			bit, ok = fCreatedAt, p.time(t, true)
		case "updated_at":
			bit, ok = fUpdatedAt, p.time(t, false)
		case "created_by":
			var s string
			bit, ok = fCreatedBy, p.strTo(&s)
			t.CreatedBy = machine.Actor(s)
		case "clock":
			bit, ok = fClock, p.uint(&t.Clock)
		case "outcome":
			bit, ok = fOutcome, p.strTo(&t.Outcome)
		case "reason":
			bit, ok = fReason, p.strTo(&t.Reason)
		case "reopened_at_commit":
			bit, ok = fReopened, p.strTo(&t.ReopenedAt)
		case "allowed_paths":
			bit, ok = fAllowed, p.strings(&t.AllowedPaths)
		case "turns":
			bit, ok = fTurns, p.int(&t.Turns)
		case "comments":
			bit, ok = fComments, p.int(&t.Comments)
		case "sessions":
			bit, ok = fSessions, p.int(&t.Sessions)
		case "host":
			bit, ok = fHost, p.strTo(&t.Host)
		case "substate":
			bit, ok = fSubstate, p.strTo(&t.Substate)
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		p.ws()
		if p.byte('}') {
			return p.end()
		}
		if !p.byte(',') {
			return false
		}
	}
}

// jsonScanner reads the strict JSON subset of ScanTask from b.
type jsonScanner struct {
	b []byte
	s string // b as a string, for the fields' values
	i int
}

func (p *jsonScanner) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScanner) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (p *jsonScanner) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// str reads a string without escapes or control characters, in valid
// UTF-8, and returns its value as encoding/json decodes it: the bytes
// between the quotes.
func (p *jsonScanner) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	ascii := true
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, ascii || utf8.ValidString(s)
		case c == '\\', c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

func (p *jsonScanner) strTo(dst *string) bool {
	s, ok := p.str()
	*dst = s
	return ok
}

// strings reads an array of strings.
func (p *jsonScanner) strings(dst *[]string) bool {
	if !p.byte('[') {
		return false
	}
	out := []string{} // encoding/json leaves [] an empty, non-nil slice
	p.ws()
	if p.byte(']') {
		*dst = out
		return true
	}
	for {
		p.ws()
		s, ok := p.str()
		if !ok {
			return false
		}
		out = append(out, s)
		p.ws()
		if p.byte(']') {
			*dst = out
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// digits reads an integer literal: -?(0|[1-9][0-9]*).
func (p *jsonScanner) digits() ([]byte, bool) {
	start := p.i
	p.byte('-')
	d := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n := p.i - d
	if n == 0 || (n > 1 && p.b[d] == '0') {
		return nil, false
	}
	// A fraction or an exponent is valid JSON that encoding/json refuses
	// for an integer field: leave it to encoding/json to say so.
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return nil, false
	}
	return p.b[start:p.i], true
}

func (p *jsonScanner) int(dst *int) bool {
	lit, ok := p.digits()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(lit), 10, strconv.IntSize)
	*dst = int(n)
	return err == nil
}

func (p *jsonScanner) uint(dst *uint64) bool {
	lit, ok := p.digits()
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(string(lit), 10, 64)
	*dst = n
	return err == nil
}

// time reads a time string the way encoding/json does, through
// time.Time's UnmarshalJSON.
func (p *jsonScanner) time(t *Task, created bool) bool {
	start := p.i
	if _, ok := p.str(); !ok {
		return false
	}
	dst := &t.UpdatedAt
	if created {
		dst = &t.CreatedAt
	}
	return dst.UnmarshalJSON(p.b[start:p.i]) == nil
}

// AppendSummary appends json.Marshal(NewSummary(t)) for a task ScanTask
// produced: no forge, usage, metadata or refused merges, whose fields it
// leaves out; ok is false if t has any of them. updated is t.UpdatedAt
// as printed, which the caller has formatted already.
func AppendSummary(b []byte, t *Task, updated string) ([]byte, bool) {
	if t.Forge != nil || t.Gate != nil || t.Pool != nil || t.After != nil || t.Usage != nil || t.Hold != nil || t.BudgetUSD != nil || t.Metadata != nil || t.MergeRefused != nil || t.Accept != nil ||
		t.AttemptOf != "" || t.Attempts != nil || t.Pick != nil {
		return b, false
	}
	str := func(key, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = appendJSONString(b, v)
	}
	num := func(key string, v int) {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, int64(v), 10)
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, t.ID)
	str("slug", t.Slug, false)
	str("title", t.Title, false)
	str("status", string(t.Status), false)
	str("substate", t.Substate, true)
	str("category", string(t.Status.Category()), false)
	str("parent", t.Parent, true)
	str("target_branch", t.TargetBranch, true)
	b = append(b, `,"created_at":"`...)
	b = append(AppendUTC(b, t.CreatedAt), '"')
	str("updated_at", updated, false)
	str("created_by", string(t.CreatedBy), true)
	str("outcome", t.Outcome, true)
	str("reason", t.Reason, true)
	if len(t.AllowedPaths) > 0 {
		b = append(b, `,"allowed_paths":[`...)
		for i, path := range t.AllowedPaths {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, path)
		}
		b = append(b, ']')
	}
	num("sessions", t.Sessions)
	str("host", t.Host, true)
	num("turns", t.Turns)
	num("comments", t.Comments)
	return append(b, '}'), true
}

// appendJSONString appends s quoted as encoding/json quotes it: HTML
// characters, control characters, U+2028 and U+2029 escaped, invalid
// UTF-8 replaced.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendUTC appends t.UTC().Format(TimeLayout) without going through
// Format's layout interpreter, which was a fifth of decoding a record.
func AppendUTC(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	hour, minute, sec := t.Clock()
	const digits = "0123456789"
	two := func(b []byte, v int) []byte { return append(b, digits[v/10], digits[v%10]) }
	b = two(b, year/100)
	b = two(b, year%100)
	b = append(b, '-')
	b = two(b, int(month))
	b = append(b, '-')
	b = two(b, day)
	b = append(b, 'T')
	b = two(b, hour)
	b = append(b, ':')
	b = two(b, minute)
	b = append(b, ':')
	b = two(b, sec)
	return append(b, 'Z')
}
