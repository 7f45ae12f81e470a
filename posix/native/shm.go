package native

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// newID returns a random id.
func newID() ID {
	var id ID
	rand.Read(id[:])
	return id
}

// createShm creates /dev/shm/<name> of size bytes (mode 0600: only the
// owner and root, i.e. the daemon, may map it) and maps it shared.
func createShm(name string, size int) ([]byte, string, error) {
	if size <= 0 {
		return nil, "", fmt.Errorf("native: size %d must be positive", size)
	}
	p := filepath.Join(ShmDir, name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(p)
		return nil, "", err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		os.Remove(p)
		return nil, "", fmt.Errorf("native: mmap %s: %w", p, err)
	}
	return mem, p, nil
}

// mapped is a shm file the daemon mapped; the fd stays open so the daemon
// can check the size has not shrunk under it (a shrunk mapping faults).
type mapped struct {
	f   *os.File
	mem []byte
}

// openShm maps a registered file on the daemon side. It must be a regular
// file directly in /dev/shm owned by uid (unless uid is root), at least min
// bytes long.
func openShm(p string, uid uint32, min int) (*mapped, error) {
	fd, err := syscall.Open(p, syscall.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		f.Close()
		return nil, syscall.EINVAL
	case uid != 0 && st.Uid != uid:
		f.Close()
		return nil, syscall.EPERM
	case st.Size < int64(min) || st.Size <= 0 || st.Size > 1<<40:
		f.Close()
		return nil, syscall.EINVAL
	}
	mem, err := syscall.Mmap(fd, 0, int(st.Size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &mapped{f: f, mem: mem}, nil
}

// intact reports whether the file still covers the whole mapping.
func (m *mapped) intact() bool {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(m.f.Fd()), &st); err != nil {
		return false
	}
	return st.Size >= int64(len(m.mem))
}

func (m *mapped) close() {
	syscall.Munmap(m.mem)
	m.f.Close()
}
