package main

import (
	"time"

	"github.com/flyfs/flyfs/cluster/frontend"
	"github.com/flyfs/flyfs/core/httpserve"
	"github.com/spf13/pflag"
)

// httpOptions are the flags of a role that serves HTTP: TLS and the bounds
// on its connections.
type httpOptions struct {
	tlsCert, tlsKey string
	limits          httpserve.Limits
}

func addHTTPFlags(f *pflag.FlagSet, o *httpOptions) {
	f.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM); console cookies are then Secure")
	f.StringVar(&o.tlsKey, "tls-key", "", "the certificate's private key (PEM)")
	f.DurationVar(&o.limits.HeaderTimeout, "http-header-timeout", 30*time.Second, "bound on reading a request's line and headers")
	f.DurationVar(&o.limits.StallTimeout, "http-stall-timeout", 60*time.Second, "bound on a wait for more of a request body, or for the client to take more of a response")
	f.Int64Var(&o.limits.MinBodyRate, "http-min-body-rate", 1<<10, "least average rate of a request body in bytes/s (after the first stall timeout)")
	f.DurationVar(&o.limits.IdleTimeout, "http-idle-timeout", 120*time.Second, "end a keep-alive connection idle this long")
}

// at is where and how to serve on addr.
func (o *httpOptions) at(addr string) frontend.Listen {
	return frontend.Listen{Addr: addr, TLSCert: o.tlsCert, TLSKey: o.tlsKey, Limits: o.limits}
}

// scheme is http or https.
func (o *httpOptions) scheme() string {
	if o.tlsCert != "" {
		return "https"
	}
	return "http"
}
