package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/httpserve"
	"github.com/flyfs/flyfs/gateway"
	"github.com/spf13/cobra"
)

type gatewayOptions struct {
	http      httpOptions
	mgmtd     []string
	tok       tokenOptions
	s3Addr    string
	accessKey string
	secretKey string
	region    string
	domains   []string
	lifecycle time.Duration
	obs       observeOptions
}

func gatewayCmd() *cobra.Command {
	var o gatewayOptions
	cmd := &cobra.Command{
		Use:   "gateway --mgmtd ADDR [--s3-addr 127.0.0.1:9300]",
		Short: "Run the S3-compatible gateway over the namespace",
		Long: `Serve the cluster's namespace over the S3 API: a bucket is a top-level directory,
an object key the path below it (docs/s3-mapping.md).

Access keys are the cluster's, kept by the metadata service, so every gateway
and the console see the same keys. The root key comes from --access-key/
--secret-key (FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY); without them the cluster's
root key is used, drawn once by whichever role starts first and printed by it.
Manage further keys with 'flyfs admin keys'.

Metrics: GET /_flyfs/metrics on the same address (the S3 families), and with
--metrics-addr every family of the role (S3, its client, Go runtime) at /metrics.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runGateway(ctx, o, cmd)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.mgmtd, "mgmtd", nil, "cluster manager address(es), comma separated (required)")
	addTokenFlags(f, &o.tok)
	f.StringVar(&o.s3Addr, "s3-addr", "127.0.0.1:9300", "address to serve S3 on")
	f.StringVar(&o.accessKey, "access-key", "", "root access key (env FLYFS_ACCESS_KEY); empty: generated on the first start")
	f.StringVar(&o.secretKey, "secret-key", "", "root secret key (env FLYFS_SECRET_KEY)")
	f.StringVar(&o.region, "region", "us-east-1", "region the gateway reports")
	f.StringSliceVar(&o.domains, "domain", nil, "domains for virtual-host-style addressing (<bucket>.<domain>)")
	f.DurationVar(&o.lifecycle, "lifecycle-interval", gateway.DefaultLifecycleInterval, "how often to apply the buckets' lifecycle rules (0: never)")
	addHTTPFlags(f, &o.http)
	addObserveFlags(f, &o.obs)
	return cmd
}

func runGateway(ctx context.Context, o gatewayOptions, cmd *cobra.Command) error {
	log, err := o.obs.logger(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if len(o.mgmtd) == 0 {
		return errors.New("--mgmtd is required")
	}
	token, err := o.tok.resolve("flyfs gateway", log)
	if err != nil {
		return err
	}
	if err := httpserve.CheckTLS(o.http.tlsCert, o.http.tlsKey); err != nil {
		return err
	}
	obs, err := o.obs.start(log)
	if err != nil {
		return err
	}
	defer obs.close()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	fs, err := client.Dial(dctx, client.Config{Mgmtd: o.mgmtd, Token: token, Logger: log, Registerer: obs.role("gateway")})
	cancel()
	if err != nil {
		return fmt.Errorf("reach the cluster at %v: %w", o.mgmtd, err)
	}
	defer fs.Close()
	lifecycle := o.lifecycle
	if lifecycle <= 0 {
		lifecycle = -1 // gateway.Config: negative is never
	}
	gw, err := gateway.New(gateway.Config{FS: fs, RootAccessKey: o.accessKey, RootSecretKey: o.secretKey,
		Region: o.region, Domains: o.domains, Logger: log, Registerer: obs.role("gateway"), LifecycleInterval: lifecycle})
	if err != nil {
		return err
	}
	defer gw.Close()
	l, err := net.Listen("tcp", o.s3Addr)
	if err != nil {
		return err
	}
	if url, err := obs.serve(o.obs, nil, log); err != nil {
		l.Close()
		return err
	} else if url != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "metrics at %s\n", url)
	}
	// Registered, so that flyfs admin nodes and the console list it.
	go fs.Mgmtd().KeepRegistered(ctx, mgmtdapi.KindGateway, l.Addr().String(), l.Addr().String(), log)
	srv := httpserve.New(gw, o.http.limits)
	ak, _ := gw.RootKey()
	fmt.Fprintf(cmd.OutOrStdout(), "s3 gateway listening on %s://%s (root access key %s)\n", o.http.scheme(), l.Addr(), ak)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	return httpserve.Serve(srv, l, o.http.tlsCert, o.http.tlsKey)
}
