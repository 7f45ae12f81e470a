package md5lanes

import (
	"math/bits"
	"sync"
)

// maxRound bounds the blocks a kernel call advances each lane by, so a
// message that arrives while the lanes run waits at most one round.
const maxRound = 256

// idle is what a lane without a message hashes: its sum is thrown away.
var idle = make([]byte, maxRound*blockSize)

// Server hashes the large writes of concurrent messages together, each in
// a lane of the kernel. A goroutine runs only while it has writes: the
// first write to come starts it, and it ends when none is left.
type Server struct {
	mu      sync.Mutex
	queue   []*job
	running bool
}

// job is one Write's whole blocks and the state they advance.
type job struct {
	s    *[4]uint32
	p    []byte
	done chan struct{}
}

// lanesHelp: this machine has a SIMD kernel; without one a lane is no
// faster than a message hashed alone.
var lanesHelp = fastest.width > 1

// hashLarge advances s by the blocks of p: in a lane where this machine
// has a SIMD kernel, else in place.
func (srv *Server) hashLarge(s *[4]uint32, p []byte) {
	if lanesHelp {
		srv.hash(s, p)
		return
	}
	hashOne(s, p)
}

// hash advances s by the blocks of p (a multiple of blockSize long) in a
// lane, and returns when it is done.
func (srv *Server) hash(s *[4]uint32, p []byte) {
	j := &job{s: s, p: p, done: make(chan struct{})}
	srv.mu.Lock()
	srv.queue = append(srv.queue, j)
	if !srv.running {
		srv.running = true
		go srv.run()
	}
	srv.mu.Unlock()
	<-j.done
}

// run fills free lanes from the queue (the lowest first, so that few jobs
// share one group of the kernel), advances every busy lane by the blocks
// the shortest of them has left (at most maxRound), and hands back each
// job that is done, until no job is left.
func (srv *Server) run() {
	var (
		busy [lanes]*job
		st   laneState
		ptrs [lanes][]byte
	)
	for {
		var mask uint16 // the busy lanes
		srv.mu.Lock()
		for l := range lanes {
			if busy[l] == nil && len(srv.queue) > 0 {
				j := srv.queue[0]
				srv.queue[0] = nil
				srv.queue = srv.queue[1:]
				busy[l] = j
				for w := range 4 {
					st[w][l] = j.s[w]
				}
			}
			if busy[l] != nil {
				mask |= 1 << l
			}
		}
		if mask == 0 {
			srv.running = false
			srv.queue = nil
			srv.mu.Unlock()
			return
		}
		srv.mu.Unlock()

		round := maxRound
		for _, j := range busy {
			if j != nil {
				round = min(round, len(j.p)/blockSize)
			}
		}
		for l, j := range busy {
			if j == nil {
				ptrs[l] = idle
			} else {
				ptrs[l] = j.p
			}
		}
		srv.advance(&st, &ptrs, round, mask)
		for l, j := range busy {
			if j == nil {
				continue
			}
			j.p = j.p[round*blockSize:]
			if len(j.p) == 0 {
				for w := range 4 {
					j.s[w] = st[w][l]
				}
				busy[l] = nil
				close(j.done)
			}
		}
	}
}

// advance moves every lane in busy on by blocks blocks. A group of the
// kernel with one busy lane has it hashed alone (hashOne: crypto/md5's
// assembly): a kernel call costs about what two blocks hashed alone do, so
// it pays from two busy lanes in its group on.
func (srv *Server) advance(st *laneState, ptrs *[lanes][]byte, blocks int, busy uint16) {
	vector := busy
	for g := 0; g < lanes; g += fastest.width {
		in := busy & groupMask(g, fastest.width)
		if bits.OnesCount16(in) != 1 {
			continue
		}
		vector &^= in
		l := bits.TrailingZeros16(in)
		one := [4]uint32{st[0][l], st[1][l], st[2][l], st[3][l]}
		hashOne(&one, ptrs[l][:blocks*blockSize])
		st[0][l], st[1][l], st[2][l], st[3][l] = one[0], one[1], one[2], one[3]
	}
	if vector != 0 {
		fastest.run(st, ptrs, blocks, vector)
	}
}

// groupMask is the lanes of the kernel group that starts at lane g.
func groupMask(g, width int) uint16 {
	return uint16((1<<width - 1) << g)
}
