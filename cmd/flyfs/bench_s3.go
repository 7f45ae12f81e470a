package main

import (
	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/bench/load/objects"
	"github.com/spf13/cobra"
)

func benchS3Cmd() *cobra.Command {
	cfg := objects.Defaults()
	size := bench.Size(cfg.Size)
	var asJSON bool
	progress := "auto"
	cmd := &cobra.Command{
		Use:   "s3 --endpoint URL --access-key KEY --secret-key SECRET --bucket NAME",
		Short: "S3 benchmark against any S3 server: PUT, GET, LIST, DELETE",
		Long: `Measures an S3 server (the flyfs gateway or any other) with --concurrency clients
over --objects objects of --size bytes under a fresh prefix of --bucket:

  put     PUT of every object
  get     GET of every object, each checked byte for byte
  reget   with --get-rounds N over 1, N-1 more rounds of GETs of every object:
          data the server read lately, hot in whatever cache it keeps
  list    --lists full listings of the objects (--list-max-keys per page), each
          checked to hold every object in key order
  delete  DELETE of every object (skipped with --keep)

The bucket is created when missing (and removed at the end if this run created it).
Requests use path-style addressing and SigV4 with the keys given; nothing is read
from AWS config files or AWS_* variables, so an AWS_CA_BUNDLE meant for something
else does not get in the way. Failed requests are not retried unless --retries says
so: an error ends the run and is reported.

FLYFS_ACCESS_KEY and FLYFS_SECRET_KEY can stand in for the key flags.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			pw, err := bench.ProgressWriter(progress, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg.Size, cfg.Progress = int64(size), pw
			rep, err := objects.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return rep.WriteJSON(cmd.OutOrStdout())
			}
			return rep.WriteTable(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Endpoint, "endpoint", "", "server URL, e.g. http://127.0.0.1:9300 (required)")
	f.StringVar(&cfg.AccessKey, "access-key", "", "access key (required)")
	f.StringVar(&cfg.SecretKey, "secret-key", "", "secret key (required)")
	f.StringVar(&cfg.Region, "region", cfg.Region, "region to sign for")
	f.StringVar(&cfg.Bucket, "bucket", "", "bucket to use (required)")
	f.BoolVar(&cfg.CreateBucket, "create-bucket", cfg.CreateBucket, "create the bucket when it does not exist")
	f.IntVar(&cfg.Objects, "objects", cfg.Objects, "objects to PUT, GET and DELETE")
	f.Var(&size, "size", "size of each object")
	f.IntVarP(&cfg.Concurrency, "concurrency", "c", cfg.Concurrency, "concurrent clients")
	f.IntVar(&cfg.GetRounds, "get-rounds", cfg.GetRounds, "times each object is read (rounds after the first: the reget phase)")
	f.IntVar(&cfg.Lists, "lists", cfg.Lists, "full listings in the LIST phase (0: skip it)")
	f.Int32Var(&cfg.ListMaxKeys, "list-max-keys", cfg.ListMaxKeys, "keys per listing page (1..1000)")
	f.IntVar(&cfg.Retries, "retries", 0, "retries of a failed request")
	f.BoolVar(&cfg.InsecureTLS, "insecure", false, "do not verify the server's TLS certificate")
	f.BoolVar(&cfg.Keep, "keep", false, "leave the objects (no DELETE phase)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&progress, "progress", progress, "progress bar on stderr: auto (when a terminal), always, never")
	return cmd
}
