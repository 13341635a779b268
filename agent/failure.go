// Package agent holds what lazy knows about the agent CLIs it drives. This
// file is the shared failure taxonomy and the classifiers that map each
// CLI's error dialect onto it (spec: "Agent Failure Classification").
package agent

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Class is a failure's kind, which decides how lazy responds to it.
type Class string

// The shared taxonomy. A classifier that does not recognise a failure
// returns Unknown rather than guessing: a wrong fatal class blocks a task
// that would have recovered, the more expensive mistake.
const (
	// TransientOverload: the provider is overloaded or rate limiting
	// (529, 429, usage windows). It clears by itself.
	TransientOverload Class = "transient_overload"
	// TransientUnreachable: the API or a local proxy cannot be reached.
	// It may heal, but a proxy that never returns must not spin forever.
	TransientUnreachable Class = "transient_unreachable"
	// FatalAuth: credentials are missing, expired, revoked, or the
	// account has no quota left. Never clears without a human.
	FatalAuth Class = "fatal_auth"
	// Budget: the run stopped because it reached the budget lazy gave
	// it (Claude's --max-budget-usd). Not a failure of the agent: the
	// task parks for a human to raise the budget, and nothing retries.
	Budget Class = "budget"
	// ResumeRefused: the CLI refused to resume the session lazy named
	// (Claude's "No conversation found with session ID", Codex's "no
	// rollout found for thread id"): the conversation is not on this
	// machine, or not under this worktree. Retrying the same resume
	// cannot help; the supervisor starts a new session at once instead.
	ResumeRefused Class = "resume_refused"
	// Unknown: not recognised. Diagnosis only; the crash-loop detector
	// bounds its retries.
	Unknown Class = "unknown"
)

// Fatal reports whether the class stops retrying at once.
func (c Class) Fatal() bool { return strings.HasPrefix(string(c), "fatal_") }

// Transient reports whether the class is expected to clear by itself.
func (c Class) Transient() bool { return strings.HasPrefix(string(c), "transient_") }

// Failure is a classified agent failure.
type Failure struct {
	Class  Class
	Reason string // the snippet that decided the class, for humans
	// ResetAt is when the agent said the limit lifts (zero if it did not).
	ResetAt time.Time
}

// Signals is what a run left behind to classify: structured fields the
// adapter parsed from the event stream, and raw text.
type Signals struct {
	APIErrorStatus  int    // claude result.api_error_status
	AssistantError  string // claude assistant.error
	RateLimitStatus string // claude rate_limit_event status
	RateLimitReset  int64  // claude rate_limit_event resetsAt (unix seconds)
	Subtype         string // claude result subtype (error_max_budget_usd, ...)
	APIError        string // claude api_error (connection_failed, ...)
	Text            string // result text, error events and stderr, joined
	ExitCode        int
}

// lazyRE compiles its pattern on first use: every lazy process links the
// classifiers, and only supervisors run them.
type lazyRE struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

func lazyRegexp(src string) *lazyRE { return &lazyRE{src: src} }

func (l *lazyRE) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.src) })
	return l.re
}

func (l *lazyRE) MatchString(s string) bool            { return l.get().MatchString(s) }
func (l *lazyRE) FindString(s string) string           { return l.get().FindString(s) }
func (l *lazyRE) FindStringSubmatch(s string) []string { return l.get().FindStringSubmatch(s) }

// commonText matches signals shared by every CLI: HTTP statuses and
// socket errors. Order matters: the first match wins.
var commonText = []struct {
	re    *lazyRE
	class Class
}{
	{lazyRegexp(`(?i)(status|error|http)[^\n]{0,20}\b529\b|overloaded_error|\boverloaded\b`), TransientOverload},
	{lazyRegexp(`(?i)(status|error|http)[^\n]{0,20}\b429\b|rate_limit_error|rate limit|too many requests`), TransientOverload},
	// 500/502/503: "a server-side issue ... usually temporary", so it
	// heals like an overload.
	{lazyRegexp(`(?i)(status|error|http)[^\n]{0,20}\b50[023]\b|internal server error|bad gateway|service unavailable`), TransientOverload},
	{lazyRegexp(`(?i)connection refused|connectionrefused|econnrefused|connection error|connection failed|error sending request|unable to connect|econnreset|etimedout|network is unreachable|getaddrinfo|enotfound|failed to lookup address|dns error|waiting for network`), TransientUnreachable},
	{lazyRegexp(`(?i)\b401\b[^\n]*(unauthori[sz]ed|authentication)|authentication_error|\b403\b[^\n]*(revoked|forbidden)`), FatalAuth},
}

// classifyCommon applies the shared signals to text.
func classifyCommon(text string) (Failure, bool) {
	for _, c := range commonText {
		if m := c.re.FindString(text); m != "" {
			return Failure{Class: c.class, Reason: snippet(text, m)}, true
		}
	}
	return Failure{}, false
}

// snippet returns the line of text that contains match, trimmed and
// bounded, so the recorded reason is readable.
func snippet(text, match string) string {
	i := strings.Index(text, match)
	if i < 0 {
		return bounded(text)
	}
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := strings.IndexByte(text[i:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += i
	}
	return bounded(strings.TrimSpace(text[start:end]))
}

// maxReason bounds a recorded failure reason.
const maxReason = 200

func bounded(s string) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > maxReason {
		return string(r[:maxReason-1]) + "…"
	}
	return string(r)
}

var (
	claudeAuth = lazyRegexp(`(?i)invalid api key|missing api key|not logged in|please run /login|login expired|oauth token (has been )?revoked|credit balance is too low|does not have access to claude|does not have access`)
	// "Claude AI usage limit reached|1767225600"
	claudeUsageTS = lazyRegexp(`(?i)usage limit reached\|(\d{9,12})`)
	claudeLimit   = lazyRegexp(`(?i)usage limit reached|you've hit your limit|you have hit your limit`)
	// A resume of a session this machine's Claude does not have (another
	// machine's, or one kept under another worktree), which must not
	// read as auth; and an id Claude does not take for one.
	claudeNoSession = lazyRegexp(`(?i)no conversation found with session id[^\n]*|--resume requires a valid session id[^\n]*`)
)

// ClassifyClaude classifies a Claude Code failure: structured fields
// first, then Claude's own dialect, then the shared signals.
func ClassifyClaude(s Signals) Failure {
	if s.Subtype == "error_max_budget_usd" {
		return Failure{Class: Budget, Reason: reasonOr(s.Text, "reached the budget lazy gave it (--max-budget-usd)")}
	}
	switch s.APIErrorStatus {
	case 500, 502, 503:
		return Failure{Class: TransientOverload, Reason: reasonOr(s.Text, "API error "+strconv.Itoa(s.APIErrorStatus)+" (server error)")}
	case 529:
		return Failure{Class: TransientOverload, Reason: reasonOr(s.Text, "API error 529 (overloaded)")}
	case 429:
		return withReset(Failure{Class: TransientOverload, Reason: reasonOr(s.Text, "API error 429 (rate limited)")}, s)
	case 401, 403:
		if claudeAuth.MatchString(s.Text) || strings.Contains(strings.ToLower(s.Text), "authentication") || strings.Contains(strings.ToLower(s.Text), "revoked") {
			return Failure{Class: FatalAuth, Reason: reasonOr(s.Text, "API error "+strconv.Itoa(s.APIErrorStatus))}
		}
	}
	switch s.AssistantError {
	case "authentication_failed", "billing_error":
		return Failure{Class: FatalAuth, Reason: reasonOr(s.Text, "assistant error: "+s.AssistantError)}
	case "rate_limit":
		return withReset(Failure{Class: TransientOverload, Reason: reasonOr(s.Text, "assistant error: rate_limit")}, s)
	}
	if s.APIError == "connection_failed" {
		return Failure{Class: TransientUnreachable, Reason: reasonOr(s.Text, "cannot connect to the API")}
	}
	if s.RateLimitStatus == "rejected" {
		return withReset(Failure{Class: TransientOverload, Reason: reasonOr(s.Text, "rate limit rejected")}, s)
	}
	text := s.Text
	if m := claudeNoSession.FindString(text); m != "" {
		return Failure{Class: ResumeRefused, Reason: snippet(text, m)}
	}
	if m := claudeAuth.FindString(text); m != "" {
		return Failure{Class: FatalAuth, Reason: snippet(text, m)}
	}
	if m := claudeUsageTS.FindStringSubmatch(text); m != nil {
		f := Failure{Class: TransientOverload, Reason: snippet(text, m[0])}
		if ts, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			f.ResetAt = time.Unix(ts, 0).UTC()
		}
		return f
	}
	if m := claudeLimit.FindString(text); m != "" {
		// "resets 1pm (Europe/Lisbon)": a self-healing window. The time
		// is left to the retry ladder rather than parsed from a locale.
		return withReset(Failure{Class: TransientOverload, Reason: snippet(text, m)}, s)
	}
	if f, ok := classifyCommon(text); ok {
		return withReset(f, s)
	}
	return Failure{Class: Unknown, Reason: bounded(firstLine(text))}
}

var (
	codexLimit = lazyRegexp(`(?i)you(?:'|’)ve hit your usage limit|usage limit`)
	// "... or try again at 6:10 AM." (today) or "... try again at Dec
	// 7th, 2026 6:10 AM." (a later day), in the machine's local time.
	codexTryAgain = lazyRegexp(`(?i)try again at (?:([a-z]{3}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}):(\d{2}) ([ap]m)`)
	codexAuth     = lazyRegexp(`(?i)unexpected status 401|unauthorized|not logged in|please log in|invalid api key`)
	// lazy's MCP server is required (MCPFlags): when it cannot start,
	// Codex refuses to start the thread. The server is lazy's local
	// proxy to its daemon, so this is the unreachable-proxy class.
	codexMCPStart = lazyRegexp(`(?i)required MCP servers failed to initialize`)
	// `codex exec resume <id>` of a thread whose rollout this CODEX_HOME
	// does not hold: "Error: thread/resume: thread/resume failed: no
	// rollout found for thread id <id> (code -32600)".
	// Only these words: a required MCP server that fails during a
	// resume also ends in "thread/resume failed".
	codexNoSession = lazyRegexp(`(?i)no rollout found for thread id[^\n]*`)
)

// ClassifyCodex classifies a Codex CLI failure from its error events and
// stderr.
func ClassifyCodex(s Signals) Failure {
	text := s.Text
	if m := codexLimit.FindString(text); m != "" {
		return Failure{Class: TransientOverload, Reason: snippet(text, m), ResetAt: CodexResetAt(text, time.Now())}
	}
	if m := codexAuth.FindString(text); m != "" {
		return Failure{Class: FatalAuth, Reason: snippet(text, m)}
	}
	if m := codexMCPStart.FindString(text); m != "" {
		return Failure{Class: TransientUnreachable, Reason: snippet(text, m)}
	}
	if m := codexNoSession.FindString(text); m != "" {
		return Failure{Class: ResumeRefused, Reason: snippet(text, m)}
	}
	if f, ok := classifyCommon(text); ok {
		return f
	}
	return Failure{Class: Unknown, Reason: bounded(firstLine(text))}
}

// CodexResetAt reads when a Codex usage limit resets from its message,
// as of now (zero if it names no time). Codex prints minutes in local
// time, so the true reset lies within the minute after: the minute is
// added, and a time of day already past by more than that is tomorrow's.
func CodexResetAt(text string, now time.Time) time.Time {
	m := codexTryAgain.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}
	}
	hour, _ := strconv.Atoi(m[4])
	minute, _ := strconv.Atoi(m[5])
	if hour < 1 || hour > 12 || minute > 59 {
		return time.Time{}
	}
	hour %= 12
	if strings.EqualFold(m[6], "pm") {
		hour += 12
	}
	loc := now.Location()
	y, mo, d := now.Date()
	if m[1] != "" {
		when, err := time.ParseInLocation("Jan 2 2006", m[1][:1]+strings.ToLower(m[1][1:])+" "+m[2]+" "+m[3], loc)
		if err != nil {
			return time.Time{}
		}
		y, mo, d = when.Date()
	}
	at := time.Date(y, mo, d, hour, minute, 0, 0, loc).Add(time.Minute)
	if m[1] == "" && at.Before(now.Add(-time.Minute)) {
		at = at.AddDate(0, 0, 1)
	}
	return at.UTC()
}

// ClassifyExec classifies a failure of an arbitrary command: only the
// shared signals apply, since lazy knows nothing of its dialect.
func ClassifyExec(s Signals) Failure {
	if f, ok := classifyCommon(s.Text); ok {
		return f
	}
	return Failure{Class: Unknown, Reason: bounded(firstLine(s.Text))}
}

func withReset(f Failure, s Signals) Failure {
	if f.ResetAt.IsZero() && s.RateLimitReset > 0 {
		f.ResetAt = time.Unix(s.RateLimitReset, 0).UTC()
	}
	return f
}

func reasonOr(text, def string) string {
	if t := firstLine(text); t != "" {
		return bounded(t)
	}
	return def
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// maxProgress caps a progress line (spec: 120 characters, whitespace
// collapsed).
const maxProgress = 120

func progressLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxProgress {
		return string(r[:maxProgress-1]) + "…"
	}
	return s
}
