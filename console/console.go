// Package console is the admin console: an http.Handler that serves the
// embedded pages (package web) and the JSON API behind them — cluster health,
// services, capacity, chains and target states, recovery progress, the
// namespace browser, and access keys. Every page and API call needs a session
// made by signing in with an access key that has admin rights; every
// state-changing call also needs the session's CSRF token. The API is
// documented in docs/console-api.md.
package console

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/web"
)

// Config wires a console to a cluster.
type Config struct {
	// Mgmtd lists the cluster managers' addresses (any of them; changes go to
	// the primary). Required.
	Mgmtd []string
	// RPC calls mgmtd and storaged; nil: New makes one with Token, and Close
	// closes it.
	RPC   *rpc.Client
	Token string
	// FS is the cluster's client (required): the namespace the browser pages
	// work on, the access keys admins sign in with, and the storage nodes'
	// statistics.
	FS *client.FS
	// Advertise, if set, is the console's own address: it registers with
	// mgmtd as a service of kind console, so it shows up in service lists.
	Advertise string
	// SessionTTL: a session ends this long after sign-in. Default 8 h.
	SessionTTL time.Duration
	// SampleInterval: how often cluster figures are sampled for the live
	// charts while someone is signed in. Default 2 s.
	SampleInterval time.Duration
	// SecureCookies marks the session cookie Secure (serve over TLS).
	SecureCookies bool
	// MaxPartBytes bounds one upload part. Default 64 MiB.
	MaxPartBytes int64
	Logger       *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Console is the admin console's http.Handler. Close stops its sampler.
type Console struct {
	cfg      Config
	mux      *http.ServeMux
	sessions *sessions
	mgmtd    *client.Mgmtd
	ownRPC   *rpc.Client
	log      *slog.Logger
	signin   *signinLimits // failed sign-ins, per client address and per key
	sampler  *sampler
	uploads  *uploads
	retained retainedCounter

	rmu   sync.Mutex // guards the routing cache
	rinfo *routing.Info
	rboot bool

	closeOnce sync.Once
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

// New checks cfg and returns a console ready to serve.
func New(cfg Config) (*Console, error) {
	if len(cfg.Mgmtd) == 0 {
		return nil, errors.New("console: no mgmtd addresses")
	}
	if cfg.FS == nil {
		return nil, errors.New("console: no cluster client (Config.FS)")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = 2 * time.Second
	}
	if cfg.MaxPartBytes <= 0 {
		cfg.MaxPartBytes = 64 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(), log: cfg.Logger,
		sessions: newSessions(cfg.SessionTTL, cfg.Now),
		signin:   newSigninLimits()}
	rc := cfg.RPC
	if rc == nil {
		rc = rpc.NewClient(rpc.Options{Token: cfg.Token, DialTimeout: 2 * time.Second, Logger: cfg.Logger})
		c.ownRPC = rc
	}
	c.mgmtd = client.NewMgmtd(rc, cfg.Mgmtd)
	c.mgmtd.AttemptTimeout = 2 * time.Second
	c.sampler = newSampler(c)
	c.uploads = newUploads()
	if err := c.routes(); err != nil {
		c.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.background(ctx)
	}()
	if cfg.Advertise != "" {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.mgmtd.KeepRegistered(ctx, mgmtdapi.KindConsole, cfg.Advertise, cfg.Advertise, cfg.Logger)
		}()
	}
	return c, nil
}

// Close stops the background sampler and upload reaper.
func (c *Console) Close() error {
	c.closeOnce.Do(func() {
		if c.stop != nil {
			c.stop()
			c.wg.Wait()
		}
		if c.ownRPC != nil {
			c.ownRPC.Close()
		}
	})
	return nil
}

func (c *Console) background(ctx context.Context) {
	tick := time.NewTicker(c.cfg.SampleInterval)
	defer tick.Stop()
	for {
		// Sampled whether or not anyone is signed in: the charts show the
		// last hour, not only the minutes someone watched.
		c.sampler.sample(ctx)
		c.uploads.reap(ctx, c, c.cfg.Now())
		c.retained.maybeCount(ctx, c, c.cfg.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// ServeHTTP serves the pages and the API, with headers that keep the pages
// from running anything but our own scripts.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	c.mux.ServeHTTP(w, r)
}

func (c *Console) routes() error {
	assets, err := fs.Sub(web.Assets, "static")
	if err != nil {
		return fmt.Errorf("console: embedded assets: %w", err)
	}
	files := http.FileServerFS(assets)
	// The page shell is public (it holds no data): it shows the sign-in form
	// until the API says a session exists.
	c.mux.Handle("GET /assets/", http.StripPrefix("/assets/", noStore(files)))
	c.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, assets, "index.html")
	})

	c.mux.HandleFunc("POST /api/session", c.handleSignIn)
	c.mux.HandleFunc("GET /api/session", c.authed(false, c.handleWhoAmI))
	c.mux.HandleFunc("DELETE /api/session", c.authed(true, c.handleSignOut))

	c.mux.HandleFunc("GET /api/overview", c.authed(false, c.handleOverview))
	c.mux.HandleFunc("GET /api/chains", c.authed(false, c.handleChains))
	c.mux.HandleFunc("GET /api/chains/new", c.authed(false, c.handleChainTableDefaults))
	c.mux.HandleFunc("POST /api/chains/plan", c.authed(true, c.handleChainTable(false)))
	c.mux.HandleFunc("POST /api/chains", c.authed(true, c.handleChainTable(true)))
	c.mux.HandleFunc("POST /api/targets/{id}/offline", c.authed(true, c.handleHold(true)))
	c.mux.HandleFunc("POST /api/targets/{id}/online", c.authed(true, c.handleHold(false)))
	c.mux.HandleFunc("POST /api/nodes/{id}/maintenance", c.authed(true, c.handleMaintenance(true)))
	c.mux.HandleFunc("GET /api/audit", c.authed(false, c.handleAudit))
	c.mux.HandleFunc("DELETE /api/nodes/{id}/maintenance", c.authed(true, c.handleMaintenance(false)))

	c.mux.HandleFunc("GET /api/fs/list", c.authed(false, c.handleList))
	c.mux.HandleFunc("GET /api/fs/count", c.authed(false, c.handleCount))
	c.mux.HandleFunc("GET /api/fs/stat", c.authed(false, c.handleStat))
	c.mux.HandleFunc("GET /api/fs/download", c.authed(false, c.handleDownload))
	c.mux.HandleFunc("GET /api/fs/archive", c.authed(false, c.handleArchive))
	c.mux.HandleFunc("POST /api/fs/mkdir", c.authed(true, c.handleMkdir))
	c.mux.HandleFunc("POST /api/fs/rename", c.authed(true, c.handleRename))
	c.mux.HandleFunc("POST /api/fs/delete", c.authed(true, c.handleDelete))
	c.mux.HandleFunc("POST /api/tasks/gc", c.authed(true, c.handleCollect))
	c.mux.HandleFunc("GET /api/tasks/gc", c.authed(false, c.handleGCQueue))
	c.mux.HandleFunc("POST /api/tasks/fsck", c.authed(true, c.handleFsck))
	c.mux.HandleFunc("GET /api/trash", c.authed(false, c.handleTrash))
	c.mux.HandleFunc("GET /api/snapshots", c.authed(false, c.handleSnapshots))
	c.mux.HandleFunc("POST /api/snapshots", c.authed(true, c.handleSnapshotCreate))
	c.mux.HandleFunc("POST /api/snapshots/delete", c.authed(true, c.handleSnapshotDelete))
	c.mux.HandleFunc("GET /api/sessions", c.authed(false, c.handleSessions))
	c.mux.HandleFunc("POST /api/trash/restore", c.authed(true, c.handleTrashRestore))
	c.mux.HandleFunc("POST /api/trash/empty", c.authed(true, c.handleTrashEmpty))
	c.mux.HandleFunc("GET /api/fs/preview", c.authed(false, c.handlePreview))
	c.mux.HandleFunc("GET /api/fs/versions", c.authed(false, c.handleVersions))
	c.mux.HandleFunc("POST /api/fs/versions/restore", c.authed(true, c.handleRestoreVersion))
	c.mux.HandleFunc("POST /api/fs/versioning", c.authed(true, c.handleSetVersioning))
	c.mux.HandleFunc("POST /api/fs/uploads", c.authed(true, c.handleUploadStart))
	c.mux.HandleFunc("PUT /api/fs/uploads/{id}", c.authed(true, c.handleUploadPart))
	c.mux.HandleFunc("POST /api/fs/uploads/{id}/complete", c.authed(true, c.handleUploadComplete))
	c.mux.HandleFunc("DELETE /api/fs/uploads/{id}", c.authed(true, c.handleUploadAbort))

	c.mux.HandleFunc("GET /api/keys", c.authed(false, c.handleKeysList))
	c.mux.HandleFunc("POST /api/keys", c.authed(true, c.handleKeysCreate))
	c.mux.HandleFunc("PUT /api/keys/{key}/buckets", c.authed(true, c.handleKeysBuckets))
	c.mux.HandleFunc("POST /api/keys/{key}/rotate", c.authed(true, c.handleKeysRotate))
	c.mux.HandleFunc("DELETE /api/keys/{key}", c.authed(true, c.handleKeysRevoke))

	c.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "not_found", "no such API call: "+r.Method+" "+r.URL.Path)
	})
	return nil
}

func noStore(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Assets change with the binary; revalidate each time (they are small).
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

type ctxKey struct{}

// sessionOf returns the request's session (set by authed).
func sessionOf(r *http.Request) *session {
	ss, _ := r.Context().Value(ctxKey{}).(*session)
	return ss
}

// authed refuses a request without a live admin session (401) and a
// state-changing one without the session's CSRF token (403).
func (c *Console) authed(mutating bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		ss := c.sessions.get(r)
		if ss == nil {
			apiError(w, http.StatusUnauthorized, "not_signed_in", "sign in first (your session may have expired)")
			return
		}
		if !c.keyStillValid(w, r, ss) {
			return
		}
		if !ss.who.Admin {
			apiError(w, http.StatusForbidden, "forbidden", "this access key has no admin rights")
			return
		}
		if mutating && !ss.csrfOK(r) {
			apiError(w, http.StatusForbidden, "bad_csrf", "missing or wrong "+csrfHeader+" header")
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, ss)))
	}
}

// apiErr is the body of every error answer.
type apiErr struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiErr{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// readJSON decodes a small JSON body into v, refusing unknown fields and
// anything that is not JSON, such as a second value after the first.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		apiError(w, http.StatusUnsupportedMediaType, "bad_request", "send a JSON body with Content-Type: application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, next := dec.Token(); next != io.EOF {
			err = errors.New("data after the JSON value")
		}
	}
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", "bad JSON body: "+err.Error())
		return false
	}
	return true
}

// signInReq is the sign-in body.
type signInReq struct {
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

// sessionResp describes the caller's session.
type sessionResp struct {
	AccessKey string    `json:"accessKey"`
	Admin     bool      `json:"admin"`
	CSRFToken string    `json:"csrfToken"`
	Expires   time.Time `json:"expires"`
}

func (c *Console) handleSignIn(w http.ResponseWriter, r *http.Request) {
	// A JSON body cannot come from a cross-site form without a CORS
	// preflight we never grant, so sign-in cannot be forged from elsewhere.
	var req signInReq
	if !readJSON(w, r, &req) {
		return
	}
	// Only failures spend the limiters' tokens: guessing is slowed down,
	// signing in is not.
	accessKey, addr, now := strings.TrimSpace(req.AccessKey), clientAddr(r), c.cfg.Now()
	if !c.signin.allowed(addr, accessKey, now) {
		apiError(w, http.StatusTooManyRequests, "too_many_attempts", "too many failed sign-ins from this address or for this key; wait a few seconds")
		return
	}
	who, err := c.authenticate(r.Context(), accessKey, req.SecretKey)
	if errors.Is(err, errBadCredentials) {
		c.signin.failed(addr, accessKey, now)
		apiError(w, http.StatusUnauthorized, "bad_credentials", "access key or secret key is wrong")
		return
	}
	if err != nil {
		c.log.Warn("console: sign-in", "err", err)
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "cannot check the key right now: "+err.Error())
		return
	}
	if !who.Admin {
		apiError(w, http.StatusForbidden, "forbidden", "this access key has no admin rights")
		return
	}
	ss := c.sessions.create(who, req.SecretKey)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: ss.id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.cfg.SecureCookies, Expires: ss.expires})
	writeJSON(w, http.StatusOK, sessionResp{AccessKey: who.AccessKey, Admin: who.Admin, CSRFToken: ss.csrf, Expires: ss.expires.UTC()})
}

// keyStillValid checks a session against its key as the cluster has it now
// (cached for a second): a key revoked, stripped of admin rights or given a
// new secret anywhere in the cluster ends its sessions.
func (c *Console) keyStillValid(w http.ResponseWriter, r *http.Request, ss *session) bool {
	k, err := c.cfg.FS.Keys().Get(r.Context(), ss.who.AccessKey)
	switch {
	case errors.Is(err, access.ErrNoSuchKey) || err == nil && (!k.Root || sha256.Sum256([]byte(k.Secret)) != ss.secret):
		c.sessions.drop(ss.id)
		apiError(w, http.StatusUnauthorized, "not_signed_in", "the access key of this session was revoked or changed: sign in again")
		return false
	case err != nil:
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "cannot check the session's key right now: "+err.Error())
		return false
	}
	return true
}

// authenticate checks a key pair against the cluster's keys.
func (c *Console) authenticate(ctx context.Context, accessKey, secret string) (Principal, error) {
	k, err := c.cfg.FS.Keys().Authenticate(ctx, accessKey, secret)
	if errors.Is(err, access.ErrNoSuchKey) {
		return Principal{}, errBadCredentials
	}
	if err != nil {
		return Principal{}, err
	}
	return Principal{AccessKey: k.ID, Admin: k.Root}, nil
}

func (c *Console) handleWhoAmI(w http.ResponseWriter, r *http.Request) {
	ss := sessionOf(r)
	writeJSON(w, http.StatusOK, sessionResp{AccessKey: ss.who.AccessKey, Admin: ss.who.Admin, CSRFToken: ss.csrf, Expires: ss.expires.UTC()})
}

func (c *Console) handleSignOut(w http.ResponseWriter, r *http.Request) {
	c.sessions.drop(sessionOf(r).id)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.cfg.SecureCookies, MaxAge: -1})
	writeJSON(w, http.StatusOK, map[string]bool{"signedOut": true})
}
