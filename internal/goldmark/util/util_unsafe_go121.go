// Code generated from github.com/yuin/goldmark v1.8.7 by lazy's internal/goldmark/fork_test.go; DO NOT EDIT.

//go:build !appengine && !js && go1.21
// +build !appengine,!js,go1.21

package util

import (
	"unsafe"
)

// BytesToReadOnlyString returns a string converted from given bytes.
func BytesToReadOnlyString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// StringToReadOnlyBytes returns bytes converted from given string.
func StringToReadOnlyBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
