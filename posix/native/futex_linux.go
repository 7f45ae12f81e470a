package native

import (
	"syscall"
	"time"
	"unsafe"
)

// Futexes on words of a MAP_SHARED mapping work across processes as long as
// the non-private ops are used (the kernel keys them by the backing page).
const (
	futexWait = 0
	futexWake = 1
)

// futexWaitOn sleeps while *addr == val, for at most d (d <= 0: no limit).
// Spurious wake-ups are fine: callers re-check their condition.
func futexWaitOn(addr *uint32, val uint32, d time.Duration) {
	var ts *syscall.Timespec
	if d > 0 {
		t := syscall.NsecToTimespec(d.Nanoseconds())
		ts = &t
	}
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
}

// futexWakeAll wakes every sleeper on addr.
func futexWakeAll(addr *uint32) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}
