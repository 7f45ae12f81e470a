package access

import (
	"errors"
	"testing"
)

func TestAllows(t *testing.T) {
	k := &Key{Buckets: map[string]Permission{"data": ReadWrite, "logs": Read}}
	star := &Key{Buckets: map[string]Permission{"*": Read, "ckpt": ReadWrite}}
	root := &Key{Root: true}
	for _, c := range []struct {
		name   string
		key    *Key
		bucket string
		need   Permission
		want   bool
	}{
		{"read on a readwrite bucket", k, "data", Read, true},
		{"write on a readwrite bucket", k, "data", ReadWrite, true},
		{"read on a read bucket", k, "logs", Read, true},
		{"write on a read bucket", k, "logs", ReadWrite, false},
		{"an ungranted bucket", k, "other", Read, false},
		{"a service call without *", k, "", Read, false},
		{"* grants read everywhere", star, "other", Read, true},
		{"* read does not grant write", star, "other", ReadWrite, false},
		{"a named grant wins over *", star, "ckpt", ReadWrite, true},
		{"a service call with *", star, "", Read, true},
		{"a service write with * read", star, "", ReadWrite, false},
		{"root may do everything", root, "any", ReadWrite, true},
		{"root at service level", root, "", ReadWrite, true},
	} {
		if got := c.key.Allows(c.bucket, c.need); got != c.want {
			t.Errorf("%s: Allows(%q, %s) = %v, want %v", c.name, c.bucket, c.need, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Key{ID: "FLYKEY1", Secret: "12345678", Buckets: map[string]Permission{"a.b-c": Read, "*": ReadWrite}}
	if err := good.Validate(); err != nil {
		t.Fatalf("a good key: %v", err)
	}
	for name, k := range map[string]Key{
		"short id":         {ID: "ab", Secret: "12345678"},
		"id with a slash":  {ID: "ab/cd", Secret: "12345678"},
		"short secret":     {ID: "FLYKEY1", Secret: "1234567"},
		"bad bucket":       {ID: "FLYKEY1", Secret: "12345678", Buckets: map[string]Permission{"Bad_Name": Read}},
		"ip bucket":        {ID: "FLYKEY1", Secret: "12345678", Buckets: map[string]Permission{"10.0.0.1": Read}},
		"bad permission":   {ID: "FLYKEY1", Secret: "12345678", Buckets: map[string]Permission{"data": "write"}},
		"long description": {ID: "FLYKEY1", Secret: "12345678", Description: string(make([]byte, 257))},
	} {
		if err := k.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestMatches(t *testing.T) {
	k := &Key{Secret: "right-secret"}
	if !k.Matches("right-secret") || k.Matches("wrong-secret") || k.Matches("") {
		t.Fatal("Matches")
	}
}

func TestNewKeyIDAndSecret(t *testing.T) {
	id, secret := NewKeyID("FLY"), NewSecret()
	if len(id) != 20 || id[:3] != "FLY" || !ValidKeyID(id) || len(secret) != 40 {
		t.Fatalf("id %q secret %q", id, secret)
	}
	if NewSecret() == secret {
		t.Fatal("two secrets alike")
	}
}

func TestValidBucketName(t *testing.T) {
	for _, b := range []string{"data", "a.b-c", "my-bucket-2", "xn-a", "s3alias", "123"} {
		if !ValidBucketName(b) {
			t.Errorf("%q refused", b)
		}
	}
	for _, b := range []string{"ab", "Data", "a_b", "-ab", "ab-", "a..b", "a.-b", "192.168.1.1", string(make([]byte, 64)),
		"xn--bcher-kva", "sthree-x", "amzn-s3-demo-x", "data-s3alias", "data--ol-s3", "data.mrap", "data--x-s3", "data--table-s3"} {
		if ValidBucketName(b) {
			t.Errorf("%q accepted", b)
		}
	}
}
