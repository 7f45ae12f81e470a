// Package rpccall measures the rpc package on loopback: small-call rate and
// latency, and payload throughput next to a raw TCP loop moving the same
// bytes with the same concurrency in the same run, so the ratio says what the
// RPC layer costs on this machine today.
package rpccall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/rpc"
)

// Config says what to measure. Zero fields take the defaults.
type Config struct {
	// Duration of each measurement. Default 3s.
	Duration time.Duration
	// SmallCallers is the concurrency of the small-call measurement.
	// Default 64.
	SmallCallers int
	// PayloadCallers is the concurrency of the payload measurements, for
	// rpc and raw TCP alike. Default 4.
	PayloadCallers int
	// PayloadSizes to measure. Default 1 MiB and 4 MiB.
	PayloadSizes []int
	// Options for the rpc client and server (token, socket buffers...).
	// The logger defaults to a silent one.
	Options rpc.Options
}

func (c Config) withDefaults() Config {
	if c.Duration <= 0 {
		c.Duration = 3 * time.Second
	}
	if c.SmallCallers <= 0 {
		c.SmallCallers = 64
	}
	if c.PayloadCallers <= 0 {
		c.PayloadCallers = 4
	}
	if len(c.PayloadSizes) == 0 {
		c.PayloadSizes = []int{1 << 20, 4 << 20}
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Report holds the figures of one run.
type Report struct {
	Small   SmallResult
	Payload []PayloadResult
}

// SmallResult is the small-call measurement: tiny request, tiny response.
type SmallResult struct {
	Callers     int
	Calls       int64
	CallsPerSec float64
	P50, P99    time.Duration
}

// PayloadResult compares rpc and raw TCP moving Size-byte payloads one way
// (a tiny response, or a 1-byte ack for raw TCP). Throughput is in MB/s of
// 10^6 bytes.
//
// RPCMBps is measured against a handler registered with rpc.BorrowPayload,
// as storage write paths are, so request buffers are recycled. OwnedMBps is
// the same against a handler that owns its payload, so every request gets
// fresh memory: the price of not borrowing.
type PayloadResult struct {
	Size       int
	Callers    int
	RPCMBps    float64
	RawMBps    float64
	Ratio      float64 // RPCMBps / RawMBps
	OwnedMBps  float64
	OwnedRatio float64 // OwnedMBps / RawMBps
	RPCCalls   int64
	RawRounds  int64
}

const (
	methodSmall     rpc.Method = 0xfe01
	methodSink      rpc.Method = 0xfe02
	methodSinkOwned rpc.Method = 0xfe03
)

func init() {
	rpc.RegisterMethod(methodSmall, "rpccall.Small")
	rpc.RegisterMethod(methodSink, "rpccall.Sink")
	rpc.RegisterMethod(methodSinkOwned, "rpccall.SinkOwned")
}

type smallReq struct {
	N uint64 `cbor:"1,keyasint,omitempty"`
}

type smallResp struct {
	N uint64 `cbor:"1,keyasint,omitempty"`
}

// Run starts an rpc server and a raw TCP sink on loopback, measures, prints
// a table to w and returns the figures. It stops early with ctx's error.
func Run(ctx context.Context, cfg Config, w io.Writer) (Report, error) {
	cfg = cfg.withDefaults()
	var rep Report

	srv := rpc.NewServer(cfg.Options)
	rpc.Handle(srv, methodSmall, func(_ context.Context, req *smallReq, _ []byte) (*smallResp, []byte, error) {
		return &smallResp{N: req.N + 1}, nil, nil
	})
	// The sink borrows its payload, as a storage write handler would: it is
	// done with the bytes when it returns, so the server recycles them.
	sink := func(_ context.Context, _ *smallReq, payload []byte) (*smallResp, []byte, error) {
		return &smallResp{N: uint64(len(payload))}, nil, nil
	}
	rpc.Handle(srv, methodSink, sink, rpc.BorrowPayload())
	rpc.Handle(srv, methodSinkOwned, sink)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return rep, fmt.Errorf("rpccall: listen: %w", err)
	}
	go srv.Serve(l)
	defer srv.Close()
	addr := l.Addr().String()

	cl := rpc.NewClient(cfg.Options)
	defer cl.Close()
	if _, _, err := rpc.Call[smallReq, smallResp](ctx, cl, addr, methodSmall, &smallReq{}, nil); err != nil {
		return rep, fmt.Errorf("rpccall: warm-up call: %w", err)
	}

	fmt.Fprintf(w, "rpccall: %v per measurement, loopback\n", cfg.Duration)
	rep.Small, err = measureSmall(ctx, cl, addr, cfg)
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(w, "rpc small calls  %3d callers  %9.0f calls/s  p50 %s  p99 %s\n",
		rep.Small.Callers, rep.Small.CallsPerSec, ms(rep.Small.P50), ms(rep.Small.P99))

	for _, size := range cfg.PayloadSizes {
		pr := PayloadResult{Size: size, Callers: cfg.PayloadCallers}
		var mbps float64
		if mbps, pr.RPCCalls, err = measureRPCPayload(ctx, cl, addr, methodSink, size, cfg); err != nil {
			return rep, err
		}
		pr.RPCMBps = mbps
		if mbps, pr.RawRounds, err = measureRaw(ctx, size, cfg); err != nil {
			return rep, err
		}
		pr.RawMBps = mbps
		if pr.OwnedMBps, _, err = measureRPCPayload(ctx, cl, addr, methodSinkOwned, size, cfg); err != nil {
			return rep, err
		}
		if pr.RawMBps > 0 {
			pr.Ratio = pr.RPCMBps / pr.RawMBps
			pr.OwnedRatio = pr.OwnedMBps / pr.RawMBps
		}
		rep.Payload = append(rep.Payload, pr)
		fmt.Fprintf(w, "payload %-6s %d callers  rpc %6.0f MB/s  raw tcp %6.0f MB/s  ratio %.2f   (handler-owned payload: rpc %6.0f MB/s  ratio %.2f)\n",
			sizeName(size), pr.Callers, pr.RPCMBps, pr.RawMBps, pr.Ratio, pr.OwnedMBps, pr.OwnedRatio)
	}
	return rep, nil
}

// loop runs fn from n goroutines until d passes or ctx ends, and returns the
// elapsed time. fn returns false to stop its goroutine on error.
func loop(ctx context.Context, n int, d time.Duration, fn func(worker int) error) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				if err := fn(i); err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := ctx.Err(); err != nil {
		return el, err
	}
	return el, firstErr
}

func measureSmall(ctx context.Context, cl *rpc.Client, addr string, cfg Config) (SmallResult, error) {
	lat := make([][]time.Duration, cfg.SmallCallers)
	el, err := loop(ctx, cfg.SmallCallers, cfg.Duration, func(i int) error {
		t := time.Now()
		resp, _, err := rpc.Call[smallReq, smallResp](ctx, cl, addr, methodSmall, &smallReq{N: 1}, nil)
		if err != nil {
			return fmt.Errorf("rpccall: small call: %w", err)
		}
		if resp.N != 2 {
			return errors.New("rpccall: small call: wrong answer")
		}
		lat[i] = append(lat[i], time.Since(t))
		return nil
	})
	if err != nil {
		return SmallResult{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := SmallResult{Callers: cfg.SmallCallers, Calls: int64(len(all))}
	if len(all) > 0 {
		r.CallsPerSec = float64(len(all)) / el.Seconds()
		r.P50 = all[len(all)*50/100]
		r.P99 = all[len(all)*99/100]
	}
	return r, nil
}

func measureRPCPayload(ctx context.Context, cl *rpc.Client, addr string, method rpc.Method, size int, cfg Config) (float64, int64, error) {
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	var calls atomic.Int64
	el, err := loop(ctx, cfg.PayloadCallers, cfg.Duration, func(int) error {
		resp, _, err := rpc.Call[smallReq, smallResp](ctx, cl, addr, method, &smallReq{}, payload)
		if err != nil {
			return fmt.Errorf("rpccall: payload call: %w", err)
		}
		if resp.N != uint64(size) {
			return fmt.Errorf("rpccall: server got %d of %d bytes", resp.N, size)
		}
		calls.Add(1)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	n := calls.Load()
	return float64(n) * float64(size) / 1e6 / el.Seconds(), n, nil
}

// measureRaw moves the same payloads over plain TCP, as the strongest
// baseline: each caller has its own connection and streams size-byte writes
// back to back with no per-message ack; the server drains them into a reused
// buffer. Once the socket buffers fill, a completed write means its bytes have
// been taken by the reader.
func measureRaw(ctx context.Context, size int, cfg Config) (float64, int64, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, fmt.Errorf("rpccall: raw listen: %w", err)
	}
	var srvWG sync.WaitGroup
	defer func() { // runs after the client connections are closed
		l.Close()
		srvWG.Wait()
	}()
	srvWG.Add(1)
	go func() {
		defer srvWG.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			srvWG.Add(1)
			go func() {
				defer srvWG.Done()
				defer c.Close()
				buf := make([]byte, size)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
				}
			}()
		}
	}()

	conns := make([]net.Conn, cfg.PayloadCallers)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		if conns[i], err = net.Dial("tcp", l.Addr().String()); err != nil {
			return 0, 0, fmt.Errorf("rpccall: raw dial: %w", err)
		}
	}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	var rounds atomic.Int64
	el, err := loop(ctx, cfg.PayloadCallers, cfg.Duration, func(i int) error {
		if _, err := conns[i].Write(payload); err != nil {
			return fmt.Errorf("rpccall: raw write: %w", err)
		}
		rounds.Add(1)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	n := rounds.Load()
	return float64(n) * float64(size) / 1e6 / el.Seconds(), n, nil
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
