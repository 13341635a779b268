package demo

import _ "embed"

// demoAgent is the shipped demo agent script, embedded so the demo runs
// from any directory.
//
//go:embed demo-agent.sh
var demoAgent []byte
