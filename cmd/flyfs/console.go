package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/console"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/httpserve"
	"github.com/spf13/cobra"
)

// consoleOptions configure a stand-alone console.
type consoleOptions struct {
	mgmtds     []string
	tok        tokenOptions
	addr       string
	sessionTTL time.Duration
	http       httpOptions
	obs        observeOptions
}

func consoleCmd() *cobra.Command {
	var o consoleOptions
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the admin console (web pages and JSON API) for a cluster",
		Long: `Serve the admin console for the cluster whose managers are at --mgmtd: health,
services, capacity, chains and target states, recovery progress, the namespace
browser and access keys, on --console-addr.

Access keys are the cluster's, kept by the metadata service: sign in with the root
key or a key with admin rights; keys made here work for S3. When the cluster has
no root key yet, one is drawn and printed once at start.

With --tls-cert and --tls-key the console serves HTTPS and marks its session
cookie Secure; otherwise serve it on a loopback address or behind a TLS proxy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runConsole(ctx, o, cmd)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.mgmtds, "mgmtd", []string{"127.0.0.1:9000"}, "cluster manager addresses, comma-separated")
	addTokenFlags(f, &o.tok)
	f.StringVar(&o.addr, "console-addr", "127.0.0.1:9400", "address to serve the console on")
	f.DurationVar(&o.sessionTTL, "session-ttl", 8*time.Hour, "how long a sign-in lasts")
	addHTTPFlags(f, &o.http)
	addObserveFlags(f, &o.obs)
	return cmd
}

func runConsole(ctx context.Context, o consoleOptions, cmd *cobra.Command) error {
	out := cmd.OutOrStdout()
	if err := httpserve.CheckTLS(o.http.tlsCert, o.http.tlsKey); err != nil {
		return err
	}
	log, err := o.obs.logger(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	token, err := o.tok.resolve("flyfs console", log)
	if err != nil {
		return err
	}
	obs, err := o.obs.start(log)
	if err != nil {
		return err
	}
	defer obs.close()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	fs, err := client.Dial(dctx, client.Config{Mgmtd: o.mgmtds, Token: token, Logger: log, Registerer: obs.role("console")})
	cancel()
	if err != nil {
		return fmt.Errorf("connect to the cluster at %v: %w", o.mgmtds, err)
	}
	defer fs.Close()
	if k, created, err := fs.Keys().EnsureRoot(ctx, nil); err != nil {
		return fmt.Errorf("access keys: %w", err)
	} else if created {
		fmt.Fprintf(out, "created the root access key (the secret is shown only now):\n  access key %s\n  secret key %s\n", k.ID, k.Secret)
	}
	l, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	con, err := console.New(console.Config{Mgmtd: o.mgmtds, Token: token, FS: fs, SessionTTL: o.sessionTTL,
		SecureCookies: o.http.tlsCert != "", Advertise: l.Addr().String(), Logger: log})
	if err != nil {
		l.Close()
		return err
	}
	defer con.Close()
	url, err := obs.serve(o.obs, nil, log)
	if err != nil {
		l.Close()
		return err
	}
	fmt.Fprintf(out, "console on %s://%s/\n", o.http.scheme(), l.Addr())
	if url != "" {
		fmt.Fprintf(out, "metrics at %s\n", url)
	}
	srv := httpserve.New(con, o.http.limits)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	return httpserve.Serve(srv, l, o.http.tlsCert, o.http.tlsKey)
}
