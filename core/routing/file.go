package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// FileSource reads routing information from a JSON file and re-reads it when
// the file changes: the source a storage service uses before a cluster manager
// exists, or in tests of single services. A version that does not grow is
// ignored, so a half-edited file never moves routing backwards.
type FileSource struct {
	path string
	mu   sync.Mutex
	st   *Static
	mod  time.Time
	stop chan struct{}
	once sync.Once
}

// OpenFile loads path and polls it every interval (default 1 s) until Close.
func OpenFile(path string, interval time.Duration) (*FileSource, error) {
	if interval <= 0 {
		interval = time.Second
	}
	f := &FileSource{path: path, stop: make(chan struct{})}
	info, mod, err := readInfo(path)
	if err != nil {
		return nil, err
	}
	f.st, f.mod = NewStatic(info), mod
	go f.poll(interval)
	return f, nil
}

func readInfo(path string) (*Info, time.Time, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("routing file: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("routing file: %w", err)
	}
	var in Info
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, time.Time{}, fmt.Errorf("routing file %s: %w", path, err)
	}
	if in.Nodes == nil {
		in.Nodes = map[NodeID]Node{}
	}
	if in.Chains == nil {
		in.Chains = map[ChainID]*Chain{}
	}
	return &in, st.ModTime(), nil
}

func (f *FileSource) poll(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			f.reload()
		}
	}
}

func (f *FileSource) reload() {
	st, err := os.Stat(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil || !st.ModTime().After(f.mod) {
		return
	}
	in, mod, err := readInfo(f.path)
	if err != nil || in.Version <= f.st.Current().Version {
		return
	}
	f.mod = mod
	f.st.Update(func(cur *Info) { *cur = *in.Clone() })
	f.st.mu.Lock()
	f.st.info.Version = in.Version // keep the file's version, not Update's +1
	f.st.mu.Unlock()
}

func (f *FileSource) Current() *Info           { return f.st.Current() }
func (f *FileSource) Changed() <-chan struct{} { return f.st.Changed() }

// Refresh re-reads the file at once.
func (f *FileSource) Refresh(ctx context.Context, have uint64) (*Info, error) {
	f.reload()
	return f.Current(), nil
}

// Close stops polling.
func (f *FileSource) Close() { f.once.Do(func() { close(f.stop) }) }
