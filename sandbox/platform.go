package sandbox

import "fmt"

// platformRefusal says why the sandbox cannot run on the operating system
// goos (runtime.GOOS), or returns nil on Linux. The sandbox is bubblewrap,
// which needs Linux namespaces: elsewhere lazy refuses lazy.sandbox=on in
// one sentence rather than suggesting a package that does not exist there.
func platformRefusal(goos string) error {
	switch goos {
	case "linux":
		return nil
	case "darwin":
		return fmt.Errorf("%w: the sandbox needs Linux (bubblewrap); on macOS run lazy inside a Linux VM or container (for example Lima, OrbStack or Docker) to sandbox agents, or set lazy.sandbox to off", ErrUnavailable)
	case "windows":
		return fmt.Errorf("%w: the sandbox needs Linux (bubblewrap); on Windows run lazy in WSL, or set lazy.sandbox to off", ErrUnavailable)
	default:
		return fmt.Errorf("%w: the sandbox needs Linux (bubblewrap), and this is %s; run lazy on Linux to sandbox agents, or set lazy.sandbox to off", ErrUnavailable, goos)
	}
}
