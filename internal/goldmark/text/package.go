// Code generated from github.com/yuin/goldmark v1.8.7 by lazy's internal/goldmark/fork_test.go; DO NOT EDIT.

// Package text provides functionalities to manipulate texts.
package text
