package bench

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// ProgressWriter picks where progress bars go for a --progress mode:
// "auto" draws them only when w is a terminal, "always" and "never" as said.
func ProgressWriter(mode string, w io.Writer) (io.Writer, error) {
	switch mode {
	case "never":
		return nil, nil
	case "always":
		return w, nil
	case "auto", "":
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return w, nil
		}
		return nil, nil
	}
	return nil, fmt.Errorf("--progress %q: want auto, always or never", mode)
}
