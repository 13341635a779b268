package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/proto"
)

// FromConfig reads lazy.sandbox (off or on; override, from start
// --sandbox, wins), lazy.sandbox.network, and the multi-valued
// lazy.sandbox.hide and lazy.sandbox.expose. nil means no sandbox.
func FromConfig(cfg *gitrepo.Config, override string) (*proto.Sandbox, error) {
	mode := override
	if mode == "" {
		mode, _ = cfg.Get("lazy.sandbox")
	}
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "", "off", "false", "no":
		return nil, nil
	case "on", "true", "yes":
	default:
		return nil, configkeys.Invalid("lazy.sandbox", mode, "is not on or off")
	}
	sb := &proto.Sandbox{Network: "on"}
	if v, ok := cfg.Get("lazy.sandbox.network"); ok && strings.TrimSpace(v) != "" {
		network, hosts, err := ParseNetworkSetting(v)
		if err != nil {
			return nil, err
		}
		sb.Network, sb.Allow = network, hosts
	}
	for _, key := range []string{"lazy.sandbox.hide", "lazy.sandbox.expose"} {
		for _, p := range cfg.All(key) {
			if key == "lazy.sandbox.expose" {
				if err := CheckExposed(p); err != nil {
					return nil, err
				}
			}
			if key == "lazy.sandbox.hide" {
				// ~/ is $HOME, as the README's examples write it; git
				// config does not expand it.
				sb.Hidden = append(sb.Hidden, strings.TrimPrefix(p, "~/"))
			} else {
				sb.Expose = append(sb.Expose, filepath.Clean(p))
			}
		}
	}
	return sb, nil
}

// ParseNetworkSetting reads a lazy.sandbox.network value: on, off, or
// the hosts a sandboxed agent may reach (network "allow"), which it
// reaches through the supervisor's allowlist proxy. The reading is
// confine's, the same as MCP lazy_start's network.
func ParseNetworkSetting(v string) (network string, hosts []string, err error) {
	network, hosts, err = confine.ParseNetwork(v)
	if err != nil {
		return "", nil, fmt.Errorf("git config lazy.sandbox.network: %w", err)
	}
	return network, hosts, nil
}

// CheckExposed refuses a lazy.sandbox.expose value that is not an
// absolute path.
func CheckExposed(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("git config lazy.sandbox.expose = %q is not an absolute path; give one such as /opt/tools", p)
	}
	return nil
}
