// Package confine is how confined an agent session runs, and the one rule
// for the work an agent starts (a subtask, an attempt, a handoff, a
// command given over MCP, a gate run for its task): at least as confined
// as the agent's own session, in every dimension (the sandbox, its
// network, the paths it hides and exposes, the permission posture),
// tighter when the agent asks for it, never looser. Only a human loosens
// confinement, on the command line.
//
// It is pure: the confinement of a session comes from this machine's own
// record of it (internal/owned, written when the session started), never
// from a task record, which a remote can write; callers gather it and
// apply what this package decides.
package confine

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/proto"
)

// Network policies of a sandbox (proto.Sandbox.Network).
const (
	NetworkOn    = "on"    // the host's network
	NetworkAllow = "allow" // only the allowlist, through lazy's proxy
	NetworkOff   = "off"   // loopback only
)

// Confinement is how one session's turns run.
type Confinement struct {
	// Sandbox is the bubblewrap policy (nil: no sandbox).
	Sandbox *proto.Sandbox
	// PermissionMode is Claude Code's mode for work turns ("" for the
	// posture's own; see agent.ModeLooseness).
	PermissionMode string
	// AnyCommand says the agent runs any command as the user outside a
	// sandbox: the exec agent, or Claude in bypassPermissions
	// (agent.RunsAnyCommand). Local config alone sets no such bound, so a
	// confinement that only config decided has it true.
	AnyCommand bool
}

// Of is the confinement of a session whose agent is agentName, in mode,
// sandboxed by sb (nil: not sandboxed).
func Of(agentName, mode string, sb *proto.Sandbox) Confinement {
	return Confinement{Sandbox: sb, PermissionMode: mode, AnyCommand: agent.RunsAnyCommand(agentName, mode, sb != nil)}
}

// Sandboxed reports whether c runs under bubblewrap.
func (c Confinement) Sandboxed() bool { return c.Sandbox != nil }

// Tightest is the confinement that holds a and b both: the sandbox of
// either (a network as closed as the tighter, an allowlist of what both
// allow, every path either hides, only what both expose), the tighter
// permission mode, and any command only where both run any command.
func Tightest(a, b Confinement) Confinement {
	out := Confinement{Sandbox: TightestSandbox(a.Sandbox, b.Sandbox)}
	switch {
	case a.Sandboxed() != b.Sandboxed():
		// The sandbox bounds a sandboxed session, whatever its mode; an
		// unsandboxed session's mode says nothing about one inside it.
		if a.Sandboxed() {
			out.PermissionMode = a.PermissionMode
		} else {
			out.PermissionMode = b.PermissionMode
		}
	case agent.ModeLooseness(b.PermissionMode, b.Sandboxed()) < agent.ModeLooseness(a.PermissionMode, a.Sandboxed()):
		out.PermissionMode = b.PermissionMode
	default:
		out.PermissionMode = a.PermissionMode
	}
	out.AnyCommand = !out.Sandboxed() && a.AnyCommand && b.AnyCommand
	return out
}

// TightestSandbox is the sandbox that holds a and b both (nil when
// neither is one). The result shares nothing with a or b.
func TightestSandbox(a, b *proto.Sandbox) *proto.Sandbox {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return Clone(b)
	case b == nil:
		return Clone(a)
	}
	out := &proto.Sandbox{Network: network(a)}
	switch na, nb := networkRank(a), networkRank(b); {
	case nb > na:
		out.Network, out.Allow = network(b), slices.Clone(b.Allow)
	case na > nb:
		out.Allow = slices.Clone(a.Allow)
	case out.Network == NetworkAllow:
		out.Allow = commonHosts(a.Allow, b.Allow)
	}
	if out.Network == NetworkAllow && len(out.Allow) == 0 {
		out.Network, out.Allow = NetworkOff, nil // an empty allowlist reaches nothing
	}
	out.Hidden = slices.Clone(a.Hidden)
	for _, h := range b.Hidden {
		if !containsPath(out.Hidden, h) {
			out.Hidden = append(out.Hidden, h)
		}
	}
	for _, e := range a.Expose {
		if containsPath(b.Expose, e) {
			out.Expose = append(out.Expose, e)
		}
	}
	return out
}

// Clone copies sb.
func Clone(sb *proto.Sandbox) *proto.Sandbox {
	if sb == nil {
		return nil
	}
	return &proto.Sandbox{Network: sb.Network, Allow: slices.Clone(sb.Allow), Hidden: slices.Clone(sb.Hidden), Expose: slices.Clone(sb.Expose)}
}

// Looser says, one phrase each, how c is less confined than floor
// (nothing: c is at least as confined).
func Looser(floor, c Confinement) []string {
	var why []string
	switch {
	case floor.Sandboxed() && !c.Sandboxed():
		why = append(why, "it would run outside the sandbox")
	case floor.Sandboxed():
		why = append(why, looserSandbox(floor.Sandbox, c.Sandbox)...)
	case !c.Sandboxed() && c.AnyCommand && !floor.AnyCommand:
		why = append(why, "it would run any command as you outside the sandbox (the exec agent, or bypassPermissions), where the session it comes from is held to its CLI's permissions")
	}
	if floor.Sandboxed() == c.Sandboxed() && agent.ModeLooseness(c.PermissionMode, c.Sandboxed()) > agent.ModeLooseness(floor.PermissionMode, floor.Sandboxed()) {
		why = append(why, fmt.Sprintf("permission mode %s is looser than %s", modeName(c.PermissionMode), modeName(floor.PermissionMode)))
	}
	return why
}

// looserSandbox is how sandbox c is less confined than floor.
func looserSandbox(floor, c *proto.Sandbox) []string {
	var why []string
	switch nf, nc := networkRank(floor), networkRank(c); {
	case nc < nf:
		why = append(why, fmt.Sprintf("%s is more open than %s", describeNetwork(c), describeNetwork(floor)))
	case nc == nf && network(c) == NetworkAllow:
		for _, h := range c.Allow {
			if !Covers(floor.Allow, h) {
				why = append(why, fmt.Sprintf("network host %s is not in the allowlist (%s)", h, strings.Join(floor.Allow, ",")))
			}
		}
	}
	for _, h := range floor.Hidden {
		if !containsPath(c.Hidden, h) {
			why = append(why, fmt.Sprintf("%s would no longer be hidden", h))
		}
	}
	for _, e := range c.Expose {
		if !containsPath(floor.Expose, e) {
			why = append(why, fmt.Sprintf("%s would be exposed", e))
		}
	}
	return why
}

// Request is what a caller asks of the confinement of work it starts;
// "" leaves a dimension as it is.
type Request struct {
	// Sandbox is "on" or "off".
	Sandbox string
	// Network is "on", "off" or hosts (api.anthropic.com,*.github.com);
	// asking for a network asks for the sandbox, where networks are.
	Network string
	// PermissionMode is one of Claude Code's modes.
	PermissionMode string
}

// Empty reports whether r asks for nothing.
func (r Request) Empty() bool { return r == Request{} }

// LooserError is a request for less confinement than the work gets
// anyway.
type LooserError struct {
	Why []string
}

func (e *LooserError) Error() string {
	return "it would run less confined than it must (" + strings.Join(e.Why, "; ") + ")"
}

// Effective is floor made tighter by what req asks: the confinement of
// work a caller starts, floor being the least it gets (the tightest of
// what local config gives it and of the session of the agent that asks).
// ifAsked is the sandbox local config gives work that asks for one. A
// request for anything looser than floor is a *LooserError; a request
// lazy cannot read, an error that says what to give.
func Effective(floor Confinement, req Request, ifAsked *proto.Sandbox) (Confinement, error) {
	c := Confinement{Sandbox: Clone(floor.Sandbox), PermissionMode: floor.PermissionMode, AnyCommand: floor.AnyCommand}
	var why []string
	switch strings.TrimSpace(req.Sandbox) {
	case "":
	case "off":
		if floor.Sandboxed() {
			why = append(why, "it would run outside the sandbox")
		}
	case "on":
		c = sandboxed(c, ifAsked)
	default:
		return c, fmt.Errorf("sandbox %q is not on or off", req.Sandbox)
	}
	if v := strings.TrimSpace(req.Network); v != "" {
		netw, allow, err := ParseNetwork(v)
		if err != nil {
			return c, err
		}
		c = sandboxed(c, ifAsked)
		want := Clone(c.Sandbox)
		want.Network, want.Allow = netw, allow
		if w := looserSandbox(c.Sandbox, want); len(w) > 0 {
			why = append(why, w...)
		} else {
			c.Sandbox = TightestSandbox(c.Sandbox, want)
		}
	}
	if m := strings.TrimSpace(req.PermissionMode); m != "" {
		if !agent.KnownMode(m) {
			return c, fmt.Errorf("permission mode %q is not one of %s, %s, %s, %s or %s", m, agent.ModePlan, agent.ModeDontAsk, agent.ModeDefault, agent.ModeAcceptEdits, agent.ModeBypass)
		}
		if agent.ModeLooseness(m, c.Sandboxed()) > agent.ModeLooseness(c.PermissionMode, c.Sandboxed()) {
			why = append(why, fmt.Sprintf("permission mode %s is looser than %s", m, modeName(c.PermissionMode)))
		} else {
			c.PermissionMode = m
		}
	}
	if len(why) > 0 {
		return c, &LooserError{Why: why}
	}
	return c, nil
}

// sandboxed is c in a sandbox: the one it has, or ifAsked (the host's
// network when config gives none).
func sandboxed(c Confinement, ifAsked *proto.Sandbox) Confinement {
	if c.Sandbox != nil {
		return c
	}
	c.Sandbox = Clone(ifAsked)
	if c.Sandbox == nil {
		c.Sandbox = &proto.Sandbox{Network: NetworkOn}
	}
	// An unsandboxed mode says nothing about the sandbox's: the
	// posture's own applies there.
	c.PermissionMode, c.AnyCommand = "", false
	return c
}

// ParseNetwork reads a network policy as lazy.sandbox.network and MCP
// take it: on, off, or hosts separated by commas or spaces (the
// allowlist), each a host name or *.domain.
func ParseNetwork(v string) (netw string, allow []string, err error) {
	switch v = strings.TrimSpace(v); v {
	case NetworkOn, NetworkOff:
		return v, nil, nil
	}
	hosts := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
	for _, h := range hosts {
		if strings.ContainsAny(h, "/@?#") || strings.HasPrefix(h, "-") {
			return "", nil, fmt.Errorf("%q is not a host name; give on, off, or hosts such as api.anthropic.com,*.github.com", h)
		}
	}
	if len(hosts) == 0 {
		return "", nil, fmt.Errorf("%q names no host; give on, off, or hosts such as api.anthropic.com,*.github.com", v)
	}
	return NetworkAllow, hosts, nil
}

// HostAllowed reports whether host (no port) matches the allowlist: an
// exact name, or "*.example.com" for its subdomains. The sandbox's egress
// proxy admits exactly these.
func HostAllowed(allow []string, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, a := range allow {
		a = allowEntry(a)
		switch {
		case a == "":
		case strings.HasPrefix(a, "*."):
			if strings.HasSuffix(host, a[1:]) {
				return true
			}
		case a == host:
			return true
		}
	}
	return false
}

// Covers reports whether every host entry matches is admitted by allow:
// a name HostAllowed admits, or a wildcard under one of allow's.
func Covers(allow []string, entry string) bool {
	entry = allowEntry(entry)
	if !strings.HasPrefix(entry, "*.") {
		return HostAllowed(allow, entry)
	}
	for _, a := range allow {
		if a = allowEntry(a); strings.HasPrefix(a, "*.") && strings.HasSuffix(entry[1:], a[1:]) {
			return true
		}
	}
	return false
}

// allowEntry is an allowlist entry as it is matched: lower case, without
// a port.
func allowEntry(a string) string {
	a = strings.ToLower(strings.TrimSpace(a))
	if h, _, err := net.SplitHostPort(a); err == nil {
		a = h
	}
	return a
}

// commonHosts is what both allowlists admit: each entry of one that the
// other covers.
func commonHosts(a, b []string) []string {
	var out []string
	add := func(h string) {
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	for _, h := range a {
		if Covers(b, h) {
			add(h)
		}
	}
	for _, h := range b {
		if Covers(a, h) {
			add(h)
		}
	}
	return out
}

func network(sb *proto.Sandbox) string {
	if sb.Network == "" {
		return NetworkOn
	}
	return sb.Network
}

// networkRank orders network policies from the most open: on, an
// allowlist, off. A policy lazy does not know ranks as off: nothing gets
// out through it.
func networkRank(sb *proto.Sandbox) int {
	switch network(sb) {
	case NetworkOn:
		return 0
	case NetworkAllow:
		return 1
	}
	return 2
}

func describeNetwork(sb *proto.Sandbox) string {
	if network(sb) == NetworkAllow {
		return "the network allowlist " + strings.Join(sb.Allow, ",")
	}
	return "network " + network(sb)
}

func modeName(m string) string {
	if m == "" {
		return "the posture's own"
	}
	return m
}

// containsPath reports whether list holds p, compared as clean paths.
func containsPath(list []string, p string) bool {
	p = filepath.Clean(p)
	for _, q := range list {
		if filepath.Clean(q) == p {
			return true
		}
	}
	return false
}
