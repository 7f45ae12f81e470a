package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/bench/load/objects"
	"github.com/spf13/cobra"
)

func benchS3Cmd() *cobra.Command {
	cfg := objects.Defaults()
	size := bench.Size(cfg.Size)
	var asJSON bool
	var baseline objects.Config // only the endpoint, keys and bucket
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

With --baseline-endpoint the same load then runs against a second server (MinIO,
say), and a last table puts each phase beside the baseline's with the ratio.

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
			base, err := baselineConfig(cfg, baseline)
			if err != nil {
				return err
			}
			rep, err := objects.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if base == nil {
				if asJSON {
					return rep.WriteJSON(cmd.OutOrStdout())
				}
				return rep.WriteTable(cmd.OutOrStdout())
			}
			brep, err := objects.Run(cmd.Context(), *base)
			if err != nil {
				return fmt.Errorf("baseline %s: %w", base.Endpoint, err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"this": rep, "baseline": brep, "ratios": objects.Compare(rep, brep)})
			}
			w := cmd.OutOrStdout()
			for _, r := range []*bench.Report{rep, brep} {
				if err := r.WriteTable(w); err != nil {
					return err
				}
				fmt.Fprintln(w)
			}
			return objects.WriteComparison(w, rep, brep)
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
	f.StringVar(&baseline.Endpoint, "baseline-endpoint", "", "also run the same load against this S3 server right after (another gateway, MinIO, ...) and print the two side by side with their ratios")
	f.StringVar(&baseline.AccessKey, "baseline-access-key", "", "the baseline's access key")
	f.StringVar(&baseline.SecretKey, "baseline-secret-key", "", "the baseline's secret key")
	f.StringVar(&baseline.Bucket, "baseline-bucket", "", "the baseline's bucket (default: --bucket)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON (with a baseline: this, baseline and ratios)")
	f.StringVar(&progress, "progress", progress, "progress bar on stderr: auto (when a terminal), always, never")
	return cmd
}

// baselineConfig is the run against the baseline server: cfg with the
// baseline's endpoint, keys and bucket; nil when no baseline is given.
func baselineConfig(cfg, b objects.Config) (*objects.Config, error) {
	if b.Endpoint == "" {
		if b.AccessKey != "" || b.SecretKey != "" || b.Bucket != "" {
			return nil, errors.New("--baseline-access-key, --baseline-secret-key and --baseline-bucket need --baseline-endpoint")
		}
		return nil, nil
	}
	if b.AccessKey == "" || b.SecretKey == "" {
		return nil, errors.New("--baseline-endpoint needs --baseline-access-key and --baseline-secret-key")
	}
	cfg.Endpoint, cfg.AccessKey, cfg.SecretKey = b.Endpoint, b.AccessKey, b.SecretKey
	if b.Bucket != "" {
		cfg.Bucket = b.Bucket
	}
	return &cfg, nil
}
