package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadEncryptionKey(t *testing.T) {
	dir := t.TempDir()
	raw := bytes.Repeat([]byte{0xab}, 32)
	for name, tc := range map[string]struct {
		content []byte
		want    []byte
		err     string
	}{
		"raw":             {raw, raw, ""},
		"hex and newline": {[]byte(strings.Repeat("ab", 32) + "\n"), raw, ""},
		"short":           {[]byte("0123"), nil, "32 bytes"},
		"bad hex":         {[]byte(strings.Repeat("zz", 32)), nil, "32 bytes"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(p, tc.content, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readEncryptionKey(p)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error naming %q", name, err, tc.err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %v %x", name, err, got)
		}
	}
	if k, err := readEncryptionKey(""); k != nil || err != nil {
		t.Errorf("no file: %v %v", k, err)
	}
	if _, err := readEncryptionKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file")
	}
}
