package confine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/proto"
)

// sandboxes are small but cover every network kind, allowlists that
// cover one another (a wildcard over a host) and that do not, and hidden
// and exposed paths.
func sandboxes() []*proto.Sandbox {
	nets := []proto.Sandbox{
		{Network: ""}, {Network: NetworkOn}, {Network: NetworkOff},
		{Network: NetworkAllow, Allow: []string{"api.anthropic.com"}},
		{Network: NetworkAllow, Allow: []string{"*.x.com"}},
		{Network: NetworkAllow, Allow: []string{"api.anthropic.com", "y.x.com"}},
	}
	out := []*proto.Sandbox{nil}
	for _, n := range nets {
		for _, hidden := range [][]string{nil, {"/secret", ".aws"}} {
			for _, expose := range [][]string{nil, {"/opt/tool"}} {
				sb := Clone(&n)
				sb.Hidden, sb.Expose = hidden, expose
				out = append(out, sb)
			}
		}
	}
	return out
}

var modes = []string{"", "plan", "dontAsk", "default", "acceptEdits", "bypassPermissions", "yolo"}

func confinements() []Confinement {
	var out []Confinement
	for _, sb := range sandboxes() {
		for _, m := range modes {
			for _, anyCmd := range []bool{false, true} {
				out = append(out, Confinement{Sandbox: sb, PermissionMode: m, AnyCommand: anyCmd && sb == nil})
			}
		}
	}
	return out
}

// Tightest holds both sides: it is never looser than either, and it
// changes neither.
func TestTightestIsNeverLooserThanEither(t *testing.T) {
	all := confinements()
	for _, a := range all {
		for _, b := range all {
			before := Clone(a.Sandbox)
			m := Tightest(a, b)
			if why := Looser(a, m); len(why) > 0 {
				t.Fatalf("Tightest(%s, %s) = %s is looser than the first: %v", show(a), show(b), show(m), why)
			}
			if why := Looser(b, m); len(why) > 0 {
				t.Fatalf("Tightest(%s, %s) = %s is looser than the second: %v", show(a), show(b), show(m), why)
			}
			if !equalSandbox(before, a.Sandbox) {
				t.Fatal("Tightest changed its argument")
			}
		}
	}
}

// What a caller that is not a human gets is never looser than its
// floor, whatever it asks; asking for nothing gives the floor itself;
// and a refusal for looseness is a *LooserError, told apart from a
// request lazy cannot read.
func TestEffectiveNeverLoosens(t *testing.T) {
	ifAsked := &proto.Sandbox{Network: NetworkOn, Hidden: []string{"/config-hidden"}}
	for _, floor := range confinements() {
		for _, sb := range []string{"", "on", "off"} {
			for _, netw := range []string{"", "on", "off", "api.anthropic.com", "y.x.com", "*.x.com", "evil.com", "*.com"} {
				for _, mode := range []string{"", "plan", "acceptEdits", "bypassPermissions"} {
					req := Request{Sandbox: sb, Network: netw, PermissionMode: mode}
					eff, err := Effective(floor, req, ifAsked)
					var looser *LooserError
					if err != nil && !errors.As(err, &looser) {
						t.Fatalf("%s asking %+v: %v is not a LooserError", show(floor), req, err)
					}
					if err != nil {
						continue
					}
					if why := Looser(floor, eff); len(why) > 0 {
						t.Fatalf("%s asking %+v got %s, looser: %v", show(floor), req, show(eff), why)
					}
					if req.Empty() && len(Looser(eff, floor)) > 0 {
						t.Fatalf("%s asking nothing got %s, which is tighter", show(floor), show(eff))
					}
				}
			}
		}
	}
}

func TestEffectiveRefusesEveryLoosening(t *testing.T) {
	boxed := Confinement{Sandbox: &proto.Sandbox{Network: NetworkAllow, Allow: []string{"api.anthropic.com", "*.github.com"}, Hidden: []string{"/srv/keys"}}, PermissionMode: "default"}
	for _, c := range []struct {
		req  Request
		want string // "" is granted
	}{
		{Request{Sandbox: "off"}, "outside the sandbox"},
		{Request{Network: "on"}, "more open"},
		{Request{Network: "evil.example"}, "evil.example is not in the allowlist"},
		{Request{Network: "*.com"}, "*.com is not in the allowlist"},
		{Request{PermissionMode: "bypassPermissions"}, "looser than default"},
		{Request{PermissionMode: "acceptEdits"}, "looser than default"},
		{Request{Sandbox: "on"}, ""},
		{Request{Network: "off"}, ""},
		{Request{Network: "api.github.com"}, ""},
		{Request{Network: "*.api.github.com,api.anthropic.com"}, ""},
		{Request{PermissionMode: "plan"}, ""},
	} {
		eff, err := Effective(boxed, c.req, nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v refused: %v", c.req, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want a refusal naming %q (got %s)", c.req, err, c.want, show(eff))
		}
	}
	// A granted allowlist is the one asked for, within the floor's.
	eff, err := Effective(boxed, Request{Network: "api.github.com"}, nil)
	if err != nil || eff.Sandbox.Network != NetworkAllow || !slices.Equal(eff.Sandbox.Allow, []string{"api.github.com"}) || !slices.Equal(eff.Sandbox.Hidden, []string{"/srv/keys"}) {
		t.Fatalf("tightened allowlist: %s, %v", show(eff), err)
	}
	for _, bad := range []Request{{Sandbox: "maybe"}, {Network: "http://x/y"}, {Network: "-x"}, {PermissionMode: "yolo"}} {
		_, err := Effective(boxed, bad, nil)
		var looser *LooserError
		if err == nil || errors.As(err, &looser) {
			t.Errorf("%+v: %v, want an error that says what to give", bad, err)
		}
	}
}

// Asking for a sandbox or a network where there is none gives local
// config's sandbox (its hidden paths), tightened as asked; the
// unsandboxed mode does not follow into it.
func TestAskingForTheSandboxUsesTheConfiguredOne(t *testing.T) {
	floor := Confinement{PermissionMode: "acceptEdits", AnyCommand: true}
	ifAsked := &proto.Sandbox{Network: NetworkOn, Hidden: []string{"/srv/keys"}}
	eff, err := Effective(floor, Request{Network: "off"}, ifAsked)
	if err != nil || eff.Sandbox == nil || eff.Sandbox.Network != NetworkOff || !slices.Equal(eff.Sandbox.Hidden, []string{"/srv/keys"}) || eff.PermissionMode != "" || eff.AnyCommand {
		t.Fatalf("network off without a sandbox: %s, %v", show(eff), err)
	}
	if ifAsked.Network != NetworkOn {
		t.Fatal("Effective changed the configured sandbox")
	}
	eff, err = Effective(floor, Request{Sandbox: "on"}, nil)
	if err != nil || eff.Sandbox == nil || eff.Sandbox.Network != NetworkOn {
		t.Fatalf("sandbox on with nothing configured: %s, %v", show(eff), err)
	}
}

func TestLooserNamesEachDimension(t *testing.T) {
	floor := Confinement{Sandbox: &proto.Sandbox{Network: NetworkOff, Hidden: []string{"/srv/keys"}, Expose: []string{"/opt/a"}}, PermissionMode: "default"}
	for _, c := range []struct {
		c    Confinement
		want string
	}{
		{Confinement{AnyCommand: true}, "outside the sandbox"},
		{Confinement{Sandbox: &proto.Sandbox{Network: NetworkOn, Hidden: []string{"/srv/keys/"}}, PermissionMode: "default"}, "network on is more open than network off"},
		{Confinement{Sandbox: &proto.Sandbox{Network: NetworkOff}, PermissionMode: "default"}, "/srv/keys would no longer be hidden"},
		{Confinement{Sandbox: &proto.Sandbox{Network: NetworkOff, Hidden: []string{"/srv/keys"}, Expose: []string{"/home/u"}}, PermissionMode: "default"}, "/home/u would be exposed"},
		{Confinement{Sandbox: &proto.Sandbox{Network: NetworkOff, Hidden: []string{"/srv/keys"}}}, "permission mode the posture's own is looser than default"},
	} {
		if why := strings.Join(Looser(floor, c.c), "; "); !strings.Contains(why, c.want) {
			t.Errorf("%s: %q, want %q", show(c.c), why, c.want)
		}
	}
	// Without the sandbox: the exec agent (any command) is looser than a
	// CLI held to its permissions, and no looser than another exec.
	claude, exec := Of("claude", "", nil), Of("exec", "", nil)
	if why := Looser(claude, exec); len(why) == 0 || !strings.Contains(why[0], "any command") {
		t.Fatalf("exec under claude: %v", why)
	}
	if why := Looser(exec, exec); len(why) > 0 {
		t.Fatalf("exec under exec: %v", why)
	}
	if why := Looser(claude, Of("codex", "", nil)); len(why) > 0 {
		t.Fatalf("codex (its own workspace-write sandbox) under claude: %v", why)
	}
	if why := Looser(claude, Of("claude", "bypassPermissions", nil)); len(why) == 0 {
		t.Fatal("claude in bypassPermissions outside the sandbox is no looser than acceptEdits")
	}
	// In the sandbox any agent may run: bubblewrap bounds it.
	if why := Looser(claude, Of("exec", "", &proto.Sandbox{Network: NetworkOn})); len(why) > 0 {
		t.Fatalf("a sandboxed exec under claude: %v", why)
	}
}

func TestTightestSandbox(t *testing.T) {
	a := &proto.Sandbox{Network: NetworkAllow, Allow: []string{"api.anthropic.com", "*.github.com"}, Hidden: []string{"/a"}, Expose: []string{"/x", "/y"}}
	b := &proto.Sandbox{Network: NetworkAllow, Allow: []string{"api.github.com", "pypi.org"}, Hidden: []string{"/b", "/a/"}, Expose: []string{"/y"}}
	m := TightestSandbox(a, b)
	if m.Network != NetworkAllow || !slices.Equal(m.Allow, []string{"api.github.com"}) || !slices.Equal(m.Hidden, []string{"/a", "/b"}) || !slices.Equal(m.Expose, []string{"/y"}) {
		t.Fatalf("%+v", m)
	}
	if m := TightestSandbox(a, &proto.Sandbox{Network: NetworkAllow, Allow: []string{"pypi.org"}}); m.Network != NetworkOff || len(m.Allow) != 0 {
		t.Fatalf("disjoint allowlists reach nothing: %+v", m)
	}
	if m := TightestSandbox(a, &proto.Sandbox{Network: NetworkOn}); m.Network != NetworkAllow || len(m.Allow) != 2 {
		t.Fatalf("an allowlist against on: %+v", m)
	}
	if TightestSandbox(nil, nil) != nil {
		t.Fatal("two unsandboxed sessions made a sandbox")
	}
	if m := TightestSandbox(nil, b); m == b || !equalSandbox(m, b) {
		t.Fatalf("the one sandbox, copied: %+v", m)
	}
}

func TestHostsAndCoverage(t *testing.T) {
	allow := []string{"api.anthropic.com", "*.github.com:443"}
	for host, want := range map[string]bool{"api.anthropic.com": true, "API.Anthropic.com.": true, "x.github.com": true, "github.com": false, "evil.com": false} {
		if HostAllowed(allow, host) != want {
			t.Errorf("HostAllowed %s != %v", host, want)
		}
	}
	for entry, want := range map[string]bool{"api.anthropic.com": true, "a.b.github.com": true, "*.api.github.com": true, "*.github.com": true, "*.com": false, "*.anthropic.com": false} {
		if Covers(allow, entry) != want {
			t.Errorf("Covers %s != %v", entry, want)
		}
	}
	for _, v := range []string{"on", "off", "a.com, *.b.com", "a.com b.com"} {
		if _, _, err := ParseNetwork(v); err != nil {
			t.Errorf("ParseNetwork %q: %v", v, err)
		}
	}
	for _, v := range []string{"https://a.com", "user@a.com", "-oProxy", " , "} {
		if _, _, err := ParseNetwork(v); err == nil {
			t.Errorf("ParseNetwork %q accepted", v)
		}
	}
}

func show(c Confinement) string {
	var b strings.Builder
	if c.Sandbox == nil {
		b.WriteString("unsandboxed")
	} else {
		b.WriteString("sandbox(" + c.Sandbox.Network + " " + strings.Join(c.Sandbox.Allow, ",") + " hide " + strings.Join(c.Sandbox.Hidden, ",") + " expose " + strings.Join(c.Sandbox.Expose, ",") + ")")
	}
	b.WriteString(" mode " + c.PermissionMode)
	if c.AnyCommand {
		b.WriteString(" any-command")
	}
	return b.String()
}

func equalSandbox(a, b *proto.Sandbox) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Network == b.Network && slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Hidden, b.Hidden) && slices.Equal(a.Expose, b.Expose)
}
