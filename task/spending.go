package task

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lazyorch/lazy/machine"
)

// Spending is what lazy cost and the budgets read of a listed task: who
// it is, where it sits in the tree, how it ended, what it spent and its
// own budget. It is a part of the task's Summary, read from the listing
// without decoding the rest (Entry.Spending), which was most of the time
// lazy cost took over a warm list.
type Spending struct {
	ID        string         `json:"id"`
	Slug      string         `json:"slug"`
	Title     string         `json:"title"`
	Status    machine.Status `json:"status"`
	Parent    string         `json:"parent,omitempty"`
	UpdatedAt string         `json:"updated_at"`
	Outcome   string         `json:"outcome,omitempty"`
	Usage     *Usage         `json:"usage,omitempty"`
	BudgetUSD *float64       `json:"budget_usd,omitempty"`
	AttemptOf string         `json:"attempt_of,omitempty"`
	// Attempts is how many attempts the task is a group of.
	Attempts int `json:"-"`
}

// OwnBudget is the task's own budget, as Task.OwnBudget.
func (s *Spending) OwnBudget() (usd float64, ok bool, flag string) { return ownBudget(s.BudgetUSD) }

// TreeParent is the task the spending rolls up to: an attempt's group,
// else its parent.
func (s *Spending) TreeParent() string {
	if s.AttemptOf != "" {
		return s.AttemptOf
	}
	return s.Parent
}

// SpendingOf is the spending part of a summary.
func SpendingOf(s *Summary) Spending {
	return Spending{ID: s.ID, Slug: s.Slug, Title: s.Title, Status: s.Status, Parent: s.Parent, UpdatedAt: s.UpdatedAt,
		Outcome: s.Outcome, Usage: s.Usage, BudgetUSD: s.BudgetUSD, AttemptOf: s.AttemptOf, Attempts: len(s.Attempts)}
}

// Spending reads the entry's spending from its summary JSON: the fields
// it needs are scanned and the rest skipped (the strings the entry
// holds already are shared, not copied), and a summary outside what
// the scan handles (an escaped string, an odd number) is decoded with
// encoding/json instead, so the result is always the one Summary gives
// when the summary decodes (FuzzSpending holds it to that). A field
// Spending does not read is not checked.
func (e *Entry) Spending() (Spending, error) {
	if e.Err != nil {
		return Spending{}, e.Err
	}
	if sp, ok := scanSpending(e.JSON, e); ok {
		return sp, nil
	}
	var s Summary
	if err := json.Unmarshal(e.JSON, &s); err != nil {
		return Spending{}, fmt.Errorf("task %s: decode summary: %w", e.ID, err)
	}
	return SpendingOf(&s), nil
}

// scanSpending is the fast path of Entry.Spending. The strings e holds
// (its id, status, parent and update time, from the listing) are used
// for the values that equal them, so the common record costs one string
// per field it adds (slug, title).
func scanSpending(b []byte, e *Entry) (Spending, bool) {
	var sp Spending
	p := jsonScanner{b: b}
	p.ws()
	if !p.byte('{') {
		return sp, false
	}
	var seen uint32
	p.ws()
	if p.byte('}') {
		return sp, p.end()
	}
	for {
		p.ws()
		key, ok := p.strBytes()
		if !ok {
			return sp, false
		}
		bit := spendingKey(string(key))
		if bit < 0 || seen&(1<<bit) != 0 {
			// A key encoding/json would match to a field without
			// spelling it exactly, or a repeated one: its rules decide.
			return sp, false
		}
		if bit > 0 {
			seen |= 1 << bit
		}
		p.ws()
		if !p.byte(':') {
			return sp, false
		}
		p.ws()
		if p.null() {
			// encoding/json leaves a field alone on null.
		} else {
			switch string(key) {
			case "id":
				sp.ID, ok = p.strAs(e.ID)
			case "slug":
				sp.Slug, ok = p.strAs("")
			case "title":
				sp.Title, ok = p.strAs("")
			case "status":
				var s string
				s, ok = p.strAs(string(e.Status))
				sp.Status = machine.Status(s)
			case "parent":
				sp.Parent, ok = p.strAs(e.Parent)
			case "updated_at":
				sp.UpdatedAt, ok = p.strAs(e.Updated)
			case "outcome":
				sp.Outcome, ok = p.strAs(knownOutcome)
			case "attempt_of":
				sp.AttemptOf, ok = p.strAs("")
			case "attempt_ids":
				sp.Attempts, ok = p.countStrings()
			case "budget_usd":
				var f float64
				if f, ok = p.float(); ok {
					sp.BudgetUSD = &f
				}
			case "usage":
				sp.Usage, ok = p.usage()
			default:
				ok = p.skip(0)
			}
		}
		if !ok {
			return sp, false
		}
		p.ws()
		if p.byte('}') {
			return sp, p.end()
		}
		if !p.byte(',') {
			return sp, false
		}
	}
}

// spendingKeys are the summary keys Spending reads, each with its bit.
var spendingKeys = []string{"", "id", "slug", "title", "status", "parent", "updated_at", "outcome", "attempt_of", "attempt_ids", "budget_usd", "usage"}

// spendingKey is key's bit: 0 for a key Spending skips, -1 for one that
// is not spelled as Spending reads it but that encoding/json, which
// matches keys without regard to case, would read into a field.
func spendingKey(key string) int {
	switch key {
	case "id":
		return 1
	case "slug":
		return 2
	case "title":
		return 3
	case "status":
		return 4
	case "parent":
		return 5
	case "updated_at":
		return 6
	case "outcome":
		return 7
	case "attempt_of":
		return 8
	case "attempt_ids":
		return 9
	case "budget_usd":
		return 10
	case "usage":
		return 11
	}
	// A key in lower-case ASCII equals one of them folded only if it is
	// that key, so only another key is worth folding (encoding/json also
	// folds the Kelvin sign and the long s).
	folded := false
	for i := 0; i < len(key); i++ {
		if c := key[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			folded = true
			break
		}
	}
	if folded {
		for _, k := range spendingKeys[1:] {
			if strings.EqualFold(key, k) {
				return -1
			}
		}
	}
	return 0
}

// strBytes reads a string as str does, without a string of the whole
// record: the bytes between the quotes.
func (p *jsonScanner) strBytes() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	ascii := true
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case c == '"':
			v := p.b[start:p.i]
			p.i++
			return v, ascii || utf8.Valid(v)
		case c == '\\', c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// countStrings reads an array of strings and counts them.
func (p *jsonScanner) countStrings() (int, bool) {
	if !p.byte('[') {
		return 0, false
	}
	p.ws()
	if p.byte(']') {
		return 0, true
	}
	n := 0
	for {
		p.ws()
		if _, ok := p.strBytes(); !ok {
			return 0, false
		}
		n++
		p.ws()
		if p.byte(']') {
			return n, true
		}
		if !p.byte(',') {
			return 0, false
		}
	}
}

// knownOutcome is an outcome most finished tasks share.
const knownOutcome = OutcomeAccepted

// strAs reads a string as str does, returning same (no copy) when the
// value equals it, and a copy of the bytes otherwise.
func (p *jsonScanner) strAs(same string) (string, bool) {
	start := p.i + 1
	if _, ok := p.strBytes(); !ok {
		return "", false
	}
	v := p.b[start : p.i-1]
	if string(v) == same {
		return same, true
	}
	return string(v), true
}

// null reads a JSON null.
func (p *jsonScanner) null() bool {
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// number reads a JSON number literal.
func (p *jsonScanner) number() ([]byte, bool) {
	start := p.i
	p.byte('-')
	d := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if n := p.i - d; n == 0 || (n > 1 && p.b[d] == '0') {
		return nil, false
	}
	if p.byte('.') {
		f := p.i
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
		}
		if p.i == f {
			return nil, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		e := p.i
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
		}
		if p.i == e {
			return nil, false
		}
	}
	return p.b[start:p.i], true
}

// float reads a number as encoding/json reads it into a float64.
func (p *jsonScanner) float() (float64, bool) {
	lit, ok := p.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return f, err == nil
}

// usage reads a usage object of plain figures, held to the same bounds
// Usage.UnmarshalJSON applies; anything else (a flag, an odd figure)
// is left to the slow path, which flags it in the one place that does.
func (p *jsonScanner) usage() (*Usage, bool) {
	if !p.byte('{') {
		return nil, false
	}
	u := &Usage{}
	p.ws()
	if p.byte('}') {
		return u, true
	}
	var seen uint8
	for {
		p.ws()
		key, ok := p.strBytes()
		if !ok {
			return nil, false
		}
		p.ws()
		if !p.byte(':') {
			return nil, false
		}
		p.ws()
		var bit uint8
		switch string(key) {
		case "cost_usd":
			bit = 1
			u.CostUSD, ok = p.float()
		case "input_tokens":
			bit = 2
			ok = p.int64(&u.InputTokens)
		case "cached_input_tokens":
			bit = 4
			ok = p.int64(&u.CachedInputTokens)
		case "output_tokens":
			bit = 8
			ok = p.int64(&u.OutputTokens)
		case "unpriced_turns":
			bit = 16
			ok = p.int64(&u.Unpriced)
		default:
			return nil, false
		}
		if !ok || seen&bit != 0 {
			return nil, false
		}
		seen |= bit
		p.ws()
		if p.byte('}') {
			break
		}
		if !p.byte(',') {
			return nil, false
		}
	}
	if !u.CheckTotal() {
		return nil, false // the slow path says why, in its words
	}
	return u, true
}

func (p *jsonScanner) int64(dst *int64) bool {
	lit, ok := p.digits()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	*dst = n
	return err == nil
}

// maxSkipDepth bounds the nesting skip follows; deeper is left to
// encoding/json.
const maxSkipDepth = 16

// skip passes over one JSON value of any kind, escapes included.
func (p *jsonScanner) skip(depth int) bool {
	if p.i >= len(p.b) || depth > maxSkipDepth {
		return false
	}
	switch c := p.b[p.i]; c {
	case '"':
		p.i++
		for p.i < len(p.b) {
			switch c := p.b[p.i]; {
			case c == '"':
				p.i++
				return true
			case c == '\\':
				if !p.escape() {
					return false
				}
			case c < 0x20:
				return false
			default:
				p.i++
			}
		}
		return false
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		p.i++
		p.ws()
		if p.byte(end) {
			return true
		}
		for {
			p.ws()
			if c == '{' {
				if !p.skip(depth+1) || p.b[p.i-1] != '"' {
					return false
				}
				p.ws()
				if !p.byte(':') {
					return false
				}
				p.ws()
			}
			if !p.skip(depth + 1) {
				return false
			}
			p.ws()
			if p.byte(end) {
				return true
			}
			if !p.byte(',') {
				return false
			}
		}
	case 't':
		return p.lit("true")
	case 'f':
		return p.lit("false")
	case 'n':
		return p.null()
	default:
		_, ok := p.number()
		return ok
	}
}

// escape passes over one escape sequence of a string, as JSON has them.
func (p *jsonScanner) escape() bool {
	if p.i+1 >= len(p.b) {
		return false
	}
	switch p.b[p.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		p.i += 2
		return true
	case 'u':
		if p.i+6 > len(p.b) {
			return false
		}
		for _, c := range p.b[p.i+2 : p.i+6] {
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
				return false
			}
		}
		p.i += 6
		return true
	}
	return false
}

func (p *jsonScanner) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}
