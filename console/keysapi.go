package console

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/flyfs/flyfs/core/access"
)

func (c *Console) handleKeysList(w http.ResponseWriter, r *http.Request) {
	keys, err := c.cfg.FS.Keys().List(r.Context())
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "list keys: "+err.Error())
		return
	}
	out := make([]KeyInfo, 0, len(keys))
	for _, k := range keys {
		out = append(out, keyInfo(k))
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": out})
}

// handleKeysCreate makes a key; the answer is the only place its secret
// ever appears.
func (c *Console) handleKeysCreate(w http.ResponseWriter, r *http.Request) {
	var spec KeySpec
	if !readJSON(w, r, &spec) {
		return
	}
	buckets, err := grants(spec.Buckets)
	if err == nil && len(spec.Description) > 256 {
		err = errors.New("description: at most 256 bytes")
	}
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	k, err := c.cfg.FS.Keys().Create(r.Context(), access.Key{Root: spec.Admin, Description: spec.Description, Buckets: buckets})
	if errors.Is(err, access.ErrInvalid) {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "create key: "+err.Error())
		return
	}
	info := keyInfo(*k)
	info.Secret = k.Secret
	c.log.Info("console: access key created", "key", info.AccessKey, "admin", info.Admin, "by", sessionOf(r).who.AccessKey)
	c.auditAction(r, fmt.Sprintf("create access key %s (admin %v)", info.AccessKey, info.Admin))
	writeJSON(w, http.StatusOK, info)
}

type bucketsReq struct {
	Buckets []BucketPerm `json:"buckets"`
}

func (c *Console) handleKeysBuckets(w http.ResponseWriter, r *http.Request) {
	var req bucketsReq
	if !readJSON(w, r, &req) {
		return
	}
	buckets, err := grants(req.Buckets)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	key := r.PathValue("key")
	err = c.cfg.FS.Keys().SetGrants(r.Context(), key, buckets)
	if errors.Is(err, access.ErrNoSuchKey) {
		apiError(w, http.StatusNotFound, "not_found", "no such access key")
		return
	}
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "set permissions: "+err.Error())
		return
	}
	c.log.Info("console: bucket permissions set", "key", key, "by", sessionOf(r).who.AccessKey)
	c.auditAction(r, fmt.Sprintf("set the bucket permissions of access key %s", key))
	writeJSON(w, http.StatusOK, map[string]any{"accessKey": key, "buckets": nonNil(req.Buckets)})
}

// handleKeysRevoke deletes a key and ends the sessions signed in with it
// (including the caller's own, if it revokes itself).
func (c *Console) handleKeysRevoke(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	err := c.cfg.FS.Keys().Revoke(r.Context(), key)
	if errors.Is(err, access.ErrNoSuchKey) {
		apiError(w, http.StatusNotFound, "not_found", "no such access key")
		return
	}
	if errors.Is(err, access.ErrLastRoot) {
		apiError(w, http.StatusConflict, "last_admin_key", err.Error())
		return
	}
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "revoke key: "+err.Error())
		return
	}
	c.sessions.dropKey(key)
	c.log.Info("console: access key revoked", "key", key, "by", sessionOf(r).who.AccessKey)
	c.auditAction(r, fmt.Sprintf("revoke access key %s", key))
	writeJSON(w, http.StatusOK, map[string]string{"revoked": key})
}

// handleKeysRotate gives a key a new secret, answered this once; sessions
// signed in with the old secret end (the caller's too, if it is its key).
func (c *Console) handleKeysRotate(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	k, err := c.cfg.FS.Keys().Rotate(r.Context(), key)
	if errors.Is(err, access.ErrNoSuchKey) {
		apiError(w, http.StatusNotFound, "not_found", "no such access key")
		return
	}
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "keys_unavailable", "rotate key: "+err.Error())
		return
	}
	info := keyInfo(*k)
	info.Secret = k.Secret
	c.log.Info("console: access key secret rotated", "key", key, "by", sessionOf(r).who.AccessKey)
	c.auditAction(r, fmt.Sprintf("rotate the secret of access key %s", key))
	writeJSON(w, http.StatusOK, info)
}
