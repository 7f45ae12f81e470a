package main

import (
	"github.com/flyfs/flyfs/bench/vs/s3gateway"
	"github.com/spf13/cobra"
)

func benchS3GatewayCmd() *cobra.Command {
	var cfg s3gateway.Config
	cmd := &cobra.Command{
		Use:   "s3-gateway",
		Short: "The S3 gateway next to a trivial HTTP server on the local disk and core/client",
		Long: `Runs an in-process cluster (mgmtd, storaged, metad) with the S3 gateway on loopback
and measures, with --clients concurrent clients: PUT and GET throughput of --big-bytes
objects and ops/s of 4 KiB objects through the gateway, through a trivial net/http
server that writes to and reads from the local disk (the HTTP ceiling of this machine),
and through core/client directly; the latency of CompleteMultipartUpload for an
equal-part upload of --mpu-bytes and of an eighth of it (it must not grow with the
size); CopyObject of those objects sharing their chunks next to the same copy made by
copying the bytes (it must not grow with the size; --copy-bytes adds a larger object, 10 GiB
for the data-protection issue's figure); ListObjectsV2 with a delimiter over all pages of a --list-entries directory
next to a readdir of a local directory of as many files.

Targets: large PUT and GET >= 0.6x the trivial server; 4 KiB PUT >= 0.3x, GET >= 0.5x;
listing >= 0.2x readdir (a full run lists --list-entries 1000000).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			_, err := s3gateway.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory on the disk to measure (default: a temporary one)")
	f.IntVar(&cfg.Clients, "clients", 16, "concurrent clients")
	f.Int64Var(&cfg.BigBytes, "big-bytes", 64<<20, "size of the large objects")
	f.IntVar(&cfg.BigObjects, "big-objects", 32, "large objects written and read per system")
	f.DurationVar(&cfg.SmallFor, "small-for", 5e9, "duration of each 4 KiB measurement")
	f.Int64Var(&cfg.MPUBytes, "mpu-bytes", 1<<30, "size of the multipart upload whose completion is timed")
	f.Int64Var(&cfg.MPUPart, "mpu-part", 64<<20, "its part size")
	f.Int64Var(&cfg.CopyBytes, "copy-bytes", 0, "also upload an object of this size in parts and time its shared copy")
	f.IntVar(&cfg.ListEntries, "list-entries", 100_000, "entries of the listed directory")
	f.IntVar(&cfg.Nodes, "nodes", 1, "storage services")
	f.BoolVar(&cfg.NoSync, "no-sync", true, "acknowledge writes before they reach the disk (the cluster and the trivial server alike)")
	return cmd
}
