package gitrepo

import (
	"fmt"
	"strings"
)

// ValidRefName accepts the ref names both implementations serve: under
// refs/, and well formed as git check-ref-format has them, so that no
// name reaches git's argv as an option or a path outside the refs.
func ValidRefName(name string) error {
	if !strings.HasPrefix(name, "refs/") || len(name) > 1024 {
		return fmt.Errorf("%q is not a ref name lazy uses (refs/...)", truncate(name, 80))
	}
	if strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") ||
		strings.Contains(name, "//") || strings.Contains(name, "@{") || strings.Contains(name, "/.") {
		return fmt.Errorf("%q is not a well-formed ref name", truncate(name, 80))
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return fmt.Errorf("%q is not a well-formed ref name", truncate(name, 80))
		}
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasSuffix(part, ".lock") {
			return fmt.Errorf("%q is not a well-formed ref name", truncate(name, 80))
		}
	}
	return nil
}

// ValidRefPrefix accepts a prefix to list refs by: a well-formed name
// followed by "/".
func ValidRefPrefix(prefix string) error {
	if !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("ref prefix %q does not end in /", truncate(prefix, 80))
	}
	return ValidRefName(strings.TrimSuffix(prefix, "/"))
}
