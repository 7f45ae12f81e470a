package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// sessionCookie names the session cookie: HttpOnly, SameSite=Strict.
const sessionCookie = "flyfs_console"

// csrfHeader carries the session's CSRF token on every state-changing call.
const csrfHeader = "X-CSRF-Token"

type session struct {
	id      string
	who     Principal
	secret  [32]byte // digest of the key's secret at sign-in: a new secret ends the session
	csrf    string
	expires time.Time
}

// sessions is the in-memory session table. Sessions live in this console
// process only: a restart signs everyone out.
type sessions struct {
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	byID map[string]*session
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, now: now, byID: map[string]*session{}}
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *sessions) create(who Principal, secret string) *session {
	ss := &session{id: randomToken(), who: who, secret: sha256.Sum256([]byte(secret)), csrf: randomToken(), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
	s.byID[ss.id] = ss
	return ss
}

// get returns the live session of the request's cookie, or nil.
func (s *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[c.Value]
	if ss == nil {
		return nil
	}
	if !s.now().Before(ss.expires) {
		delete(s.byID, ss.id)
		return nil
	}
	return ss
}

func (s *sessions) drop(id string) {
	s.mu.Lock()
	delete(s.byID, id)
	s.mu.Unlock()
}

// dropKey ends every session of an access key (when the key is revoked).
func (s *sessions) dropKey(access string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ss := range s.byID {
		if ss.who.AccessKey == access {
			delete(s.byID, id)
		}
	}
}

func (s *sessions) sweepLocked() {
	now := s.now()
	for id, ss := range s.byID {
		if !now.Before(ss.expires) {
			delete(s.byID, id)
		}
	}
}

func (ss *session) csrfOK(r *http.Request) bool {
	got := r.Header.Get(csrfHeader)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) == 1
}
