package console

import (
	"context"
	"syscall"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
)

// removeTree removes a directory and everything in it. One RemoveAll call
// does it where it can; in a versioned bucket the namespace refuses that
// (it would collect the files instead of keeping them as versions), so the
// tree goes file by file, deepest first, each file kept as a noncurrent
// version behind a delete marker, as rm -r through the mount does.
func (c *Console) removeTree(ctx context.Context, parent uint64, name string) error {
	err := c.meta().RemoveAll(ctx, parent, name)
	if client.Errno(err) != syscall.ENOTEMPTY {
		return err
	}
	in, err := c.meta().Lookup(ctx, parent, name)
	if err != nil {
		return err
	}
	if err := c.emptyDir(ctx, in.ID); err != nil {
		return err
	}
	return c.meta().Rmdir(ctx, parent, name)
}

// emptyDir removes everything below dir, one entry at a time.
func (c *Console) emptyDir(ctx context.Context, dir uint64) error {
	for {
		ents, _, err := c.meta().ReadDir(ctx, dir, "", 1000, false)
		if err != nil {
			return err
		}
		if len(ents) == 0 {
			return nil
		}
		for _, e := range ents {
			if e.Type == metaapi.TypeDir {
				if err := c.emptyDir(ctx, e.Ino); err != nil {
					return err
				}
				err = c.meta().Rmdir(ctx, dir, e.Name)
			} else {
				err = c.meta().Unlink(ctx, metaapi.RemoveReq{Parent: dir, Name: e.Name})
			}
			if err != nil && client.Errno(err) != syscall.ENOENT {
				return err
			}
		}
	}
}
