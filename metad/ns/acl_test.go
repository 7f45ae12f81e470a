package ns

import (
	"errors"
	"slices"
	"testing"
)

func acl(es ...aclEntry) []byte { return encodeACL(es) }

var (
	uObj  = func(p uint16) aclEntry { return aclEntry{aclUserObj, p, 0xffffffff} }
	gObj  = func(p uint16) aclEntry { return aclEntry{aclGroupObj, p, 0xffffffff} }
	other = func(p uint16) aclEntry { return aclEntry{aclOther, p, 0xffffffff} }
	mask  = func(p uint16) aclEntry { return aclEntry{aclMask, p, 0xffffffff} }
	user  = func(id uint32, p uint16) aclEntry { return aclEntry{aclUser, p, id} }
)

// TestACLArithmetic: the mode an ACL stands for, chmod on an ACL and
// inheritance from a default ACL, as Linux computes them.
func TestACLArithmetic(t *testing.T) {
	named := []aclEntry{uObj(7), user(1000, 7), gObj(5), mask(7), other(0)}
	if got := aclModeBits(named); got != 0o770 {
		t.Errorf("mode of an ACL with a mask: %o, want 770 (the mask in the group bits)", got)
	}
	if got := aclModeBits([]aclEntry{uObj(6), gObj(4), other(4)}); got != 0o644 {
		t.Errorf("mode of a minimal ACL: %o", got)
	}
	if got := aclChmod(named, 0o640); !slices.Equal(got, []aclEntry{uObj(6), user(1000, 7), gObj(5), mask(4), other(0)}) {
		t.Errorf("chmod 640: %+v (the mask takes the group bits, the named entry stays)", got)
	}
	acc, mode := aclInherit(named, 0o100666)
	if mode != 0o100660 || !slices.Equal(acc, []aclEntry{uObj(6), user(1000, 7), gObj(5), mask(6), other(0)}) {
		t.Errorf("inherit with 0666: %o %+v", mode, acc)
	}
	for name, b := range map[string][]byte{
		"short":              {2, 0, 0},
		"version 1":          {1, 0, 0, 0},
		"no other":           acl(uObj(7), gObj(7)),
		"named without mask": acl(uObj(7), user(1, 7), gObj(7), other(0)),
		"two owners":         acl(uObj(7), uObj(6), gObj(7), other(0)),
		"a bad permission":   acl(uObj(8), gObj(7), other(0)),
		"an unknown tag":     acl(uObj(7), gObj(7), other(0), aclEntry{0x40, 0, 0}),
		"a ragged length":    append(acl(uObj(7), gObj(7), other(0)), 1),
	} {
		if _, err := parseACL(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestACLsInTheNamespace: an access ACL sets the mode, a chmod sets the
// ACL, a default ACL is inherited (and takes the umask's place), a default
// ACL on a file is refused.
func TestACLsInTheNamespace(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	n := e.ns
	d, err := e.mkdir("/d")
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.create("/d/f", true)
	if err != nil {
		t.Fatal(err)
	}
	named := acl(uObj(6), user(1000, 6), gObj(4), mask(6), other(0))
	if err := n.SetXattr(ctx, f.Inode.ID, xattrACLAccess, named, 0); err != nil {
		t.Fatal(err)
	}
	if in, _ := n.Stat(ctx, f.Inode.ID); in.Mode&0o777 != 0o660 {
		t.Errorf("mode after the access ACL: %o, want 660", in.Mode&0o777)
	}
	if _, err := n.SetAttr(ctx, f.Inode.ID, SetAttrRequest{Mask: SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	v, _ := n.GetXattr(ctx, f.Inode.ID, xattrACLAccess)
	if es, err := parseACL(v); err != nil || !slices.Equal(es, []aclEntry{uObj(6), user(1000, 6), gObj(4), mask(0), other(0)}) {
		t.Errorf("ACL after chmod 600: %v %+v", err, es)
	}
	if err := n.SetXattr(ctx, f.Inode.ID, xattrACLDefault, named, 0); !errors.Is(err, Errno(13)) {
		t.Errorf("a default ACL on a file: %v", err)
	}
	if err := n.SetXattr(ctx, f.Inode.ID, xattrACLAccess, []byte{2, 0, 0, 0, 9}, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("a malformed ACL: %v", err)
	}
	// Without a default ACL the umask applies; with one, the default does.
	p, err := n.Create(ctx, CreateRequest{Parent: d.ID, Name: "plain", Mode: 0o666, Umask: 0o022})
	if err != nil || p.Inode.Mode&0o777 != 0o644 {
		t.Fatalf("create 0666 under umask 022: %v %o", err, p.Inode.Mode&0o777)
	}
	def := acl(uObj(7), user(1000, 7), gObj(5), mask(7), other(0))
	if err := n.SetXattr(ctx, d.ID, xattrACLDefault, def, 0); err != nil {
		t.Fatal(err)
	}
	c, err := n.Create(ctx, CreateRequest{Parent: d.ID, Name: "inherits", Mode: 0o666, Umask: 0o022})
	if err != nil || c.Inode.Mode&0o777 != 0o660 {
		t.Fatalf("create 0666 under a default ACL: %v %o, want 660 (the umask does not apply)", err, c.Inode.Mode&0o777)
	}
	v, _ = n.GetXattr(ctx, c.Inode.ID, xattrACLAccess)
	if es, err := parseACL(v); err != nil || !slices.Equal(es, []aclEntry{uObj(6), user(1000, 7), gObj(5), mask(6), other(0)}) {
		t.Errorf("the inherited access ACL: %v %+v", err, es)
	}
	sub, err := n.Mkdir(ctx, MkdirRequest{Parent: d.ID, Name: "sub", Mode: 0o777, Umask: 0o077})
	if err != nil || sub.Mode&0o777 != 0o770 {
		t.Fatalf("mkdir 0777 under a default ACL: %v %o", err, sub.Mode&0o777)
	}
	if v, err := n.GetXattr(ctx, sub.ID, xattrACLDefault); err != nil || !slices.Equal(v, def) {
		t.Errorf("a new directory's default ACL: %v", err)
	}
	mustFsck(t, e.db)
}
