package files

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cold makes the next reads of files miss the page cache, as the cache mode
// says. It is not timed.
func (r *run) cold(files []string, big bool) error {
	switch r.cfg.Cache {
	case CacheNone:
		return nil
	case CacheDrop:
		unix.Sync()
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
			if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EROFS) {
				return fmt.Errorf("--cache drop needs root (writing /proc/sys/vm/drop_caches): %w", err)
			}
			return fmt.Errorf("drop caches: %w", err)
		}
		return nil
	}
	// fadvise, and direct for the small files (big ones are read O_DIRECT).
	if r.cfg.Cache == CacheDirect && big {
		return nil
	}
	for _, name := range files {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if err := dropFile(name); err != nil {
			return err
		}
	}
	return nil
}

// dropFile writes a file's dirty pages back and drops its cached ones.
func dropFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("fdatasync %s: %w", name, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("posix_fadvise %s: %w", name, err)
	}
	return nil
}

// fsType names the file system dir is on, for the report.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	switch uint32(st.Type) {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.FUSE_SUPER_MAGIC:
		return "fuse"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay"
	case unix.NFS_SUPER_MAGIC:
		return "nfs"
	}
	return fmt.Sprintf("0x%x", uint32(st.Type))
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
