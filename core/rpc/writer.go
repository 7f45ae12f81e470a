package rpc

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// inlinePayload is the largest payload copied into the frame's body by
	// the sender; larger ones stay where they are and go out with writev.
	inlinePayload = 16 << 10
	// flushSize is when the writer stops coalescing and writes what it has.
	flushSize = 64 << 10
	// maxKeptBuffer bounds the coalescing buffer kept between batches.
	maxKeptBuffer = 1 << 20
)

// States of a tracked outFrame.
const (
	frameQueued    int32 = iota // in the queue; the sender may still withdraw it
	frameTaken                  // the writer owns it until written is closed
	frameWithdrawn              // the sender withdrew it; the writer skips it
)

// outFrame is one frame waiting for the writer. body holds the encoded
// message and, when small, the payload; payload is a large caller-owned
// buffer sent in place.
type outFrame struct {
	hdr     [HeaderSize]byte
	body    []byte
	payload []byte

	// A tracked frame (a client request) may be withdrawn by its sender
	// until the writer takes it; state arbitrates. If it also references a
	// caller's payload, written is closed once the writer will never read
	// that payload again.
	tracked bool
	state   atomic.Int32
	written chan struct{}

	// onDone, if set, runs once the writer is done with the frame (written,
	// or abandoned because the connection failed or closed first).
	onDone func()

	finished bool // writer goroutine only: finish ran
}

// finish tells the frame's owner that the writer is done with it. Writer
// goroutine only.
func (f *outFrame) finish() {
	f.finished = true
	if f.written != nil {
		close(f.written)
	}
	if f.onDone != nil {
		f.onDone()
	}
}

// newOutFrame builds a frame. Small payloads are copied into the body, so the
// caller's buffer is free at once; large ones are referenced, and a tracked
// frame then gets a written channel (see release).
func newOutFrame(h Header, msg, payload []byte, track bool) *outFrame {
	f := &outFrame{tracked: track}
	h.MsgLen, h.PayloadLen = uint32(len(msg)), uint32(len(payload))
	h.Put(f.hdr[:])
	if len(payload) <= inlinePayload {
		if len(payload) > 0 {
			body := make([]byte, 0, len(msg)+len(payload))
			msg = append(append(body, msg...), payload...)
		}
		f.body = msg
		return f
	}
	f.body, f.payload = msg, payload
	if track {
		f.written = make(chan struct{})
	}
	return f
}

// withdraw takes a tracked frame back if the writer has not taken it yet,
// and reports whether it did (the peer will then never see the frame).
func (f *outFrame) withdraw() bool {
	return f.tracked && f.state.CompareAndSwap(frameQueued, frameWithdrawn)
}

// release returns once the writer no longer references the frame's payload:
// at once if the frame was withdrawn or holds no caller payload, otherwise
// after the write (bounded by the write timeout, or cut short by the
// connection closing). A tracked frame's sender calls it before letting the
// caller have the payload back.
func (f *outFrame) release() {
	if f.written == nil || f.withdraw() || f.state.Load() == frameWithdrawn {
		return
	}
	<-f.written
}

// releaseWithin is release bounded by d; it reports whether the writer let
// go of the payload in time.
func (f *outFrame) releaseWithin(d time.Duration) bool {
	if f.written == nil || f.withdraw() || f.state.Load() == frameWithdrawn {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.written:
		return true
	case <-t.C:
		return false
	}
}

// connWriter owns the write side of a connection. Senders enqueue frames and
// return; one goroutine writes them, coalescing small frames that arrive
// together into one buffer and one syscall, and sending large payloads with
// writev straight from their buffers. The queue drains into the socket as
// fast as the socket takes it, so a burst of small calls shares syscalls
// without any timer.
type connWriter struct {
	conn    net.Conn
	timeout time.Duration
	onError func(error) // called once, from the writer goroutine, when a write fails

	mu      sync.Mutex
	cond    sync.Cond
	queue   []*outFrame
	state   int // writerOpen, writerDraining, writerClosed
	err     error
	stopped chan struct{} // closed when run returns

	buf     []byte
	yielded bool
}

const (
	writerOpen = iota
	writerDraining
	writerClosed
)

var errWriterClosed = errors.New("connection closed")

func newConnWriter(conn net.Conn, timeout time.Duration, onError func(error)) *connWriter {
	w := &connWriter{conn: conn, timeout: timeout, onError: onError, stopped: make(chan struct{})}
	w.cond.L = &w.mu
	go w.run()
	return w
}

// enqueue hands f to the writer. It fails once the writer is stopping.
func (w *connWriter) enqueue(f *outFrame) error {
	w.mu.Lock()
	if w.state != writerOpen {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.queue = append(w.queue, f)
	if len(w.queue) == 1 {
		w.cond.Signal()
	}
	w.mu.Unlock()
	return nil
}

// stop stops the writer. With flush, frames already queued are written first
// (so an error frame reaches the peer before the close); stop does not wait,
// see stopped.
func (w *connWriter) stop(flush bool, err error) {
	w.mu.Lock()
	if w.state == writerOpen || (w.state == writerDraining && !flush) {
		if w.err == nil {
			w.err = err
		}
		if flush {
			w.state = writerDraining
		} else {
			w.state = writerClosed
		}
		w.cond.Broadcast()
	}
	w.mu.Unlock()
}

func (w *connWriter) run() {
	defer close(w.stopped)
	var batch []*outFrame
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && w.state == writerOpen {
			w.cond.Wait()
		}
		if w.state == writerClosed || (w.state == writerDraining && len(w.queue) == 0) {
			left := w.queue
			w.queue = nil
			w.mu.Unlock()
			abandon(left)
			return
		}
		if len(w.queue) < 8 && !w.yielded {
			// A short queue often means more frames are a moment away
			// (handlers finishing, callers sending): yield once so they can
			// join this batch and share its syscall.
			w.yielded = true
			w.mu.Unlock()
			runtime.Gosched()
			continue
		}
		w.yielded = false
		batch, w.queue = w.queue, batch[:0]
		w.mu.Unlock()

		err := w.writeBatch(batch)
		clear(batch) // drop references so written frames can be collected
		if err != nil {
			w.stop(false, err)
			w.mu.Lock()
			left := w.queue
			w.queue = nil
			w.mu.Unlock()
			abandon(left)
			w.onError(err)
			return
		}
	}
}

// abandon finishes the untracked frames a stopped writer never took, so that
// their onDone runs (a server's response gives back its buffers and its
// share of the in-flight budget). The writer never touched them, so nothing
// references their payloads any more. Tracked frames (client requests) are
// left to their senders, which withdraw them.
func abandon(frames []*outFrame) {
	for _, f := range frames {
		if !f.tracked && !f.finished {
			f.finish()
		}
	}
}

// writeBatch writes a batch of frames, coalescing small ones.
func (w *connWriter) writeBatch(batch []*outFrame) (err error) {
	defer func() {
		// Whatever happened, the writer is done with every frame it took.
		for _, f := range batch {
			if !f.finished && (!f.tracked || f.state.Load() == frameTaken) {
				f.finish()
			}
		}
	}()
	buf := w.buf[:0]
	for _, f := range batch {
		if f.tracked && !f.state.CompareAndSwap(frameQueued, frameTaken) {
			continue // withdrawn by its sender
		}
		buf = append(buf, f.hdr[:]...)
		buf = append(buf, f.body...)
		if len(f.payload) > 0 {
			if err = w.writev(buf, f.payload); err != nil {
				return err
			}
			buf = buf[:0]
			// Release the payload now rather than after the whole batch: its
			// sender should not wait for other callers' frames.
			f.finish()
			continue
		}
		if len(buf) >= flushSize {
			if err = w.write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		err = w.write(buf)
	}
	if cap(buf) <= maxKeptBuffer {
		w.buf = buf[:0]
	} else {
		w.buf = nil
	}
	return err
}

func (w *connWriter) write(b []byte) error {
	_ = w.conn.SetWriteDeadline(time.Now().Add(w.timeout))
	_, err := w.conn.Write(b)
	return err
}

func (w *connWriter) writev(head, payload []byte) error {
	_ = w.conn.SetWriteDeadline(time.Now().Add(w.timeout))
	bufs := net.Buffers{head, payload}
	_, err := bufs.WriteTo(w.conn)
	return err
}
