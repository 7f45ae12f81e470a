package rpc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// Server resource limits (see the Options fields of the same names and
// doc.go). They bound what peers that hold the cluster token, or reach a
// server running without one, can make it hold: connections, request bytes
// in memory, and how long a started frame may take.
const (
	// DefaultMaxConns is the default cap on a server's open connections.
	// Clients keep ConnsPerAddr (2) connections to each server they use, so
	// it allows some two thousand client processes per server; each
	// connection costs two goroutines and a 64 KiB read buffer, so the cap
	// also bounds that overhead to a few hundred MiB.
	DefaultMaxConns = 4096

	// DefaultMaxInflightBytes is the default budget of request bytes a
	// server holds at once: 1 GiB. That is 16 frames of the largest size
	// (64 MiB), 64 storage batches of 16 MiB or a thousand 1 MiB chunk
	// writes in flight, far more than a 25 Gbit/s link needs to stay busy
	// (its bandwidth-delay product at 10 ms is 30 MiB). And it is small
	// beside memory: flyfs server on a 24 GiB machine runs mgmtd, metad and
	// a storaged per disk, one budget each, so peers can pin some 3 GiB of
	// requests with one disk, an eighth of memory, and the rest stays for
	// the page cache, Pebble and the storage engine. A fixed size rather
	// than a fraction of memory, so that a server behaves the same in a
	// container as on the host and several servers in one process add up
	// predictably.
	DefaultMaxInflightBytes = 1 << 30

	// DefaultFrameTimeout is the default longest pause within a frame, and
	// the fixed part of the time a frame has in all.
	DefaultFrameTimeout = 30 * time.Second

	// DefaultMinFrameRate is the default rate (bytes per second) below
	// which a frame body is too slow: with DefaultFrameTimeout, a 64 MiB
	// frame has 94 s, a 1 MiB one 31 s. A healthy link, even 100 Mbit/s
	// shared by ten busy connections, moves a connection's bytes faster.
	DefaultMinFrameRate = 1 << 20
)

// maxRefusing bounds the connections being refused at once for MaxConns
// (each is told why, which takes a goroutine for up to refuseLinger); beyond
// it a connection over the cap is closed without a word.
const maxRefusing = 256

// refuseLinger bounds how long a refused connection is kept to tell the peer
// why.
const refuseLinger = time.Second

// errFrameDeadline marks a frame that did not arrive within its deadline.
var errFrameDeadline = errors.New("frame deadline passed")

// errIdle marks a connection closed for being idle.
var errIdle = errors.New("connection idle")

// budget counts the request bytes a server holds against MaxInflightBytes.
type budget struct {
	max  int64 // negative: no limit, only counting
	used atomic.Int64
}

// reserve takes n bytes of the budget, or reports false (taking nothing)
// when that would pass the limit. It returns the bytes in use it saw.
func (b *budget) reserve(n int64) (bool, int64) {
	if b.max < 0 {
		return true, b.used.Add(n)
	}
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false, u
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true, u + n
		}
	}
}

func (b *budget) release(n int64) {
	if n != 0 {
		b.used.Add(-n)
	}
}

// ServerStats is a snapshot of what a server holds.
type ServerStats struct {
	// Conns is the number of open connections, including those in their
	// handshake (what MaxConns bounds).
	Conns int
	// InflightBytes is the request bytes counted against MaxInflightBytes:
	// requests being read, running or having their responses written.
	InflightBytes int64
}

// Stats returns what the server holds now.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	return ServerStats{Conns: n, InflightBytes: s.budget.used.Load()}
}

// logLimiter lets a warning about peer behaviour through at most once a
// second, so that abuse cannot flood the log; it counts what it held back.
type logLimiter struct {
	last       atomic.Int64 // unix nanoseconds of the last warning let through
	suppressed atomic.Int64
}

// allow reports whether to log now, and how many warnings were held back
// since the last one logged.
func (l *logLimiter) allow() (bool, int64) {
	now := time.Now().UnixNano()
	last := l.last.Load()
	if now-last < int64(time.Second) || !l.last.CompareAndSwap(last, now) {
		l.suppressed.Add(1)
		return false, 0
	}
	return true, l.suppressed.Swap(0)
}

// refuseConn tells a connection beyond MaxConns why it is refused and closes
// it. It reads nothing but what it drains: the error frame answers the hello
// the client sends on connecting, and draining that hello before closing
// keeps the close from resetting the connection before the client has read
// the frame.
func (s *Server) refuseConn(c net.Conn, limit int) {
	defer c.Close()
	s.metrics.refuse("max_conns")
	remote := c.RemoteAddr().String()
	msg := fmt.Sprintf("server has reached its limit of %d connections (MaxConns); try again later or raise the limit", limit)
	if ok, n := s.logConns.allow(); ok {
		s.log.Warn("connection refused: too many connections", "remote", remote, "limit", limit, "suppressed", n)
	}
	if s.refusing.Add(1) > maxRefusing {
		s.refusing.Add(-1)
		return
	}
	defer s.refusing.Add(-1)
	_ = c.SetDeadline(time.Now().Add(refuseLinger))
	if err := WriteFrame(c, Header{Kind: KindError, Code: ResourceExhausted}, encodeError(msg), nil); err != nil {
		return
	}
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, c, 64<<10)
}

// inFrame is a frame read by a server connection: the frame, the bytes it
// holds of the server's budget (released when its call is done), and, when
// the budget could not take it, the error to answer instead of running it
// (its body was skipped).
type inFrame struct {
	Frame
	charge  int64
	refused *Error
}

// setReadDeadline sets the connection's read deadline unless it is set to t
// already. Reader goroutine only.
func (sc *serverConn) setReadDeadline(t time.Time) {
	if !t.Equal(sc.deadline) {
		sc.deadline = t
		_ = sc.conn.SetReadDeadline(t)
	}
}

// connReader is what a server connection's read buffer reads from: the
// connection, with the deadlines of the frame being read (see readFrame)
// applied before each read of the socket. Reads the buffer can serve never
// get here, so a frame that arrived whole costs no timer.
type connReader struct{ sc *serverConn }

func (r connReader) Read(p []byte) (int, error) {
	if r.sc.clock.armed {
		r.sc.frameDeadline()
	}
	return r.sc.conn.Read(p)
}

// frameClock is the timing of the frame being read. Reader goroutine only.
type frameClock struct {
	armed     bool          // a frame is being read: its deadlines apply
	start     time.Time     // the first read of the socket for it; zero before
	allowance time.Duration // the frame's whole time, from start
}

// frameDeadline sets the read deadline for the next read of the socket
// within a frame: FrameTimeout from now (the frame must keep coming), but
// no later than the frame's allowance from its start (it must come at
// MinFrameRate). To spare the timer, a deadline is only moved once it is
// within 7/8 of FrameTimeout of now, so a stall is detected after 7/8 to
// all of FrameTimeout.
func (sc *serverConn) frameDeadline() {
	stall := sc.s.opts.FrameTimeout
	now := time.Now()
	c := &sc.clock
	if c.start.IsZero() {
		c.start = now
	}
	dl := now.Add(stall)
	if end := c.start.Add(c.allowance); end.Before(dl) {
		dl = end
	}
	if cur := sc.deadline; !cur.Equal(dl) && (cur.IsZero() || cur.After(dl) || cur.Before(now.Add(stall-stall/8))) {
		sc.setReadDeadline(dl)
	}
}

// late describes a frame part that missed its deadline.
func (sc *serverConn) late(part string, err error) error {
	o := &sc.s.opts
	c := &sc.clock
	if c.allowance > o.FrameTimeout && !c.start.IsZero() && time.Since(c.start) >= c.allowance {
		return fmt.Errorf("%w: %s not received within %v (FrameTimeout %v plus its size at MinFrameRate %d bytes/s): %w",
			errFrameDeadline, part, c.allowance, o.FrameTimeout, o.MinFrameRate, err)
	}
	return fmt.Errorf("%w: %s stalled: no data for %v (FrameTimeout): %w", errFrameDeadline, part, o.FrameTimeout, err)
}

// readFrame reads the next frame from the client under the server's limits:
//   - between frames there is no deadline but IdleTimeout (see awaitFrame);
//   - once a frame's first byte is in, the rest must keep coming, with no
//     pause of FrameTimeout, and all of it must be in within FrameTimeout
//     plus its body's length at MinFrameRate of the server first waiting
//     for it (a frame that arrived whole waits for nothing);
//   - a request's body is charged to the server's budget as soon as its
//     header is read, before its buffers are allocated; a request the budget
//     cannot take has its body read into a small scratch buffer and dropped
//     (the lengths are known, so the stream stays in step) and is answered
//     ResourceExhausted;
//   - a cancel's body, which means nothing, is dropped likewise; any other
//     kind is returned without its body, since it ends the connection.
func (sc *serverConn) readFrame() (inFrame, error) {
	br := sc.fr.br
	o := &sc.s.opts
	if br.Buffered() == 0 {
		if err := sc.awaitFrame(); err != nil {
			return inFrame{}, err
		}
	}
	if o.FrameTimeout > 0 {
		sc.clock = frameClock{armed: true, allowance: o.FrameTimeout}
		defer sc.disarm()
	} else {
		sc.setReadDeadline(time.Time{}) // no frame deadlines; drop an idle one
	}
	hdr := sc.fr.hdr[:]
	if _, err := io.ReadFull(br, hdr); err != nil {
		if isTimeout(err) {
			return inFrame{}, sc.late("frame header", err)
		}
		return inFrame{}, truncated(err, "header")
	}
	h, err := ParseHeader(hdr, sc.fr.lim)
	if err != nil {
		return inFrame{Frame: Frame{Header: h}}, err
	}
	body := int64(h.MsgLen) + int64(h.PayloadLen)
	if body == 0 || (h.Kind != KindRequest && h.Kind != KindCancel) {
		return inFrame{Frame: Frame{Header: h}}, nil
	}
	sc.clock.allowance = o.FrameTimeout + time.Duration(body)*time.Second/time.Duration(o.MinFrameRate)
	part := func() string { return fmt.Sprintf("%s body of %d bytes", h.Kind, body) }

	in := inFrame{Frame: Frame{Header: h}}
	if h.Kind == KindRequest {
		ok, used := sc.s.budget.reserve(body)
		if ok {
			in.charge = body
		} else {
			in.refused = Errorf(ResourceExhausted,
				"%s: request of %d bytes refused: the server holds %d bytes of requests in flight, its limit is %d (MaxInflightBytes); retry later",
				h.Method, body, used, sc.s.budget.max)
		}
	}
	if in.refused != nil || h.Kind == KindCancel {
		if _, err := io.CopyN(io.Discard, br, body); err != nil {
			if isTimeout(err) {
				return inFrame{}, sc.late(part(), err)
			}
			return inFrame{}, truncated(err, "body")
		}
		if in.refused != nil {
			sc.s.metrics.refuse("inflight_bytes")
			if ok, n := sc.s.logBudget.allow(); ok {
				sc.s.log.Warn("request refused: in-flight byte budget exhausted", "remote", sc.remote,
					"method", h.Method.String(), "bytes", body, "limit", sc.s.budget.max, "suppressed", n)
			}
		}
		return in, nil
	}
	f, err := readBody(br, h)
	if err != nil {
		sc.s.budget.release(in.charge)
		if isTimeout(err) {
			return inFrame{}, sc.late(part(), err)
		}
		return inFrame{}, err
	}
	in.Frame = f
	return in, nil
}

func (sc *serverConn) disarm() { sc.clock.armed = false }

// awaitFrame waits for the first byte of the next frame. Without an
// IdleTimeout it waits as long as it takes: clients keep pooled connections
// open between calls, and TCP keepalive (on for accepted connections) finds
// dead peers. With one, a connection that has had no frame and no running
// call for that long is sent a go-away (its client closes it, and redials
// when it next needs to), and closed if it is still idle after another
// IdleTimeout.
func (sc *serverConn) awaitFrame() error {
	idle := sc.s.opts.IdleTimeout
	goneAway := false
	for {
		var dl time.Time
		if idle > 0 {
			dl = time.Now().Add(idle)
		}
		sc.setReadDeadline(dl)
		_, err := sc.fr.br.Peek(1)
		if err == nil || idle <= 0 || !isTimeout(err) {
			return err
		}
		if sc.busy() {
			continue // calls are running: not idle
		}
		if goneAway {
			return fmt.Errorf("%w for %v after a go-away (IdleTimeout)", errIdle, idle)
		}
		sc.s.log.Debug("idle connection; sending go-away", "remote", sc.remote, "idle", idle)
		sc.goAway()
		goneAway = true
	}
}

// busy reports whether calls of the connection are running.
func (sc *serverConn) busy() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.inflight) > 0
}

func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}
