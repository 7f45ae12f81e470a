// Command flyfs is the one flyfs binary: a subcommand per role. It holds flags
// and wiring only; the logic lives in the packages it calls.
package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/flyfs/flyfs/core/rpc"
	"github.com/spf13/cobra"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "flyfs:", err)
		if rpc.CodeOf(err) == rpc.Unauthenticated {
			fmt.Fprintln(os.Stderr, "flyfs: the cluster token is given by --token, FLYFS_TOKEN or --token-file (flyfs server keeps it in <data>/token)")
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			fmt.Fprintln(os.Stderr, "flyfs: another process listens on that address: stop it, or give this role other addresses (see --help for the -addr and --listen flags)")
		}
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "flyfs",
		Short: "flyfs: a distributed file system for AI training and inference",
		Long: `flyfs is a distributed file system in the Fire-Flyer File System (3FS) design:
a cluster manager (mgmtd), stateless metadata services (metad) over a transactional
KV store, storage services (storaged) replicating chunks along CRAQ chains, a FUSE
mount, an S3 gateway on the same namespace, and a browser console.

Run everything on one machine with 'flyfs server'; run each role on its own with
the role's subcommand. Every flag can also be set by an environment variable
FLYFS_<FLAG> (upper case, dashes as underscores), e.g. FLYFS_DATA=/srv/flyfs.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(versionCmd(), serverCmd(), mgmtdCmd(), metadCmd(), storagedCmd(), gatewayCmd(), consoleCmd(),
		mountCmd(), umountCmd(), warmupCmd(), adminCmd(), benchCmd(), etcdCmd())
	return root
}
