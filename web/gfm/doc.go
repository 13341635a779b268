// Package gfm provides goldmark extenders for three GitHub Flavored
// Markdown extensions: Strikethrough, Table and TaskList.
//
// It is a port of the files of the same names in
// github.com/yuin/goldmark/extension at v1.7.13, and upstream stays the
// source of truth: to re-sync after a goldmark upgrade, diff those files
// against this package's and carry the changes over. The tests compare
// the port with upstream as go.mod pins it, on goldmark's own test files
// among other input, so an upgrade that changes upstream's output fails
// them until the port follows.
//
// The port exists for start-up cost only. Importing package extension
// runs its init, which compiles linkify.go's two URL regexps (with
// {1,256} repeats): about 0.7 ms of CPU, 264 KB and 2049 allocations in
// every lazy process, lazy show or lazy create as much as lazy web,
// although lazy never uses Linkify. This package compiles no regexp: the
// ones table.go and tasklist.go matched with are plain functions here
// (tableDelimAlignment, matchTaskList), tested against those regexps.
// Apart from that and the package name, the files differ from upstream
// only where the linter asked. The node types are upstream's, from
// github.com/yuin/goldmark/extension/ast, which does not import package
// extension.
//
// A port rather than a fork of the module: a fork would be all of
// goldmark to keep current, where this is three files of one package.
package gfm
