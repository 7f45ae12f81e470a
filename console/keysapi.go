package console

import (
	"errors"
	"net/http"
)

func (c *Console) handleKeysList(w http.ResponseWriter, r *http.Request) {
	keys, err := c.cfg.Keys.List(r.Context())
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "list keys: "+err.Error())
		return
	}
	for i := range keys {
		keys[i].Secret = "" // never again after creation
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// handleKeysCreate makes a key; the answer is the only place its secret
// ever appears.
func (c *Console) handleKeysCreate(w http.ResponseWriter, r *http.Request) {
	var spec KeySpec
	if !readJSON(w, r, &spec) {
		return
	}
	if err := ValidateBuckets(spec.Buckets); err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	k, err := c.cfg.Keys.Create(r.Context(), spec)
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "create key: "+err.Error())
		return
	}
	c.log.Info("console: access key created", "key", k.AccessKey, "admin", k.Admin, "by", sessionOf(r).who.AccessKey)
	writeJSON(w, http.StatusOK, k)
}

type bucketsReq struct {
	Buckets []BucketPerm `json:"buckets"`
}

func (c *Console) handleKeysBuckets(w http.ResponseWriter, r *http.Request) {
	var req bucketsReq
	if !readJSON(w, r, &req) {
		return
	}
	if err := ValidateBuckets(req.Buckets); err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	key := r.PathValue("key")
	err := c.cfg.Keys.SetBuckets(r.Context(), key, req.Buckets)
	if errors.Is(err, ErrNoSuchKey) {
		apiError(w, http.StatusNotFound, "not_found", "no such access key")
		return
	}
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "set permissions: "+err.Error())
		return
	}
	c.log.Info("console: bucket permissions set", "key", key, "by", sessionOf(r).who.AccessKey)
	writeJSON(w, http.StatusOK, map[string]any{"accessKey": key, "buckets": nonNil(req.Buckets)})
}

// handleKeysRevoke deletes a key and ends the sessions signed in with it
// (including the caller's own, if it revokes itself).
func (c *Console) handleKeysRevoke(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	err := c.cfg.Keys.Revoke(r.Context(), key)
	if errors.Is(err, ErrNoSuchKey) {
		apiError(w, http.StatusNotFound, "not_found", "no such access key")
		return
	}
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "revoke key: "+err.Error())
		return
	}
	c.sessions.dropKey(key)
	c.log.Info("console: access key revoked", "key", key, "by", sessionOf(r).who.AccessKey)
	writeJSON(w, http.StatusOK, map[string]string{"revoked": key})
}
