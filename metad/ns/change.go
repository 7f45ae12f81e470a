package ns

// Change says how an entry change (Unlink, Rename) changed the directories
// it changed, so a client that keeps their attributes can follow without
// asking Stat: their mtime and ctime became at least DirTime (Stat reports
// the later of the inode's times and the last entry change's, dirattr.go),
// and, with Subdirs, a directory's count of subdirectories (its nlink)
// changed too. DirTime 0: no directory changed, or the answer is not known.
type Change struct {
	DirTime int64
	Subdirs bool
}

// noteChange records in the answer how o changed directories.
func (r *idemRecord) noteChange(o *op) {
	r.DirTime, r.Subdirs = 0, o.subdirs
	if len(o.dirs) > 0 {
		r.DirTime = o.now
	}
}

func (r *idemRecord) change() Change { return Change{DirTime: r.DirTime, Subdirs: r.Subdirs} }
