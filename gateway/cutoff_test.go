package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/rpc"
)

// TestErrnoOfAnErrorWithoutOne: an error that carries no errno (a lost
// connection, a timeout) is never read as success by a decision on the
// errno; only nil is.
func TestErrnoOfAnErrorWithoutOne(t *testing.T) {
	if errnoOf(nil) != 0 {
		t.Fatal("errnoOf(nil) is not 0")
	}
	for _, err := range []error{
		errors.New("rpc: connection reset"),
		fmt.Errorf("call: %w (no metad answered for 10s)", errors.New("unavailable")),
		context.DeadlineExceeded,
		fmt.Errorf("%w (last error: %w)", context.Canceled, errors.New("dial refused")),
	} {
		if e := errnoOf(err); e == 0 {
			t.Errorf("errnoOf(%v) = 0: read as success", err)
		}
		for _, scope := range []errnoScope{anyCall, keyRead, keyDelete, keyParents, keyWrite, keyWriteNew, keyRename, bucketLookup, bucketCreate, bucketDelete, uploadLookup} {
			if got := nsError(err, scope, "k"); got != err {
				t.Errorf("scope %d turned %v into %v", scope, err, got)
			}
		}
		if ae := toAPIError(err); ae.Status < 500 {
			t.Errorf("%v answers %s %d", err, ae.Code, ae.Status)
		}
	}
	for _, e := range []syscall.Errno{syscall.ENOENT, syscall.EEXIST, syscall.ENOTEMPTY} {
		if got := errnoOf(fmt.Errorf("x: %w", e)); got != e {
			t.Errorf("errnoOf(%v) = %v", e, got)
		}
		if got := errnoOf(metaapi.ErrnoError(e, "from metad")); got != e {
			t.Errorf("errnoOf(wire %v) = %v", e, got)
		}
	}
}

// failingNS stands between the gateway and the metadata service and
// fails the calls that change a chosen name with the error a metad that no
// longer answers gives: one without an errno.
type failingNS struct {
	namespace
	mu      sync.Mutex
	names   map[string]bool // the names whose changes fail
	failed  []string
	zeroIno bool // a call was made on inode 0 (an inode a failed call "returned")
}

var errCutOff = fmt.Errorf("%w (no metad answered for 10s)", rpc.Errorf(rpc.Unavailable, "dial 127.0.0.1:9: connection refused"))

func (f *failingNS) hit(call, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.names[name] {
		f.failed = append(f.failed, call+" "+name)
		return true
	}
	return false
}

func (f *failingNS) set(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names = map[string]bool{}
	for _, n := range names {
		f.names[n] = true
	}
	f.failed = nil
}

func (f *failingNS) Rename(ctx context.Context, req metaapi.RenameReq) error {
	if f.hit("Rename", req.DstName) {
		return errCutOff
	}
	return f.namespace.Rename(ctx, req)
}

func (f *failingNS) Unlink(ctx context.Context, req metaapi.RemoveReq) error {
	if f.hit("Unlink", req.Name) {
		return errCutOff
	}
	return f.namespace.Unlink(ctx, req)
}

func (f *failingNS) Rmdir(ctx context.Context, parent uint64, name string) error {
	if f.hit("Rmdir", name) {
		return errCutOff
	}
	return f.namespace.Rmdir(ctx, parent, name)
}

func (f *failingNS) Mkdir(ctx context.Context, parent uint64, name string, mode uint32, cr client.Creds) (metaapi.Inode, error) {
	if f.hit("Mkdir", name) {
		return metaapi.Inode{}, errCutOff
	}
	return f.namespace.Mkdir(ctx, parent, name, mode, cr)
}

func (f *failingNS) SetXattr(ctx context.Context, ino uint64, name string, value []byte, flags int) error {
	if ino == 0 {
		f.mu.Lock()
		f.zeroIno = true
		f.mu.Unlock()
	}
	return f.namespace.SetXattr(ctx, ino, name, value, flags)
}

func (f *failingNS) SetAttr(ctx context.Context, ino uint64, req metaapi.SetAttrReq) (metaapi.Inode, error) {
	if ino == 0 {
		f.mu.Lock()
		f.zeroIno = true
		f.mu.Unlock()
	}
	return f.namespace.SetAttr(ctx, ino, req)
}

// TestLiveChangeCutOff: when the call that makes an operation's change
// fails without an errno (metad stopped or cut off mid-request: the Rename
// that publishes a PUT, a copy, a completed upload or a RenameObject; the
// Unlink of a DELETE; the Rmdir of a marker; the Mkdir of a marker), the
// client is told it failed (500), nothing changed, and the same request
// succeeds once metad answers again.
func TestLiveChangeCutOff(t *testing.T) {
	l := startGW(t)
	c := l.sdk(t, rootAK, rootSK, func(o *s3.Options) { o.RetryMaxAttempts = 1 }) // each failure once
	ctx := context.Background()
	l.gw.Close() // its background sweeper uses the namespace too: stopped first, nothing races the swap
	f := &failingNS{namespace: l.gw.meta}
	l.gw.meta = f
	b := aws.String("cutoff")
	mustBucket(t, c, "cutoff")
	mustPut(t, c, "cutoff", "src", []byte("source"))
	mustPut(t, c, "cutoff", "del", []byte("delete me"))
	mustPut(t, c, "cutoff", "del2", []byte("delete me too"))
	mustPut(t, c, "cutoff", "marker/", nil)
	mustPut(t, c, "cutoff", "rn", []byte("rename me"))
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp"), UploadId: cu.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("part one")})
	if err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool {
		_, err := l.fs.Meta().Resolve(ctx, "/cutoff/"+strings.TrimSuffix(p, "/"), false)
		return err == nil
	}
	deleteObjects := func(keys ...string) error {
		var ids []types.ObjectIdentifier
		for _, k := range keys {
			ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: ids}})
		if err == nil && len(out.Errors) > 0 {
			err = &smithy.GenericAPIError{Code: aws.ToString(out.Errors[0].Code), Message: aws.ToString(out.Errors[0].Message)}
			if len(out.Errors) != len(keys) {
				err = fmt.Errorf("%d of %d keys failed: %w", len(out.Errors), len(keys), err)
			}
		}
		return err
	}
	for _, tc := range []struct {
		name  string
		fail  []string // the names whose change fails
		op    func() error
		done  func() bool // whether the change happened
		calls int         // failed calls expected
	}{
		{"PutObject", []string{"new"}, func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("new"), Body: strings.NewReader("new data")})
			return err
		}, func() bool { return exists("new") }, 1},
		{"CopyObject", []string{"copy"}, func() error {
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy"), CopySource: aws.String("cutoff/src")})
			return err
		}, func() bool { return exists("copy") }, 1},
		{"CompleteMultipartUpload", []string{"mp"}, func() error {
			_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: cu.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: up.ETag}}}})
			return err
		}, func() bool { return exists("mp") }, 1},
		{"RenameObject", []string{"renamed"}, func() error {
			resp, err := http.DefaultClient.Do(l.signed(t, "PUT", "/cutoff/renamed?renameObject", nil, map[string]string{"X-Amz-Rename-Source": "rn"}, rootAK, rootSK, time.Now()))
			if err != nil {
				return err
			}
			if resp.StatusCode != 200 {
				e := readError(t, resp)
				return &smithy.GenericAPIError{Code: e.Code, Message: e.Message}
			}
			resp.Body.Close()
			return nil
		}, func() bool { return exists("renamed") && !exists("rn") }, 1},
		{"DeleteObject", []string{"del"}, func() error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("del")})
			return err
		}, func() bool { return !exists("del") }, 1},
		{"DeleteObjects", []string{"del2", "marker"}, func() error { return deleteObjects("del2", "marker/") },
			func() bool { return !exists("del2") && !exists("marker/") }, 2},
		{"PutObject of a marker", []string{"newdir"}, func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("newdir/"), Body: strings.NewReader("")})
			return err
		}, func() bool { return exists("newdir/") }, 1},
	} {
		f.set(tc.fail...)
		err := tc.op()
		f.mu.Lock()
		failed, zero := len(f.failed), f.zeroIno
		f.mu.Unlock()
		f.set()
		if failed != tc.calls {
			t.Fatalf("%s: %d calls failed, want %d (the test no longer cuts the call that matters)", tc.name, failed, tc.calls)
		}
		if code := errCodeOf(err); code != "InternalError" {
			t.Errorf("%s with its change cut off: %v, want InternalError", tc.name, err)
		}
		if tc.done() {
			t.Errorf("%s: the change happened although its call failed", tc.name)
		}
		if zero {
			t.Errorf("%s went on with the inode a failed call returned", tc.name)
		}
		// Once metad answers, the same request does it.
		if err := tc.op(); err != nil || !tc.done() {
			t.Errorf("%s again: %v, done %v", tc.name, err, tc.done())
		}
	}
	// No staging file was left behind by the refused publishes.
	ents, _, err := l.fs.Meta().ReadDir(ctx, l.gw.stagingIno, "", 10, false)
	if err != nil || len(ents) != 0 {
		t.Errorf("staging: %v %v", ents, err)
	}
}
