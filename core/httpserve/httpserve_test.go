package httpserve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serve starts a bounded server for h with short limits.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(h, Limits{HeaderTimeout: 300 * time.Millisecond, StallTimeout: 300 * time.Millisecond, MinBodyRate: 10 << 10, IdleTimeout: time.Second})
	go Serve(srv, l, "", "")
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// closedWithin waits for the server to close c.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	ne, timeout := err.(net.Error)
	return !(timeout && ne.Timeout())
}

// Connections that stop sending a body, or never finish their headers, are
// closed after the stall timeout while the server keeps answering others.
func TestStalledConnectionsAreClosed(t *testing.T) {
	var bodyErrs atomic.Int64
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			bodyErrs.Add(1)
		}
		io.WriteString(w, "ok")
	}))
	var conns []net.Conn
	for i := 0; i < 50; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i%2 == 0 {
			fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n0123456789")
		} else {
			fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: x\r\n") // headers never end
		}
		conns = append(conns, c)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("another client while 50 connections stall: %v", err)
	}
	resp.Body.Close()
	for i, c := range conns {
		if !closedWithin(c, 20*time.Second) {
			t.Fatalf("stalled connection %d still open after 20 s", i)
		}
	}
	if bodyErrs.Load() == 0 {
		t.Fatal("no handler saw its stalled body fail")
	}
}

// A body that trickles in below the minimum rate fails; one that keeps a
// decent pace passes however long it takes.
func TestBodyRate(t *testing.T) {
	got := make(chan error, 4)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		got <- err
	}))
	send := func(pieces int, size int, every time.Duration) error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", pieces*size)
		for i := 0; i < pieces; i++ {
			if _, err := c.Write([]byte(strings.Repeat("x", size))); err != nil {
				break
			}
			time.Sleep(every)
		}
		select {
		case err := <-got:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("the handler never finished reading")
			return nil
		}
	}
	// 1 byte every 100 ms: moving, but at 10 B/s, far below 10 KiB/s.
	if err := send(12, 1, 100*time.Millisecond); err == nil {
		t.Error("a body trickling in at 10 B/s was read to the end")
	}
	// 64 KiB every 100 ms for a second: well above the rate, longer than the stall timeout.
	if err := send(10, 64<<10, 100*time.Millisecond); err != nil {
		t.Errorf("a body arriving at 640 KiB/s failed: %v", err)
	}
}

// A client that stops taking a response makes the handler's write fail
// after the stall timeout; one that keeps reading gets it all.
func TestStalledResponseReader(t *testing.T) {
	werr := make(chan error, 1)
	chunk := make([]byte, 1<<20)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 512; i++ { // 512 MiB: more than any socket buffer
			if _, err := w.Write(chunk); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	bufio.NewReader(c).ReadString('\n') // the status line, then nothing more
	select {
	case err := <-werr:
		if err == nil {
			t.Fatal("512 MiB written to a client that stopped reading")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler's write to a stalled client never failed")
	}
}
