package rpc

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Client calls methods on servers by address. It keeps ConnsPerAddr
// connections to each address it has called, dialed on first use and redialed
// after they break, and sends each call on the least loaded one. Any number
// of calls may run concurrently; they share connections (multiplexed by
// request id) and, when they arrive together, syscalls.
type Client struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics

	ctx    context.Context // canceled by Close; bounds dials
	cancel context.CancelFunc
	closed atomic.Bool
	pools  sync.Map // addr → *pool
	live   sync.Map // *clientConn → struct{}: every open connection, in a slot or not

	lifeMu sync.RWMutex   // orders spawn against Close
	wg     sync.WaitGroup // dials and readers
}

// spawn runs fn in a goroutine Close waits for, unless the client is closed.
func (c *Client) spawn(fn func()) bool {
	c.lifeMu.RLock()
	defer c.lifeMu.RUnlock()
	if c.closed.Load() {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
	return true
}

// NewClient returns a client; it connects lazily.
func NewClient(opts Options) *Client {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		opts:    opts,
		log:     opts.Logger.With("component", "rpc.client"),
		metrics: newMetrics(opts.Registerer, "client"),
		ctx:     ctx,
		cancel:  cancel,
	}
}

// Call sends req and payload to method at addr and waits for the response.
//
// The request message is req encoded as CBOR (nil sends an empty message);
// payload travels raw beside it. Call does not keep payload after it returns,
// but the caller must not modify it while Call runs. On success the response
// is never nil, and the response payload is a fresh buffer owned by the
// caller.
//
// Errors are *Error: the handler's code and message; Unavailable when the
// connection could not be made or broke (the call may or may not have run);
// DeadlineExceeded or Canceled when ctx ended first (these also match
// context.DeadlineExceeded and context.Canceled, and the server is told to
// cancel the handler). ctx's deadline travels with the request and bounds
// the handler's context.
func Call[Req, Resp any](ctx context.Context, c *Client, addr string, method Method, req *Req, payload []byte) (*Resp, []byte, error) {
	msg, err := marshal(req)
	if err != nil {
		return nil, nil, Errorf(InvalidArgument, "%s: encode request: %v", method, err)
	}
	resp := new(Resp)
	out, err := c.do(ctx, addr, method, msg, payload, func(b []byte) error { return unmarshal(b, resp) })
	if err != nil {
		return nil, nil, err
	}
	return resp, out, nil
}

// do runs one call and records it.
func (c *Client) do(ctx context.Context, addr string, method Method, msg, payload []byte, decode func([]byte) error) ([]byte, error) {
	if c.metrics == nil {
		return c.roundTrip(ctx, addr, method, msg, payload, decode)
	}
	start := time.Now()
	out, err := c.roundTrip(ctx, addr, method, msg, payload, decode)
	c.metrics.observe(method, CodeOf(err), time.Since(start))
	return out, err
}

// releaseGrace is how long a call whose context ended waits for the writer
// to finish sending its payload before closing the connection instead (the
// writer's own bound, WriteTimeout, is far longer: it is for a slow peer, not
// for a caller that has given up).
const releaseGrace = time.Second

// maxAttempts bounds how often a call moves to another connection because
// the one it picked broke before the request was queued (so it was
// certainly not sent).
const maxAttempts = 3

// roundTrip sends the request and returns the response payload, after
// decode has consumed the response message.
func (c *Client) roundTrip(ctx context.Context, addr string, method Method, msg, payload []byte, decode func([]byte) error) ([]byte, error) {
	if ctx.Err() != nil {
		return nil, contextError(ctx, method)
	}
	if s := c.localServer(addr); s != nil {
		if c.closed.Load() {
			return nil, unavailable(nil, "%s: client closed", method)
		}
		return s.callLocal(ctx, c, method, msg, payload, decode)
	}
	var lastErr error
	for range maxAttempts {
		cc, err := c.conn(ctx, addr, method)
		if err != nil {
			return nil, err
		}
		if uint64(len(msg)) > uint64(cc.peer.MaxMessage) || uint64(len(payload)) > uint64(cc.peer.MaxPayload) {
			return nil, Errorf(ResourceExhausted, "%s: request of %d+%d bytes exceeds the server's limits %d+%d",
				method, len(msg), len(payload), cc.peer.MaxMessage, cc.peer.MaxPayload)
		}
		// The time left is measured after dialing, which may have used some.
		var timeout uint32
		if dl, ok := ctx.Deadline(); ok {
			d := time.Until(dl)
			if d <= 0 {
				return nil, contextError(ctx, method)
			}
			// Round up, so the handler never gets less time than the caller.
			timeout = uint32(min((d+time.Millisecond-1)/time.Millisecond, math.MaxUint32))
		}
		cl := &call{done: make(chan struct{}, 1), decode: decode}
		id, err := cc.register(cl)
		if err != nil {
			lastErr = err
			continue
		}
		out := newOutFrame(Header{Kind: KindRequest, Flags: requestFlags(ctx), ID: id, Method: method, Timeout: timeout}, msg, payload, true)
		if err := cc.w.enqueue(out); err != nil {
			cc.forget(id)
			cc.finish()
			lastErr = err
			continue
		}
		return c.wait(ctx, cc, id, cl, out, method)
	}
	return nil, unavailable(lastErr, "%s: no working connection to %s", method, addr)
}

// wait waits for the response to call id, or for ctx to end, in which case it
// withdraws the request or tells the server to cancel it.
func (c *Client) wait(ctx context.Context, cc *clientConn, id uint64, cl *call, out *outFrame, method Method) ([]byte, error) {
	select {
	case <-cl.done:
		out.release()
		cc.finish()
		if cl.err != nil {
			return nil, cl.err
		}
		if cl.resp.Code != OK {
			return nil, decodeError(cl.resp.Code, cl.resp.Msg)
		}
		if !cl.decoded {
			cl.decodeErr = cl.decode(cl.resp.Msg)
		}
		if cl.decodeErr != nil {
			return nil, Errorf(Internal, "%s: %v", method, cl.decodeErr)
		}
		return cl.resp.Payload, nil
	case <-ctx.Done():
		pending := cc.forget(id)
		withdrawn := out.withdraw()
		if pending && !withdrawn {
			// The server has or will have the request; let it stop work
			// nobody waits for. Best effort: a broken connection cancels
			// everything anyway.
			_ = cc.w.enqueue(newOutFrame(Header{Kind: KindCancel, ID: id, Method: method}, nil, nil, false))
		}
		if !out.releaseWithin(releaseGrace) {
			// The peer takes no more of the request (a host cut off, a
			// reader stuck): the caller's payload is still being written and
			// the caller wants it back now. Closing the connection ends the
			// write; its other calls fail with Unavailable and are retried.
			cc.fail(unavailable(nil, "%s: %s stopped taking the request; connection closed", method, cc.addr))
			out.release()
		}
		cc.finish()
		return nil, contextError(ctx, method)
	}
}

// conn returns a usable connection to addr, dialing if none is.
func (c *Client) conn(ctx context.Context, addr string, method Method) (*clientConn, error) {
	if c.closed.Load() {
		return nil, unavailable(nil, "%s: client closed", method)
	}
	p, ok := c.pools.Load(addr)
	if !ok {
		p, _ = c.pools.LoadOrStore(addr, newPool(c, addr))
	}
	return p.(*pool).get(ctx, method)
}

// Close closes every connection; calls in flight fail with Unavailable, and
// later calls fail at once. It waits for the client's goroutines to end.
func (c *Client) Close() error {
	c.lifeMu.Lock()
	already := c.closed.Swap(true)
	c.lifeMu.Unlock()
	if already {
		return nil
	}
	c.cancel()
	err := unavailable(nil, "client closed")
	c.pools.Range(func(_, p any) bool {
		p.(*pool).close(err)
		return true
	})
	// Connections no slot holds (draining after a go-away) close too: Close
	// waits for their readers.
	c.live.Range(func(cc, _ any) bool {
		cc.(*clientConn).fail(err)
		return true
	})
	c.wg.Wait()
	return nil
}
