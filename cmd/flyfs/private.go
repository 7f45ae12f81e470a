package main

import (
	"fmt"
	"os"
	"syscall"
)

// privateState makes what a role stores readable by its own user only: the
// process creates files 0600 and directories 0700 from now on, and each
// state directory, new or old, is 0700.
func privateState(dirs ...string) error {
	syscall.Umask(0o077)
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return fmt.Errorf("make %s private: %w", d, err)
		}
	}
	return nil
}
