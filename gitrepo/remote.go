package gitrepo

import (
	"fmt"
	"strings"
)

// ValidRemote checks a remote name before it reaches git's argv or a ref
// name: letters, digits, '.', '_' and '-', starting with a letter or
// digit, and no "..". It lives here, below the store and the pool, which
// both name refs after a remote.
func ValidRemote(name string) error {
	ok := name != "" && isAlnum(name[0]) && !strings.Contains(name, "..")
	for i := 1; ok && i < len(name); i++ {
		c := name[i]
		ok = isAlnum(c) || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("invalid remote name %q", name)
	}
	return nil
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
