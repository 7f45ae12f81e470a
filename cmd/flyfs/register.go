package main

import "github.com/spf13/cobra"

// extraCommands and extraBenchCommands are filled by init functions of the
// files that add a role (mount.go, gateway.go, console.go, ...), so each front
// end registers itself without every one editing main.go.
var (
	extraCommands      []*cobra.Command
	extraBenchCommands []*cobra.Command
	// extraAdminCommands build `flyfs admin` subcommands over the shared
	// admin flags (--mgmtd, --token, --timeout).
	extraAdminCommands []func(*adminOptions) *cobra.Command
)
