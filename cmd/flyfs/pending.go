package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// extraCommands and extraBenchCommands are filled by init functions of the
// files that add a role (mount.go, gateway.go, console.go), so each front end
// registers itself without every one editing main.go.
var (
	extraCommands      []*cobra.Command
	extraBenchCommands []*cobra.Command
	// extraAdminCommands build `flyfs admin` subcommands over the shared
	// admin flags (--mgmtd, --token, --timeout).
	extraAdminCommands []func(*adminOptions) *cobra.Command
)

// pendingRole is a role whose service is not built yet: its subcommand says so
// plainly and exits non-zero rather than pretending to run.
type pendingRole struct {
	name, short, issue string
}

var pendingRoles = []pendingRole{}

func pendingCmd(r pendingRole) *cobra.Command {
	return &cobra.Command{
		Use:                r.name,
		Short:              r.short + " (not built yet)",
		Long:               fmt.Sprintf("%s.\n\nNot built yet: this role arrives with %s.", r.short, r.issue),
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
				return cmd.Help()
			}
			return fmt.Errorf("%s is not built yet; it arrives with %s", r.name, r.issue)
		},
	}
}
