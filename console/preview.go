package console

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Previews in a file's details: the start of a text file as text, a small
// image as a data: URL (never HTML, never SVG as an image: the page shows
// what it reads, it does not run it).

const (
	previewTextBytes  = 64 << 10
	previewImageBytes = 2 << 20
)

// previewJSON: kind "text" (Text, Truncated), "image" (DataURL), or "none"
// (Type says what it is).
type previewJSON struct {
	Kind      string `json:"kind"`
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	DataURL   string `json:"dataURL,omitempty"`
}

var previewImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/bmp": true}

func (c *Console) handlePreview(w http.ResponseWriter, r *http.Request) {
	p, err := cleanPath(r.URL.Query().Get("path"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	_, f, ok := c.openForReading(ctx, w, r, p, "preview")
	if !ok {
		return
	}
	defer f.Close()
	n := min(int64(f.Size()), previewImageBytes+1)
	buf := make([]byte, n)
	got, err := io.ReadFull(io.NewSectionReader(readerCtx{f, ctx}, 0, n), buf)
	if err != nil && err != io.ErrUnexpectedEOF {
		nsError(w, "preview "+p, err)
		return
	}
	buf = buf[:got]
	typ := http.DetectContentType(buf)
	out := previewJSON{Kind: "none", Type: typ}
	switch {
	case strings.HasPrefix(typ, "text/") || (typ == "application/octet-stream" && utf8.Valid(buf) && len(buf) > 0):
		text := buf[:min(len(buf), previewTextBytes)]
		for len(text) > 0 && !utf8.Valid(text) { // cut at a character's start
			text = text[:len(text)-1]
		}
		out = previewJSON{Kind: "text", Type: typ, Text: string(text), Truncated: int64(len(text)) < int64(f.Size())}
	case previewImages[typ] && int64(f.Size()) <= previewImageBytes:
		out = previewJSON{Kind: "image", Type: typ, DataURL: "data:" + typ + ";base64," + base64.StdEncoding.EncodeToString(buf)}
	}
	writeJSON(w, http.StatusOK, out)
}
