package main

// DemoCmd runs the tour.
type DemoCmd struct {
	Keep bool `help:"Keep the scratch repository and print its path."`
}

// Run implements lazy demo (filled in below).
func (c *DemoCmd) Run(a *app) error { return nil }
