package ns

import (
	"encoding/binary"
	"syscall"
)

// POSIX ACLs are kept as the xattrs system.posix_acl_access and
// system.posix_acl_default, in the kernel's binary form (a version word,
// then entries of tag, permission and id), and the kernel enforces them
// (the mount asks it to). What the kernel leaves to the file system is
// done here, in the transaction of the change:
//
//   - setting an access ACL sets the mode's permission bits from it (owner
//     from USER_OBJ, group from MASK or else GROUP_OBJ, other from OTHER);
//   - a chmod sets those entries of the access ACL from the mode;
//   - a new entry of a directory with a default ACL gets it: its access ACL
//     is the default masked by the mode it was created with (and its mode
//     follows), and a new directory takes the default ACL as its own.
//
// A default ACL belongs to directories only (EACCES elsewhere, as Linux).

const (
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"

	aclVersion = 2

	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

type aclEntry struct {
	tag, perm uint16
	id        uint32
}

// parseACL checks and decodes an ACL xattr value.
func parseACL(b []byte) ([]aclEntry, error) {
	if len(b) < 4 || (len(b)-4)%8 != 0 || binary.LittleEndian.Uint32(b) != aclVersion {
		return nil, fail(ErrInvalid, "not a POSIX ACL (%d bytes)", len(b))
	}
	var out []aclEntry
	seen := map[uint16]bool{}
	for p := b[4:]; len(p) > 0; p = p[8:] {
		e := aclEntry{tag: binary.LittleEndian.Uint16(p), perm: binary.LittleEndian.Uint16(p[2:]), id: binary.LittleEndian.Uint32(p[4:])}
		switch e.tag {
		case aclUserObj, aclGroupObj, aclMask, aclOther:
			if seen[e.tag] {
				return nil, fail(ErrInvalid, "ACL entry %#x twice", e.tag)
			}
			seen[e.tag] = true
		case aclUser, aclGroup:
			seen[e.tag] = true
		default:
			return nil, fail(ErrInvalid, "ACL entry tag %#x", e.tag)
		}
		if e.perm&^7 != 0 {
			return nil, fail(ErrInvalid, "ACL permission %#x", e.perm)
		}
		out = append(out, e)
	}
	if !seen[aclUserObj] || !seen[aclGroupObj] || !seen[aclOther] || ((seen[aclUser] || seen[aclGroup]) && !seen[aclMask]) {
		return nil, fail(ErrInvalid, "an ACL needs user::, group:: and other:: entries (and a mask with named ones)")
	}
	return out, nil
}

func encodeACL(es []aclEntry) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range es {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// groupClass is the entry the mode's group bits stand for: the mask if
// there is one, else the owning group's.
func groupClass(es []aclEntry) uint16 {
	for _, e := range es {
		if e.tag == aclMask {
			return aclMask
		}
	}
	return aclGroupObj
}

// aclModeBits is the mode's permission bits an access ACL stands for.
func aclModeBits(es []aclEntry) uint32 {
	gc := groupClass(es)
	var m uint32
	for _, e := range es {
		switch e.tag {
		case aclUserObj:
			m |= uint32(e.perm) << 6
		case gc:
			m |= uint32(e.perm) << 3
		case aclOther:
			m |= uint32(e.perm)
		}
	}
	return m
}

// aclChmod returns the access ACL with the mode's bits in its owner, group
// class and other entries.
func aclChmod(es []aclEntry, mode uint32) []aclEntry {
	gc := groupClass(es)
	out := append([]aclEntry(nil), es...)
	for i := range out {
		switch out[i].tag {
		case aclUserObj:
			out[i].perm = uint16(mode>>6) & 7
		case gc:
			out[i].perm = uint16(mode>>3) & 7
		case aclOther:
			out[i].perm = uint16(mode) & 7
		}
	}
	return out
}

// aclInherit is the access ACL and mode of a new entry made with mode under
// a default ACL: the default's owner, group class and other entries
// limited by the mode, whose bits then follow the result.
func aclInherit(def []aclEntry, mode uint32) ([]aclEntry, uint32) {
	gc := groupClass(def)
	out := append([]aclEntry(nil), def...)
	for i := range out {
		switch out[i].tag {
		case aclUserObj:
			out[i].perm &= uint16(mode>>6) & 7
		case gc:
			out[i].perm &= uint16(mode>>3) & 7
		case aclOther:
			out[i].perm &= uint16(mode) & 7
		}
	}
	return out, mode&^0o777 | aclModeBits(out)
}

// checkACLXattr validates a set of an ACL xattr on in and applies what it
// implies to in (the mode of an access ACL); ok false: name is no ACL.
func checkACLXattr(in *Inode, name string, value []byte) (bool, error) {
	switch name {
	case xattrACLAccess:
		es, err := parseACL(value)
		if err != nil {
			return true, err
		}
		in.Mode = in.Mode&^0o777 | aclModeBits(es)
		return true, nil
	case xattrACLDefault:
		if in.Type != TypeDir {
			return true, Errno(syscall.EACCES)
		}
		_, err := parseACL(value)
		return true, err
	}
	return false, nil
}

// chmodACL brings the access ACL of in (if it has one) to its new mode.
func (o *op) chmodACL(in *Inode) error {
	key := xattrKey(in.ID, xattrACLAccess)
	v, found, err := o.tx.Get(o.ctx, key)
	if err != nil || !found {
		return err
	}
	es, err := parseACL(v)
	if err != nil {
		return nil // not one we can read: left as it is
	}
	o.tx.Set(key, encodeACL(aclChmod(es, in.Mode)))
	return nil
}

// inheritACL gives a new entry in (of parent p) p's default ACL, if p has
// one, and otherwise applies the creator's umask (POSIX: a default ACL
// takes the umask's place); it may change in.Mode, so call it before in is
// written.
func (o *op) inheritACL(p *Inode, in *Inode, umask uint32) error {
	v, found, err := o.tx.Get(o.ctx, xattrKey(p.ID, xattrACLDefault))
	if err != nil {
		return err
	}
	var def []aclEntry
	if found {
		def, err = parseACL(v)
	}
	if !found || err != nil {
		in.Mode &^= umask & 0o777
		return nil
	}
	acc, mode := aclInherit(def, in.Mode)
	in.Mode = mode
	if in.Type != TypeSymlink {
		o.tx.Set(xattrKey(in.ID, xattrACLAccess), encodeACL(acc))
	}
	if in.Type == TypeDir {
		o.tx.Set(xattrKey(in.ID, xattrACLDefault), v)
	}
	return nil
}
