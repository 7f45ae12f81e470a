package gateway

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/durability"
	"github.com/flyfs/flyfs/e2e/harness"
)

// durabilityNS records, for each metadata change the gateway makes, whether
// it asked for it relaxed.
type durabilityNS struct {
	namespace
	mu    sync.Mutex
	calls []string // "Create relaxed", "Rename strict", ...
}

func (d *durabilityNS) note(op string, ctx context.Context) {
	kind := "strict"
	if durability.IsRelaxed(ctx) {
		kind = "relaxed"
	}
	d.mu.Lock()
	d.calls = append(d.calls, op+" "+kind)
	d.mu.Unlock()
}

func (d *durabilityNS) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.calls
	d.calls = nil
	return c
}

func (d *durabilityNS) Create(ctx context.Context, parent uint64, name string, mode uint32, flags int, cr client.Creds) (metaapi.Inode, []byte, bool, error) {
	d.note("Create", ctx)
	return d.namespace.Create(ctx, parent, name, mode, flags, cr)
}

func (d *durabilityNS) SetXattr(ctx context.Context, ino uint64, name string, value []byte, flags int) error {
	d.note("SetXattr", ctx)
	return d.namespace.SetXattr(ctx, ino, name, value, flags)
}

func (d *durabilityNS) Rename(ctx context.Context, req metaapi.RenameReq) error {
	d.note("Rename", ctx)
	return d.namespace.Rename(ctx, req)
}

// TestObjectDurableAtItsPublish: a written object's staging file is made
// with relaxed changes (its create and the records set on it), and the
// publish that makes it the key's object is a durable change, which makes
// every change before it durable too (pebblekv's
// TestStrictCommitMakesEarlierRelaxedDurable). A relaxed publish would
// acknowledge an object a machine crash could lose.
func TestObjectDurableAtItsPublish(t *testing.T) {
	l := startGW(t)
	c := l.sdk(t, rootAK, rootSK)
	ctx := context.Background()
	l.gw.Close() // its background sweeper uses the namespace too: stopped first
	rec := &durabilityNS{namespace: l.gw.meta}
	l.gw.meta = rec
	mustBucket(t, c, "dur")
	mustPut(t, c, "dur", "src", []byte("source"))
	rec.take()
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"PutObject", func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("dur"), Key: aws.String("a/put"), Body: strings.NewReader("data")})
			return err
		}},
		{"PutObject with tags", func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("dur"), Key: aws.String("tagged"), Body: strings.NewReader("data"), Tagging: aws.String("k=v")})
			return err
		}},
		{"CopyObject", func() error {
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dur"), Key: aws.String("copy"), CopySource: aws.String("dur/src")})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(); err != nil {
				t.Fatal(err)
			}
			calls := rec.take()
			if len(calls) == 0 || calls[len(calls)-1] != "Rename strict" {
				t.Fatalf("the last change is not a durable publish: %v", calls)
			}
			for _, call := range calls[:len(calls)-1] {
				if !strings.HasSuffix(call, " relaxed") {
					t.Errorf("a staging change is durable on its own (one more fsync per object): %v", calls)
				}
			}
		})
	}
}

// TestBodyDurableBeforeItsAnswer: a body's chunk writes go relaxed (one
// sync per storage node instead of one per chunk), so the gateway syncs
// the storage nodes before the object's publish and before a part's
// record: when PutObject or UploadPart answers, no storage node holds an
// update it has not synced. The nodes' own periodic sync is an hour away.
func TestBodyDurableBeforeItsAnswer(t *testing.T) {
	l := startGWOn(t, harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4, SyncWindow: time.Hour}, nil)
	c := l.sdk(t, rootAK, rootSK)
	ctx := context.Background()
	mustBucket(t, c, "dur")
	unsynced := func() (n int) {
		for _, e := range l.c.Server(0).Engines() {
			if e.Stats().Unsynced {
				n++
			}
		}
		return n
	}
	body := bytes.Repeat([]byte("flyfs"), 3<<20/5) // 3 MiB: three chunks
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"PutObject", func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("dur"), Key: aws.String("big"), Body: bytes.NewReader(body)})
			return err
		}},
		{"PutObject of unknown length", func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("dur"), Key: aws.String("streamed"), Body: io.MultiReader(bytes.NewReader(body))},
				s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware))
			return err
		}},
		{"UploadPart", func() error {
			up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("dur"), Key: aws.String("parts")})
			if err != nil {
				return err
			}
			_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("dur"), Key: aws.String("parts"), UploadId: up.UploadId,
				PartNumber: aws.Int32(1), Body: bytes.NewReader(body)})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(); err != nil {
				t.Fatal(err)
			}
			if n := unsynced(); n != 0 {
				t.Fatalf("answered with %d storage disks holding updates not synced", n)
			}
		})
	}
}
