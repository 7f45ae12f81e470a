package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv/kvopen"
)

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flyfs test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

// flyfs server --tls-cert/--tls-key serves S3 and the console over HTTPS,
// and the console's session cookie is Secure then.
func TestServerServesTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir)
	s3addr, conAddr := freeLoopback(t), freeLoopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncWriter{w: &bytes.Buffer{}}
	done := make(chan error, 1)
	go func() {
		done <- runServer(ctx, serverOptions{dataDir: filepath.Join(dir, "data"), kvc: kvopen.Config{Engine: "pebble"},
			mgmtdAddr: freeLoopback(t), metadAddr: freeLoopback(t), disks: 1, replicas: 1, chains: 2, noSync: true,
			tok: tokenOptions{token: testToken}, s3Addr: s3addr, consoleAddr: conAddr,
			http: httpOptions{tlsCert: certFile, tlsKey: keyFile}}, out)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get("https://" + conAddr + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no HTTPS console: %v\n%s", err, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if resp, err := http.Get("http://" + conAddr + "/"); err == nil && resp.StatusCode == http.StatusOK {
		t.Error("the console answers plain HTTP too")
	}
	m := regexp.MustCompile(`access key (\S+), secret (\S+) `).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no root key printed:\n%s", out.String())
	}
	resp, err := hc.Post("https://"+conAddr+"/api/session", "application/json",
		strings.NewReader(fmt.Sprintf(`{"accessKey":%q,"secretKey":%q}`, m[1], m[2])))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 || !resp.Cookies()[0].Secure {
		t.Fatalf("sign-in over HTTPS: %d, cookies %+v", resp.StatusCode, resp.Cookies())
	}
	resp, err = hc.Get("https://" + s3addr + "/")
	if err != nil {
		t.Fatalf("S3 over HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden { // anonymous ListBuckets
		t.Fatalf("anonymous ListBuckets over HTTPS: %d", resp.StatusCode)
	}
	if !strings.Contains(out.String(), "https://"+s3addr) {
		t.Errorf("the printed S3 address is not https:\n%s", out.String())
	}
}
