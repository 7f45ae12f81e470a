package rpc

import (
	"net"
	"testing"
	"time"
)

// TestLateDialKeepsTheWorkingConnection: a dial asked for by a caller that
// saw a slot empty, but that finishes after another dial filled it, must not
// replace the working connection. The replaced one would belong to no slot,
// and Close, which closes the slots' connections and waits for every reader,
// would then wait for it as long as the server lives.
func TestLateDialKeepsTheWorkingConnection(t *testing.T) {
	srv := NewServer(Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	c := NewClient(Options{})
	p := newPool(c, l.Addr().String())
	c.pools.Store(p.addr, p)

	first := p.startDial(0)
	<-first.done
	if first.err != nil {
		t.Fatal(first.err)
	}
	late := p.startDial(0) // the slot is filled: this dial is the late one
	<-late.done
	if got := p.slots[0].cc.Load(); got != first.cc {
		t.Fatalf("the late dial replaced the slot's working connection")
	}
	if late.cc != first.cc {
		t.Fatalf("the late dial's callers got a connection no slot holds")
	}

	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Client.Close still waiting after 10 s: a connection outside every slot is still open")
	}
}
