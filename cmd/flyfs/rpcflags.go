package main

import (
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/spf13/pflag"
)

// addRPCFlags adds the bounds of a role's RPC server: what a peer, well
// behaved or not, may hold of it.
func addRPCFlags(f *pflag.FlagSet, o *rpc.Options) {
	f.IntVar(&o.MaxConns, "rpc-max-conns", rpc.DefaultMaxConns, "connections the RPC server holds at once (more are refused with ResourceExhausted; negative: no limit)")
	f.Int64Var(&o.MaxInflightBytes, "rpc-max-inflight-bytes", rpc.DefaultMaxInflightBytes, "request bytes the RPC server holds at once (more are answered ResourceExhausted; negative: no limit)")
	f.DurationVar(&o.FrameTimeout, "rpc-frame-timeout", rpc.DefaultFrameTimeout, "a frame that starts must keep arriving: no bytes for this long cut it off (negative: no frame deadlines)")
	f.Int64Var(&o.MinFrameRate, "rpc-min-frame-rate", rpc.DefaultMinFrameRate, "and arrive within --rpc-frame-timeout plus its size at this many bytes/s")
	f.DurationVar(&o.IdleTimeout, "rpc-idle-timeout", 0, "close an RPC connection idle this long (0: keep it; clients keep pooled connections)")
}

// withLimits is o with the server bounds of limits.
func withLimits(o, limits rpc.Options) rpc.Options {
	o.MaxConns, o.MaxInflightBytes, o.FrameTimeout, o.MinFrameRate, o.IdleTimeout =
		limits.MaxConns, limits.MaxInflightBytes, limits.FrameTimeout, limits.MinFrameRate, limits.IdleTimeout
	return o
}
