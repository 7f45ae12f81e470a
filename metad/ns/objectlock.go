package ns

import (
	"context"
	"fmt"
)

// Object lock, as S3 has it on versioned buckets: a file (a version) under
// retention cannot be changed or removed for good until its retain-until
// time, nor while it has a legal hold. The namespace enforces it for every
// front end:
//
//   - no write session, truncate or size change (the mount gets EPERM);
//   - no removal for good: DeleteVersion of it, and the end of a null
//     version that a new null version replaces, are EPERM — governance
//     retention (not compliance, not a legal hold) yields to a caller that
//     asks to bypass it;
//   - no leaving its bucket: a retained file is renamed only into an Enabled
//     bucket (which keeps what it displaces), and never away from a key.
//
// Unlink and rename over it in an Enabled bucket stay allowed: they keep it
// as a noncurrent version, as S3 keeps a locked version behind a delete
// marker or a newer version.
//
// Retention changes (SetRetention): compliance retention can only be
// extended; governance retention can be extended or made compliance, and
// shortened or removed only with the bypass; a legal hold is set or
// cleared freely. A file with write sessions cannot take retention (a
// writer could still change it).

// RetainMode is a file's retention mode.
type RetainMode uint8

// The retention modes.
const (
	RetainNone       RetainMode = 0
	RetainGovernance RetainMode = 1
	RetainCompliance RetainMode = 2
)

// retained reports whether in is protected at now.
func (in *Inode) retained(now int64) bool {
	return in.LegalHold || (in.RetainMode != RetainNone && now < in.RetainUntil)
}

// removable reports whether in may be removed for good at now, with the
// governance bypass or without.
func (in *Inode) removable(now int64, bypass bool) error {
	switch {
	case in.LegalHold:
		return fail(ErrPerm, "inode %d has a legal hold", in.ID)
	case in.RetainMode == RetainNone || now >= in.RetainUntil:
		return nil
	case in.RetainMode == RetainGovernance && bypass:
		return nil
	}
	return fail(ErrPerm, "inode %d is retained until %d", in.ID, in.RetainUntil)
}

// changeable refuses changes to a retained file's data, and to a snapshot's.
func (o *op) changeable(in *Inode) error {
	if err := o.writable(in); err != nil {
		return err
	}
	if in.retained(o.now) {
		return fail(ErrPerm, "inode %d is under object lock", in.ID)
	}
	return nil
}

// Retention is a change of a file's object lock.
type Retention struct {
	SetRetention bool // change Mode and Until
	Mode         RetainMode
	Until        int64 // unix ns
	SetHold      bool  // change LegalHold
	LegalHold    bool
	// Bypass allows shortening or removing governance retention.
	Bypass bool
}

// SetRetention changes a file's retention or legal hold (rules above).
func (n *Namespace) SetRetention(ctx context.Context, ino uint64, r Retention) (Inode, error) {
	if r.SetRetention {
		if err := validRetention(r); err != nil {
			return Inode{}, err
		}
	}
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		in, err := o.inode(ino)
		if err != nil {
			return err
		}
		if in.Type != TypeFile {
			return fail(ErrInvalid, "object lock on a %s", in.Type)
		}
		if err := o.writable(in); err != nil {
			return err
		}
		if r.SetRetention {
			if err := retentionChange(in, r, o.now); err != nil {
				return err
			}
		}
		if (r.SetRetention && r.Mode != RetainNone) || (r.SetHold && r.LegalHold) {
			if err := o.notOpenForWriting(in); err != nil {
				return err
			}
		}
		if r.SetRetention {
			in.RetainMode, in.RetainUntil = r.Mode, r.Until
		}
		if r.SetHold {
			in.LegalHold = r.LegalHold
		}
		in.Ctime = o.now
		o.putInode(in)
		res = in
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("set retention of %d: %w", ino, err)
	}
	return *res, nil
}

// lockNew puts a file that is taking a key under lock (no write session
// may be open on it).
func (o *op) lockNew(in *Inode, r Retention) error {
	if err := validRetention(r); err != nil {
		return err
	}
	if err := o.notOpenForWriting(in); err != nil {
		return err
	}
	in.RetainMode, in.RetainUntil, in.LegalHold = r.Mode, r.Until, r.LegalHold
	return nil
}

// validRetention refuses a mode that is not one, or a mode without a date
// (or a date without a mode).
func validRetention(r Retention) error {
	if r.Mode > RetainCompliance || (r.Mode == RetainNone) != (r.Until == 0) {
		return fail(ErrInvalid, "retention mode %d until %d", r.Mode, r.Until)
	}
	return nil
}

// notOpenForWriting refuses to lock a file a writer could still change.
func (o *op) notOpenForWriting(in *Inode) error {
	busy, err := o.hasSessions(in.ID)
	if err != nil {
		return err
	}
	if busy {
		return fail(ErrBusy, "inode %d is open for writing", in.ID)
	}
	return nil
}

// errOr is err if set, else alt.
func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// retentionChange decides whether in's retention may become r's at now.
func retentionChange(in *Inode, r Retention, now int64) error {
	if in.RetainMode == RetainNone || now >= in.RetainUntil {
		return nil // nothing in force
	}
	weaker := r.Mode == RetainNone || r.Until < in.RetainUntil || (in.RetainMode == RetainCompliance && r.Mode != RetainCompliance)
	switch {
	case !weaker:
		return nil
	case in.RetainMode == RetainCompliance:
		return fail(ErrPerm, "inode %d is under compliance retention until %d: it can only be extended", in.ID, in.RetainUntil)
	case !r.Bypass:
		return fail(ErrPerm, "inode %d is under governance retention until %d: shortening it needs the bypass", in.ID, in.RetainUntil)
	}
	return nil
}
