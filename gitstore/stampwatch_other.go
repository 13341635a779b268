//go:build !linux

package gitstore

import "errors"

// newDirWatcher has no watcher to offer here: a StampWatcher stats.
func newDirWatcher() (dirWatcher, error) {
	return nil, errors.New("no directory watcher on this platform")
}
