package console

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// signinLimits slows down guessing without letting a guesser lock everyone
// out: a failed sign-in spends a token of its client address's limiter and
// one of its access key's, and a sign-in is refused while either is empty.
// A guesser elsewhere runs dry on its own address; one that spreads over
// many addresses runs dry on the key it guesses, and other keys still sign in.
type signinLimits struct {
	mu     sync.Mutex
	byAddr map[string]*rate.Limiter
	byKey  map[string]*rate.Limiter
}

const (
	signinAddrRate, signinAddrBurst = rate.Limit(2), 20 // per client address
	signinKeyRate, signinKeyBurst   = rate.Limit(1), 30 // per access key
	signinTracked                   = 10000             // limiters kept per map
)

func newSigninLimits() *signinLimits {
	return &signinLimits{byAddr: map[string]*rate.Limiter{}, byKey: map[string]*rate.Limiter{}}
}

func limiter(m map[string]*rate.Limiter, k string, r rate.Limit, burst int) *rate.Limiter {
	l := m[k]
	if l == nil {
		if len(m) >= signinTracked {
			clear(m) // forgets old guessers; a fresh limiter starts full
		}
		l = rate.NewLimiter(r, burst)
		m[k] = l
	}
	return l
}

// allowed reports whether a sign-in from addr for key may be tried now.
func (s *signinLimits) allowed(addr, key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return limiter(s.byAddr, addr, signinAddrRate, signinAddrBurst).TokensAt(now) >= 1 &&
		limiter(s.byKey, key, signinKeyRate, signinKeyBurst).TokensAt(now) >= 1
}

// failed spends a token of addr's and of key's limiters.
func (s *signinLimits) failed(addr, key string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limiter(s.byAddr, addr, signinAddrRate, signinAddrBurst).AllowN(now, 1)
	limiter(s.byKey, key, signinKeyRate, signinKeyBurst).AllowN(now, 1)
}

// clientAddr is the request's client address without its port.
func clientAddr(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}
