package client

// Chunks is the FS's chunk I/O: its window, hedging policy and counters
// (IOStats) are shared by every file of the FS.
func (fs *FS) Chunks() *ChunkIO { return fs.chunks }

// IOStats returns the data path's counters.
func (fs *FS) IOStats() IOStats { return fs.chunks.Stats() }
